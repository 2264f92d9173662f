package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardrouter"
)

// TestMoveAndAudit moves the range on every backend (on SQLite, files of one
// process) while the application writes it; the placement audit finds the
// source's frozen copy as left by the move, nothing after the cleanup, and a
// row written on a wrong database on purpose.
func TestMoveAndAudit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		users := r.seedUsers(t, 2000)
		w := startRangeWriter(r.db, users[:20])
		report := r.move(t, shardid.Move{ChunkSize: 300})
		w.halt()
		if len(w.fails) > 0 {
			t.Fatalf("%d writes failed during the move, e.g. %v", len(w.fails), w.fails[0])
		}
		if report.Rows["mv_users"] < int64(len(users)) || report.MapVersion < 2 {
			t.Errorf("report: %s", describeReport(report))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		found, err := r.p.Audit(ctx)
		must(t, err)
		if len(found) != 1 || found[0].Table != "mv_users" || found[0].Database != b.name+"-source" || !found[0].LeftByMove || found[0].Rows < int64(len(users)) {
			t.Errorf("before the cleanup the audit found %+v, want the source's frozen copy of the users", found)
		}
		// Over every database, the source's frozen copy is not read twice,
		// nor written (its triggers would refuse it).
		var onTarget, counted int64
		must(t, r.target.Model(&MvUser{}).Count(&onTarget).Error)
		must(t, r.db.Model(&MvUser{}).Clauses(shardid.AllShards()).Count(&counted).Error)
		var all []MvUser
		must(t, r.db.Clauses(shardid.AllShards()).Find(&all).Error)
		if counted != onTarget || int64(len(all)) != onTarget {
			t.Errorf("over all shards: Count %d, Find %d rows; the target holds %d", counted, len(all), onTarget)
		}
		if err := r.db.Model(&MvUser{}).Clauses(shardid.AllShards()).Where("name = ?", "seed").Update("name", "seed, updated").Error; err != nil {
			t.Errorf("an update over all shards before the cleanup: %v", err)
		}
		must(t, r.p.CleanupMove(ctx, movingRange, moveModels...))
		if found, err := r.p.Audit(ctx); err != nil || len(found) != 0 {
			t.Fatalf("after the cleanup the audit found %+v (%v), want nothing", found, err)
		}
		for id, want := range w.last {
			var got MvUser
			if err := r.target.First(&got, id).Error; err != nil || got.Name != want {
				t.Errorf("user %d on the target: %q (%v), last written %q", id, got.Name, err, want)
			}
		}

		// A row of shard 5, which the source holds, written on the target.
		wrong := r.p.Layout().Compose(time.Now(), 5, 1)
		must(t, r.target.Create(&MvUser{ID: wrong, Name: "misplaced"}).Error)
		found, err = r.p.Audit(ctx)
		must(t, err)
		if len(found) != 1 || found[0].Database != b.name+"-target" || found[0].Rows != 1 || found[0].LeftByMove ||
			len(found[0].Keys) != 1 || found[0].Keys[0] != any(wrong) {
			t.Errorf("the audit found %+v, want user %d on the target", found, wrong)
		}
		must(t, r.target.Delete(&MvUser{}, wrong).Error)
	})
}

// TestSharedMap: a process started with a Config.Shards that the table has
// since changed follows the table; the shared map's new version reaches a
// running process by its refresh; a transaction on a database that has lost
// its logical shards since it began fails with ErrShardMoved.
func TestSharedMap(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		other, otherPlugin := r.open(t, shardid.Config{MapRefresh: 500 * time.Millisecond}) // refreshes, each with the time a busy machine needs
		if v := otherPlugin.MapVersion(); v != 1 {
			t.Fatalf("a second process follows version %d, want the seeded 1", v)
		}
		r.seedUsers(t, 200)
		report := r.move(t, shardid.Move{})
		deadline := time.Now().Add(30 * time.Second)
		for otherPlugin.MapVersion() != report.MapVersion && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if v := otherPlugin.MapVersion(); v != report.MapVersion {
			t.Fatalf("the refresh left the other process on version %d, want %d", v, report.MapVersion)
		}
		target := otherPlugin.ShardMap()
		if got := target.Name(target.Physical(movingRange.From)); got != b.name+"-target" {
			t.Errorf("the other process sends shard %d to %s", movingRange.From, got)
		}

		// A process started now, with the config of before the move.
		_, late := r.open(t, shardid.Config{})
		m := late.ShardMap()
		if late.MapVersion() != report.MapVersion || m.Name(m.Physical(movingRange.To)) != b.name+"-target" {
			t.Errorf("a process started with the old Config.Shards follows version %d, shard %d on %s", late.MapVersion(), movingRange.To, m.Name(m.Physical(movingRange.To)))
		}

		// The source holds shards 0..6143 now, the target the rest; a
		// transaction begun on a shard of the target, once the target holds
		// none (the map swapped back in this process only), has no shard
		// for a new row.
		id := r.p.Layout().Compose(time.Now(), movingRange.From, 7)
		tx := other.Clauses(shardid.ByID(id)).Begin()
		must(t, tx.Error)
		defer tx.Rollback()
		count := shardid.Layout{}.ShardCount()
		empty, err := shardRouterMap(count, b.name)
		must(t, err)
		must(t, otherPlugin.SwapShardMap(empty))
		err = tx.Create(&MvLedger{Amount: 1}).Error
		if !errors.Is(err, shardid.ErrShardMoved) {
			t.Errorf("a create in a transaction on a database that has lost its logical shards since: %v, want ErrShardMoved", err)
		}
	})
}

// shardRouterMap is the move tests' map before the move: every logical shard
// on the source, none on the target.
func shardRouterMap(count int, backend string) (*shardrouter.Map, error) {
	return shardrouter.NewMap(count, []shardrouter.Physical{
		{Name: backend + "-source", Logical: []shardrouter.Range{{From: 0, To: count - 1}}},
		{Name: backend + "-target"},
	})
}

// TestAuditTellsAMovesCopyFromAStray: while a move copies, the target's
// partial copy is reported as the move's, and a stray row beside it on its
// own, by its own key.
func TestAuditTellsAMovesCopyFromAStray(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		r.seedUsers(t, 3000)
		killedMover(t, r, shardid.PhaseCopy, "chunk") // the move stays in its copy
		copied := countIn(t, r.target, "mv_users", true, r.p.Layout())
		if copied == 0 {
			t.Fatal("the killed mover copied nothing")
		}
		stray := r.p.Layout().Compose(time.Now(), 5, 1) // of shard 5, which the source serves
		must(t, r.target.Create(&MvUser{ID: stray, Name: "stray"}).Error)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		found, err := r.p.Audit(ctx)
		must(t, err)
		var strays, copies []shardid.Misplaced
		for _, m := range found {
			if m.LeftByMove {
				copies = append(copies, m)
			} else {
				strays = append(strays, m)
			}
		}
		if len(strays) != 1 || strays[0].Rows != 1 || len(strays[0].Keys) != 1 || strays[0].Keys[0] != any(stray) || strays[0].Database != b.name+"-target" {
			t.Errorf("strays %+v, want user %d on the target alone", strays, stray)
		}
		if len(copies) != 1 || copies[0].Table != "mv_users" || copies[0].Rows != copied {
			t.Errorf("the move's copies %+v, want the target's %d users", copies, copied)
		}
	})
}
