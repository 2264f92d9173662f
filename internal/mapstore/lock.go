package mapstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shardid/shardid/internal/sqlerr"
	"github.com/shardid/shardid/shardrouter"
)

// ErrLocked is returned by [Store.LockMove] when another run holds the lock.
var ErrLocked = errors.New("mapstore: the move's lock is held")

// lockPatience is how long a run waits for the move's lock.
const lockPatience = 3 * time.Second

// sqliteMoveLocks stand in for the servers' named locks (a move's, the
// migrations') within a process; lockFile among processes.
var sqliteMoveLocks sync.Map // lock name → struct{}

// LockMove takes the lock of the move of r, which one run at a time holds,
// be it a mover, a cancel or a cleanup; it fails with [ErrLocked] if another
// keeps it for a few seconds. The returned function releases it. The servers
// drop it with the connection of a run that dies. The lock is the move's of
// this store's map table in this database: moves of other sets of shards
// sharing the server (MySQL's named locks are the server's) do not wait for it.
func (s *Store) LockMove(ctx context.Context, r shardrouter.Range) (func(), error) {
	return s.lock(ctx, s.moveLockName(r))
}

// ErrLockLost is returned by the check [Store.LockMoveHeld] gives for a
// lock whose session ended (the server's idle timeout, a failover, a cut):
// the server gave the lock up, and another run may hold it now.
var ErrLockLost = errors.New("mapstore: the session holding the move's lock ended")

// LockMoveHeld is LockMove, and a check that the lock is held still: its
// session answers (SQLite's stand-ins live as long as the run).
func (s *Store) LockMoveHeld(ctx context.Context, r shardrouter.Range) (unlock func(), held func(context.Context) error, err error) {
	return s.lockAllOn(ctx, namedLock{s.moveLockName(r), s.movePatience()})
}

// MoveRunning reports whether a run (a mover, a cancel or a cleanup) holds
// the lock of the move of r now, as the database's own lock says: a run
// killed, or whose server connection was lost, holds it no more.
func (s *Store) MoveRunning(ctx context.Context, r shardrouter.Range) (bool, error) {
	name := s.moveLockName(r)
	switch s.dialect {
	case "sqlite":
		scope, file := s.sqliteScope(ctx)
		if _, held := sqliteMoveLocks.Load(scope + " " + name); held || file == "" {
			return held, nil
		}
		return fileLockHeld(file, name) // another process's run
	case "postgres":
		// PostgreSQL tells a lock's holder by its key halves only: take it
		// and give it back, on one session.
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return false, err
		}
		defer conn.Close()
		var got bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(hashtext($1))", name).Scan(&got); err != nil {
			return false, err
		}
		if got {
			_, err = conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext($1))", name)
		}
		return !got, err
	}
	var held bool
	err := s.db.QueryRowContext(ctx, "SELECT IS_USED_LOCK(SHA1(CONCAT(DATABASE(), '.', ?))) IS NOT NULL", name).Scan(&held)
	return held, err
}

// sqliteScope names the SQLite database of the store's handle: its file, as
// the database says, so that handles of one file share their locks (an
// in-memory database: the handle, and no file).
func (s *Store) sqliteScope(ctx context.Context) (scope, file string) {
	if err := s.db.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil || file == "" {
		return fmt.Sprintf("%p", s.db), ""
	}
	return file, file
}

func (s *Store) moveLockName(r shardrouter.Range) string {
	return fmt.Sprintf("shardid_move_%s_%d_%d", s.table, r.From, r.To)
}

// LockMoveStart takes the lock under which a new move checks that no other
// move is under way off its source and records itself, so that of two moves
// started at once the second sees the first: one holder at a time, as
// LockMove. Then, on the same connection, it takes the migrations' lock,
// waiting up to migrations for a migration under way, so that a migration
// making a new table and a move recording the tables it carries are one
// after the other.
func (s *Store) LockMoveStart(ctx context.Context, migrations time.Duration) (func(), error) {
	return s.lockAll(ctx, namedLock{fmt.Sprintf("shardid_move_%s_start", s.table), s.movePatience()}, namedLock{s.migrationLockName(), migrations})
}

// migrationLockName is the lock of this database's migrations.
func (s *Store) migrationLockName() string { return fmt.Sprintf("shardid_migrate_%s", s.table) }

// LockMigrations takes the lock under which one migration at a time runs
// among the processes of this database, so that of two starting at once the
// second finds the tables the first made (and does not take them for its
// own); it waits up to patience for another's, then fails with [ErrLocked].
func (s *Store) LockMigrations(ctx context.Context, patience time.Duration) (func(), error) {
	return s.lockAll(ctx, namedLock{s.migrationLockName(), patience})
}

// lock takes the named lock of a move: the servers' own, or for SQLite a
// stand-in, which a run of this process gives back as it ends.
func (s *Store) lock(ctx context.Context, name string) (func(), error) {
	return s.lockAll(ctx, namedLock{name, s.movePatience()})
}

// movePatience is how long a run waits for a move's lock: on SQLite, whose
// stand-ins a run gives back as it ends, or with its process, not at all.
func (s *Store) movePatience() time.Duration {
	if s.dialect == "sqlite" {
		return 0
	}
	return lockPatience
}

// namedLock is a lock's name and how long to wait for its holder.
type namedLock struct {
	name     string
	patience time.Duration
}

// lockAll takes the named locks in order, on one connection of the store's
// pool (a small pool shared with the application keeps room for the work
// done under them), and gives back those taken when one is not.
func (s *Store) lockAll(ctx context.Context, locks ...namedLock) (func(), error) {
	unlock, _, err := s.lockAllOn(ctx, locks...)
	return unlock, err
}

// lockAllOn is lockAll, and a check that the locks are held still.
func (s *Store) lockAllOn(ctx context.Context, locks ...namedLock) (func(), func(context.Context) error, error) {
	if s.dialect == "sqlite" {
		unlock, err := s.lockSQLite(ctx, locks)
		return unlock, func(context.Context) error { return nil }, err
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	var talk sync.Mutex // one statement at a time on conn: the keeper's pings, the run's
	keepSession, err := s.boundSilence(ctx, conn, &talk)
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	alive := func(ctx context.Context) error {
		// The session that took them holds them until it ends.
		talk.Lock()
		defer talk.Unlock()
		if err := conn.PingContext(ctx); err != nil {
			return fmt.Errorf("%w: %w", ErrLockLost, err)
		}
		return nil
	}
	// A name of 40 characters whatever the database's, within MySQL's 64.
	take, release := "SELECT COALESCE(GET_LOCK(SHA1(CONCAT(DATABASE(), '.', ?)), 0), 0) = 1", "SELECT RELEASE_LOCK(SHA1(CONCAT(DATABASE(), '.', ?)))"
	if s.dialect == "postgres" {
		take, release = "SELECT pg_try_advisory_lock(hashtext($1))", "SELECT pg_advisory_unlock(hashtext($1))"
	}
	var held []string
	unlock := func() {
		keepSession() // before the statements below, which it would otherwise interleave with
		for i := len(held) - 1; i >= 0; i-- {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), release, held[i])
		}
		s.unboundSilence(context.WithoutCancel(ctx), conn)
		_ = conn.Close()
	}
	for _, l := range locks {
		// A run killed a moment ago holds it until its server sees the connection gone.
		for deadline := time.Now().Add(l.patience); ; {
			var got bool
			talk.Lock()
			err := conn.QueryRowContext(ctx, take, l.name).Scan(&got)
			talk.Unlock()
			if err != nil {
				unlock()
				return nil, nil, err
			}
			if got {
				held = append(held, l.name)
				break
			}
			if time.Now().After(deadline) {
				unlock()
				return nil, nil, ErrLocked
			}
			if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
				unlock()
				return nil, nil, err
			}
		}
	}
	return unlock, alive, nil
}

// LockSessionIdle is how long the session holding a run's locks may stay
// silent before its server ends it, and the locks with it (MySQL's
// wait_timeout, PostgreSQL's idle_session_timeout): a run whose host
// vanished, or whose connection was cut where the server did not see it,
// holds its move's lock (and Moves says it runs, and refuses a cancel or a
// second run) that long, not until the server's own idle timeout (8 hours
// by MySQL's default, never by PostgreSQL's) or TCP keepalive. The run
// keeps the session talking every sixth of it while it holds the locks. A
// variable for tests.
var LockSessionIdle = 30 * time.Second

// boundSilence sets the session of conn to end after LockSessionIdle of
// silence, and keeps it talking, holding talk for each ping (a ping sent
// between a query and the reading of its rows would garble the
// connection), until the returned function is called. A
// PostgreSQL before 14, which has no idle_session_timeout, keeps the
// session until its TCP keepalive.
func (s *Store) boundSilence(ctx context.Context, conn *sql.Conn, talk *sync.Mutex) (stop func(), err error) {
	idle := LockSessionIdle
	set := fmt.Sprintf("SET SESSION wait_timeout = %d", max(1, int(idle.Seconds())))
	if s.dialect == "postgres" {
		set = fmt.Sprintf("SET idle_session_timeout = %d", max(1, idle.Milliseconds()))
	}
	if _, err := conn.ExecContext(ctx, set); err != nil {
		if code, _, ok := sqlerr.Postgres(err); !ok || code != "42704" { // 42704: no such setting, before 14
			return nil, err
		}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(idle / 6)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				pingCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), idle/6)
				talk.Lock()
				_ = conn.PingContext(pingCtx) // a session that no longer answers is the run's check's to report
				talk.Unlock()
				cancel()
			}
		}
	}()
	return func() { close(done); <-stopped }, nil
}

// unboundSilence gives the session of conn, going back to its pool, the
// server's idle timeout again.
func (s *Store) unboundSilence(ctx context.Context, conn *sql.Conn) {
	reset := "SET SESSION wait_timeout = @@GLOBAL.wait_timeout"
	if s.dialect == "postgres" {
		reset = "RESET idle_session_timeout"
	}
	if _, err := conn.ExecContext(ctx, reset); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // not pooled with the short timeout
	}
}

// lockSQLite takes SQLite's stand-ins of the named locks: one per database
// file in this process, and, for a database in a file, a lock of the file
// beside it (lockFile) that the other processes of that file see, as they
// see a server's named lock: a mover in one process and "shardid move
// status", cancel or a second run of the move in another.
func (s *Store) lockSQLite(ctx context.Context, locks []namedLock) (func(), error) {
	var held []string
	var files []func()
	unlock := func() {
		for i := len(files) - 1; i >= 0; i-- {
			files[i]()
		}
		for _, name := range held {
			sqliteMoveLocks.Delete(name)
		}
	}
	scope, file := s.sqliteScope(ctx)
	for _, l := range locks {
		name := scope + " " + l.name
		for deadline := time.Now().Add(l.patience); ; {
			if _, taken := sqliteMoveLocks.LoadOrStore(name, struct{}{}); !taken {
				release, ok, err := func() (func(), bool, error) {
					if file == "" {
						return func() {}, true, nil
					}
					return lockFile(file, l.name)
				}()
				if err != nil {
					sqliteMoveLocks.Delete(name)
					unlock()
					return nil, err
				}
				if ok {
					held, files = append(held, name), append(files, release)
					break
				}
				sqliteMoveLocks.Delete(name) // another process holds it
			}
			if time.Now().After(deadline) {
				unlock()
				return nil, ErrLocked
			}
			if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
				unlock()
				return nil, err
			}
		}
	}
	return unlock, nil
}

// sleepCtx waits for d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
