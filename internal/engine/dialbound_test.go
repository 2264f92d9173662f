package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"strings"
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
