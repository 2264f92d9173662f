package shardid

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/shardid/shardid/strategies"
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
	d.plugin.savepoints.remember(tx.Statement.ConnPool, struct{}{})
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

// AutoMigrate migrates unsharded models on the plugin's database and sharded
// ones on every physical database.
func (m migrator) AutoMigrate(models ...any) error {
	return m.each(models, gorm.Migrator.AutoMigrate, true)
}

// CreateTable creates the tables of unsharded models on the plugin's database
// and of sharded ones on every physical database.
func (m migrator) CreateTable(models ...any) error {
	return m.each(models, gorm.Migrator.CreateTable, true)
}

// DropTable drops the tables of unsharded models on the plugin's database and
// of sharded ones on every physical database.
func (m migrator) DropTable(models ...any) error {
	return m.each(models, gorm.Migrator.DropTable, false)
}

// each parses the shardid tags of every model first, so that a bad tag fails
// the migration before anything is changed and a good one shapes the table,
// then runs do for the unsharded models here and for the sharded ones on each
// physical database. With create, it also creates on every physical database
// what the strategies of the tagged models keep there.
func (m migrator) each(models []any, do func(gorm.Migrator, ...any) error, create bool) error {
	var here, everywhere []any
	used := map[strategies.Generator]bool{}
	for _, value := range models {
		stmt := &gorm.Statement{DB: m.db}
		if _, isTable := value.(string); isTable || stmt.Parse(value) != nil {
			here = append(here, value) // the wrapped migrator says what it makes of it
			continue
		}
		model, err := m.plugin.model(stmt.Schema)
		if err != nil {
			return err
		}
		if model != nil {
			for _, f := range model.fields {
				used[f.generator] = true
			}
		}
		if model != nil && model.sharded() && m.plugin.routed() {
			everywhere = append(everywhere, value)
		} else {
			here = append(here, value)
		}
	}
	if len(here) > 0 {
		if err := do(m.Migrator, here...); err != nil {
			return err
		}
	}
	if create && len(used) > 0 {
		if err := m.plugin.prepareStrategies(m.db, used); err != nil {
			return err
		}
	}
	if len(everywhere) == 0 {
		return nil
	}
	for _, ph := range m.plugin.physical {
		// A database given as Shard.DB has a schema cache of its own, which needs the same treatment.
		for _, value := range everywhere {
			stmt := &gorm.Statement{DB: ph.db}
			if err := stmt.Parse(value); err == nil {
				if _, err := m.plugin.model(stmt.Schema); err != nil {
					return err
				}
			}
		}
		// No foreign keys on a shard: a sharded row's parent may be on another
		// database (an unsharded one on the plugin's, another shard's), where
		// no constraint can reach it.
		noForeignKeys := ph.db.Session(&gorm.Session{})
		noForeignKeys.Config.DisableForeignKeyConstraintWhenMigrating = true
		if err := do(noForeignKeys.Migrator(), everywhere...); err != nil {
			return fmt.Errorf("shardid: on %s: %w", ph.name, err)
		}
	}
	return nil
}
