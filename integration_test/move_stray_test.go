package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardid/shardid"
)

// TestMoveRefusesATargetHoldingRowsOfTheRange: a row of the range written on
// the target behind the plugin's back is no move's copy. The move refuses to
// start, naming it; Audit reports it as a stray, and nothing deletes it. Once
// it is removed the move goes through.
func TestMoveRefusesATargetHoldingRowsOfTheRange(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		r.seedUsers(t, 240)
		stray := r.p.Layout().Compose(time.Now().Add(-time.Hour), movingRange.From+7, 999)
		must(t, r.target.Create(&MvUser{ID: stray, Name: "stray"}).Error)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		target := b.name + "-target"
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: target, Models: moveModels})
		if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "mv_users") || !strings.Contains(err.Error(), target) || !strings.Contains(err.Error(), fmt.Sprint(stray)) {
			t.Fatalf("a move to a target holding a row of the range: %v; want ErrMoveInvalid naming mv_users, %s and %d", err, target, stray)
		}
		moves, err := r.p.Moves(ctx)
		must(t, err)
		for _, st := range moves {
			if st.Phase != shardid.PhaseCancelled && st.Phase != shardid.PhaseCleaned {
				t.Errorf("the refused move is recorded as under way: %+v", st)
			}
		}
		found, err := r.p.Audit(ctx)
		must(t, err)
		if len(found) != 1 || found[0].LeftByMove || found[0].Database != target || !slices.Contains(found[0].Keys, any(stray)) {
			t.Errorf("audit after the refused move: %+v; want user %d on %s alone, a stray", found, stray, target)
		}
		if err := r.p.CancelMove(ctx, movingRange, moveModels...); !errors.Is(err, shardid.ErrMoveInvalid) {
			t.Errorf("cancelling the refused move: %v; want ErrMoveInvalid, no move under way", err)
		}
		var kept MvUser
		must(t, r.target.First(&kept, stray).Error)
		if n := countIn(t, r.source, "mv_users", true, r.p.Layout()); n != 240 {
			t.Errorf("the source holds %d users of the range, want 240", n)
		}
		must(t, r.target.Delete(&MvUser{ID: stray}).Error)
		r.move(t, shardid.Move{})
		if n := countIn(t, r.target, "mv_users", true, r.p.Layout()); n != 240 {
			t.Errorf("the target holds %d users of the range after the move, want 240", n)
		}
	})
}
