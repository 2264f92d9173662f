package integration

import (
	"errors"
	"strings"
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

// MvGated's Before hooks wait at a gate the test opens: the write has been
// routed, and its transaction begun, before the hook returns.
type MvGated struct {
	ID   int64 `shardid:"strategy:instagram"`
	Text string
	gate chan struct{} `gorm:"-"`
	in   chan struct{} `gorm:"-"`
}

func (n *MvGated) BeforeCreate(*gorm.DB) error { n.wait(); return nil }
func (n *MvGated) BeforeUpdate(*gorm.DB) error { n.wait(); return nil }
func (n *MvGated) BeforeDelete(*gorm.DB) error { n.wait(); return nil }

func (n *MvGated) wait() {
	if n.gate == nil {
		return
	}
	close(n.in)
	select {
	case <-n.gate:
	case <-time.After(20 * time.Second): // the move waits for it: the test fails, it does not hang
	}
}

// TestAWriteWhoseHookSpansTheCutoverIsDecidedByTheFence: a create, update
// or delete routed to the source before the move, whose hook returns after
// the cutover, was routed by the map before: its checks read that map, and
// the source's fence decides. It is refused with ErrShardMoved or runs on
// the target, never refused as a cross-shard statement, and the source's
// frozen copy is not written.
func TestAWriteWhoseHookSpansTheCutoverIsDecidedByTheFence(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, write := range []struct {
			name string
			run  func(db *gorm.DB, row *MvGated) error
			want func(ran bool) (found bool, text string) // the row on the target
		}{
			{"create", func(db *gorm.DB, row *MvGated) error { row.Text = "created"; return db.Create(row).Error },
				func(ran bool) (bool, string) { return ran, "created" }},
			{"update", func(db *gorm.DB, row *MvGated) error { return db.Model(row).Update("text", "updated").Error },
				func(ran bool) (bool, string) { return true, map[bool]string{true: "updated", false: "seed"}[ran] }},
			{"delete", func(db *gorm.DB, row *MvGated) error { return db.Delete(row).Error },
				func(ran bool) (bool, string) { return !ran, "seed" }},
		} {
			t.Run(write.name, func(t *testing.T) {
				r := newMoveRig(t, b, t.TempDir())
				must(t, r.source.Migrator().DropTable(&MvGated{}))
				must(t, r.target.Migrator().DropTable(&MvGated{}))
				must(t, r.p.AutoMigrate(r.db, &MvGated{}))
				id := r.p.Layout().Compose(time.Now().Add(-time.Minute), movingRange.From, 0)
				if write.name != "create" {
					must(t, r.db.Create(&MvGated{ID: id, Text: "seed"}).Error)
				}

				gated := MvGated{ID: id, gate: make(chan struct{}), in: make(chan struct{})}
				done := make(chan error, 1)
				go func() { done <- write.run(r.db, &gated) }()
				<-gated.in
				// The write in its hook keeps this process from saying it read the
				// announcements until the map is written: waiting for it helps nothing.
				r.move(t, shardid.Move{Models: append(append([]any{}, moveModels...), &MvGated{}), AnnounceWait: 100 * time.Millisecond, Progress: func(p shardid.MoveProgress) {
					if p.Step == "map written" {
						close(gated.gate)
					}
				}})
				err := <-done
				if err != nil && !errors.Is(err, shardid.ErrShardMoved) {
					t.Fatalf("the %s whose hook spanned the cutover: %v, want success or ErrShardMoved", write.name, err)
				}
				if err != nil && !strings.HasPrefix(err.Error(), "shardid: on "+b.name+"-source: ") {
					t.Errorf("the %s's refusal names another database than the source whose fence refused it: %v", write.name, err)
				}
				var onSource []MvGated
				must(t, r.source.Find(&onSource, id).Error)
				if write.name == "create" && len(onSource) > 0 || write.name != "create" && (len(onSource) != 1 || onSource[0].Text != "seed") {
					t.Errorf("the source's frozen copy was written: %+v", onSource)
				}
				var onTarget []MvGated
				must(t, r.target.Find(&onTarget, id).Error)
				found, text := write.want(err == nil)
				if len(onTarget) != map[bool]int{true: 1}[found] || found && onTarget[0].Text != text {
					t.Errorf("on the target: %+v, want found %v with %q (the %s returned %v)", onTarget, found, text, write.name, err)
				}
				t.Logf("the %s returned %v", write.name, err)
			})
		}
	})
}
