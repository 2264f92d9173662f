package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

type LcValue struct {
	ID  int64 `shardid:""`
	Val int64
}

// lostConnectionRig opens the plugin over "up" (physical 0) and "gone"
// (physical 1, through a chaos proxy), with one row on gone.
func lostConnectionRig(t *testing.T, b backend) (*gorm.DB, *chaosProxy, LcValue) {
	t.Helper()
	goneDialector, proxy := physicalViaChaos(t, b, 1)
	count := shardid.Layout{}.ShardCount()
	for _, d := range direct(t, b, "")[:2] {
		must(t, d.Migrator().DropTable(&LcValue{}))
		must(t, d.AutoMigrate(&LcValue{}))
	}
	db, err := gorm.Open(b.dialector(t, ""), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	p := shardid.New(shardid.Config{ConnectTimeout: time.Second, Shards: []shardid.Shard{
		{Name: "up", Dialector: b.physical(t, "", 0), Logical: []shardid.Range{{From: 0, To: count/2 - 1}}},
		{Name: "gone", Dialector: goneDialector, Logical: []shardid.Range{{From: count / 2, To: count - 1}}},
	}})
	firstStart(t, db)
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	row := LcValue{Val: 1}
	must(t, db.Clauses(shardid.OnShard(count-1)).Create(&row).Error)
	return db, proxy, row
}

// The commit of a transaction pinned to a shard, whose connection is lost
// before it, fails with ErrShardUnavailable naming the database, as its
// statements do; the next transaction there works.
func TestACommitOnALostConnectionIsUnavailableAndNamed(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		db, proxy, row := lostConnectionRig(t, b)
		for i := range 3 {
			err := db.Clauses(shardid.ByID(row.ID)).Transaction(func(tx *gorm.DB) error {
				if err := tx.Model(&LcValue{ID: row.ID}).Update("val", 100+i).Error; err != nil {
					return fmt.Errorf("the update before the cut: %w", err)
				}
				proxy.cutAll(0)
				return nil
			})
			if !errors.Is(err, shardid.ErrShardUnavailable) || !strings.Contains(err.Error(), "gone") {
				t.Errorf("a commit on a lost connection: %v, want ErrShardUnavailable naming gone", err)
			}
			must(t, db.Clauses(shardid.ByID(row.ID)).Transaction(func(tx *gorm.DB) error {
				return tx.Model(&LcValue{ID: row.ID}).Update("val", 1).Error
			}))
		}
	})
}

// A write whose connection is cut as its UPDATE or its COMMIT is sent, or
// right after, fails, if it fails, with ErrShardUnavailable naming the
// database (PostgreSQL's pgx says "conn closed").
func TestAWriteWhoseConnectionIsCutMidwayIsUnavailableAndNamed(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		db, proxy, row := lostConnectionRig(t, b)
		for _, text := range []string{"UPDATE", "COMMIT", "commit"} {
			for _, after := range []bool{false, true} {
				must(t, db.Model(&LcValue{ID: row.ID}).Update("val", 5).Error)
				proxy.arm(text, after, 0)
				err := db.Model(&LcValue{ID: row.ID}).Update("val", 6).Error
				proxy.calm()
				if err != nil && (!errors.Is(err, shardid.ErrShardUnavailable) || !strings.Contains(err.Error(), "gone")) {
					t.Errorf("cut at %q (after it: %v): %v, want ErrShardUnavailable naming gone", text, after, err)
				}
			}
		}
	})
}

// A statement whose context ends while its SQL is still being sent (the
// server does not read it in time) fails with the context's error, as
// without the plugin, and not as a lost connection: pgx reports the
// deadline it set on the connection as a network timeout.
func TestAStatementWhoseContextEndsWhileSendingFailsWithTheContext(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		db, proxy, row := lostConnectionRig(t, b)
		proxy.holdRequests(5 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		long := "'" + strings.Repeat("x", 32<<20) + "' <> ''" // more than the sockets between hold
		err := db.WithContext(ctx).Clauses(shardid.ByID(row.ID)).Exec("UPDATE lc_values SET val = 3 WHERE " + long).Error
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, shardid.ErrShardUnavailable) {
			t.Errorf("a write whose deadline passed while it was sent: %.300v, want context.DeadlineExceeded and not ErrShardUnavailable", err)
		}
	})
}
