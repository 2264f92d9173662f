package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/shardmigrator"
	"github.com/shardid/shardid/strategies"
)

// The file ends in .gen.go so that GORM's log lines of a migration name the
// caller of AutoMigrate, not this file (see internal/shardmigrator).

// Migrator returns the shard-aware migrator for db.
func (e *Engine) Migrator(db *gorm.DB) gorm.Migrator {
	return shardmigrator.New(migratorPlugin{e}, db)
}

// migratorPlugin is the plugin as the shard-aware migrator asks it; it is
// safe for concurrent use, as the plugin is.
type migratorPlugin struct{ p *Engine }

var _ shardmigrator.Plugin = migratorPlugin{}

func (m migratorPlugin) Routed() bool { return m.p.routed() }

func (m migratorPlugin) Events() *slog.Logger { return m.p.config.Log }

func (m migratorPlugin) Physical() []string {
	names := make([]string, len(m.p.physical))
	for k, ph := range m.p.physical {
		names[k] = ph.name
	}
	return names
}

func (m migratorPlugin) LogOn(k int, l logger.Interface) logger.Interface {
	if !m.p.config.LogPhysical {
		return l
	}
	return namedLogger{Interface: l, name: m.p.physical[k].name}
}

func (m migratorPlugin) OpenPhysical(ctx context.Context, k int) (*gorm.DB, error) {
	if err := m.p.registered(); err != nil {
		return nil, err
	}
	opened, err := m.p.opened(ctx, k)
	if err != nil {
		return nil, err
	}
	return opened.db, nil
}

// Reachable pings each physical database within its own
// Config.ConnectTimeout, reachAtOnce at a time (a migration over a thousand
// databases opens every one anyway), and returns the errors of those that
// did not answer, in the map's order.
func (m migratorPlugin) Reachable(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil { // the caller's context, not a database, ends the change
		return fmt.Errorf("shardid: the context ended before the physical databases were pinged: %w", err)
	}
	bound := m.p.config.connectTimeout()
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < bound {
		bound = time.Until(deadline).Round(time.Millisecond) // the caller's deadline comes first: its error says how long each had
	}
	targets := m.p.pingTargets()
	errs := make([]error, len(targets))
	limit := make(chan struct{}, reachAtOnce)
	var wg sync.WaitGroup
	for i, t := range targets {
		if t.kind != KindPhysical {
			continue
		}
		limit <- struct{}{}
		wg.Go(func() {
			defer func() { <-limit }()
			pinging, cancel := context.WithTimeout(ctx, bound)
			defer cancel()
			if _, err := t.ping(pinging); err != nil {
				if pinging.Err() != nil { // the driver's error is the deadline's echo
					err = noAnswer(pinging, bound)
				}
				errs[i] = t.failure(err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// reachAtOnce is how many physical databases Reachable pings at once.
const reachAtOnce = 16

// migrationPatience is how long a migration waits for another process's
// (pods migrating as they start) before it gives up.
const migrationPatience = 5 * time.Minute

// LockMigrations takes the plugin's database's lock of migrations: the map
// store's, or one made for it when there are no Shards.
func (m migratorPlugin) LockMigrations(ctx context.Context) (func(), error) {
	if err := m.p.registered(); err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	store := (*mapstore.Store)(nil)
	if m.p.maps != nil {
		store = m.p.maps.Store
	} else {
		sqlDB, err := m.p.db.DB()
		if err != nil {
			return nil, err
		}
		store = mapstore.New(sqlDB, m.p.db.Dialector.Name(), m.p.mapTable(), defaultMapRefresh)
	}
	unlock, err := store.LockMigrations(ctx, migrationPatience)
	if errors.Is(err, mapstore.ErrLocked) {
		return nil, fmt.Errorf("another migration of the plugin's database has run for over %v; try again once it ends", migrationPatience)
	}
	return unlock, err
}

// KeepFences begins a change of a physical database's tables on its session
// db; on SQLite in a transaction, at whose end the triggers of the moves
// fencing tables there are made again (fence.KeepTriggers): SQLite's
// migrator remakes a table to alter it.
func (m migratorPlugin) KeepFences(db *gorm.DB) (*gorm.DB, func(error) error, error) {
	if db.Dialector.Name() != "sqlite" || db.DryRun {
		return db, func(err error) error { return err }, nil
	}
	f := fence.Fence{Dialect: "sqlite", ShardBits: m.p.layout.ShardBits, SequenceBits: m.p.layout.SequenceBits}
	tx := db.Begin()
	if tx.Error != nil {
		return nil, nil, tx.Error
	}
	ctx := tx.Statement.Context
	q, ok := tx.Statement.ConnPool.(fence.Execer)
	err := f.HoldForMigration(ctx, q)
	if !ok {
		err = fmt.Errorf("shardid: a transaction of %T cannot keep a move's triggers", tx.Statement.ConnPool)
	}
	if err != nil {
		return nil, nil, errors.Join(err, tx.Rollback().Error)
	}
	return tx, func(err error) error {
		if err == nil {
			err = f.KeepTriggers(ctx, q)
		}
		if err != nil {
			return errors.Join(err, tx.Rollback().Error)
		}
		return tx.Commit().Error
	}, nil
}

func (m migratorPlugin) Model(s *schema.Schema) (*shardmigrator.Model, error) {
	if err := m.p.registered(); err != nil { // its tags would be read without the config's strategies
		return nil, err
	}
	model, err := m.p.model(s)
	if err == nil && (model == nil || !model.sharded()) && m.p.recordedAsSharded(s.Table) {
		return nil, &FieldError{Model: s.Name, Field: "table " + s.Table, Err: ErrInvalidTag,
			Detail: "the plugin's migrator recorded this table as sharded (" + m.p.tablesTable() + "), and its rows are on the physical databases; a model without shardid tags cannot take it: drop it through the plugin's migrator first, or tag the model"}
	}
	if model == nil {
		return nil, err
	}
	view := &shardmigrator.Model{Sharded: model.sharded(), Generators: make([]strategies.Generator, len(model.fields))}
	for i, f := range model.fields {
		view.Generators[i] = f.generator
	}
	if key := model.pk(); key != nil {
		view.Key, view.Colocate, view.Hash, view.LooseHash = key.field.Name, key.colocate, key.hash, key.looseHash
	}
	return view, nil
}

// ShardedTable: the join rows of a sharded model's many2many live beside it.
func (m migratorPlugin) ShardedTable(table string) bool {
	_, sharded := m.p.shardedTables.Load(strings.ToLower(table))
	_, joins := m.p.joinTables.Load(strings.ToLower(table))
	return sharded || joins
}

func (m migratorPlugin) OwnCopy(db *gorm.DB) *gorm.DB { return ownCopyOf(db) }

// ownCopyOf is a session of db marked ownCopy. A session given a context
// copies db's statement: one without shares it, and the mark would stay on
// the caller's db, whose later sessions (WithContext) would inherit it and
// run SQL naming sharded tables on the plugin's database.
func ownCopyOf(db *gorm.DB) *gorm.DB {
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	tx := db.Session(&gorm.Session{Context: ctx})
	tx.Statement.Settings.Store(ownCopyKey{}, true)
	return tx
}

// ownCopyKey marks the migrator's session for a table it found by name on
// the plugin's database.
type ownCopyKey struct{}

// ownCopy reports whether stmt is the migrator's on a table it found by name
// on the plugin's database: its SQL may name a table recorded as sharded.
func ownCopy(stmt *gorm.Statement) bool {
	_, ok := loadSetting(stmt, ownCopyKey{})
	return ok
}

func (m migratorPlugin) PrepareStrategies(db *gorm.DB, used map[strategies.Generator]bool) error {
	return m.p.prepareStrategies(db, used)
}

func (m migratorPlugin) RegisterTables(db *gorm.DB, models []any) error {
	return m.p.registerTables(db, models)
}

func (m migratorPlugin) CheckNewTables(db *gorm.DB, models []any) error {
	return m.p.checkNewTables(db, models)
}

func (m migratorPlugin) CheckTableUnmoved(db *gorm.DB, table string) error {
	return m.p.checkTableUnmoved(db, table)
}

func (m migratorPlugin) UnregisterTable(db *gorm.DB, table string) error {
	return m.p.unregisterTable(db, table)
}

func (m migratorPlugin) RenameRegisteredTable(db *gorm.DB, oldName, newName string) error {
	return m.p.renameRegisteredTable(db, oldName, newName)
}

func (m migratorPlugin) RenameRegisteredColumn(db *gorm.DB, table, oldName, newName string) error {
	return m.p.renameRegisteredColumn(db, table, oldName, newName)
}

func (m migratorPlugin) TagError(model, field, detail string) error {
	return &FieldError{Model: model, Field: field, Err: ErrInvalidTag, Detail: detail}
}
