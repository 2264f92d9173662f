package shardid

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid/shardrouter"
)

// testDB opens a fresh SQLite file with the plugin registered.
func testDB(t testing.TB, cfg Config) (*gorm.DB, *Plugin) {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "test.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	p := New(cfg)
	if err := db.Use(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db, p
}

// migrate migrates models through the plugin registered on db, or with
// plain GORM on a database without it.
func migrate(t testing.TB, db *gorm.DB, models ...any) {
	t.Helper()
	do := db.AutoMigrate
	if p, ok := db.Config.Plugins[pluginName].(*Plugin); ok {
		do = func(models ...any) error { return p.AutoMigrate(db, models...) }
	}
	if err := do(models...); err != nil {
		t.Fatal(err)
	}
}

// The models below are shared by the tests of several files.

type revPlain struct {
	ID   int64 `shardid:""`
	Name string
	Rank int64 `gorm:"not null"`
}

type revUser struct {
	ID   int64 `shardid:""`
	Name string
}

type revPhoto struct {
	ID     int64 `shardid:"colocate:UserID"`
	UserID int64
	URL    string
}

// revRouted is twoSQLiteShards with models migrated on both shards.
func revRouted(t *testing.T, models ...any) (*gorm.DB, *Plugin, []*gorm.DB) {
	t.Helper()
	db, p, direct := twoSQLiteShards(t)
	must(t, p.AutoMigrate(db, models...))
	return db, p, direct
}

// revOnBoth creates rows until each physical database holds one.
func revOnBoth[T any](t *testing.T, db *gorm.DB, p *Plugin, mk func() *T, id func(*T) int64) []*T {
	t.Helper()
	var seen [2]*T
	for i := 0; i < 200 && (seen[0] == nil || seen[1] == nil); i++ {
		r := mk()
		must(t, db.Create(r).Error)
		k := p.ShardMap().Physical(p.Layout().Shard(id(r)))
		if seen[k] == nil {
			seen[k] = r
		}
	}
	if seen[0] == nil || seen[1] == nil {
		t.Fatal("could not place rows on both databases")
	}
	return seen[:]
}

// spreadIDs returns n IDs of a second ago on logical shards spread evenly
// over the layout's, so over every physical database that holds a range.
func spreadIDs(l Layout, n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = l.Compose(time.Now().Add(-time.Second), i*l.ShardCount()/n, 1)
	}
	return ids
}

// revRoutedN spreads the logical shards over n SQLite databases.
func revRoutedN(t *testing.T, n int, models ...any) (*gorm.DB, *Plugin, []*gorm.DB, []shardrouter.Physical) {
	t.Helper()
	return routedOverN(t, n, Config{}, models...)
}

// routedOverN spreads the logical shards over n SQLite databases, with cfg.
func routedOverN(t *testing.T, n int, cfg Config, models ...any) (*gorm.DB, *Plugin, []*gorm.DB, []shardrouter.Physical) {
	t.Helper()
	return routedOverNWith(t, n, gorm.Config{Logger: logger.Discard}, cfg, models...)
}

// routedOverNWith is routedOverN with the plugin's database opened with
// gormConfig.
func routedOverNWith(t *testing.T, n int, gormConfig gorm.Config, cfg Config, models ...any) (*gorm.DB, *Plugin, []*gorm.DB, []shardrouter.Physical) {
	t.Helper()
	dir := t.TempDir()
	dsn := func(name string) string {
		return "file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	}
	count := Layout{}.ShardCount()
	db, err := gorm.Open(sqlite.Open(dsn("main.db")), &gormConfig)
	must(t, err)
	var list []Shard
	var phys []shardrouter.Physical
	for i := range n {
		r := []Range{{From: i * count / n, To: (i+1)*count/n - 1}}
		list = append(list, Shard{Name: fmt.Sprintf("s%d", i), Dialector: sqlite.Open(dsn(fmt.Sprintf("s%d.db", i))), Logical: r})
		phys = append(phys, shardrouter.Physical{Name: fmt.Sprintf("s%d", i), Logical: r})
	}
	cfg.Shards = list
	if cfg.Atomic == TwoPhaseCommit {
		cfg.Atomic = BestEffort // SQLite has no two-phase commit: these tests write over several databases part by part
	}
	p := New(cfg)
	must(t, db.Use(p))
	must(t, p.AutoMigrate(db, models...))
	var direct []*gorm.DB
	for i := range n {
		d, err := gorm.Open(sqlite.Open(dsn(fmt.Sprintf("s%d.db", i))), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		direct = append(direct, d)
	}
	t.Cleanup(func() {
		_ = p.Close()
		for _, d := range append(direct, db) {
			if sqlDB, err := d.DB(); err == nil {
				_ = sqlDB.Close()
			}
		}
	})
	return db, p, direct, phys
}

// rowsOn counts model's rows on the physical databases direct, read
// without the plugin.
func rowsOn(t *testing.T, direct []*gorm.DB, model any) (n int64) {
	t.Helper()
	for _, d := range direct {
		var k int64
		must(t, d.Model(model).Count(&k).Error)
		n += k
	}
	return n
}
