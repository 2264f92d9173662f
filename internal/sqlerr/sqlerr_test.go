package sqlerr

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// stateError has the shape of pgx's *pgconn.PgError.
type stateError struct{ Code, Message string }

func (e *stateError) Error() string    { return "ERROR: " + e.Message + " (SQLSTATE " + e.Code + ")" }
func (e *stateError) SQLState() string { return e.Code }

// MySQLError has the name and fields of go-sql-driver/mysql's type, in another
// package: MySQL must not take it for the driver's.
type MySQLError struct {
	Number  uint16
	Message string
}

func (e *MySQLError) Error() string { return fmt.Sprintf("Error %d: %s", e.Number, e.Message) }

func TestPostgresFindsTheStateInTheTree(t *testing.T) {
	pg := &stateError{Code: "55P03", Message: "lock not available"}
	for _, err := range []error{pg, fmt.Errorf("install: %w", pg), errors.Join(errors.New("first"), fmt.Errorf("second: %w", pg))} {
		code, message, ok := Postgres(err)
		if !ok || code != "55P03" || message != "lock not available" {
			t.Errorf("Postgres(%v) = %q, %q, %v", err, code, message, ok)
		}
	}
}

func TestOtherErrorsAreNotServerErrors(t *testing.T) {
	for _, err := range []error{nil, errors.New("Error 1205: Lock wait timeout exceeded"),
		&MySQLError{Number: 1205, Message: "Lock wait timeout exceeded"}, (*stateError)(nil), fmt.Errorf("wrapped: %w", (*stateError)(nil))} {
		if n, m, ok := MySQL(err); ok {
			t.Errorf("MySQL(%v) = %d, %q", err, n, m)
		}
		if c, m, ok := Postgres(err); ok {
			t.Errorf("Postgres(%v) = %q, %q", err, c, m)
		}
	}
}

// A lost or refused connection is told from a statement the server refused.
func TestUnreachableToldFromRefusals(t *testing.T) {
	lost := []error{
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
		fmt.Errorf("query: %w", syscall.ECONNRESET),
		driver.ErrBadConn,
		io.ErrUnexpectedEOF,
		errors.New("invalid connection"),
		errors.New("conn closed"), // pgx, of a connection closed under the statement
		&stateError{Code: "08006", Message: "connection failure"},
		&stateError{Code: "57P01", Message: "terminating connection due to administrator command"},
	}
	for _, err := range lost {
		if !Unreachable(err) || !Unreachable(fmt.Errorf("on a: %w", err)) {
			t.Errorf("Unreachable(%v) = false", err)
		}
	}
	refused := []error{nil, errors.New("Error 1062: Duplicate entry"), &stateError{Code: "23505", Message: "duplicate key"},
		&stateError{Code: "55P03", Message: "lock not available"}, context.DeadlineExceeded}
	for _, err := range refused {
		if Unreachable(err) {
			t.Errorf("Unreachable(%v) = true", err)
		}
	}
}

// A network timeout of a statement whose context ended is the context's
// error, found by errors.Is and not read as a lost connection; a timeout
// while the context lives, and other errors of an ended context, stay as
// they are.
func TestTimeoutOfAnEndedContextIsTheContexts(t *testing.T) {
	timeout := fmt.Errorf("write failed: %w", &net.OpError{Op: "write", Net: "tcp", Err: os.ErrDeadlineExceeded})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, stop := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer stop()
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		err := OfEndedContext(c.ctx, timeout)
		if !errors.Is(err, c.want) || !errors.Is(err, os.ErrDeadlineExceeded) || Unreachable(err) {
			t.Errorf("OfEndedContext(%v, timeout) = %v: want %v wrapping the timeout, not unreachable", c.want, err, c.want)
		}
	}
	if err := OfEndedContext(context.Background(), timeout); err != timeout || !Unreachable(err) {
		t.Errorf("a timeout while the context lives became %v", err)
	}
	reset := fmt.Errorf("read: %w", syscall.ECONNRESET)
	if err := OfEndedContext(cancelled, reset); err != reset {
		t.Errorf("a reset connection of an ended context became %v", err)
	}
}

// retryError has the shape of pgx's errors with a SafeToRetry method, as its
// connLockError ("conn closed") is.
type retryError struct{ safe bool }

func (e *retryError) Error() string     { return "conn closed" }
func (e *retryError) SafeToRetry() bool { return e.safe }

// An error the driver says it had before sending anything is told from one
// it had after, or that does not say.
func TestUnsent(t *testing.T) {
	for _, err := range []error{&retryError{safe: true}, fmt.Errorf("begin: %w", &retryError{safe: true})} {
		if !Unsent(err) {
			t.Errorf("Unsent(%v) = false", err)
		}
	}
	for _, err := range []error{nil, &retryError{}, errors.New("conn closed"), driver.ErrBadConn,
		&stateError{Code: "57P01", Message: "terminating connection due to administrator command"}} {
		if Unsent(err) {
			t.Errorf("Unsent(%v) = true", err)
		}
	}
}

// TestTransientConflictsToldFromOtherErrors: deadlocks, lock waits timed
// out and serialization failures, of either server, are transient; a
// unique violation and a plain error are not.
func TestTransientConflictsToldFromOtherErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&stateError{Code: "40P01", Message: "deadlock detected"}, true},
		{fmt.Errorf("reading the map: %w", &stateError{Code: "40001", Message: "could not serialize access"}), true},
		{&stateError{Code: "23505", Message: "duplicate key"}, false},
		{errors.New("Error 1213: Deadlock found"), false}, // text alone is not the driver's error
		{nil, false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// The connection go-sql-driver closes at a context's end (driver.ErrBadConn,
// "invalid connection"), and the sql.ErrTxDone of a transaction database/sql
// rolled back at that end, are the context's error; a deadline that has
// passed counts as ended before the context's own timer says so. While the
// context lives they stay as they are.
func TestConnectionClosedAtTheContextsEndIsTheContexts(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	passed := deadlineOnly{deadline: time.Now().Add(-time.Millisecond)} // its Err still nil
	for _, err := range []error{driver.ErrBadConn, errors.New("invalid connection"), fmt.Errorf("commit: %w", sql.ErrTxDone)} {
		for _, c := range []struct {
			ctx  context.Context
			want error
		}{{cancelled, context.Canceled}, {passed, context.DeadlineExceeded}} {
			if got := OfEndedContext(c.ctx, err); !errors.Is(got, c.want) || Unreachable(got) {
				t.Errorf("OfEndedContext(%v, %v) = %v: want %v, not unreachable", c.want, err, got, c.want)
			}
		}
		if got := OfEndedContext(context.Background(), err); got != err {
			t.Errorf("%v while the context lives became %v", err, got)
		}
	}
	if Ended(passed) != context.DeadlineExceeded || Ended(context.Background()) != nil {
		t.Errorf("Ended: a passed deadline %v, a live context %v", Ended(passed), Ended(context.Background()))
	}
}

// deadlineOnly is a context whose deadline has passed and whose timer has
// not fired yet.
type deadlineOnly struct {
	context.Context
	deadline time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.deadline, true }
func (c deadlineOnly) Done() <-chan struct{}       { return nil }
func (c deadlineOnly) Err() error                  { return nil }
func (c deadlineOnly) Value(any) any               { return nil }

// fieldFault is an application's error type whose Error method reads its
// field, and so panics on a typed nil pointer.
type fieldFault struct{ field string }

func (e *fieldFault) Error() string { return e.field + " is invalid" }

// TestAnErrorWhoseTextPanicsIsClassifiedWithoutAPanic: a typed nil error
// of the application's, bare or wrapped, is neither unreachable nor an ended
// context's, and reading it does not panic.
func TestAnErrorWhoseTextPanicsIsClassifiedWithoutAPanic(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range []error{(*fieldFault)(nil), fmt.Errorf("sql: converting argument $1 type: %w", (*fieldFault)(nil)), errors.Join(io.EOF, (*fieldFault)(nil))} {
		if Unreachable(err) {
			t.Errorf("Unreachable(%v)", err)
		}
		if got := OfEndedContext(ended, err); got != err {
			t.Errorf("OfEndedContext(%v) = %v", err, got)
		}
	}
}
