package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
)

// A move, cancel or cleanup whose context ended while the driver sent a
// statement (pgx: "write failed: i/o timeout") fails with the context's
// error, not as a lost connection, though every database answers; a
// timeout while the context lives is still a lost connection.
func TestMoveErrorOfAnEndedContextIsTheContexts(t *testing.T) {
	_, e := openEngine(t, Config{}, true)
	timeout := fmt.Errorf("reading the columns of docs: %w", &net.OpError{Op: "write", Net: "tcp", Err: os.ErrDeadlineExceeded})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.namedUnreachable(ended, timeout); !errors.Is(err, context.Canceled) || errors.Is(err, ErrShardUnavailable) {
		t.Errorf("a timeout of an ended context: %v, want context.Canceled and not ErrShardUnavailable", err)
	}
	if err := e.namedUnreachable(context.Background(), timeout); !errors.Is(err, ErrShardUnavailable) {
		t.Errorf("a timeout while the context lives: %v, want ErrShardUnavailable", err)
	}
}
