package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// killMoveLock ends, on the plugin's database, the session that holds the
// lock of the move of the moving range: as a server's idle timeout, a
// failover or a network cut would, while the mover runs on.
func killMoveLock(t *testing.T, b backend, main *sql.DB) {
	t.Helper()
	name := fmt.Sprintf("shardid_move_shardid_shard_map_%d_%d", movingRange.From, movingRange.To)
	var holder sql.NullInt64
	switch b.name {
	case "mariadb":
		must(t, main.QueryRow("SELECT IS_USED_LOCK(SHA1(CONCAT(DATABASE(), '.', ?)))", name).Scan(&holder))
		if !holder.Valid {
			t.Fatalf("no session holds the move's lock %s", name)
		}
		_, err := main.Exec(fmt.Sprintf("KILL CONNECTION %d", holder.Int64))
		must(t, err)
	case "postgres":
		must(t, main.QueryRow(`SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND objid = (hashtext($1)::bigint & 4294967295)::oid`, name).Scan(&holder))
		var ended bool
		must(t, main.QueryRow("SELECT pg_terminate_backend($1)", holder.Int64).Scan(&ended))
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var held bool
		q := "SELECT IS_USED_LOCK(SHA1(CONCAT(DATABASE(), '.', ?))) IS NOT NULL"
		if b.name == "postgres" {
			q = `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = (hashtext($1)::bigint & 4294967295)::oid
				AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`
		}
		must(t, main.QueryRow(q, name).Scan(&held))
		if !held {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the move's lock is still held")
		}
	}
}

// blockMapWrites keeps other sessions from writing the shared map table
// (they read it still) until the returned function is called.
func blockMapWrites(t *testing.T, b backend, main *sql.DB) func() {
	t.Helper()
	conn, err := main.Conn(context.Background())
	must(t, err)
	if b.name == "mariadb" {
		_, err = conn.ExecContext(context.Background(), "LOCK TABLES shardid_shard_map READ")
		must(t, err)
		return func() { _, _ = conn.ExecContext(context.Background(), "UNLOCK TABLES"); _ = conn.Close() }
	}
	tx, err := conn.BeginTx(context.Background(), nil)
	must(t, err)
	_, err = tx.Exec("LOCK TABLE shardid_shard_map IN EXCLUSIVE MODE")
	must(t, err)
	return func() { _ = tx.Rollback(); _ = conn.Close() }
}

// TestACancelAndTheMapWriteOfAMoverThatLostItsLockDoNotBothHappen: a mover
// seals the cutover on the source and, as it writes the map, loses the
// session holding its move's lock (the server ended it); another process,
// the lock free, cancels the move. The plugin's database
// decides between them: either the map is written and the cancel refused,
// or the cancel ends the move and the map is not written; the rows are
// wherever the map sends the range.
func TestACancelAndTheMapWriteOfAMoverThatLostItsLockDoNotBothHappen(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		seeded := r.seedUsers(t, 200)
		_, canceller := r.open(t, shardid.Config{})
		main, err := gorm.Open(b.dialector(t, r.dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		mainDB, err := main.DB()
		must(t, err)
		defer mainDB.Close()
		srcDB, err := r.source.DB()
		must(t, err)

		paused, release := make(chan struct{}), make(chan struct{})
		moved := make(chan error, 1)
		go func() {
			_, err := r.p.Move(context.Background(), shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels,
				FreezeLease: 30 * time.Second, Progress: func(p shardid.MoveProgress) {
					if p.Phase == shardid.PhaseCutover && p.Step == "verified" {
						close(paused)
						<-release
					}
				}})
			moved <- err
		}()
		select {
		case <-paused:
		case err := <-moved:
			t.Fatalf("the move ended before its cutover was verified: %v", err)
		}
		unblock := blockMapWrites(t, b, mainDB)
		close(release)
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var sealed int
			must(t, srcDB.QueryRow(query("SELECT COUNT(*) FROM shardid_move_fence WHERE frozen = "+map[string]string{"postgres": "true", "mariadb": "1"}[b.name]+" AND frozen_until IS NULL AND range_from = ?").replaceFor(b), movingRange.From).Scan(&sealed))
			if sealed == 1 {
				break
			}
			if time.Now().After(deadline) {
				unblock()
				t.Fatalf("the mover did not seal the cutover: %v", <-moved)
			}
		}
		killMoveLock(t, b, mainDB) // after its last look at it
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cancelled := make(chan error, 1)
		go func() { cancelled <- canceller.CancelMove(ctx, movingRange) }()
		select { // the cancel waits for the map write, or is done
		case err := <-cancelled:
			cancelled <- err
		case <-time.After(2 * time.Second):
		}
		unblock()
		cancelErr, moveErr := <-cancelled, <-moved
		t.Logf("cancel: %v; move: %v", cancelErr, moveErr)
		if (cancelErr == nil) == (moveErr == nil) {
			t.Errorf("the cancel (%v) and the move (%v) both succeeded, or both failed", cancelErr, moveErr)
		}
		if cancelErr != nil && !errors.Is(cancelErr, shardid.ErrMoveInvalid) {
			t.Errorf("the cancel of a move whose map was written: %v, want ErrMoveInvalid", cancelErr)
		}
		if moveErr != nil && !errors.Is(moveErr, shardid.ErrMoveInvalid) {
			t.Errorf("the move cancelled as it wrote its map: %v, want ErrMoveInvalid", moveErr)
		}
		serving, other := r.target, r.source
		if moveErr != nil {
			serving, other = r.source, r.target
		}
		// Every seeded row is where a process reading the map now finds it.
		reader, _ := r.open(t, shardid.Config{})
		var found int64
		must(t, reader.Model(&MvUser{}).Where("id IN ?", seeded).Count(&found).Error)
		held := countIn(t, serving, "mv_users", true, r.p.Layout())
		if found != int64(len(seeded)) || held != int64(len(seeded)) {
			t.Errorf("of %d seeded rows, a process on the map finds %d, and the database serving the range holds %d", len(seeded), found, held)
		}
		if moveErr != nil && countIn(t, other, "mv_users", true, r.p.Layout()) != 0 {
			t.Errorf("the cancelled move left rows of the range on the target")
		}
	})
}

// replaceFor writes a query's ? placeholders for b.
type query string

func (q query) replaceFor(b backend) string {
	if b.name != "postgres" {
		return string(q)
	}
	return string(q[:len(q)-1]) + "$1"
}

// TestAMoverThatLostItsLockStopsBeforeItWritesAgain: a mover loses the
// session holding its move's lock during the copy, and another process, the
// lock free, cancels the move, deleting the target's copies. The mover,
// let go on, stops at its next chunk, failing with ErrMoveInvalid: it
// copies no row after the cancel, which would stay on the target as rows no
// move carries, refusing the next move there.
func TestAMoverThatLostItsLockStopsBeforeItWritesAgain(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		for _, phase := range []string{shardid.PhaseCopy, shardid.PhaseCatchUp} {
			t.Run(phase, func(t *testing.T) {
				r := newMoveRig(t, b, t.TempDir())
				users := r.seedUsers(t, 300)
				_, canceller := r.open(t, shardid.Config{})
				main, err := gorm.Open(b.dialector(t, r.dir), &gorm.Config{Logger: logger.Discard})
				must(t, err)
				mainDB, err := main.DB()
				must(t, err)
				defer mainDB.Close()
				paused, release := make(chan struct{}), make(chan struct{})
				moved := make(chan error, 1)
				chunks := 0
				go func() {
					_, err := r.p.Move(context.Background(), shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels, ChunkSize: 20, CatchUpBelow: 1,
						Progress: func(p shardid.MoveProgress) {
							if p.Step == "chunk" && p.Table == "mv_users" {
								if chunks++; chunks == 1 { // logged, for the catch-up to replay
									must(t, r.db.Model(&MvUser{}).Where("id IN ?", users[:100]).Update("name", "changed").Error)
								}
							}
							if p.Phase == phase && (p.Step == "round" || chunks == 2) {
								select {
								case <-paused:
								default:
									close(paused)
									<-release
								}
							}
						}})
					moved <- err
				}()
				select {
				case <-paused:
				case err := <-moved:
					t.Fatalf("the move ended before it paused: %v", err)
				}
				killMoveLock(t, b, mainDB)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				must(t, canceller.CancelMove(ctx, movingRange))
				close(release)
				moveErr := <-moved
				if !errors.Is(moveErr, shardid.ErrMoveInvalid) {
					t.Errorf("the mover that lost its lock: %v, want ErrMoveInvalid", moveErr)
				}
				if n := countIn(t, r.target, "mv_users", true, r.p.Layout()); n != 0 {
					t.Errorf("the target holds %d users of the range after the cancel (the mover: %v)", n, moveErr)
				}
			})
		}
	})
}
