package mapstore

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/shardid/shardid/shardrouter"
)

// TestSaveLoadMove: a move's state reads back, its cursor an int64 above
// 2^53 kept exactly; a save after the first updates the row.
func TestSaveLoadMove(t *testing.T) {
	s, ctx := openStore(t), context.Background()
	r := shardrouter.Range{From: 6144, To: 8191}
	if st, err := s.LoadMove(ctx, r); err != nil || st != nil {
		t.Fatalf("LoadMove of no move: %v, %v; want nil, nil", st, err)
	}
	const key = int64(1<<62 + 1)
	st := &MoveState{Logical: r, From: "a", To: "b", Phase: "copy", Tables: []string{"users"}, Cursors: map[string]any{"users": key}}
	for _, phase := range []string{"copy", "catch-up"} {
		st.Phase = phase
		if err := s.SaveMove(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.LoadMove(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != "catch-up" || got.To != "b" || got.Cursors["users"] != json.Number("4611686018427387905") {
		t.Errorf("LoadMove: %+v", got)
	}
	list, err := s.Moves(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("Moves: %v, %v; want one", list, err)
	}
	if err := s.DeleteMove(ctx, r); err != nil {
		t.Fatal(err)
	}
	if st, err := s.LoadMove(ctx, r); err != nil || st != nil {
		t.Errorf("LoadMove after DeleteMove: %v, %v", st, err)
	}
}

// TestLockMove: one run at a time holds a move's lock.
func TestLockMove(t *testing.T) {
	s, ctx := openStore(t), context.Background()
	r := shardrouter.Range{From: 1, To: 2}
	unlock, err := s.LockMove(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LockMove(ctx, r); err != ErrLocked {
		t.Errorf("a second LockMove: %v, want ErrLocked", err)
	}
	unlock()
	again, err := s.LockMove(ctx, r)
	if err != nil {
		t.Fatalf("LockMove after the release: %v", err)
	}
	again()
}

// TestLockMoveIsTheStoresOwn: the stores of two sets of shards (another map
// table, another database) lock a move of the same range at once.
func TestLockMoveIsTheStoresOwn(t *testing.T) {
	s, other, ctx := openStore(t), openStore(t), context.Background()
	r := shardrouter.Range{From: 0, To: 99}
	unlock, err := s.LockMove(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	unlockOther, err := other.LockMove(ctx, r)
	if err != nil {
		t.Fatalf("another database's LockMove of the same range: %v", err)
	}
	unlockOther()
	otherTable := New(s.DB(), "sqlite", "other_shard_map", s.Heartbeat())
	unlockTable, err := otherTable.LockMove(ctx, r)
	if err != nil {
		t.Fatalf("another map table's LockMove of the same range: %v", err)
	}
	unlockTable()
}
