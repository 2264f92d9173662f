package shardmigrator

import (
	"fmt"

	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/errs"
)

// target is one database a migration step runs on.
type target struct {
	name     string
	migrator gorm.Migrator
	db       *gorm.DB // a physical database's session, whose changes keep a move's triggers; nil for the plugin's
}

// sharded reports whether value (a model or a table name) is the table of a
// sharded model, whose rows live on the physical databases, with the model's
// tags and schema when it is a model. It parses the model's tags first, so
// that a bad one, or a nil model, fails before anything changes.
func (m Migrator) sharded(value any) (bool, *Model, *schema.Schema, error) {
	if value == nil { // GORM's migrator panics on it; the plugin never panics on what it is given
		return false, nil, nil, errs.Wrap(gorm.ErrInvalidValue, "the migrator was given a nil model")
	}
	if table, isTable := value.(string); isTable {
		if m.plugin.ShardedTable(table) {
			return true, nil, nil, nil
		}
		where, err := m.locate(table)
		return where != onOwn, nil, nil, err
	}
	stmt := &gorm.Statement{DB: m.db}
	if err := stmt.Parse(value); err != nil {
		// GORM's AutoMigrate panics on what is no model (a number, a map); its other methods return this error
		return false, nil, nil, fmt.Errorf("shardid: the migrator was given %T, which is not a model (give a pointer to a struct, or a table name): %w: %w", value, gorm.ErrInvalidValue, err)
	}
	model, err := m.plugin.Model(stmt.Schema)
	if err != nil {
		return false, nil, nil, err
	}
	if model == nil || !model.Sharded {
		return m.plugin.ShardedTable(stmt.Schema.Table), model, stmt.Schema, nil // a join table beside a sharded owner
	}
	return true, model, stmt.Schema, nil
}

// targets returns where value's table lives: every physical database for a
// sharded model of a plugin that routes, else db.
// A table name of no model the process has seen is placed by looking (see
// locate); one found on both sides is acted on, and asked about, on both.
func (m Migrator) targets(value any) ([]target, error) {
	own := []target{{name: m.ownName(), migrator: m.own}}
	if table, isTable := value.(string); isTable && !m.plugin.ShardedTable(table) {
		own[0].migrator = m.plugin.OwnCopy(m.db).Migrator() // found there by looking
		where, err := m.locate(table)
		switch {
		case err != nil:
			return nil, err
		case where == onOwn:
			return own, nil
		case where == onBoth:
			list, err := m.physicalTargets(nil)
			return append(own, list...), err
		}
		return m.physicalTargets(nil)
	}
	sharded, _, _, err := m.sharded(value)
	if err != nil {
		return nil, err
	}
	if !sharded || !m.plugin.Routed() {
		return own, nil
	}
	return m.physicalTargets(value)
}

// physicalTargets returns the migrators of the physical databases; those
// given a model see its schema as AutoMigrate makes it there (a plain BIGINT
// key, an exact collation of a string hash column), so that AlterColumn,
// AddColumn or MigrateColumn of a process that has not migrated the model
// keeps them.
func (m Migrator) physicalTargets(model any) ([]target, error) {
	names := m.plugin.Physical()
	list := make([]target, len(names))
	for k, name := range names {
		tx, err := m.physicalSession(k)
		if err != nil {
			return nil, err
		}
		if model != nil {
			if err := m.shapeOn(tx, []any{model}); err != nil {
				return nil, err
			}
			if err := m.sameTable(tx, name, model); err != nil {
				return nil, err
			}
			if err := m.shapeHashColumns(tx, []any{model}); err != nil { // asked before any change: a database down fails it here
				return nil, errs.Wrap(err, "nothing was changed: on %s", name)
			}
		}
		list[k] = target{name: name, migrator: tx.Migrator(), db: tx}
	}
	return list, nil
}

// placement is where locate found a table.
type placement int

const (
	onOwn      placement = iota // on the plugin's database, or nowhere
	onPhysical                  // on a physical database only: a sharded table
	onBoth                      // on both, as plain db.AutoMigrate leaves a copy
)

// locate finds where a table name the plugin knows of no model lives, as a
// new process that has not used the model yet must: the plugin's database
// holds unsharded tables only, the physical databases sharded ones.
func (m Migrator) locate(table string) (placement, error) {
	if !m.plugin.Routed() {
		return onOwn, nil
	}
	physical, err := m.physicalTargets(nil)
	if err != nil { // a shard it cannot reach might hold the table
		return onOwn, errs.Wrap(err, "looking for table %s", table)
	}
	if !slices.ContainsFunc(physical, func(t target) bool { return t.migrator.HasTable(table) }) {
		return onOwn, nil
	}
	if m.own.HasTable(table) {
		return onBoth, nil
	}
	return onPhysical, nil
}

// ownName names the plugin's database in errors and warnings: without
// Config.Shards it is the one physical database, and has that name.
func (m Migrator) ownName() string {
	if !m.plugin.Routed() {
		if names := m.plugin.Physical(); len(names) == 1 {
			return names[0]
		}
	}
	return "the plugin's database"
}

// physicalMigrator is GORM's migrator of physical database k, for sharded
// tables: no foreign keys (a sharded row's parent may be on another database)
// and no tables of related models (an unsharded model lives on the plugin's
// database only; join tables are migrated apart). The settings and table of
// the caller's session come along (gorm:table_options, Table("x")).
func (m Migrator) physicalMigrator(k int) (gorm.Migrator, error) {
	tx, err := m.physicalSession(k)
	if err != nil {
		return nil, err
	}
	return tx.Migrator(), nil
}

func (m Migrator) physicalSession(k int) (*gorm.DB, error) {
	opened, err := m.plugin.OpenPhysical(m.db.Statement.Context, k)
	if err != nil {
		return nil, err
	}
	tx := opened.Session(&gorm.Session{Context: m.db.Statement.Context, DryRun: m.db.DryRun}) // a DryRun session's changes are built, not run
	config := *tx.Config
	config.DisableForeignKeyConstraintWhenMigrating = true
	config.IgnoreRelationshipsWhenMigrating = true
	config.Logger = m.plugin.LogOn(k, m.db.Logger) // the caller's, as now (db.Debug(), one set after the database opened), not the one it opened with
	tx.Config = &config
	tx.Statement.Table, tx.Statement.TableExpr = m.db.Statement.Table, m.db.Statement.TableExpr
	m.db.Statement.Settings.Range(func(key, value any) bool {
		tx.Statement.Settings.Store(key, value)
		return true
	})
	return tx, nil
}

// ownWithoutRelations is the migrator of the plugin's database that neither
// follows relations nor makes foreign keys.
func (m Migrator) ownWithoutRelations() gorm.Migrator {
	tx := m.db.Session(&gorm.Session{})
	config := *tx.Config
	config.IgnoreRelationshipsWhenMigrating = true
	tx.Config = &config
	return tx.Migrator()
}
