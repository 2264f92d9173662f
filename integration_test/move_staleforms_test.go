package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// sfOp is one write of a process on the map it read before a move, and what
// it does to the rows once acknowledged.
type sfOp struct {
	name  string
	run   func(db *gorm.DB) error
	apply func(rows map[int64]string)
}

// staleFormOps are writes of many forms of the moving range, and of ranges
// that stay, each on rows of its own: upserts, preset IDs, batches over
// several shards, writes by other columns than the key, an update that
// changes nothing, a transaction. k keeps each pause's keys apart.
func staleFormOps(r *moveRig, k int, inRange, kept []int64) []sfOp {
	layout := r.p.Layout()
	at := time.Now().Add(-30 * time.Minute)
	preset := func(shard, seq int) int64 { return layout.Compose(at, shard, 1000+k*100+seq) }
	tag := func(s string) string { return fmt.Sprintf("%s-%d", s, k) }
	ins := func(rows map[int64]string, id int64, name string) { rows[id] = name }
	return []sfOp{
		{name: "create with a preset ID", run: func(db *gorm.DB) error {
			return db.Create(&MvUser{ID: preset(movingRange.From+5, 0), Name: tag("preset")}).Error
		}, apply: func(rows map[int64]string) { ins(rows, preset(movingRange.From+5, 0), tag("preset")) }},
		{name: "save of a row there", run: func(db *gorm.DB) error {
			var u MvUser
			if err := db.First(&u, inRange[0]).Error; err != nil {
				return err
			}
			u.Name = tag("saved")
			return db.Save(&u).Error
		}, apply: func(rows map[int64]string) { rows[inRange[0]] = tag("saved") }},
		{name: "save of a new row with a preset ID", run: func(db *gorm.DB) error {
			return db.Save(&MvUser{ID: preset(movingRange.From+6, 1), Name: tag("saved-new")}).Error
		}, apply: func(rows map[int64]string) { ins(rows, preset(movingRange.From+6, 1), tag("saved-new")) }},
		{name: "upsert of a row there", run: func(db *gorm.DB) error {
			return db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&MvUser{ID: inRange[1], Name: tag("upserted")}).Error
		}, apply: func(rows map[int64]string) { rows[inRange[1]] = tag("upserted") }},
		{name: "batch create over several shards", run: func(db *gorm.DB) error {
			return db.Create(&[]MvUser{
				{ID: preset(movingRange.From+7, 2), Name: tag("batch")},
				{ID: preset(11, 3), Name: tag("batch")},
				{ID: preset(movingRange.To, 4), Name: tag("batch")},
			}).Error
		}, apply: func(rows map[int64]string) {
			for _, id := range []int64{preset(movingRange.From+7, 2), preset(11, 3), preset(movingRange.To, 4)} {
				ins(rows, id, tag("batch"))
			}
		}},
		{name: "update that changes nothing", run: func(db *gorm.DB) error {
			return db.Model(&MvUser{ID: inRange[2]}).UpdateColumn("name", "seed").Error
		}, apply: func(map[int64]string) {}},
		{name: "update by another column over all shards", run: func(db *gorm.DB) error {
			return db.Clauses(shardid.AllShards()).Model(&MvUser{}).Where("name = ?", "upd").UpdateColumn("name", tag("updated")).Error
		}, apply: func(rows map[int64]string) {
			for id, name := range rows {
				if name == "upd" {
					rows[id] = tag("updated")
				}
			}
		}},
		{name: "delete by another column over all shards", run: func(db *gorm.DB) error {
			return db.Clauses(shardid.AllShards()).Where("name = ?", "del").Delete(&MvUser{}).Error
		}, apply: func(rows map[int64]string) {
			maps.DeleteFunc(rows, func(_ int64, name string) bool { return name == "del" })
		}},
		{name: "delete by key", run: func(db *gorm.DB) error {
			return db.Delete(&MvUser{}, inRange[3]).Error
		}, apply: func(rows map[int64]string) { delete(rows, inRange[3]) }},
		{name: "transaction", run: func(db *gorm.DB) error {
			return db.Clauses(shardid.ByID(inRange[4])).Transaction(func(tx *gorm.DB) error {
				if err := tx.Model(&MvUser{ID: inRange[4]}).UpdateColumn("name", tag("tx")).Error; err != nil {
					return err
				}
				return tx.Create(&MvUser{ID: preset(layout.Shard(inRange[4]), 5), Name: tag("tx")}).Error
			})
		}, apply: func(rows map[int64]string) {
			rows[inRange[4]] = tag("tx")
			ins(rows, preset(layout.Shard(inRange[4]), 5), tag("tx"))
		}},
		{name: "update of a kept row", run: func(db *gorm.DB) error {
			return db.Model(&MvUser{ID: kept[0]}).UpdateColumn("name", tag("kept")).Error
		}, apply: func(rows map[int64]string) { rows[kept[0]] = tag("kept") }},
	}
}

// TestStaleProcessWritesOfEveryFormLandOnceInEachPhase pauses a move in each
// of its phases while processes on the map before it write rows of the
// moving range in many forms (each run again once if refused as moved, as
// an application would); after the move, the physical databases hold each
// acknowledged write once, where the map sends it, and no refused one.
func TestStaleProcessWritesOfEveryFormLandOnceInEachPhase(t *testing.T) {
	pauses := []struct{ phase, step string }{
		{shardid.PhasePrepare, "triggers"},
		{shardid.PhaseCopy, "chunk"},
		{shardid.PhaseCatchUp, "round"},
		{shardid.PhaseCutover, "frozen"},
		{shardid.PhaseCutover, "verified"},
		{shardid.PhaseCutover, "map written"},
		{"", "after the move"},
	}
	forEachServer(t, func(t *testing.T, b backend) {
		for k, pause := range pauses {
			t.Run(pause.phase+" "+pause.step, func(t *testing.T) {
				r := newMoveRig(t, b, t.TempDir())
				inRange := r.seedUsers(t, 120)
				var kept []int64
				for i := range 6 {
					u := MvUser{Name: "seed"}
					must(t, r.db.Clauses(shardid.OnShard(10+i)).Create(&u).Error)
					kept = append(kept, u.ID)
				}
				for _, id := range []int64{inRange[10], inRange[11], kept[1]} {
					must(t, r.db.Model(&MvUser{ID: id}).UpdateColumn("name", "del").Error)
				}
				for _, id := range []int64{inRange[12], inRange[13], kept[2]} {
					must(t, r.db.Model(&MvUser{ID: id}).UpdateColumn("name", "upd").Error)
				}
				want := map[int64]string{}
				var all []MvUser
				must(t, r.source.Find(&all).Error)
				for _, u := range all {
					want[u.ID] = u.Name
				}
				ops := staleFormOps(r, k, inRange, kept)
				stale := make([]*gorm.DB, len(ops)) // one process per write: a refusal makes a process read the map
				for i := range ops {
					stale[i], _ = r.open(t, shardid.Config{MapRefresh: time.Hour})
				}
				var outcomes []string
				battery := func() {
					for i, op := range ops {
						err := op.run(stale[i])
						first := err
						if errors.Is(err, shardid.ErrShardMoved) {
							err = op.run(stale[i])
						}
						outcomes = append(outcomes, fmt.Sprintf("%s: %v, then %v", op.name, first, err))
						if err == nil {
							op.apply(want)
						} else {
							t.Errorf("%s, run again after ErrShardMoved: %v (first: %v)", op.name, err, first)
						}
					}
				}
				frozen := pause.phase == shardid.PhaseCutover && pause.step != "map written"
				var once sync.Once
				var done sync.WaitGroup
				progress := func(p shardid.MoveProgress) {
					if p.Phase != pause.phase || p.Step != pause.step || (p.Step == "triggers" && p.Table != "mv_docs") {
						return
					}
					once.Do(func() {
						if frozen { // held writes wait for the cutover: let it go on
							done.Go(battery)
							time.Sleep(300 * time.Millisecond)
							return
						}
						battery()
					})
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels, ChunkSize: 20, CatchUpBelow: 1 << 30, AnnounceWait: r.announceWait(), Progress: progress})
				must(t, err)
				if pause.phase == "" {
					battery()
				}
				done.Wait()
				layout := r.p.Layout()
				got := map[int64]string{}
				for side, db := range map[string]*gorm.DB{"source": r.source, "target": r.target} {
					var rows []MvUser
					must(t, db.Find(&rows).Error)
					for _, u := range rows {
						s := layout.Shard(u.ID)
						moved := s >= movingRange.From && s <= movingRange.To
						if moved != (side == "target") {
							continue // the source's frozen copy; the target holds nothing else
						}
						if prev, dup := got[u.ID]; dup {
							t.Errorf("row %d on both sides (%q, %q)", u.ID, prev, u.Name)
						}
						got[u.ID] = u.Name
					}
				}
				var diffs []string
				for _, id := range slices.Sorted(maps.Keys(want)) {
					if got[id] != want[id] {
						diffs = append(diffs, fmt.Sprintf("%d (shard %d): %q, want %q", id, layout.Shard(id), got[id], want[id]))
					}
				}
				for id, name := range got {
					if _, ok := want[id]; !ok {
						diffs = append(diffs, fmt.Sprintf("%d (shard %d): %q, want no row", id, layout.Shard(id), name))
					}
				}
				if len(diffs) > 0 {
					t.Errorf("the rows where the map sends them differ:\n%s\noutcomes:\n%s", strings.Join(diffs, "\n"), strings.Join(outcomes, "\n"))
				}
			})
		}
	})
}
