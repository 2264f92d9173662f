package integration

import (
	"errors"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// MvHooked has Before hooks, as most real models do: a write of it refused
// by a freeze cannot be run again alone, so it is held before it begins.
type MvHooked struct {
	ID      int64 `shardid:"strategy:instagram"`
	Text    string
	Touched int
}

func (n *MvHooked) BeforeUpdate(*gorm.DB) error { n.Touched++; return nil }
func (n *MvHooked) BeforeCreate(*gorm.DB) error { n.Touched = 1; return nil }
func (n *MvHooked) BeforeDelete(*gorm.DB) error { return nil }

// TestWritesOfModelsWithHooksAreHeldAtTheCutover: updates, creates and
// deletes of a model with Before hooks, started while the range is frozen,
// wait for the cutover and land on the target, where they would have failed
// with ErrShardMoved; their hooks run once.
func TestWritesOfModelsWithHooksAreHeldAtTheCutover(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		must(t, r.source.Migrator().DropTable(&MvHooked{}))
		must(t, r.target.Migrator().DropTable(&MvHooked{}))
		must(t, r.p.AutoMigrate(r.db, &MvHooked{}))
		notes := make([]MvHooked, 4)
		for i := range notes {
			notes[i] = MvHooked{ID: r.p.Layout().Compose(time.Now().Add(-time.Minute), movingRange.From+i, 0), Text: "seed"}
		}
		must(t, r.db.Create(&notes).Error)

		var writes sync.WaitGroup
		errs := make([]error, 3)
		created := MvHooked{Text: "created while frozen"}
		updated := notes[0]
		r.move(t, shardid.Move{Models: append(append([]any{}, moveModels...), &MvHooked{}), Progress: func(p shardid.MoveProgress) {
			if p.Step != "frozen" {
				return
			}
			writes.Go(func() { errs[0] = r.db.Model(&updated).Update("text", "updated while frozen").Error })
			writes.Go(func() {
				errs[1] = r.db.Clauses(shardid.OnShard(movingRange.From + 1)).Create(&created).Error
			})
			writes.Go(func() { errs[2] = r.db.Delete(&MvHooked{ID: notes[2].ID}).Error })
			time.Sleep(300 * time.Millisecond) // they wait for the cutover, which waits for this step
		}})
		writes.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("write %d started while frozen: %v (ErrShardMoved: %v)", i, err, errors.Is(err, shardid.ErrShardMoved))
			}
		}
		var got MvHooked
		if err := r.target.First(&got, notes[0].ID).Error; err != nil || got.Text != "updated while frozen" || got.Touched != 1 {
			t.Errorf("the update on the target: %+v, %v; want its text and its hook run once", got, err)
		}
		var made MvHooked
		if err := r.target.First(&made, created.ID).Error; err != nil || made.Text != "created while frozen" {
			t.Errorf("the create on the target: %+v, %v", made, err)
		}
		if n := r.target.Find(&[]MvHooked{}, notes[2].ID).RowsAffected; n != 0 {
			t.Errorf("the deleted note is on the target still")
		}
		t.Logf("%s: held writes %+v", b.name, r.p.MovedWrites())
	})
}
