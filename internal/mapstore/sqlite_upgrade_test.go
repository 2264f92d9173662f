package mapstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shardid/shardid/shardrouter"
)

// TestWriteWithMoveOnSQLiteBesideAnotherWriter: on an SQLite file in WAL
// mode, which another process writes (its heartbeat), the map write that
// ends a move reads the move's row, then writes: a transaction that read
// first cannot take the write lock once another connection committed
// (SQLITE_BUSY_SNAPSHOT, 517, which no busy timeout waits out), so it
// takes the write lock before it reads.
func TestWriteWithMoveOnSQLiteBesideAnotherWriter(t *testing.T) {
	dsn := "file:" + filepath.Join(t.TempDir(), "main.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	s, ctx := New(db, "sqlite", "shardid_shard_map", time.Second), context.Background()
	if err := s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.PrepareMoves(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec("CREATE TABLE beats (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = other.Exec("INSERT INTO beats (n) VALUES (1)")
			time.Sleep(100 * time.Microsecond)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for v := int64(1); v <= 150; v++ {
		r := shardrouter.Range{From: int(v), To: int(v)}
		if err := s.SaveMove(ctx, &MoveState{Logical: r, From: "a", To: "b", Phase: "cutover"}); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteWithMove(ctx, &Map{Version: v}, &MoveState{Logical: r, From: "a", To: "b", Phase: "serving", MapVersion: v}); err != nil {
			t.Fatalf("map version %d beside another writer: %v", v, err)
		}
	}
}
