package mapstore

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/shardid/shardid/shardrouter"
)

// TestWriteLatest: a version written reads back whole, and a second writer
// of the same version fails with a duplicate key, changing nothing.
func TestWriteLatest(t *testing.T) {
	s, ctx := openStore(t), context.Background()
	if latest, err := s.Latest(ctx); err != nil || latest != nil {
		t.Fatalf("Latest of an empty table: %v, %v; want nil, nil", latest, err)
	}
	m, err := shardrouter.NewMap(8192, []shardrouter.Physical{
		{Name: "a", Logical: []shardrouter.Range{{From: 0, To: 99}, {From: 200, To: 8191}}},
		{Name: "b", Logical: []shardrouter.Range{{From: 100, To: 199}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := MapOf(m, 2)
	want.Floors = []Floor{{Logical: shardrouter.Range{From: 100, To: 199}, Tick: 42}}
	want.Copies = []Physical{{Name: "a", Logical: []shardrouter.Range{{From: 100, To: 199}}}}
	if err := s.Write(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Latest(ctx)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Latest: %+v, %v; want %+v", got, err, want)
	}
	if err := s.Write(ctx, &Map{Version: 2}); err == nil || !DuplicateKey(err) {
		t.Fatalf("writing version 2 again: %v, want a duplicate key", err)
	}
}

func TestRanges(t *testing.T) {
	got := Ranges([]int{0, 1, 2, 5, 7, 8})
	want := []shardrouter.Range{{From: 0, To: 2}, {From: 5, To: 5}, {From: 7, To: 8}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Ranges: %v, want %v", got, want)
	}
	if got := Ranges(nil); got != nil {
		t.Errorf("Ranges(nil): %v, want nil", got)
	}
}

// TestWriteWithMoveIsOneTransaction: the map version and the move's record
// are written together, or neither is: a version another writer took first
// leaves the record as it was, and a record that cannot be written leaves
// the map as it was.
func TestWriteWithMoveIsOneTransaction(t *testing.T) {
	s, ctx := openStore(t), context.Background()
	if err := s.PrepareMoves(ctx); err != nil {
		t.Fatal(err)
	}
	r := shardrouter.Range{From: 100, To: 199}
	if err := s.SaveMove(ctx, &MoveState{Logical: r, From: "a", To: "b", Phase: "cutover"}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteWithMove(ctx, &Map{Version: 2}, &MoveState{Logical: r, From: "a", To: "b", Phase: "serving", MapVersion: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteWithMove(ctx, &Map{Version: 2}, &MoveState{Logical: r, From: "a", To: "b", Phase: "lost", MapVersion: 3}); !DuplicateKey(err) {
		t.Fatalf("writing version 2 again: %v, want a duplicate key", err)
	}
	st, err := s.LoadMove(ctx, r)
	if err != nil || st.Phase != "serving" || st.MapVersion != 2 {
		t.Fatalf("the move's record: %+v, %v; want serving at version 2, as written with the map", st, err)
	}
	if _, err := s.Exec(ctx, "DROP TABLE "+movesTable); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteWithMove(ctx, &Map{Version: 3}, &MoveState{Logical: r, Phase: "serving", MapVersion: 3}); err == nil {
		t.Fatal("a record that cannot be written was written")
	}
	if latest, err := s.Latest(ctx); err != nil || latest.Version != 2 {
		t.Fatalf("after a record that failed the map is at %+v, %v; want version 2: the map written with it rolls back", latest, err)
	}
}

// TestABegunCancelRefusesTheMapThatEndsTheMove: once a cancel began, the
// map write that would end the move is refused, even after the mover saved
// its state again; a cancel that finds the latest map ending the move is
// refused instead, changing nothing.
func TestABegunCancelRefusesTheMapThatEndsTheMove(t *testing.T) {
	s, ctx := openStore(t), context.Background()
	if err := s.PrepareMoves(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, &Map{Version: 1}); err != nil {
		t.Fatal(err)
	}
	r := shardrouter.Range{From: 100, To: 199}
	st := &MoveState{Logical: r, From: "a", To: "b", Phase: "cutover"}
	if err := s.SaveMove(ctx, st); err != nil {
		t.Fatal(err)
	}
	served := func(m *Map) (bool, error) { return m.Version >= 2, nil }
	if err := s.BeginCancel(ctx, r, served); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveMove(ctx, st); err != nil { // a run that lost the move's lock
		t.Fatal(err)
	}
	if err := s.WriteWithMove(ctx, &Map{Version: 2}, &MoveState{Logical: r, From: "a", To: "b", Phase: "serving", MapVersion: 2}); !errors.Is(err, ErrCancelling) {
		t.Fatalf("the map write after a cancel began: %v, want ErrCancelling", err)
	}
	if latest, err := s.Latest(ctx); err != nil || latest.Version != 1 {
		t.Fatalf("the map is at %+v, %v; want version 1", latest, err)
	}
	st.Phase = "cancelled"
	if err := s.SaveMove(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteWithMove(ctx, &Map{Version: 2}, &MoveState{Logical: r, Phase: "serving", MapVersion: 2}); !errors.Is(err, ErrCancelling) {
		t.Fatalf("the map write after the cancel ended: %v, want ErrCancelling", err)
	}
	next := shardrouter.Range{From: 200, To: 299}
	if err := s.SaveMove(ctx, &MoveState{Logical: next, Phase: "cutover"}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteWithMove(ctx, &Map{Version: 2}, &MoveState{Logical: next, Phase: "serving", MapVersion: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginCancel(ctx, next, served); !errors.Is(err, ErrServed) {
		t.Fatalf("a cancel of a move the map ended: %v, want ErrServed", err)
	}
	if st, err := s.LoadMove(ctx, next); err != nil || st.Phase != "serving" {
		t.Fatalf("the refused cancel left %+v, %v", st, err)
	}
}
