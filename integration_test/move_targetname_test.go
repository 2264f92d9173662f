package integration

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/shardid/shardid"
)

// TestAMoveToAShardNameTheFenceCannotCarryIsRefusedBeforeAnythingChanges:
// the fence writes the target's name into its triggers' refusal, which
// carries letters, digits and _ . : - only; a move to a shard named
// otherwise is refused with ErrMoveInvalid naming it, leaving no move
// recorded, no table made on the target and the map as it was.
func TestAMoveToAShardNameTheFenceCannotCarryIsRefusedBeforeAnythingChanges(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		target := "eu west 2"
		r := newMoveRigWith(t, &moveRig{b: b, dir: t.TempDir(), names: []string{b.name + "-source", target}})
		must(t, r.target.Migrator().DropTable(moveModels...))
		version := r.p.MapVersion()
		_, err := r.p.Move(context.Background(), shardid.Move{Logical: movingRange, To: target, Models: moveModels})
		if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), strconv.Quote(target)) {
			t.Fatalf("a move to %q: %v; want ErrMoveInvalid naming it", target, err)
		}
		if r.target.Migrator().HasTable(&MvUser{}) {
			t.Errorf("the refused move made the table on the target")
		}
		if moves, err := r.p.Moves(context.Background()); err != nil || len(moves) != 0 {
			t.Errorf("moves after the refused one: %v, %v; want none", moves, err)
		}
		if v, err := r.p.RefreshMap(context.Background()); err != nil || v != version {
			t.Errorf("the map after the refused move: version %d (%v); want %d", v, err, version)
		}
	})
}
