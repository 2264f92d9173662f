package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardid/shardid"
)

// TestANewShardedTableWaitsForTheMoveToEnd: a move carries the sharded
// tables recorded when it began, so ids.AutoMigrate of a new sharded model
// during it, from the copy to its cleanup, is refused with nothing made (its
// rows of the range would stay on the source, unfenced, and be lost at the
// cutover); a table the move carries may still change. Once the move is
// cleaned up, the new model migrates, and its rows of the range are written
// where the range now lives.
func TestANewShardedTableWaitsForTheMoveToEnd(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		for _, k := range []int{moveSource, moveTarget} {
			must(t, direct(t, b, dir)[k].Migrator().DropTable("mv_notes"))
		}
		r := newMoveRig(t, b, dir)
		r.seedUsers(t, 120)
		refuseNewTable := func(when string) {
			t.Helper()
			if err := r.p.AutoMigrate(r.db, &MvNote{}); !errors.Is(err, shardid.ErrMoveInvalid) {
				t.Fatalf("a new sharded table %s: %v, want ErrMoveInvalid", when, err)
			}
			for name, db := range map[string]interface{ HasTable(any) bool }{"source": r.source.Migrator(), "target": r.target.Migrator()} {
				if db.HasTable("mv_notes") {
					t.Fatalf("a new sharded table refused %s is on the %s", when, name)
				}
			}
		}
		tried := false
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		rep, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 50, Progress: func(p shardid.MoveProgress) {
			if tried || p.Step != "chunk" {
				return
			}
			tried = true
			refuseNewTable("during the copy")
			must(t, r.p.AutoMigrate(r.db, &MvUser{})) // a table the move carries migrates on
		}})
		must(t, err)
		if !tried {
			t.Fatal("the move copied no chunk: nothing was migrated during it")
		}
		refuseNewTable("before the move's cleanup")
		must(t, r.p.CleanupMove(ctx, movingRange))
		must(t, r.p.AutoMigrate(r.db, &MvNote{}))
		note := MvNote{Body: "after the move"}
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&note).Error)
		var onTarget int64
		must(t, r.target.Model(&MvNote{}).Where("id = ?", note.ID).Count(&onTarget).Error)
		if onTarget != 1 {
			t.Errorf("a note of the moved range, after the move (tables %v): %d on the target", rep.Tables, onTarget)
		}
	})
}
