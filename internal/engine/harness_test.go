package engine

import (
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
)

// testPlugin registers an Engine with GORM, as the shardid plugin does, for
// the engine's own tests.
type testPlugin struct{ e *Engine }

func (*testPlugin) Name() string                   { return "shardid" }
func (p *testPlugin) Initialize(db *gorm.DB) error { return p.e.Initialize(db) }

// openEngine opens a SQLite database in a temporary folder with an engine
// for cfg registered; two physical SQLite databases hold the logical shards
// when twoShards; registeredBefore register other plugins' callbacks first.
func openEngine(t testing.TB, cfg Config, twoShards bool, registeredBefore ...func(*gorm.DB)) (*gorm.DB, *Engine) {
	t.Helper()
	dir := t.TempDir()
	open := func(name string) gorm.Dialector {
		return sqlite.Open("file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	}
	if twoShards {
		half := cfg.Layout.Normalized().ShardCount() / 2
		cfg.Shards = []Shard{
			{Name: "a", Dialector: open("a.db"), Logical: []Range{{From: 0, To: half - 1}}},
			{Name: "b", Dialector: open("b.db"), Logical: []Range{{From: half, To: 2*half - 1}}},
		}
	}
	db, err := gorm.Open(open("main.db"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	for _, register := range registeredBefore { // another plugin's callbacks, registered first
		register(db)
	}
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

// hinted is shardid.Clause for the engine's tests.
type hinted struct{ Hint }

func (c hinted) ModifyStatement(stmt *gorm.Statement) {
	var e *Engine
	if p, ok := stmt.DB.Config.Plugins["shardid"].(*testPlugin); ok {
		e = p.e
	}
	e.KeepHint(stmt, c.Hint)
}

func (hinted) Build(clause.Builder) {}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
