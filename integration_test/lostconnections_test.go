package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
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

// A one-shard statement whose deadline passes while the server's answers are
// held (at its BEGIN, its statement, or its COMMIT) fails with the context's
// error, whatever it is (a Create or Update in GORM's own transaction, a
// Delete, a First or Find, a Transaction on the shard), and the errors of its
// rollback or of the plugin's naming of the database added after it keep it:
// errors.Is(err, context.DeadlineExceeded), as operations.md promises. The
// Commit of a Transaction whose context ended before it fails with
// database/sql's sql.ErrTxDone, as without the plugin.
func TestOneShardStatementsWhoseDeadlinePassesFailWithTheDeadline(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		db, proxy, row := lostConnectionRig(t, b)
		count := shardid.Layout{}.ShardCount()
		on := db.Clauses(shardid.OnShard(count - 1))
		forms := []struct {
			name string
			run  func(ctx context.Context) error
		}{
			{"Create", func(ctx context.Context) error { return on.WithContext(ctx).Create(&LcValue{Val: 2}).Error }},
			{"Update", func(ctx context.Context) error {
				return db.WithContext(ctx).Model(&LcValue{ID: row.ID}).Update("val", 3).Error
			}},
			{"Delete", func(ctx context.Context) error {
				return db.WithContext(ctx).Delete(&LcValue{}, "id = ? AND val < 0", row.ID).Error
			}},
			{"First", func(ctx context.Context) error { var v LcValue; return db.WithContext(ctx).First(&v, row.ID).Error }},
			{"Find", func(ctx context.Context) error {
				var v []LcValue
				return db.WithContext(ctx).Clauses(shardid.ByID(row.ID)).Find(&v).Error
			}},
			{"Transaction", func(ctx context.Context) error {
				return db.WithContext(ctx).Clauses(shardid.ByID(row.ID)).Transaction(func(tx *gorm.DB) error {
					return tx.Model(&LcValue{ID: row.ID}).Update("val", 4).Error
				})
			}},
		}
		rng := rand.New(rand.NewPCG(uint64(len(b.name)), 60))
		for _, form := range forms {
			t.Run(form.name, func(t *testing.T) {
				failed, wrong := 0, 0
				for range 200 {
					proxy.stall(time.Duration(rng.IntN(30)) * time.Millisecond)
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+rng.IntN(25))*time.Millisecond)
					err := form.run(ctx)
					cancel()
					if err == nil {
						continue
					}
					failed++
					if !errors.Is(err, context.DeadlineExceeded) && !(form.name == "Transaction" && errors.Is(err, sql.ErrTxDone)) {
						wrong++
						if wrong <= 3 {
							t.Errorf("%s past its deadline: %.300v, want errors.Is(err, context.DeadlineExceeded)", form.name, err)
						}
					}
				}
				if wrong > 3 {
					t.Errorf("%d of %d failed statements in all had another error", wrong, failed)
				}
				if failed == 0 {
					t.Errorf("no statement failed: the answers were not held past the deadlines")
				}
				time.Sleep(50 * time.Millisecond)
			})
		}
	})
}

type LcSegment struct {
	ID  int64 `shardid:"strategy:segment"`
	Val int64
}

// A Create whose ID reservation (instagram's clock-sequence, a segment
// block) loses its connection as it is sent, or right after, fails, if it
// fails, with ErrShardUnavailable naming the database, as its INSERT would,
// and not with the driver's error alone.
func TestACreateWhoseIDReservationIsCutIsUnavailableAndNamed(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		db, proxy, _ := lostConnectionRig(t, b)
		for _, d := range direct(t, b, "")[:2] {
			must(t, d.Migrator().DropTable(&LcSegment{}))
			must(t, d.AutoMigrate(&LcSegment{}))
		}
		count := shardid.Layout{}.ShardCount()
		for _, c := range []struct {
			text string
			row  func() any
		}{{"shardid_clock", func() any { return &LcValue{Val: 7} }}, {"shardid_segments", func() any { return &LcSegment{Val: 7} }}} {
			for _, after := range []bool{false, true} {
				for range 3 {
					proxy.arm(c.text, after, 0)
					err := db.Clauses(shardid.OnShard(count - 1)).Create(c.row()).Error
					proxy.calm()
					if err != nil && (!errors.Is(err, shardid.ErrShardUnavailable) || !strings.Contains(err.Error(), "gone")) {
						t.Errorf("a Create whose %s statement was cut (after it: %v): %v, want ErrShardUnavailable naming gone", c.text, after, err)
					}
				}
			}
		}
	})
}
