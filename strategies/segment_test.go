package strategies

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The segment's tests on SQLite, MariaDB and PostgreSQL are in the
// integration module's strategies package; this one reads a block inside.

// A caller that loaded the current block before Forget gets no value from it
// after: Forget retires the block, not only the pointer to it.
func TestSegmentForgetRetiresTheBlockCallersHold(t *testing.T) {
	target := sqliteTarget(t)
	target.Table = "seg_forget"
	s, err := NewSegment(Layout{}, SegmentOptions{InitialStep: 100, MinStep: 100, MaxStep: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Generate(context.Background(), target, []int{5}, make([]int64, 1)); err != nil {
		t.Fatal(err)
	}
	var held *segmentBlock
	s.sequences.Range(func(_, q any) bool {
		held = q.(*segmentSequence).current.Load()
		return false
	})
	if held == nil || held.left() == 0 {
		t.Fatal("no block with values left")
	}
	s.Forget(target.Name)
	if _, got, _ := held.take(1); got != 0 {
		t.Fatal("a caller that loaded the block before Forget still got a value from it after")
	}
}

// A teardown that drops shardid_segments while a process holds a block:
// once the processes prepare again, another process reserves above that
// block, not from 0, and no value is handed out twice.
func TestSegmentTableMadeAgainKeepsTheBlocksHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ids.db")
	first, second := sqliteTargetAt(t, path), sqliteTargetAt(t, path)
	first.Table, second.Table = "seg_again", "seg_again"
	open := func() *Segment { // no block fetched ahead, which would hide a counter made again
		s, err := NewSegment(Layout{}, SegmentOptions{InitialStep: 100, MinStep: 100, MaxStep: 100, PrefetchAt: 0.99})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	held, other := open(), open()
	ctx := context.Background()
	seen := map[int64]bool{}
	take := func(s *Segment, target Target) {
		ids := make([]int64, 10)
		if err := s.Generate(ctx, target, []int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, ids); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("ID %d handed out twice", id)
			}
			seen[id] = true
		}
	}
	take(held, first)
	if _, err := first.DB.ExecContext(ctx, `DROP TABLE "`+segmentTable+`"`); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		s      *Segment
		target Target
	}{{held, first}, {other, second}} {
		if err := p.s.Prepare(ctx, p.target); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		take(other, second)
		take(held, first)
	}
}

// silentConnector opens connections to a database that never answers: each
// statement waits until its context ends.
type silentConnector struct{}

func (silentConnector) Connect(context.Context) (driver.Conn, error) { return silentConn{}, nil }
func (silentConnector) Driver() driver.Driver                        { return nil }

type silentConn struct{}

func (silentConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("not prepared") }
func (silentConn) Close() error                        { return nil }
func (silentConn) Begin() (driver.Tx, error)           { return nil, errors.New("no transactions") }
func (silentConn) ExecContext(ctx context.Context, _ string, _ []driver.NamedValue) (driver.Result, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (silentConn) QueryContext(ctx context.Context, _ string, _ []driver.NamedValue) (driver.Rows, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A reservation that a database never answered ends at the segment's own
// bound, or at Close, neither of which is the caller's context: the caller,
// whose context is still live, is not told its deadline passed or that it
// was cancelled, but that the database did not answer, or that the
// generator is closed.
func TestSegmentReservationBoundIsNotTheCallersContext(t *testing.T) {
	db := sql.OpenDB(silentConnector{})
	defer db.Close()
	target := Target{Name: "silent", Dialect: "mysql", Table: "seg_silent", Conn: db, DB: db}
	s, err := NewSegment(Layout{}, SegmentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.refillTimeout = 50 * time.Millisecond
	err = s.Generate(context.Background(), target, []int{5}, make([]int64, 1))
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "did not answer within 50ms") {
		t.Fatalf("a reservation the database never answered, with the caller's context live: %v", err)
	}

	s.refillTimeout = time.Minute
	done := make(chan error, 1)
	go func() { done <- s.Generate(context.Background(), target, []int{5}, make([]int64, 1)) }()
	time.Sleep(50 * time.Millisecond) // the reservation is under way
	_ = s.Close()
	if err := <-done; !errors.Is(err, errSegmentClosed) || errors.Is(err, context.Canceled) {
		t.Fatalf("a reservation under way at Close, with the caller's context live: %v", err)
	}
}
