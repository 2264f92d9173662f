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
		d := b.physical(t, dir, 0)
		one, other := mapStoreOn(t, d), mapStoreOn(t, b.physical(t, dir, 1))
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

// TestMoveOfAVanishedRunShowsStoppedSoon: a run whose host vanished (a
// crash, a network cut: its connection to the plugin's database left open
// and silent at the server's end) holds its move's lock no longer than
// mapstore.LockSessionIdle: the move is then shown stopped and can be run
// again or cancelled, rather than shown running, and refused, until the
// server's own idle timeout (MariaDB's wait_timeout, 8 hours by default;
// PostgreSQL's none) or its TCP keepalive.
func TestMoveOfAVanishedRunShowsStoppedSoon(t *testing.T) {
	defer func(d time.Duration) { mapstore.LockSessionIdle = d }(mapstore.LockSessionIdle)
	mapstore.LockSessionIdle = 3 * time.Second
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		viaProxy, proxy := physicalViaChaos(t, b, -1)
		vanishing, watcher := mapStoreOn(t, viaProxy), mapStoreOn(t, b.dialector(t, dir))
		ctx, r := context.Background(), shardrouter.Range{From: 100, To: 199}
		unlock, err := vanishing.LockMove(ctx, r)
		must(t, err)
		if running, err := watcher.MoveRunning(ctx, r); err != nil || !running {
			t.Fatalf("MoveRunning while the run holds the lock: %v, %v; want true", running, err)
		}
		// The run's host vanishes: nothing more reaches the server from it,
		// and the server's end of its connection stays open.
		proxy.holdRequests(time.Hour)
		proxy.stall(time.Hour)
		start := time.Now()
		for {
			running, err := watcher.MoveRunning(ctx, r)
			must(t, err)
			if !running {
				break
			}
			if time.Since(start) > mapstore.LockSessionIdle+10*time.Second {
				t.Fatalf("the move of a run whose host vanished %v ago is still shown running, and its lock held", time.Since(start).Round(time.Second))
			}
			time.Sleep(200 * time.Millisecond)
		}
		again, err := watcher.LockMove(ctx, r)
		if err != nil {
			t.Fatalf("a second run, once the vanished one shows stopped: %v", err)
		}
		again()
		proxy.shutdown() // the vanished run's connections end, so that its unlock returns
		unlock()
	})
}

// TestMoveLockOfALiveRunOutlastsItsSilenceBound: a run that says nothing on
// its lock's session for longer than mapstore.LockSessionIdle (a long copy
// on the other databases) holds its lock still, and the session goes back
// to its pool with the server's own idle timeout.
func TestMoveLockOfALiveRunOutlastsItsSilenceBound(t *testing.T) {
	defer func(d time.Duration) { mapstore.LockSessionIdle = d }(mapstore.LockSessionIdle)
	mapstore.LockSessionIdle = 2 * time.Second
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		sqlDB, err := db.DB()
		must(t, err)
		t.Cleanup(func() { _ = sqlDB.Close() })
		sqlDB.SetMaxOpenConns(1) // the lock's session is the one the pool gets back
		show, want := "SELECT @@SESSION.wait_timeout", "SELECT @@GLOBAL.wait_timeout"
		if b.name == "postgres" {
			show, want = "SHOW idle_session_timeout", "SELECT reset_val FROM pg_settings WHERE name = 'idle_session_timeout'"
		}
		var before string
		must(t, sqlDB.QueryRow(want).Scan(&before))
		s := mapstore.New(sqlDB, db.Dialector.Name(), "shardid_shard_map", time.Second)
		ctx, r := context.Background(), shardrouter.Range{From: 200, To: 299}
		unlock, held, err := s.LockMoveHeld(ctx, r)
		must(t, err)
		time.Sleep(3 * mapstore.LockSessionIdle)
		if err := held(ctx); err != nil {
			t.Fatalf("a live run silent for %v lost its lock: %v", 3*mapstore.LockSessionIdle, err)
		}
		unlock()
		var after string
		must(t, sqlDB.QueryRow(show).Scan(&after))
		if b.name == "postgres" {
			must(t, sqlDB.QueryRow("SELECT setting FROM pg_settings WHERE name = 'idle_session_timeout'").Scan(&after))
		}
		if after != before {
			t.Fatalf("the lock's session went back to its pool with an idle timeout of %s, want the server's %s", after, before)
		}
	})
}

// mapStoreOn opens the shared map's store on d, closed when the test ends.
func mapStoreOn(t *testing.T, d gorm.Dialector) *mapstore.Store {
	t.Helper()
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
	must(t, err)
	sqlDB, err := db.DB()
	must(t, err)
	t.Cleanup(func() { _ = sqlDB.Close() })
	return mapstore.New(sqlDB, d.Name(), "shardid_shard_map", time.Second)
}
