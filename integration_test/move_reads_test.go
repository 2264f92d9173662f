package integration

import (
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// TestReadsOverAllShardsSkipCopiesTheDatabaseDoesNotServe: the target of a
// move serves other logical shards, so statements over every shard read it
// while it holds a partial copy of the moving range, and after the cutover
// the source keeps a frozen copy. Each database answers only for the
// ranges the process's map gives it: Count and Find over all shards see
// each user once, in every phase, from a process on the new map and from
// one still on the old.
func TestReadsOverAllShardsSkipCopiesTheDatabaseDoesNotServe(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newMoveRigServing(t, b, t.TempDir(), []shardid.Range{{From: 0, To: 99}})
		users := r.seedUsers(t, 2000)
		own := make([]MvUser, 10)
		for i := range own {
			own[i].Name = "on the target's own shard"
		}
		must(t, r.db.Clauses(shardid.OnShard(5)).Create(&own).Error)
		total := int64(len(users) + len(own))
		staleDB, stale := r.open(t, shardid.Config{MapRefresh: time.Hour})

		checked := map[string]bool{}
		check := func(when string, db *gorm.DB) {
			var counted int64
			var all []MvUser
			err := db.Model(&MvUser{}).Clauses(shardid.AllShards()).Count(&counted).Error
			if err == nil {
				err = db.Clauses(shardid.AllShards()).Find(&all).Error
			}
			if err != nil || counted != total || int64(len(all)) != total {
				t.Errorf("%s: over all shards Count %d, Find %d rows (%v); %d users exist", when, counted, len(all), err, total)
			}
		}
		r.move(t, shardid.Move{ChunkSize: 300, Progress: func(p shardid.MoveProgress) {
			step := p.Phase + " " + p.Step
			if checked[step] || p.Step == "chunk" && (p.Copied == 0 || p.Copied >= p.Total) {
				return
			}
			checked[step] = true
			var onTarget int64
			must(t, r.target.Model(&MvUser{}).Count(&onTarget).Error)
			check(fmt.Sprintf("%s (the target holds %d users)", step, onTarget), r.db)
		}})
		for _, step := range []string{"copy chunk", "cutover frozen"} {
			if !checked[step] {
				t.Errorf("the move had no step %q to read in", step)
			}
		}
		check("after the cutover", r.db)
		if before := stale.MapVersion(); before != 1 {
			t.Fatalf("the stale process follows map version %d", before)
		}
		check("after the cutover, by the old map", staleDB)
	})
}
