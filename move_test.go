package shardid

import (
	"testing"

	"github.com/shardid/shardid/internal/mover"
)

// TestPhasesAreTheMovers: the phases Moves and MoveStats report are the
// words the mover records, each under its documented name.
func TestPhasesAreTheMovers(t *testing.T) {
	for _, c := range []struct{ plugin, mover string }{
		{PhasePrepare, mover.PhasePrepare},
		{PhaseCopy, mover.PhaseCopy},
		{PhaseCatchUp, mover.PhaseCatchUp},
		{PhaseCutover, mover.PhaseCutover},
		{PhaseServing, mover.PhaseServing},
		{PhaseCancelled, mover.PhaseCancelled},
		{PhaseCleaned, mover.PhaseCleaned},
	} {
		if c.plugin != c.mover {
			t.Errorf("phase %q is %q in the mover", c.plugin, c.mover)
		}
	}
}
