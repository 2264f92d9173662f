package integration

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/shardrouter"
)

// TestMoveLockIsTheDatabasesOwn: the plugins of two databases on one server
// (each its own set of shards) hold the lock of a move of the same range at
// once (MySQL's named locks are the server's), and one database's second
// run waits for its first.
func TestMoveLockIsTheDatabasesOwn(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if b.name == "sqlite" {
			t.Skip("SQLite's stand-in lock is the process's, tested in internal/mapstore")
		}
		dir := t.TempDir()
		store := func(d gorm.Dialector) *mapstore.Store {
			db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
			must(t, err)
			sqlDB, err := db.DB()
			must(t, err)
			t.Cleanup(func() { _ = sqlDB.Close() })
			return mapstore.New(sqlDB, d.Name(), "shardid_shard_map", time.Second)
		}
		d := b.physical(t, dir, 0)
		one, other := store(d), store(b.physical(t, dir, 1))
		ctx, r := context.Background(), shardrouter.Range{From: 6144, To: 8191}
		unlock, err := one.LockMove(ctx, r)
		must(t, err)
		defer unlock()
		unlockOther, err := other.LockMove(ctx, r)
		if err != nil {
			t.Fatalf("the other database's LockMove of the same range: %v", err)
		}
		unlockOther()
		again := mapstore.New(one.DB(), d.Name(), "shardid_shard_map", time.Second)
		if _, err := again.LockMove(ctx, r); err != mapstore.ErrLocked {
			t.Fatalf("a second run on the same database: %v, want ErrLocked", err)
		}
	})
}
