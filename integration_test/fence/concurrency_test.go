package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

var serverDialects = []string{"mysql", "postgres"}

// waitUntil polls query until it returns a count above zero: a condition, not a duration.
func waitUntil(t *testing.T, db *sql.DB, query string, done <-chan error) {
	t.Helper()
	for {
		select {
		case err := <-done:
			t.Fatalf("returned (%v) before it waited", err)
		default:
		}
		var n int
		if err := db.QueryRow(query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
	}
}

// freezeWaiting counts the fence updates waiting for a lock in this database.
var freezeWaiting = map[string]string{
	"mysql": `SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE()
		AND INFO LIKE 'UPDATE shardid_move_fence%'`,
	"postgres": `SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database()
		AND wait_event_type = 'Lock' AND query LIKE 'UPDATE shardid_move_fence%'`,
}

// freezeBehindWriter opens a transaction writing a row of moveRange and starts
// a Freeze of the range, returning once the Freeze waits for that writer.
func freezeBehindWriter(t *testing.T, fx *fixture, inFlight int64) (*sql.Tx, <-chan error) {
	t.Helper()
	ctx := context.Background()
	tx, err := fx.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	if _, err := tx.Exec("INSERT INTO fence_ints (id, note) VALUES ("+fx.placeholderAt(1)+", 'a')", inFlight); err != nil {
		t.Fatal(err)
	}
	frozen := make(chan error, 1)
	go func() { frozen <- fx.f.Freeze(ctx, fx.db, moveRange) }()
	waitUntil(t, fx.db, freezeWaiting[fx.dialect], frozen) // Freeze is blocked on the writer's share lock
	select {
	case err := <-frozen:
		t.Fatalf("Freeze returned (%v) while a writer of the range was open", err)
	default:
	}
	return tx, frozen
}

func TestFreezeWaitsForWritersInFlight(t *testing.T) {
	for _, dialect := range serverDialects {
		t.Run(dialect, func(t *testing.T) {
			fx := openFixture(t, dialect)
			inFlight := intID(6)
			tx, frozen := freezeBehindWriter(t, fx, inFlight)
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := <-frozen; err != nil {
				t.Fatal(err)
			}
			changes := fx.changes(t)
			if len(changes) != 1 || changes[0].Key != inFlight {
				t.Fatalf("changes %v, want the in-flight insert of %d", changes, inFlight)
			}
			refused(t, dialect, fx.insert("fence_ints", intID(6)), 6, "pg-c")
		})
	}
}

func TestRepeatableReadWriterCannotWriteAfterFreeze(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range serverDialects {
		t.Run(dialect, func(t *testing.T) {
			fx := openFixture(t, dialect)
			tx, err := fx.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var n int // takes the snapshot, from before Freeze
			if err := tx.QueryRow("SELECT COUNT(*) FROM " + fenceTable).Scan(&n); err != nil || n != 1 {
				t.Fatalf("snapshot: %d fence rows, %v", n, err)
			}
			if err := fx.f.Freeze(ctx, fx.db, moveRange); err != nil {
				t.Fatal(err)
			}
			_, err = tx.Exec("INSERT INTO fence_ints (id, note) VALUES ("+fx.placeholderAt(1)+", 'a')", intID(5))
			var pgErr *pgconn.PgError
			if dialect == "postgres" && errors.As(err, &pgErr) && pgErr.Code == "40001" {
				return // PostgreSQL refuses the share lock on a row changed since the snapshot
			}
			refused(t, dialect, err, 5, "pg-c")
		})
	}
}

// installBlocked counts trigger creations waiting for a table lock.
var installBlocked = map[string]string{
	"mysql": `SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE()
		AND INFO LIKE '%TRIGGER%' AND STATE LIKE 'Waiting for table metadata lock%'`,
	"postgres": `SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database()
		AND query LIKE '%TRIGGER%' AND wait_event_type = 'Lock'`,
}

// The barrier a move relies on instead of a wait of its own: with the fence
// row recorded, creating the triggers waits for a transaction that wrote the
// table before they existed (its write unlogged), so a copy begun after
// Install sees that write committed.
func TestInstallWaitsForOlderWriters(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range serverDialects {
		for _, level := range []sql.IsolationLevel{sql.LevelDefault, sql.LevelReadCommitted} {
			t.Run(dialect+"/"+level.String(), func(t *testing.T) {
				fx := newFixture(t, dialect)
				if err := fx.f.Uninstall(ctx, fx.db, fx.ints); err != nil {
					t.Fatal(err)
				}
				mustExec(t, fx.db, "DELETE FROM "+fenceTable)
				mustExec(t, fx.db, "DELETE FROM "+changesTable)
				if err := fx.f.Open(ctx, fx.db, moveRange, "pg-c"); err != nil {
					t.Fatal(err)
				}
				id := intID(6)
				tx, err := fx.db.BeginTx(ctx, &sql.TxOptions{Isolation: level})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec("INSERT INTO fence_ints (id, note) VALUES ("+fx.placeholderAt(1)+", 'a')", id); err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex // protects committed
				committed := false
				done := make(chan error, 1)
				go func() {
					err := fx.f.Install(ctx, fx.db, fx.ints)
					mu.Lock()
					defer mu.Unlock()
					if err == nil && !committed {
						err = errors.New("Install returned while an older writer was open")
					}
					done <- err
				}()
				waitUntil(t, fx.db, installBlocked[dialect], done)
				mu.Lock()
				committed = true
				mu.Unlock()
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if err := fx.exec("UPDATE fence_ints SET note = 'b' WHERE id = "+fx.placeholderAt(1), id); err != nil {
					t.Fatal(err)
				}
				if changes := fx.changes(t); len(changes) != 1 || changes[0].Key != id {
					t.Errorf("after Install the write of the range is logged: %v", changes)
				}
			})
		}
	}
}

func TestPrepareFromTwoProcessesAtOnce(t *testing.T) {
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			db := openDB(t, dialect)
			f := newFence(dialect)
			errs := make(chan error, 2)
			for range 2 {
				go func() { errs <- f.Prepare(context.Background(), db) }()
			}
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.Backlog(context.Background(), db); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// On PostgreSQL a REPEATABLE READ snapshot taken before Open cannot see the
// fence row, so its writes would go unlogged and, once frozen, unrefused:
// Open waits for such transactions to end.
func TestOpenWaitsForOlderSnapshotsOnPostgres(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t, "postgres")
	mustExec(t, fx.db, "DELETE FROM "+fenceTable)
	tx, err := fx.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow("SELECT COUNT(*) FROM fence_ints").Scan(&n); err != nil { // the snapshot
		t.Fatal(err)
	}
	var mu sync.Mutex // protects ended
	ended := false
	done := make(chan error, 1)
	go func() {
		err := fx.f.Open(ctx, fx.db, moveRange, "pg-c")
		mu.Lock()
		defer mu.Unlock()
		if err == nil && !ended {
			err = errors.New("Open returned while an older snapshot was held")
		}
		done <- err
	}()
	waitUntil(t, fx.db, "SELECT COUNT(*) FROM "+fenceTable, done)
	mu.Lock()
	ended = true
	mu.Unlock()
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A transaction that keeps the table past the move's patience is named in
// Install's error: the session, how long its transaction has been open, and
// its last statement.
func TestInstallNamesTheTransactionThatKeepsTheTable(t *testing.T) {
	for _, dialect := range serverDialects {
		t.Run(dialect, func(t *testing.T) {
			fx := newFixture(t, dialect)
			ctx := context.Background()
			if err := fx.f.Uninstall(ctx, fx.db, fx.ints); err != nil {
				t.Fatal(err)
			}
			tx, err := fx.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if _, err := tx.Exec("INSERT INTO fence_ints (id, note) VALUES ("+fx.placeholderAt(1)+", 'kept')", intID(3)); err != nil {
				t.Fatal(err)
			}
			bounded, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			err = fx.f.Install(bounded, fx.db, fx.ints)
			var database string
			if err := fx.db.QueryRow(map[string]string{"postgres": "SELECT current_database()", "mysql": "SELECT DATABASE()"}[dialect]).Scan(&database); err != nil {
				t.Fatal(err)
			}
			// MySQL keeps no idle session's last statement: the thread is named, with its database.
			named := map[string]string{"postgres": "INSERT INTO fence_ints", "mysql": fmt.Sprintf("on database %q", database)}[dialect]
			if err == nil || !strings.Contains(err.Error(), named) || !strings.Contains(err.Error(), "in a transaction for") {
				t.Fatalf("Install while a transaction keeps the table: %v; want the transaction named", err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if err := fx.f.Install(ctx, fx.db, fx.ints); err != nil { // and the server has let go of the attempt the deadline ended
				t.Fatal(err)
			}
		})
	}
}

// A database's fence takes a lock of its own: a Freeze waiting for a writer
// in one database holds up no fence of another on the same server, where a
// renewal that waited would let its freeze lapse.
func TestAFenceWaitingInOneDatabaseHoldsUpNoOtherDatabases(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range serverDialects {
		t.Run(dialect, func(t *testing.T) {
			fx := openFixture(t, dialect)
			tx, frozen := freezeBehindWriter(t, fx, intID(6)) // the Freeze holds its lock, waiting for the writer

			other := openDBSuffixed(t, dialect, "_0") // on the same server
			f := newFence(dialect)
			neighbour := make(chan error, 1)
			go func() {
				err := f.Prepare(ctx, other)
				if err == nil {
					err = f.Open(ctx, other, moveRange, "pg-c")
				}
				if err == nil {
					err = f.FreezeFor(ctx, other, moveRange, time.Minute)
				}
				neighbour <- err
			}()
			select {
			case err := <-neighbour:
				if err != nil {
					t.Fatalf("the other database's fence: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the other database's fence waited for this one's Freeze")
			}
			select {
			case err := <-frozen:
				t.Fatalf("Freeze returned (%v) while a writer of the range was open", err)
			default:
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := <-frozen; err != nil {
				t.Fatal(err)
			}
		})
	}
}
