package integration

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// openOnSmallPools opens another process of the rig whose physical
// databases are given as Shard.DB, each pool held to conns connections.
func (r *moveRig) openOnSmallPools(t *testing.T, conns int, cfg shardid.Config) (*gorm.DB, *shardid.Plugin) {
	t.Helper()
	r.noteProcess(cfg)
	cfg.Shards = moveShards(t, r.b, r.dir)
	for i := range cfg.Shards {
		pool, err := gorm.Open(cfg.Shards[i].Dialector, &gorm.Config{Logger: logger.Discard})
		must(t, err)
		sqlDB, err := pool.DB()
		must(t, err)
		sqlDB.SetMaxOpenConns(conns)
		t.Cleanup(func() { _ = sqlDB.Close() })
		cfg.Shards[i].Dialector, cfg.Shards[i].DB = nil, pool
	}
	cfg.Atomic = r.b.atomicity()
	db, err := gorm.Open(r.b.dialector(t, r.dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := shardid.New(cfg)
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	return db, p
}

// interruptions are where a move's context ends: in the copy, in the
// catch-up, frozen, and verified just before the seal and the map.
var interruptions = []struct{ phase, step string }{
	{shardid.PhaseCopy, "chunk"},
	{shardid.PhaseCatchUp, "round"},
	{shardid.PhaseCutover, "frozen"},
	{shardid.PhaseCutover, "verified"},
}

// TestMoveWhoseContextEndsOnSmallPools ends a move's context at each
// interruption while writers keep writing the range through pools of two
// connections: the move returns the context's error, its record stays in a
// phase it resumes from, no freeze is left held, and the move run again and
// cleaned up (itself interrupted once) keeps every acknowledged write on
// the target and none of the range on the source, with no prepared branch
// left.
func TestMoveWhoseContextEndsOnSmallPools(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		for _, at := range interruptions {
			t.Run(at.phase+"/"+at.step, func(t *testing.T) {
				r := newMoveRig(t, b, t.TempDir())
				db, p := r.openOnSmallPools(t, 2, shardid.Config{})
				users := r.seedUsers(t, 1500)
				w := startRangeWriter(db, users[:40])
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				chunks := 0
				_, err := p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels, ChunkSize: 100,
					Progress: func(pr shardid.MoveProgress) {
						if pr.Phase == at.phase && pr.Step == at.step {
							if chunks++; pr.Step != "chunk" || chunks == 3 {
								cancel()
							}
						}
					}})
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("a move whose context ended at %s/%s: %v, want context.Canceled", at.phase, at.step, err)
				}
				if st := moveStatusOf(t, p, movingRange); st.Phase == shardid.PhaseServing || st.Phase == shardid.PhaseCancelled {
					t.Fatalf("the interrupted move reads %s", st.Phase)
				}
				start := time.Now()
				must(t, db.Model(&MvUser{ID: users[100]}).Update("name", "after the interruption").Error)
				if took := time.Since(start); took > time.Second {
					t.Errorf("a write of the range took %s after the move returned: a freeze was left held", took)
				}
				bg, stop := context.WithTimeout(context.Background(), 2*time.Minute)
				defer stop()
				if _, err := p.Move(bg, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels, ChunkSize: 100}); err != nil {
					t.Fatalf("the move run again: %v", err)
				}
				time.Sleep(200 * time.Millisecond)
				w.halt()
				if len(w.fails) > 0 {
					t.Errorf("%d writes failed, e.g. %v", len(w.fails), w.fails[0])
				}
				short, stopShort := context.WithTimeout(bg, 30*time.Millisecond)
				if err := p.CleanupMove(short, movingRange, moveModels...); err != nil && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("a cleanup whose context ended: %v, want context.DeadlineExceeded", err)
				}
				stopShort()
				must(t, p.CleanupMove(bg, movingRange, moveModels...))
				onSource, onTarget := readColumn(t, r.source, "mv_users", "name"), readColumn(t, r.target, "mv_users", "name")
				for id, want := range w.last {
					if got := onTarget[strconv.FormatInt(id, 10)]; got != want {
						t.Errorf("user %d: %q on the target, last written %q", id, got, want)
					}
				}
				if got := onTarget[strconv.FormatInt(users[100], 10)]; got != "after the interruption" {
					t.Errorf("the write after the interruption reads %q on the target", got)
				}
				if n := countIn(t, r.source, "mv_users", true, p.Layout()); n != 0 {
					t.Errorf("%d users of the range left on the source after the cleanup (%d rows there)", n, len(onSource))
				}
				if n := countIn(t, r.target, "mv_users", false, p.Layout()); n != 0 {
					t.Errorf("%d users outside the range on the target", n)
				}
				noPreparedBranches(t, b, r.source, r.target)
			})
		}
	})
}

// noPreparedBranches fails when a database holds a prepared XA or
// PostgreSQL transaction.
func noPreparedBranches(t *testing.T, b backend, dbs ...*gorm.DB) {
	t.Helper()
	for _, db := range dbs {
		var names []string
		if b.name == "postgres" {
			must(t, db.Raw("SELECT gid FROM pg_prepared_xacts WHERE database = current_database()").Scan(&names).Error)
		} else {
			rows, err := db.Raw("XA RECOVER").Rows()
			must(t, err)
			for rows.Next() {
				var format, g, q int
				var data string
				must(t, rows.Scan(&format, &g, &q, &data))
				names = append(names, data)
			}
			must(t, rows.Err())
			_ = rows.Close()
		}
		if len(names) > 0 && b.name == "postgres" {
			t.Errorf("prepared branches left: %v", names)
		} else if len(names) > 0 { // XA RECOVER lists the whole server's, other tests' among them
			t.Logf("prepared XA branches on the server: %v", names)
		}
	}
}

// TestMoveWhoseContextEndsWhileItsMapIsWritten ends a move's context after
// the seal, while its map write waits for a lock of the map's table: the
// move fails with the context's error, leaving the range sealed and the
// move in its cutover, and the move run again (or cancelled) ends it with
// every acknowledged write kept.
func TestMoveWhoseContextEndsWhileItsMapIsWritten(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		for _, then := range []string{"resume", "cancel"} {
			t.Run(then, func(t *testing.T) {
				r := newMoveRig(t, b, t.TempDir())
				db, p := r.openOnSmallPools(t, 2, shardid.Config{MoveWait: 500 * time.Millisecond})
				users := r.seedUsers(t, 500)
				w := startRangeWriter(db, users[:40])
				main, err := gorm.Open(b.dialector(t, r.dir), &gorm.Config{Logger: logger.Discard})
				must(t, err)
				mainDB, err := main.DB()
				must(t, err)
				t.Cleanup(func() { _ = mainDB.Close() })
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				released := make(chan struct{})
				_, err = p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels,
					Progress: func(pr shardid.MoveProgress) {
						if pr.Step != "verified" {
							return
						}
						conn, err := mainDB.Conn(context.Background())
						must(t, err)
						lock, unlock := "LOCK TABLES shardid_shard_map READ", "UNLOCK TABLES"
						if b.name == "postgres" {
							lock, unlock = "BEGIN; LOCK TABLE shardid_shard_map IN EXCLUSIVE MODE", "ROLLBACK"
						}
						_, err = conn.ExecContext(context.Background(), lock)
						must(t, err)
						go func() {
							defer close(released)
							time.Sleep(time.Second)
							cancel()
							time.Sleep(300 * time.Millisecond)
							_, _ = conn.ExecContext(context.Background(), unlock)
							_ = conn.Close()
						}()
					}})
				<-released
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("a move whose context ended while its map was written: %v, want context.Canceled", err)
				}
				t.Logf("the move: %v", err)
				if st := moveStatusOf(t, p, movingRange); st.Phase != shardid.PhaseCutover {
					t.Fatalf("the interrupted move reads %s, want %s", st.Phase, shardid.PhaseCutover)
				}
				bg, stop := context.WithTimeout(context.Background(), 2*time.Minute)
				defer stop()
				if then == "resume" {
					if _, err := p.Move(bg, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels}); err != nil {
						t.Fatalf("the move run again: %v", err)
					}
				} else {
					must(t, p.CancelMove(bg, movingRange, moveModels...))
				}
				start := time.Now()
				must(t, db.Model(&MvUser{ID: users[100]}).Update("name", "after").Error)
				if took := time.Since(start); took > time.Second {
					t.Errorf("a write of the range took %s once the move was run again", took)
				}
				time.Sleep(200 * time.Millisecond)
				w.halt()
				t.Logf("%d writes refused while sealed", len(w.fails))
				serving, other := r.target, r.source
				if then == "resume" {
					must(t, p.CleanupMove(bg, movingRange, moveModels...))
				} else {
					serving, other = r.source, r.target
				}
				onServing := readColumn(t, serving, "mv_users", "name")
				for id, want := range w.last {
					if got := onServing[strconv.FormatInt(id, 10)]; got != want {
						t.Errorf("user %d: %q where the range is served, last written %q", id, got, want)
					}
				}
				if onServing[strconv.FormatInt(users[100], 10)] != "after" {
					t.Errorf("the write after the move was run again is lost")
				}
				if n := countIn(t, other, "mv_users", true, p.Layout()); n != 0 {
					t.Errorf("%d users of the range left where it is not served", n)
				}
				noPreparedBranches(t, b, r.source, r.target)
			})
		}
	})
}

// TestMoveRunAgainAfterAnInterruptedCancel ends a cancel's context while it
// deletes the target's copies, the source already unfenced: the move run
// again must not resume as though the source still logged the range's
// writes; it is refused naming the cancel, and the cancel run again ends it.
func TestMoveRunAgainAfterAnInterruptedCancel(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		db, p := r.openOnSmallPools(t, 2, shardid.Config{})
		users := r.seedUsers(t, 300)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels,
			Progress: func(pr shardid.MoveProgress) {
				if pr.Phase == shardid.PhaseCatchUp {
					cancel()
				}
			}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the move: %v", err)
		}
		// A row of the target's copy locked, so that the cancel's deletion waits.
		tx := r.target.Begin()
		defer tx.Rollback()
		var held MvUser
		must(t, tx.Raw("SELECT * FROM mv_users WHERE id = ? FOR UPDATE", users[0]).Scan(&held).Error)
		short, stop := context.WithTimeout(context.Background(), 2*time.Second)
		err = p.CancelMove(short, movingRange, moveModels...)
		stop()
		tx.Rollback()
		if err == nil {
			t.Fatal("the cancel ended though its deletion was held")
		}
		must(t, db.Model(&MvUser{ID: users[1]}).Update("name", "after the cancel began").Error)
		bg, stopBg := context.WithTimeout(context.Background(), time.Minute)
		defer stopBg()
		_, err = p.Move(bg, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels})
		if err == nil {
			var got MvUser
			must(t, r.target.First(&got, users[1]).Error)
			t.Fatalf("the move ran again after a cancel began and ended, the write since reads %q on the target", got.Name)
		}
		if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "CancelMove") {
			t.Errorf("the move run again after a cancel began: %v, want ErrMoveInvalid saying to run CancelMove", err)
		}
		must(t, p.CancelMove(bg, movingRange, moveModels...))
		if n := countIn(t, r.target, "mv_users", true, p.Layout()); n != 0 {
			t.Errorf("the target holds %d users of the range after the cancel", n)
		}
	})
}
