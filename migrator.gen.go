package shardid

// The file ends in .gen.go so that GORM's log lines of a migration name the
// caller of AutoMigrate, not this file (see internal/shardmigrator).

import "gorm.io/gorm"

// Migrator returns a gorm.Migrator for db (the plugin's database or a session
// of it) that runs every operation on a sharded model on every physical
// database and every other on db itself. db.Migrator() stays GORM's own.
func (p *Plugin) Migrator(db *gorm.DB) gorm.Migrator { return p.engine().Migrator(db) }

// AutoMigrate migrates the tables of sharded models, their many2many join
// tables and what their ID strategies keep, on every physical database, and
// the tables of unsharded models on db alone. It fails with [ErrInvalidTag]
// before changing anything when a model's tag cannot be used, and with
// [gorm.ErrInvalidValue] when a model is nil.
func (p *Plugin) AutoMigrate(db *gorm.DB, models ...any) error {
	return p.Migrator(db).AutoMigrate(models...)
}
