package integration

import (
	"testing"
	"time"

	"github.com/shardid/shardid"
)

// TestAPresetIDAStaleProcessWritesOnAMovedShardsNewDatabaseIsPassedThere:
// a process that has not read a move creates a row whose instagram ID is
// preset ahead of the clock in a moved shard; the source refuses it, the
// plugin runs it again on the target, and the target's clock-sequence is
// then past the ID: the rows it numbers afterwards in that shard are above
// it, never it again.
func TestAPresetIDAStaleProcessWritesOnAMovedShardsNewDatabaseIsPassedThere(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		staleDB, stale := r.open(t, shardid.Config{MapRefresh: time.Hour})
		report := r.move(t, shardid.Move{})
		preset := r.p.Layout().Compose(time.Now().Add(3*time.Second), movingRange.From, 0)
		must(t, staleDB.Create(&MvUser{ID: preset, Name: "restored"}).Error)
		if stale.MapVersion() < report.MapVersion {
			t.Fatalf("the stale process follows version %d, not the move's %d: its Create was not refused and run again", stale.MapVersion(), report.MapVersion)
		}
		var got MvUser
		must(t, r.target.First(&got, preset).Error)
		fresh := MvUser{Name: "new"}
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&fresh).Error)
		if fresh.ID <= preset {
			t.Errorf("a row created on the target after the preset one has ID %d, not above the preset %d: the target's clock-sequence may make the preset again", fresh.ID, preset)
		}
	})
}
