package twophase

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardid/shardid/internal/sqlerr"
)

// ErrUnsupported is returned for a dialect without two-phase commit.
var ErrUnsupported = errors.New("twophase: the dialect has no two-phase commit")

// state is where a branch is in the protocol.
type state uint8

const (
	active   state = iota // statements may run
	prepared              // its writes are durable, awaiting the decision
	unsure                // its PREPARE failed on the way (a context ended, a connection lost): the server may hold it prepared
	ended                 // committed or rolled back; its connection released
)

// Branch is one database's part of a global transaction, on a connection of
// its own held until the branch ends. Its methods other than the
// statements' are not safe for concurrent use; a statement run while
// another goroutine ends the branch fails, as on an ended transaction.
type Branch struct {
	db      *sql.DB
	conn    atomic.Pointer[sql.Conn] // nil once released
	dialect string
	xid     XID
	state   state
	// prepareUnheard says the PREPARE of an unsure branch failed without
	// the server's answer (its context ended, its connection was lost): the
	// statement may still be on its way to the server, or running there.
	prepareUnheard bool
	// session says the connection's session settings were changed for the
	// branch: it is closed, not given back, when the branch ends.
	session bool
	// statements holds off the branch's end while a statement runs; once
	// closing, none starts: none runs between a PREPARE or COMMIT and the
	// connection's release, where PostgreSQL would run it on its own.
	statements sync.RWMutex
	closing    bool
}

// Options are a branch's own settings.
type Options struct {
	// LockWait bounds how long a statement of the branch waits for a lock
	// (0: the server's setting): a branch waiting on another branch of the
	// same transaction, which no server sees, fails instead of waiting for
	// good.
	LockWait time.Duration
}

// Supported says whether dialect has two-phase commit here.
func Supported(dialect string) bool { return dialect == "mysql" || dialect == "postgres" }

// Begin opens branch xid of a global transaction on a connection of db.
func Begin(ctx context.Context, db *sql.DB, dialect string, xid XID) (*Branch, error) {
	return BeginWith(ctx, db, dialect, xid, Options{})
}

// BeginWith opens branch xid as Begin does, with opts.
func BeginWith(ctx context.Context, db *sql.DB, dialect string, xid XID, opts Options) (*Branch, error) {
	if !Supported(dialect) {
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, dialect)
	}
	if !xid.valid() {
		return nil, fmt.Errorf("twophase: %+v is not a branch ID", xid)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	b := &Branch{db: db, dialect: dialect, xid: xid, session: opts.LockWait > 0 && dialect == "mysql"}
	b.conn.Store(conn)
	steps := []string{"BEGIN"}
	if dialect == "mysql" {
		steps = []string{"XA START " + xid.literal(dialect)}
	}
	if wait := opts.LockWait; wait > 0 && dialect == "mysql" {
		steps = append([]string{fmt.Sprintf("SET SESSION innodb_lock_wait_timeout = %d", max(1, int(wait.Seconds())))}, steps...)
	} else if wait > 0 {
		steps = append(steps, fmt.Sprintf("SET LOCAL lock_timeout = '%dms'", wait.Milliseconds()))
	}
	for _, step := range steps {
		if _, err := conn.ExecContext(ctx, step); err != nil {
			b.discard()
			return nil, err
		}
	}
	return b, nil
}

// XID is the branch's ID.
func (b *Branch) XID() XID { return b.xid }

// ExecContext runs a statement in the branch.
func (b *Branch) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	conn, done := b.statement()
	defer done()
	if conn == nil {
		return nil, sql.ErrTxDone
	}
	return conn.ExecContext(ctx, query, args...)
}

// QueryContext runs a query in the branch.
func (b *Branch) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	conn, done := b.statement()
	defer done()
	if conn == nil {
		return nil, sql.ErrTxDone
	}
	return conn.QueryContext(ctx, query, args...)
}

// QueryRowContext runs a query of one row in the branch.
func (b *Branch) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	conn, done := b.statement()
	defer done()
	if conn == nil {
		ended, cancel := context.WithCancel(ctx)
		cancel() // a Row carries its error: this one says the query did not run
		return b.db.QueryRowContext(ended, query, args...)
	}
	return conn.QueryRowContext(ctx, query, args...)
}

// PrepareContext prepares a statement on the branch's connection.
func (b *Branch) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	conn, done := b.statement()
	defer done()
	if conn == nil {
		return nil, sql.ErrTxDone
	}
	return conn.PrepareContext(ctx, query)
}

// statement returns the connection an application's statement runs on, nil
// once the branch is ending, and what to call when it has run.
func (b *Branch) statement() (*sql.Conn, func()) {
	b.statements.RLock()
	if b.closing {
		return nil, b.statements.RUnlock
	}
	return b.conn.Load(), b.statements.RUnlock
}

// close waits for the statements running to end, and lets no other start.
func (b *Branch) close() {
	b.statements.Lock()
	b.closing = true
	b.statements.Unlock()
}

// exec runs one of the branch's own steps on its connection.
func (b *Branch) exec(ctx context.Context, query string) error {
	conn := b.conn.Load()
	if conn == nil {
		return sql.ErrTxDone
	}
	_, err := conn.ExecContext(ctx, query)
	return err
}

// Prepare makes the branch's writes durable and its outcome the decision's:
// after it, the branch survives its connection and even the server's
// restart until it is committed or rolled back.
func (b *Branch) Prepare(ctx context.Context) error {
	if b.state != active {
		return fmt.Errorf("twophase: branch %+v is not active", b.xid)
	}
	b.close()
	if err := b.unbroken(ctx); err != nil {
		return err
	}
	id := b.xid.literal(b.dialect)
	steps := []string{"PREPARE TRANSACTION " + id}
	if b.dialect == "mysql" {
		steps = []string{"XA END " + id, "XA PREPARE " + id}
	}
	for i, step := range steps {
		if err := b.exec(ctx, step); err != nil {
			b.discard() // its server rolls an unprepared branch back with the connection
			if i == len(steps)-1 {
				b.state = unsure // the PREPARE itself may have run: Rollback looks for it
				b.prepareUnheard = !answered(err)
			}
			return err
		}
	}
	// The connection is kept for the decision even on PostgreSQL, where any
	// session may finish it: one taken from the pool then could wait for a
	// statement that holds it, waiting on this branch's locks.
	b.state = prepared
	return nil
}

// Commit commits a prepared branch, or an active one in one phase (the only
// branch of its transaction).
func (b *Branch) Commit(ctx context.Context) error {
	b.close()
	id := b.xid.literal(b.dialect)
	var steps []string
	switch {
	case b.state == ended:
		return nil
	case b.state == unsure:
		return fmt.Errorf("twophase: branch %+v may not have prepared: it can only be rolled back", b.xid)
	case b.state == active && b.dialect == "mysql":
		steps = []string{"XA END " + id, "XA COMMIT " + id + " ONE PHASE"}
	case b.state == active:
		if err := b.unbroken(ctx); err != nil {
			return err
		}
		steps = []string{"COMMIT"}
	case b.dialect == "mysql":
		steps = []string{"XA COMMIT " + id} // on its own session, which alone may
	default:
		steps = []string{"COMMIT PREPARED " + id}
	}
	if b.state == prepared && b.conn.Load() == nil { // no session of its own: any may finish it
		return b.ended(b.commitPrepared(ctx, nil))
	}
	wasPrepared := b.state == prepared
	err := b.run(ctx, steps)
	if err != nil && wasPrepared { // its session's connection lost on the way: the branch is still the decision's
		err = b.commitPrepared(ctx, err)
	}
	return b.ended(err)
}

// commitPrepared commits a prepared branch from any session, asking again
// for a while when a connection is lost on the way or, on MySQL and MariaDB,
// the branch's own session has not ended yet: a decided branch commits
// before its transaction returns, not at recovery. A branch no longer
// prepared was committed (its answer lost). cause is why its own session
// could not.
func (b *Branch) commitPrepared(ctx context.Context, cause error) error {
	wait := 25 * time.Millisecond
	for {
		err := CommitPrepared(ctx, b.db, b.dialect, b.xid)
		switch {
		case err == nil:
			return nil
		case UnknownBranch(err) && !b.stillPrepared(ctx):
			return nil
		case wait > 1600*time.Millisecond:
			return errors.Join(cause, err) // left to recovery
		}
		select {
		case <-ctx.Done():
			return errors.Join(cause, err, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// stillPrepared reports whether the server lists the branch as prepared (of
// any session); unsure, it says so.
func (b *Branch) stillPrepared(ctx context.Context) bool {
	listed, err := InDoubt(ctx, b.db, b.dialect)
	return err != nil || slices.Contains(listed, b.xid)
}

// Rollback rolls the branch back, prepared or not.
func (b *Branch) Rollback(ctx context.Context) error {
	b.close()
	id := b.xid.literal(b.dialect)
	var steps []string
	switch {
	case b.state == ended:
		return nil
	case b.state == active && b.dialect == "mysql":
		steps = []string{"XA END " + id, "XA ROLLBACK " + id}
	case b.state == active:
		steps = []string{"ROLLBACK"}
	case b.dialect == "mysql":
		steps = []string{"XA ROLLBACK " + id}
	default:
		steps = []string{"ROLLBACK PREPARED " + id}
	}
	if b.state == prepared && b.conn.Load() == nil { // no session of its own: any may finish it
		return b.ended(RollbackPrepared(ctx, b.db, b.dialect, b.xid))
	}
	if b.state == unsure {
		return b.ended(b.rollbackUnsure(ctx))
	}
	wasPrepared := b.state == prepared
	err := b.run(ctx, steps)
	if err != nil && wasPrepared && b.dialect == "postgres" { // its connection lost on the way: any session may
		err = RollbackPrepared(ctx, b.db, b.dialect, b.xid)
	}
	if err != nil && !wasPrepared && sqlerr.Unreachable(err) {
		// Its connection was lost (a statement's context ended under it):
		// the server rolls back a transaction not prepared with its session,
		// which run has closed.
		return nil
	}
	return b.ended(err)
}

// rollbackUnsure rolls back, from another session, a branch whose PREPARE
// may have run: one the server does not know was never prepared. MySQL and
// MariaDB tell other sessions they do not know a branch until its own
// session has ended, which the closed connection's may not have yet: asked
// again while the server lists it prepared, as long as a lost commit's
// answer is, then left to recovery. A PREPARE whose answer never came (its
// context ended, its connection was lost) may still be on its way to the
// server, or running there, and prepare the branch after the first asking:
// it is asked again for as long whether the server lists it or not, so that
// a write that failed leaves no branch holding its locks until recovery.
func (b *Branch) rollbackUnsure(ctx context.Context) error {
	wait := 25 * time.Millisecond
	for {
		err := RollbackPrepared(ctx, b.db, b.dialect, b.xid)
		if err == nil || !UnknownBranch(err) {
			return err
		}
		if wait > 1600*time.Millisecond || !b.prepareUnheard && (b.dialect != "mysql" || !b.stillPrepared(ctx)) {
			return nil // not prepared, or, past this, for recovery to find
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// answered says err is the server's own answer to a statement, which it
// then ran to its end, not a context's end or a lost connection.
func answered(err error) bool {
	if sqlerr.Unreachable(err) {
		return false
	}
	if _, _, ok := sqlerr.MySQL(err); ok {
		return true
	}
	_, _, ok := sqlerr.Postgres(err)
	return ok
}

// Detach lets go of a prepared branch's connection, so that any session
// may finish it with Finish: MySQL and MariaDB tie a prepared branch to
// its session while that lives.
func (b *Branch) Detach() {
	if b.state == prepared && b.conn.Load() != nil {
		if b.dialect == "postgres" {
			b.release() // its session is out of the transaction: the pool may have it
			return
		}
		b.discard()
		b.state = prepared
	}
}

// Finish commits or rolls back a prepared branch from any session.
func (b *Branch) Finish(ctx context.Context, commit bool) error {
	if b.state != prepared {
		return fmt.Errorf("twophase: branch %+v is not prepared", b.xid)
	}
	if commit {
		return b.ended(b.commitPrepared(ctx, nil))
	}
	return b.ended(RollbackPrepared(ctx, b.db, b.dialect, b.xid))
}

// Abandon lets the branch go without an outcome: an active one is rolled
// back by its server with the connection, a prepared one stays for
// recovery.
func (b *Branch) Abandon() {
	if b.state != ended && b.state != unsure {
		b.discard()
	}
}

// run sends steps in order on the branch's connection, and releases it:
// discarded on an error, since the session may be left inside the protocol.
func (b *Branch) run(ctx context.Context, steps []string) error {
	for _, step := range steps {
		if err := b.exec(ctx, step); err != nil {
			b.discard()
			return err
		}
	}
	b.release()
	return nil
}

func (b *Branch) ended(err error) error {
	if err == nil {
		b.state = ended
	}
	return err
}

// errBroken is a PostgreSQL branch whose transaction a failed statement
// aborted: PREPARE TRANSACTION and COMMIT would answer it with a rollback,
// and no error.
var errBroken = errors.New("twophase: a statement of the branch failed, and its transaction was rolled back")

// unbroken makes sure a PostgreSQL branch's transaction is not aborted: a
// statement in an aborted one fails.
func (b *Branch) unbroken(ctx context.Context) error {
	if b.dialect != "postgres" {
		return nil // a failed statement leaves MySQL's transaction as it was
	}
	if err := b.exec(ctx, "SELECT 1"); err != nil {
		b.discard()
		if ctx.Err() != nil { // not a failed statement: the check never ran, and the branch rolls back with its connection
			return ctx.Err()
		}
		return errors.Join(errBroken, err)
	}
	return nil
}

// release gives the connection back to its pool, unless its session was
// changed.
func (b *Branch) release() {
	if b.session { // MySQL's lock wait was set for the session
		b.discard()
		return
	}
	if conn := b.conn.Swap(nil); conn != nil {
		_ = conn.Close()
	}
}

// discard closes the connection instead of giving it back; the branch is
// over for this process (its server rolls back an unprepared one).
func (b *Branch) discard() {
	if conn := b.conn.Swap(nil); conn != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		_ = conn.Close()
	}
	b.state = ended
}
