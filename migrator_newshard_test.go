package shardid

import (
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type mgGrowItem struct {
	ID   int64 `shardid:""`
	Name string
}

// TestAPhysicalDatabaseAddedLaterGetsTheTablesAtTheNextMigration: a physical
// database added to Config.Shards later, holding no logical
// shards yet, gets the sharded tables on the next AutoMigrate, and the
// migrator's questions ask it too.
func TestAPhysicalDatabaseAddedLaterGetsTheTablesAtTheNextMigration(t *testing.T) {
	dir := t.TempDir()
	dsn := func(name string) string {
		return "file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	}
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &mgGrowItem{}))
	must(t, db.Create(&mgGrowItem{Name: "a"}).Error)
	must(t, p.Close())
	half := Layout{}.ShardCount() / 2
	again, err := gorm.Open(sqlite.Open(dsn("main.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	grown := New(Config{Shards: []Shard{
		{Name: "s0", Dialector: sqlite.Open(dsn("s0.db")), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "s1", Dialector: sqlite.Open(dsn("s1.db")), Logical: []Range{{From: half, To: 2*half - 1}}},
		{Name: "s2", Dialector: sqlite.Open(dsn("s2.db"))},
	}})
	must(t, again.Use(grown))
	t.Cleanup(func() { _ = grown.Close() })
	must(t, grown.AutoMigrate(again, &mgGrowItem{}))
	s2, err := gorm.Open(sqlite.Open(dsn("s2.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	if !s2.Migrator().HasTable("mg_grow_items") {
		t.Error("s2, added to Config.Shards, lacks mg_grow_items after AutoMigrate")
	}
	must(t, s2.Exec("DROP TABLE mg_grow_items").Error)
	if grown.Migrator(again).HasTable(&mgGrowItem{}) {
		t.Error("HasTable: true though s2 lacks the table")
	}
	must(t, grown.AutoMigrate(again, &mgGrowItem{}))
	if !s2.Migrator().HasTable("mg_grow_items") {
		t.Error("AutoMigrate did not create the table again on s2")
	}
}
