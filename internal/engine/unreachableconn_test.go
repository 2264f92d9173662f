package engine

import (
	"context"
	"database/sql/driver"
	"errors"
	"net"
	"os"
	"testing"
)

// unsentError is an error as pgx gives one of a write that failed before
// anything was sent: a network timeout, safe to send again.
type unsentError struct{}

func (unsentError) Error() string     { return "write failed: write tcp: i/o timeout" }
func (unsentError) SafeToRetry() bool { return true }

// failingTx is a driver's transaction whose Commit and Rollback fail with err.
type failingTx struct{ err error }

func (t failingTx) Commit() error   { return t.err }
func (t failingTx) Rollback() error { return t.err }

// The commit of a transaction on a shard whose connection the driver cut
// as its context ended (pgx stops the connection's writes at the deadline)
// fails with the context's error, as a statement does; a connection lost
// while the context lives is the database's: ErrShardUnavailable.
func TestACommitLostAsTheContextEndedFailsWithTheContextsError(t *testing.T) {
	ended, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	var tx driver.Tx = boundedTx{Tx: failingTx{unsentError{}}, name: "s1", ctx: ended}
	for name, err := range map[string]error{"Commit": tx.Commit(), "Rollback": tx.Rollback()} {
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrShardUnavailable) {
			t.Errorf("%s lost as the context ended: %v; want context.DeadlineExceeded, not ErrShardUnavailable", name, err)
		}
	}
	tx = boundedTx{Tx: failingTx{unsentError{}}, name: "s1", ctx: context.Background()}
	for name, err := range map[string]error{"Commit": tx.Commit(), "Rollback": tx.Rollback()} {
		if !errors.Is(err, ErrShardUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s lost with the context alive: %v; want ErrShardUnavailable", name, err)
		}
	}
}

// beginFailingConn is a driver connection whose BEGIN fails with err.
type beginFailingConn struct {
	driver.Conn
	err error
}

func (c beginFailingConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	return nil, c.err
}

// A BEGIN on a shard whose write the driver cut at the context's deadline
// (pgx's "write failed: i/o timeout") fails with the context's error, as a
// statement does, not as a lost database; one timed out while the context
// lives is the database's: ErrShardUnavailable.
func TestABeginCutAtTheDeadlineFailsWithTheContextsError(t *testing.T) {
	timeout := &net.OpError{Op: "write", Net: "tcp", Err: os.ErrDeadlineExceeded}
	conn := &boundedConn{Conn: beginFailingConn{err: timeout}, name: "s1"}
	ended, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	if _, err := conn.BeginTx(ended, driver.TxOptions{}); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrShardUnavailable) {
		t.Errorf("a BEGIN cut at the deadline: %v; want context.DeadlineExceeded, not ErrShardUnavailable", err)
	}
	if _, err := conn.BeginTx(context.Background(), driver.TxOptions{}); !errors.Is(err, ErrShardUnavailable) {
		t.Errorf("a BEGIN timed out with the context alive: %v; want ErrShardUnavailable", err)
	}
}
