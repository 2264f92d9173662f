package integration

import (
	"context"
	"testing"
	"time"

	"github.com/shardid/shardid"
)

// TestMoveFreezeWaitsForATransactionAcrossShards: a transaction across
// shards that wrote a row of a range being moved holds the move's freeze
// until it commits (its branch holds the fence row the triggers read); the
// move then carries its write.
func TestMoveFreezeWaitsForATransactionAcrossShards(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		users := r.seedUsers(t, 50)
		inCatchUp, goOn := make(chan struct{}), make(chan struct{})
		frozen := make(chan time.Time, 1)
		moved := make(chan error, 1)
		go func() {
			first := true
			_, err := r.p.Move(context.Background(), shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels,
				Progress: func(p shardid.MoveProgress) {
					switch {
					case p.Phase == shardid.PhaseCatchUp && first:
						first = false
						close(inCatchUp)
						<-goOn
					case p.Step == "frozen":
						frozen <- time.Now()
					}
				}})
			moved <- err
		}()
		select {
		case <-inCatchUp:
		case err := <-moved:
			t.Fatalf("the move ended before its catch-up: %v", err)
		}
		tx := r.db.Clauses(shardid.AcrossShards()).Begin()
		must(t, tx.Error)
		must(t, tx.Model(&MvUser{ID: users[0]}).Update("name", "in a transaction across shards").Error)
		close(goOn)
		select {
		case at := <-frozen:
			t.Fatalf("the range froze at %v while a transaction's branch on it was open", at)
		case <-time.After(time.Second):
		}
		committed := time.Now()
		must(t, tx.Commit().Error)
		if err := <-moved; err != nil {
			t.Fatalf("the move after the transaction committed: %v", err)
		}
		if at := <-frozen; at.Before(committed) {
			t.Fatalf("the range froze at %v, before the transaction committed at %v", at, committed)
		}
		var got MvUser
		must(t, r.target.First(&got, users[0]).Error)
		if got.Name != "in a transaction across shards" {
			t.Fatalf("the target has %q, not the transaction's write", got.Name)
		}

	})
}
