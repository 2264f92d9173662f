package shardid

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPluginMethodsAfterCloseSayThePluginIsClosed: after Close, every
// method of the plugin that needs its databases (the migrator, moves, their
// listings, the audit, the map's refresh, recovery, a map swap) fails with
// ErrPluginNotOpen saying it is closed, as Ping does, not with
// database/sql's "database is closed" of a pool Close closed, which reads
// as if the application's own database were.
func TestPluginMethodsAfterCloseSayThePluginIsClosed(t *testing.T) {
	db, p, _, _ := routedOverN(t, 2, Config{Log: quiet}, &revUser{})
	must(t, db.Create(&revUser{Name: "a"}).Error)
	must(t, p.Close())
	ctx := t.Context()
	calls := map[string]func() error{
		"Migrator":    func() error { return p.Migrator(db).CreateTable(&revPlain{}) },
		"AutoMigrate": func() error { return p.AutoMigrate(db, &revPlain{}) },
		"Move": func() error {
			_, err := p.Move(ctx, Move{Logical: Range{From: 0, To: 1}, To: "s1"})
			return err
		},
		"CancelMove":          func() error { return p.CancelMove(ctx, Range{From: 0, To: 1}) },
		"CleanupMove":         func() error { return p.CleanupMove(ctx, Range{From: 0, To: 1}) },
		"Moves":               func() error { _, err := p.Moves(ctx); return err },
		"Processes":           func() error { _, err := p.Processes(ctx); return err },
		"Audit":               func() error { _, err := p.Audit(ctx); return err },
		"RefreshMap":          func() error { _, err := p.RefreshMap(ctx); return err },
		"RecoverTransactions": func() error { return p.RecoverTransactions(ctx) },
		"SwapShardMap":        func() error { return p.SwapShardMap(p.ShardMap()) },
		"Ping":                func() error { _, err := p.Ping(ctx); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrPluginNotOpen) || !strings.Contains(err.Error(), "closed") || strings.Contains(err.Error(), "sql: database is closed") {
			t.Errorf("%s after Close: %v; want ErrPluginNotOpen saying the plugin is closed", name, err)
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
}

// TestAMoveThePluginIsClosedUnderSaysSo: a Move under way when the plugin
// is closed (a pod's shutdown) ends, without holding Close, with
// ErrPluginNotOpen saying the plugin was closed while it ran, rather than
// database/sql's "database is closed" of the pools Close closed under it.
func TestAMoveThePluginIsClosedUnderSaysSo(t *testing.T) {
	db, p, _, phys := routedOverN(t, 2, Config{Log: quiet}, &revUser{})
	rows := make([]revUser, 300)
	for i := range rows {
		must(t, db.Clauses(OnShard(i%64)).Create(&rows[i]).Error)
	}
	var chunks atomic.Int64
	done := make(chan error, 1)
	go func() {
		_, err := p.Move(context.Background(), Move{Logical: Range{From: 0, To: 63}, To: phys[1].Name, ChunkSize: 5, Throttle: 20 * time.Millisecond,
			Progress: func(MoveProgress) { chunks.Add(1) }})
		done <- err
	}()
	for deadline := time.Now().Add(20 * time.Second); chunks.Load() < 3; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the move copied nothing")
		}
	}
	must(t, p.Close())
	select {
	case err := <-done:
		if !errors.Is(err, ErrPluginNotOpen) || !strings.Contains(err.Error(), "closed while it ran") {
			t.Errorf("a Move the plugin was closed under: %v; want ErrPluginNotOpen saying it was closed while the move ran", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the Move did not end after Close")
	}
}

type closedTwiceFlake struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Name string
}

// TestClosesCalledAtOnceReleaseEveryLease: Close called from two places at
// once (a signal handler and a deferred call) returns nil to both, and the
// snowflake leases are released on every database: neither call closes the
// pools while the other still releases the leases on them.
func TestClosesCalledAtOnceReleaseEveryLease(t *testing.T) {
	for round := range 3 {
		db, p, direct, _ := routedOverN(t, 3, Config{Log: quiet}, &closedTwiceFlake{})
		for range 12 {
			must(t, db.Create(&closedTwiceFlake{Name: "a"}).Error)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if err := p.Close(); err != nil {
					t.Errorf("round %d: a Close beside others: %v", round, err)
				}
			})
		}
		wg.Wait()
		for k, d := range direct {
			var held int64
			must(t, d.Raw("SELECT count(*) FROM shardid_workers WHERE expires_at <> 0").Scan(&held).Error)
			if held != 0 {
				t.Errorf("round %d: %d worker leases still held on s%d after Close", round, held, k)
			}
		}
	}
}
