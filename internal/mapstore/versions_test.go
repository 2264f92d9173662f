package mapstore

import (
	"context"
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
