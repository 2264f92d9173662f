package mover

import "testing"

// TestCaughtUp: the catch-up ends below CatchUpBelow, or once the backlog
// stops shrinking within steadyBacklog; a backlog that shrinks, or that is
// larger than that, is replayed on.
func TestCaughtUp(t *testing.T) {
	for _, c := range []struct {
		backlog, previous, below int64
		want                     bool
	}{
		{150, -1, 200, true},            // small from the start
		{500, -1, 200, false},           // the first round: not known to be steady
		{500, 600, 200, false},          // shrinking
		{500, 480, 200, true},           // writers keep pace: freeze
		{500, 500, 200, true},           // steady
		{1500, 1400, 200, false},        // above the bound: the freeze would be long
		{steadyBacklog, 900, 200, true}, // at the bound
		{0, 5, 1, true},
		{3, 5, 1, false},
	} {
		if got := caughtUp(c.backlog, c.previous, c.below); got != c.want {
			t.Errorf("caughtUp(%d, %d, %d) = %v, want %v", c.backlog, c.previous, c.below, got, c.want)
		}
	}
}
