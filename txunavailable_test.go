package shardid

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// TestATransactionOnADatabaseThatCannotOpenBeginsNothingElsewhere: a
// Transaction, or a Begin, after a shard clause whose database cannot be
// opened (it is down, or the plugin is closed) fails with
// ErrShardUnavailable and leaves no transaction open on the plugin's own
// database: GORM's Transaction returns Begin's error without a Rollback, so
// one begun there would hold a connection of its pool for good, one more at
// every request while the shard is down.
func TestATransactionOnADatabaseThatCannotOpenBeginsNothingElsewhere(t *testing.T) {
	dir := t.TempDir()
	count := Layout{}.ShardCount()
	db, err := gorm.Open(sqlite.Open(filepath.Join(dir, "main.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := New(Config{Log: quiet, Atomic: BestEffort, ConnectTimeout: 200 * time.Millisecond, Shards: []Shard{
		{Name: "a", Dialector: sqlite.Open(filepath.Join(dir, "a.db")), Logical: []Range{{From: 0, To: count/2 - 1}}},
		{Name: "b", Dialector: sqlite.Open(filepath.Join(dir, "missing", "b.db")), Logical: []Range{{From: count / 2, To: count - 1}}}, // cannot open
	}})
	must(t, db.Use(p))
	defer p.Close()
	own, err := db.DB()
	must(t, err)
	attempts := func(when string, shard int) {
		for range 3 {
			err := db.Clauses(OnShard(shard)).Transaction(func(tx *gorm.DB) error { return tx.Exec("SELECT 1").Error })
			if !errors.Is(err, ErrShardUnavailable) {
				t.Errorf("%s: a Transaction on shard %d: %v; want ErrShardUnavailable", when, shard, err)
			}
			tx := db.Clauses(OnShard(shard)).Begin()
			if !errors.Is(tx.Error, ErrShardUnavailable) {
				t.Errorf("%s: a Begin on shard %d: %v; want ErrShardUnavailable", when, shard, tx.Error)
			}
		}
		if inUse := own.Stats().InUse; inUse != 0 {
			t.Errorf("%s: %d connections of the plugin's own database held by transactions nothing will end", when, inUse)
		}
	}
	attempts("its database down", count-1)
	must(t, p.Close())
	attempts("after Close", 0)
}
