package strategies

import (
	"context"
	"path/filepath"
	"testing"
)

// The segment's tests on SQLite, MariaDB and PostgreSQL are in the
// integration module's strategies package; this one reads a block inside.

// A caller that loaded the current block before Forget gets no value from it
// after: Forget retires the block, not only the pointer to it.
func TestSegmentForgetRetiresTheBlockCallersHold(t *testing.T) {
	target := sqliteTarget(t)
	target.Table = "seg_forget"
	s, err := NewSegment(Layout{}, SegmentOptions{InitialStep: 100, MinStep: 100, MaxStep: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Generate(context.Background(), target, []int{5}, make([]int64, 1)); err != nil {
		t.Fatal(err)
	}
	var held *segmentBlock
	s.sequences.Range(func(_, q any) bool {
		held = q.(*segmentSequence).current.Load()
		return false
	})
	if held == nil || held.left() == 0 {
		t.Fatal("no block with values left")
	}
	s.Forget(target.Name)
	if _, got, _ := held.take(1); got != 0 {
		t.Fatal("a caller that loaded the block before Forget still got a value from it after")
	}
}

// A teardown that drops shardid_segments while a process holds a block:
// once the processes prepare again, another process reserves above that
// block, not from 0, and no value is handed out twice.
func TestSegmentTableMadeAgainKeepsTheBlocksHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ids.db")
	first, second := sqliteTargetAt(t, path), sqliteTargetAt(t, path)
	first.Table, second.Table = "seg_again", "seg_again"
	open := func() *Segment { // no block fetched ahead, which would hide a counter made again
		s, err := NewSegment(Layout{}, SegmentOptions{InitialStep: 100, MinStep: 100, MaxStep: 100, PrefetchAt: 0.99})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	held, other := open(), open()
	ctx := context.Background()
	seen := map[int64]bool{}
	take := func(s *Segment, target Target) {
		ids := make([]int64, 10)
		if err := s.Generate(ctx, target, []int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, ids); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("ID %d handed out twice", id)
			}
			seen[id] = true
		}
	}
	take(held, first)
	if _, err := first.DB.ExecContext(ctx, `DROP TABLE "`+segmentTable+`"`); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		s      *Segment
		target Target
	}{{held, first}, {other, second}} {
		if err := p.s.Prepare(ctx, p.target); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		take(other, second)
		take(held, first)
	}
}
