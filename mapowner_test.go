package shardid

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// TestAProcessOfAnotherMapIsRefusedByTheShardsItNames: the physical
// databases record the shared map that first opened them (its plugin
// database and map table). A process naming the same databases with a
// mistyped Config.MapTable, or with another plugin database, would follow a
// map of its own; it is refused with ErrInvalidConfig at its first
// statement there, writing nothing, while another process of the same map
// is not.
func TestAProcessOfAnotherMapIsRefusedByTheShardsItNames(t *testing.T) {
	dir := t.TempDir()
	dsn := func(name string) string {
		return "file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	}
	count := Layout{}.ShardCount()
	process := func(main, mapTable string) *gorm.DB {
		db, err := gorm.Open(sqlite.Open(dsn(main)), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		p := New(Config{MapTable: mapTable, Atomic: BestEffort, Log: quiet, Shards: []Shard{
			{Name: "s0", Dialector: sqlite.Open(dsn("s0.db")), Logical: []Range{{From: 0, To: count/2 - 1}}},
			{Name: "s1", Dialector: sqlite.Open(dsn("s1.db")), Logical: []Range{{From: count / 2, To: count - 1}}},
		}})
		must(t, db.Use(p))
		t.Cleanup(func() { _ = p.Close() })
		must(t, p.AutoMigrate(db, &revUser{}))
		return db
	}
	first := process("main.db", "app_map")
	must(t, first.Create(&revUser{Name: "first"}).Error)

	for _, c := range []struct{ name, main, mapTable, says string }{
		{"mistyped map table", "main.db", "app_mpa", "mistyped"},
		{"another plugin database", "other.db", "app_map", "another plugin database"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := gorm.Open(sqlite.Open(dsn(c.main)), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			p := New(Config{MapTable: c.mapTable, Atomic: BestEffort, Log: quiet, Shards: []Shard{
				{Name: "s0", Dialector: sqlite.Open(dsn("s0.db")), Logical: []Range{{From: 0, To: count/2 - 1}}},
				{Name: "s1", Dialector: sqlite.Open(dsn("s1.db")), Logical: []Range{{From: count / 2, To: count - 1}}},
			}})
			must(t, db.Use(p))
			t.Cleanup(func() { _ = p.Close() })
			err = db.Create(&revUser{Name: "stray"}).Error
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "shardid_map_owner") || !strings.Contains(err.Error(), c.says) {
				t.Errorf("Create of a process of another map: %v, want ErrInvalidConfig naming shardid_map_owner and saying %q", err, c.says)
			}
			var strays int64
			must(t, first.Clauses(AllShards()).Model(&revUser{}).Where("name = ?", "stray").Count(&strays).Error)
			if strays != 0 {
				t.Errorf("the refused process wrote %d rows", strays)
			}
		})
	}

	same := process("main.db", "app_map")
	must(t, same.Create(&revUser{Name: "same"}).Error)
}
