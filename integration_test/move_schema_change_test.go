package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// MvMemo loses its column Note during a move: MvMemoTrimmed is the same
// table without it.
type (
	MvMemo struct {
		ID   int64 `shardid:"strategy:snowflake"`
		Body string
		Note string `gorm:"size:32"`
	}
	MvMemoTrimmed struct {
		ID   int64 `shardid:"strategy:snowflake"`
		Body string
	}
)

func (MvMemoTrimmed) TableName() string { return "mv_memos" }

// memoRows is how many memos of the moving range the tests write before
// the move: more than one chunk of 50, and a catch-up backlog of at least
// CatchUpBelow (200) once each is updated.
const memoRows = 300

// newMemoRig is a move rig with memoRows memos of the moving range on the
// source.
func newMemoRig(t *testing.T, b backend) (*moveRig, []int64) {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []int{moveSource, moveTarget} {
		must(t, direct(t, b, dir)[k].Migrator().DropTable("mv_memos"))
	}
	r := newMoveRig(t, b, dir)
	t.Cleanup(func() { // other move tests' moves of every migrated table would carry it
		for _, db := range []*gorm.DB{r.source, r.target} {
			_ = db.Migrator().DropTable("mv_memos")
		}
	})
	must(t, r.p.AutoMigrate(r.db, &MvMemo{}))
	memos := make([]int64, memoRows)
	for i := range memos {
		m := MvMemo{Body: "m", Note: "n"}
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i%50)).Create(&m).Error)
		memos[i] = m.ID
	}
	return r, memos
}

// moveDroppingNote runs the move of the moving range and drops the column
// note of mv_memos through the plugin's migrator at the first progress
// report of step in phase; each memo is updated at the first chunk of
// mv_memos, so that the catch-up has a backlog to replay. It returns the
// move's error.
func moveDroppingNote(t *testing.T, r *moveRig, memos []int64, phase, step string) error {
	t.Helper()
	updated, dropped := false, false
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: r.b.name + "-target", ChunkSize: 50, Progress: func(p shardid.MoveProgress) {
		if !updated && p.Table == "mv_memos" && p.Step == "chunk" {
			updated = true
			for _, id := range memos {
				must(t, r.db.Model(&MvMemo{ID: id}).Update("body", "updated").Error)
			}
		}
		if dropped || p.Phase != phase || p.Step != step || (phase == shardid.PhaseCopy && p.Table != "mv_memos") {
			return
		}
		dropped = true
		must(t, r.p.Migrator(r.db).DropColumn(&MvMemo{}, "Note"))
	}})
	if !dropped {
		t.Fatalf("the move never reported %s %s: no column was dropped during it (its error: %v)", phase, step, err)
	}
	return err
}

// wantColumnDropped fails the test unless err is the move's check failing
// on the column dropped from mv_memos.
func wantColumnDropped(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, shardid.ErrMoveVerify) || !strings.Contains(err.Error(), "mv_memos") || !strings.Contains(err.Error(), "note") {
		t.Fatalf("a move during which a column was dropped: %v; want ErrMoveVerify naming mv_memos and note", err)
	}
}

// writeAfterFailure writes a memo of the moving range and updates one,
// within a deadline shorter than a freeze's lease: the source must take
// them at once. It returns the new memo's ID.
func writeAfterFailure(t *testing.T, r *moveRig, existing int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	db := r.db.WithContext(ctx)
	must(t, db.Model(&MvMemoTrimmed{ID: existing}).Update("body", "after the failure").Error)
	m := MvMemoTrimmed{Body: "after the failure"}
	must(t, db.Clauses(shardid.OnShard(movingRange.From+7)).Create(&m).Error)
	var got []MvMemoTrimmed
	must(t, r.source.Where("id IN ?", []int64{existing, m.ID}).Find(&got).Error)
	taken := 0
	for _, g := range got {
		if g.Body == "after the failure" {
			taken++
		}
	}
	if taken != 2 {
		t.Fatalf("the source holds %+v after the writes that followed the failed move", got)
	}
	return m.ID
}

// rangeMemos counts the rows of each memo of the moving range on a
// physical database, opened directly.
func rangeMemos(t *testing.T, r *moveRig, db *gorm.DB) map[int64]int {
	t.Helper()
	var ids []int64
	must(t, db.Table("mv_memos").Pluck("id", &ids).Error)
	seen := map[int64]int{}
	for _, id := range ids {
		if s := r.p.Layout().Shard(id); s >= movingRange.From && s <= movingRange.To {
			seen[id]++
		}
	}
	return seen
}

// TestMoveFailsItsCheckWhenAColumnIsDroppedDuringIt: a column the plugin's
// migrator drops while the move copies or catches up, which the copy's and
// the replay's SQL still name, fails the move with ErrMoveVerify naming
// the table and the column (not the driver's unknown column); the source
// takes the range's writes on, and the move run again copies the table
// anew, every memo onto the target once.
func TestMoveFailsItsCheckWhenAColumnIsDroppedDuringIt(t *testing.T) {
	for _, at := range []struct{ phase, step string }{
		{shardid.PhaseCopy, "chunk"},
		{shardid.PhaseCatchUp, "round"},
	} {
		t.Run(at.phase, func(t *testing.T) {
			forEachServer(t, func(t *testing.T, b backend) {
				r, memos := newMemoRig(t, b)
				wantColumnDropped(t, moveDroppingNote(t, r, memos, at.phase, at.step))
				memos = append(memos, writeAfterFailure(t, r, memos[0]))

				r.move(t, shardid.Move{Models: []any{}}) // run again
				onTarget := rangeMemos(t, r, r.target)
				for _, id := range memos {
					if onTarget[id] != 1 {
						t.Errorf("memo %d is on the target %d times; want once", id, onTarget[id])
					}
				}
				if len(onTarget) != len(memos) {
					t.Errorf("the target holds %d memos of the range; want %d", len(onTarget), len(memos))
				}
				var updated int64
				must(t, r.target.Model(&MvMemoTrimmed{}).Where("body <> ?", "m").Count(&updated).Error)
				if updated != int64(len(memos)) {
					t.Errorf("the target holds %d memos with their writes during and after the move; want %d", updated, len(memos))
				}
			})
		})
	}
}

// TestMoveCancelledAfterAColumnDroppedDuringTheCopy: the move that failed
// its check on a dropped column cancels cleanly: the target keeps none of
// the range, the source every memo and no change log.
func TestMoveCancelledAfterAColumnDroppedDuringTheCopy(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, memos := newMemoRig(t, b)
		wantColumnDropped(t, moveDroppingNote(t, r, memos, shardid.PhaseCopy, "chunk"))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		must(t, r.p.CancelMove(ctx, movingRange))
		if n := len(rangeMemos(t, r, r.target)); n != 0 {
			t.Errorf("the target holds %d memos of the range after the cancel", n)
		}
		if n := len(rangeMemos(t, r, r.source)); n != len(memos) {
			t.Errorf("the source holds %d memos of the range after the cancel; want %d", n, len(memos))
		}
		writeAfterFailure(t, r, memos[1])
		var changes int64
		must(t, r.source.Table("shardid_move_changes").Count(&changes).Error)
		if changes != 0 {
			t.Errorf("the source still logs changes after the cancel: %d", changes)
		}
		moves, err := r.p.Moves(ctx)
		must(t, err)
		if len(moves) != 1 || moves[0].Phase != shardid.PhaseCancelled {
			t.Errorf("moves after the cancel: %s", fmt.Sprint(moves))
		}
	})
}
