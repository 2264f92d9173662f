package strategies

import (
	"context"
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
