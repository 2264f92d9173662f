package shardid

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Two shards given the same database are accepted: a fan-out then reads
// each row twice.
func TestReviewTwoShardsOnOneDatabase(t *testing.T) {
	dir := t.TempDir()
	dsn := func(name string) string { return "file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)" }
	half := Layout{}.ShardCount() / 2
	db, err := gorm.Open(sqlite.Open(dsn("main.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := New(Config{Shards: []Shard{
		{Name: "a", Dialector: sqlite.Open(dsn("same.db")), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "b", Dialector: sqlite.Open(dsn("same.db")), Logical: []Range{{From: half, To: 2*half - 1}}},
	}})
	if err := db.Use(p); errors.Is(err, ErrInvalidConfig) {
		return // refused: as it should be
	}
	t.Cleanup(func() { _ = p.Close() })
	must(t, p.AutoMigrate(db, &revPlain{}))
	must(t, db.Create(&revPlain{Name: "one"}).Error)
	var n int64
	must(t, db.Model(&revPlain{}).Clauses(AllShards()).Count(&n).Error)
	if n != 1 {
		t.Errorf("one row created, AllShards counts %d: two shards on one database were accepted", n)
	}
}
