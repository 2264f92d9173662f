package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"
)

// fakeConnector makes connections as a server in a fault would: never
// answering (until ctx ends), or failing with err.
type fakeConnector struct{ err error }

func (c fakeConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if c.err != nil {
		return nil, c.err
	}
	<-ctx.Done()
	return nil, ctx.Err()
}
func (fakeConnector) Driver() driver.Driver { return nil }

// A silent server fails the connection within the timeout, and a refusing
// one at once, with ErrShardUnavailable naming the database; the caller's
// own deadline is left the caller's.
func TestBoundedConnector(t *testing.T) {
	silent := boundedConnector{Connector: fakeConnector{}, name: "gone", timeout: 50 * time.Millisecond}
	start := time.Now()
	_, err := silent.Connect(context.Background())
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("a silent server took %v to fail, with a 50ms timeout", elapsed)
	}
	var netErr net.Error
	if !errors.Is(err, ErrShardUnavailable) || !strings.Contains(err.Error(), "gone") || !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Errorf("a silent server: %v; want ErrShardUnavailable naming it, a network timeout", err)
	}

	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	_, err = boundedConnector{Connector: fakeConnector{err: refused}, name: "gone", timeout: time.Hour}.Connect(context.Background())
	if !errors.Is(err, ErrShardUnavailable) || !strings.Contains(err.Error(), "gone") || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a refusing server: %v; want ErrShardUnavailable naming it, wrapping the refusal", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	silent.timeout = time.Hour
	if _, err := silent.Connect(ctx); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrShardUnavailable) {
		t.Errorf("the caller's deadline: %v; want it as it is", err)
	}
}

// fakeDialector has the shape of GORM's drivers' dialectors: a pointer to a
// struct embedding a pointer to its config.
type (
	FakeConfig struct {
		DSN  string
		Conn gorm.ConnPool
	}
	fakeDialector struct {
		gorm.Dialector
		*FakeConfig
	}
)

// withConn sets Conn on a copy, the dialector and its config left as they are.
func TestWithConn(t *testing.T) {
	d := &fakeDialector{FakeConfig: &FakeConfig{DSN: "dsn"}}
	pool := &sql.DB{}
	copied, ok := withConn(d, pool)
	if !ok {
		t.Fatal("withConn refused a dialector of the drivers' shape")
	}
	got := copied.(*fakeDialector)
	if got == d || got.FakeConfig == d.FakeConfig || got.Conn != pool || got.DSN != "dsn" {
		t.Errorf("the copy: %+v; want a config of its own with DSN %q and the pool", got.FakeConfig, "dsn")
	}
	if d.Conn != nil {
		t.Error("withConn set Conn on the dialector given")
	}
}

// fakeServer hands out fakeConns, or refuses new connections.
type fakeServer struct {
	mu       sync.Mutex // protects the fields below
	conns    []*fakeConn
	refusing bool
	resets   int // ResetSession calls, on every connection
}

func (s *fakeServer) Connect(context.Context) (driver.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refusing {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	c := &fakeConn{server: s}
	s.conns = append(s.conns, c)
	return c, nil
}
func (*fakeServer) Driver() driver.Driver { return nil }

// end ends every connection made so far, as a restart does.
func (s *fakeServer) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.ended = true
	}
}

// fakeConn begins as pgx does: on a connection the server ended, with an
// error it had before sending anything, as pgx's "conn closed" is; or with
// beginErr.
type fakeConn struct {
	server        *fakeServer
	ended, closed bool
	beginErr      error
}

type connClosedError struct{}

func (connClosedError) Error() string     { return "conn closed" }
func (connClosedError) SafeToRetry() bool { return true }

func (c *fakeConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	switch {
	case c.ended:
		return nil, connClosedError{}
	case c.beginErr != nil:
		return nil, c.beginErr
	}
	return fakeTx{}, nil
}
func (c *fakeConn) ResetSession(context.Context) error {
	c.server.mu.Lock()
	defer c.server.mu.Unlock()
	c.server.resets++
	return nil
}
func (c *fakeConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}
func (*fakeConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("fakeConn prepares nothing")
}
func (c *fakeConn) Close() error { c.closed = true; return nil }

type fakeTx struct{}

func (fakeTx) Commit() error   { return nil }
func (fakeTx) Rollback() error { return nil }

// A Begin on a pooled connection the server ended begins on a new one, the
// ended one closed; with the server refusing, it fails with
// ErrShardUnavailable naming the database; a Begin the server refuses is
// left as it is. The driver's ResetSession, which checks a pooled
// connection, still runs.
func TestBeginOnAnEndedConnection(t *testing.T) {
	server := &fakeServer{}
	db := sql.OpenDB(boundedConnector{Connector: server, name: "gone", timeout: time.Second})
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	server.end()
	tx, err := db.Begin()
	if err != nil {
		t.Fatalf("a Begin on an ended connection: %v; want it begun on a new one", err)
	}
	_ = tx.Rollback()
	if len(server.conns) != 2 || !server.conns[0].closed || server.resets == 0 {
		t.Errorf("%d connections, the first closed: %v, %d resets; want 2, the ended one closed, its session reset",
			len(server.conns), server.conns[0].closed, server.resets)
	}

	server.end()
	server.refusing = true
	_, err = db.Begin()
	if !errors.Is(err, ErrShardUnavailable) || !strings.Contains(err.Error(), "gone") || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a Begin with the server refusing: %v; want ErrShardUnavailable naming it, wrapping the refusal", err)
	}

	server.refusing = false
	refusal := errors.New("ERROR: read-only transactions only (SQLSTATE 25006)")
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	server.conns[len(server.conns)-1].beginErr = refusal
	if _, err = db.Begin(); err != refusal {
		t.Errorf("a BEGIN the server refused: %v; want %v as it is", err, refusal)
	}
}
