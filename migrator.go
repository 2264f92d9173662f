package shardid

import (
	"gorm.io/gorm"
)

// migratingDialector wraps the database's dialector so that AutoMigrate and
// CreateTable see the plugin's view of a model (a shardid primary key is a
// plain BIGINT, not AUTO_INCREMENT/serial) even before any other statement has
// used it. Everything else is the wrapped dialector's.
type migratingDialector struct {
	gorm.Dialector
	plugin *Plugin
}

func (d migratingDialector) Migrator(db *gorm.DB) gorm.Migrator {
	return migrator{Migrator: d.Dialector.Migrator(db), db: db, plugin: d.plugin}
}

// SavePoint and RollbackTo keep nested transactions working through the wrapper.
func (d migratingDialector) SavePoint(tx *gorm.DB, name string) error {
	if sp, ok := d.Dialector.(gorm.SavePointerDialectorInterface); ok {
		return sp.SavePoint(tx, name)
	}
	return gorm.ErrUnsupportedDriver
}

func (d migratingDialector) RollbackTo(tx *gorm.DB, name string) error {
	if sp, ok := d.Dialector.(gorm.SavePointerDialectorInterface); ok {
		return sp.RollbackTo(tx, name)
	}
	return gorm.ErrUnsupportedDriver
}

// Translate keeps gorm.Config.TranslateError working through the wrapper.
func (d migratingDialector) Translate(err error) error {
	if t, ok := d.Dialector.(gorm.ErrorTranslator); ok {
		return t.Translate(err)
	}
	return err
}

type migrator struct {
	gorm.Migrator
	db     *gorm.DB
	plugin *Plugin
}

func (m migrator) AutoMigrate(models ...any) error {
	if err := m.prepare(models); err != nil {
		return err
	}
	return m.Migrator.AutoMigrate(models...)
}

func (m migrator) CreateTable(models ...any) error {
	if err := m.prepare(models); err != nil {
		return err
	}
	return m.Migrator.CreateTable(models...)
}

// prepare parses the shardid tags of each model, so that a bad tag fails the
// migration and a good one shapes the table.
func (m migrator) prepare(models []any) error {
	for _, value := range models {
		stmt := &gorm.Statement{DB: m.db}
		if err := stmt.Parse(value); err != nil {
			continue // the wrapped migrator reports it
		}
		if _, err := m.plugin.model(stmt.Schema); err != nil {
			return err
		}
	}
	return nil
}
