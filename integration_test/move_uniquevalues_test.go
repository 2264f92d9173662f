package integration

import (
	"context"
	"testing"
	"time"

	"github.com/shardid/shardid"
)

// MvMember is a sharded table with a unique index besides its key.
type MvMember struct {
	ID    int64  `shardid:"strategy:snowflake"`
	Email string `gorm:"size:64;uniqueIndex"`
}

// TestMoveCarriesAUniqueValueTakenOverFromADeletedRow: while a move runs,
// a member of the range is deleted and another made with its email (in
// the copy, after the first was copied; or in the catch-up). The target's
// copy of the deleted account holds the email until the change log's delete
// reaches it: the new account's write waits for that delete instead of
// failing the move on the unique index, again each time it is run.
func TestMoveCarriesAUniqueValueTakenOverFromADeletedRow(t *testing.T) {
	for _, phase := range []string{shardid.PhaseCopy, shardid.PhaseCatchUp} {
		t.Run(phase, func(t *testing.T) {
			withForeignKey(t, []any{&MvMember{}}, "", func(t *testing.T, b backend, r *moveRig, cascade bool) {
				if cascade {
					t.Skip("no foreign key")
				}
				first := MvMember{Email: "taken@example.com"}
				must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&first).Error)
				for i := 0; i < 3; i++ {
					must(t, r.db.Clauses(shardid.OnShard(movingRange.From+1+i)).Create(&MvMember{Email: "other" + string(rune('a'+i)) + "@example.com"}).Error)
				}
				var second MvMember
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				move := shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 1, CatchUpBelow: 1,
					Models: append([]any{&MvMember{}}, moveModels...),
					Progress: func(p shardid.MoveProgress) {
						if second.ID != 0 || p.Phase != phase || phase == shardid.PhaseCopy && p.Table != "mv_members" {
							return
						}
						must(t, r.db.Delete(&MvMember{}, first.ID).Error)
						second = MvMember{Email: first.Email}
						must(t, r.db.Clauses(shardid.OnShard(movingRange.From+10)).Create(&second).Error)
					}}
				_, err := r.p.Move(ctx, move)
				if second.ID == 0 {
					t.Fatal("the account was not made again during the move")
				}
				if !movedOrRunAgain(t, ctx, r, move, err) {
					return
				}
				var ids []int64
				must(t, r.target.Raw("SELECT id FROM mv_members WHERE email = ?", first.Email).Scan(&ids).Error)
				if len(ids) != 1 || ids[0] != second.ID {
					t.Errorf("the target's accounts with the email: %v, want only %d", ids, second.ID)
				}
				compareSides(t, r, []fpTable{{"mv_members", "id"}})
				must(t, r.p.CleanupMove(ctx, movingRange))
			})
		})
	}
}

// TestMoveCarriesAUniqueValuePassedOnBetweenRows: while a move runs, a
// member of the range takes a new email and another takes the one it gave
// up. The replay reads both again and may write the second first, while
// the target's copy of the first holds the email still: the writes go in
// any order that lets each through, not failing the move on every run.
func TestMoveCarriesAUniqueValuePassedOnBetweenRows(t *testing.T) {
	withForeignKey(t, []any{&MvMember{}}, "", func(t *testing.T, b backend, r *moveRig, cascade bool) {
		if cascade {
			t.Skip("no foreign key")
		}
		members := make([]MvMember, 4)
		for i := range members {
			members[i] = MvMember{Email: "member" + string(rune('a'+i)) + "@example.com"}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i)).Create(&members[i]).Error)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		passed := false
		move := shardid.Move{Logical: movingRange, To: b.name + "-target", CatchUpBelow: 1,
			Models: append([]any{&MvMember{}}, moveModels...),
			Progress: func(p shardid.MoveProgress) {
				if passed || p.Phase != shardid.PhaseCatchUp {
					return
				}
				passed = true
				// the last gives its email up to the first, which gives its own up to the second
				last, first := members[3].Email, members[0].Email
				must(t, r.db.Model(&members[3]).Update("email", "new@example.com").Error)
				must(t, r.db.Model(&members[0]).Update("email", last).Error)
				must(t, r.db.Model(&members[1]).Update("email", first).Error)
			}}
		_, err := r.p.Move(ctx, move)
		if !passed {
			t.Fatal("no email was passed on during the move")
		}
		if !movedOrRunAgain(t, ctx, r, move, err) {
			return
		}
		compareSides(t, r, []fpTable{{"mv_members", "id"}})
		must(t, r.p.CleanupMove(ctx, movingRange))
	})
}

// movedOrRunAgain reports whether the move that ended with err moved the
// range, run again without its Progress if err says it failed (a failure
// of the test, as is one of the second run, after which it is cancelled).
func movedOrRunAgain(t *testing.T, ctx context.Context, r *moveRig, move shardid.Move, err error) bool {
	t.Helper()
	if err == nil {
		return true
	}
	t.Errorf("move: %v", err)
	move.Progress = nil
	if _, err := r.p.Move(ctx, move); err != nil {
		t.Errorf("the move run again: %v", err)
		must(t, r.p.CancelMove(ctx, movingRange))
		return false
	}
	return true
}
