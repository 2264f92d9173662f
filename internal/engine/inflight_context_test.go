package engine

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// contextReplacer is a sharded model whose AfterFind hook replaces the
// statement's context with one it did not derive from it (a request's
// context kept aside, say).
type contextReplacer struct {
	ID   int64 `shardid:""`
	Name string
}

var replacingContext context.Context

func (*contextReplacer) AfterFind(tx *gorm.DB) error {
	if replacingContext != nil {
		tx.Statement.Context = replacingContext
	}
	return nil
}

// TestAStatementWhoseHookReplacesItsContextGivesItsCountBack: a statement
// whose hook replaces tx.Statement.Context (a request's context kept aside)
// is uncounted when it ends, so that the process leaves its map version and a
// move's cleanup does not wait for it forever.
func TestAStatementWhoseHookReplacesItsContextGivesItsCountBack(t *testing.T) {
	db, e := openEngine(t, Config{}, true)
	must(t, e.Migrator(db).AutoMigrate(&contextReplacer{}))
	row := contextReplacer{Name: "r"}
	must(t, db.Create(&row).Error)
	old := e.inflight.current.Load().version

	replacingContext = context.Background()
	t.Cleanup(func() { replacingContext = nil })
	var got contextReplacer
	must(t, db.First(&got, row.ID).Error) // the statement has ended
	replacingContext = nil

	e.routeBy(old + 1)
	if v := e.oldestRouted(old + 1); v != old+1 {
		t.Errorf("no statement runs, yet the process follows version %d, want %d: the count of a statement whose hook replaced its context is never given back", v, old+1)
	}
}

// openEngineAfter is openEngine with another plugin's callbacks registered
// on the database before the plugin's own (db.Use(other); db.Use(shardid)).
func openEngineAfter(t testing.TB, first func(*gorm.DB)) (*gorm.DB, *Engine) {
	t.Helper()
	dir := t.TempDir()
	open := func(name string) gorm.Dialector {
		return sqlite.Open("file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	}
	var cfg Config
	half := cfg.Layout.Normalized().ShardCount() / 2
	cfg.Shards = []Shard{
		{Name: "a", Dialector: open("a.db"), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "b", Dialector: open("b.db"), Logical: []Range{{From: half, To: 2*half - 1}}},
	}
	db, err := gorm.Open(open("main.db"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	first(db)
	p := &testPlugin{}
	p.e = New(p, cfg)
	if err := db.Use(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.e.Close()
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db, p.e
}

// TestAStatementUnderAPluginThatRestoresItsContextGivesItsCountBack: another
// plugin, registered before shardid, that wraps the statement's context
// before the query (a deadline) and puts back the one it saved after it, as
// such plugins do, leaves the statement's count to be given back when it ends.
func TestAStatementUnderAPluginThatRestoresItsContextGivesItsCountBack(t *testing.T) {
	type saved struct {
		ctx    context.Context
		cancel context.CancelFunc
	}
	db, e := openEngineAfter(t, func(db *gorm.DB) {
		must(t, db.Callback().Query().Before("gorm:query").Register("other:deadline_before", func(tx *gorm.DB) {
			ctx, cancel := context.WithTimeout(tx.Statement.Context, time.Minute)
			tx.InstanceSet("other:saved", saved{tx.Statement.Context, cancel})
			tx.Statement.Context = ctx
		}))
		must(t, db.Callback().Query().After("gorm:query").Register("other:deadline_after", func(tx *gorm.DB) {
			if v, ok := tx.InstanceGet("other:saved"); ok {
				v.(saved).cancel()
				tx.Statement.Context = v.(saved).ctx
			}
		}))
	})
	must(t, e.Migrator(db).AutoMigrate(&heldReader{}))
	row := heldReader{Name: "r"}
	must(t, db.Create(&row).Error)
	old := e.inflight.current.Load().version

	var got heldReader
	must(t, db.First(&got, row.ID).Error) // the statement has ended

	e.routeBy(old + 1)
	if v := e.oldestRouted(old + 1); v != old+1 {
		t.Errorf("no statement runs, yet the process follows version %d, want %d: a plugin that put back the context it saved took the count with it", v, old+1)
	}
}
