package strategies

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Instagram takes the sequence and the time of every ID from the database the
// rows are written to, as Instagram's PL/pgSQL next_id() does, but without
// its wrap-around: each physical database keeps one clock-sequence
//
//	v = max(v + n, now_ticks << SequenceBits + n - 1)
//
// and the n new IDs take the values v-n+1 .. v, each split into a time field
// (v >> SequenceBits) and a sequence (the low bits), around the row's logical
// shard. v only grows, so IDs never repeat: more than 2^SequenceBits IDs in one
// tick borrow the next tick, and a database clock that steps back just stops
// the time field until it catches up. Application clocks play no part.
//
// The clock-sequence is kept where writing it costs no disk flush (a MEMORY
// table on MySQL/MariaDB, an UNLOGGED table on PostgreSQL); a durable mark
// that every issued value stays below is moved ahead once per MarkAhead, and a
// clock-sequence lost in a database restart resumes from it. On SQLite the
// clock-sequence is an ordinary table.
//
// All IDs of one Generate call come from one round trip. An Instagram is safe
// for concurrent use.
type Instagram struct {
	layout    Layout
	markAhead int64 // how far ahead of the clock-sequence the durable mark is moved, in clock-sequence units

	// protects the map below; the clocks themselves are safe for concurrent use
	mu     sync.Mutex
	clocks map[string]*databaseClock

	issued atomic.Uint64
}

var _ Generator = (*Instagram)(nil)

// DefaultMarkAhead is how far the durable mark of [Instagram] is moved ahead
// of the IDs issued: one durable write per second, and after a database crash
// new IDs are at most this far in the future.
const DefaultMarkAhead = time.Second

// NewInstagram returns the generator for layout, which must be valid.
func NewInstagram(layout Layout) (*Instagram, error) {
	if err := layout.Validate(time.Now()); err != nil {
		return nil, err
	}
	l := layout.Normalized()
	ahead := int64(DefaultMarkAhead/l.TimeUnit) + 1
	return &Instagram{layout: l, markAhead: ahead << l.SequenceBits, clocks: map[string]*databaseClock{}}, nil
}

// Generate implements [Generator]: one round trip to target for all of ids.
func (g *Instagram) Generate(ctx context.Context, target Target, shards []int, ids []int64) error {
	n := len(ids)
	if n == 0 {
		return nil
	}
	c, err := g.clock(target)
	if err != nil {
		return err
	}
	if err := c.ensure(ctx, target.Conn); err != nil {
		return fmt.Errorf("strategies: instagram: creating the clock-sequence on %q: %w", target.Name, err)
	}
	last, err := c.reserve(ctx, target.Conn, n, g.markAhead)
	if err != nil {
		return fmt.Errorf("strategies: instagram: reserving %d IDs on %q: %w", n, target.Name, err)
	}
	seqBits := g.layout.SequenceBits
	if (last >> seqBits) >= 1<<g.layout.TimeBits {
		return ErrTimeExhausted
	}
	first := last - int64(n) + 1
	for i, shard := range shards {
		v := first + int64(i)
		ids[i] = g.layout.ComposeTicks(v>>seqBits, shard, int(v&(1<<seqBits-1)))
	}
	g.issued.Add(uint64(n))
	return nil
}

// Stats implements [Reporter]. Instagram never waits: a full tick borrows
// the next.
func (g *Instagram) Stats() Stats { return Stats{Issued: g.issued.Load()} }

// Prepare creates the clock-sequence's tables on target, as Generate does on
// first use; migrations call it so that the first insert does not.
func (g *Instagram) Prepare(ctx context.Context, target Target) error {
	c, err := g.clock(target)
	if err != nil {
		return err
	}
	c.ready.Store(false) // created again, should they have been dropped since
	return c.ensure(ctx, target.Conn)
}

func (g *Instagram) clock(target Target) (*databaseClock, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.clocks[target.Name]
	if !ok {
		sqls, err := clockSQLFor(target.Dialect, g.layout)
		if err != nil {
			return nil, err
		}
		c = &databaseClock{sql: sqls}
		g.clocks[target.Name] = c
	}
	if target.Conn == nil {
		return nil, fmt.Errorf("strategies: instagram: target %q has no connection to keep its clock-sequence on", target.Name)
	}
	return c, nil
}

// databaseClock is the clock-sequence of one physical database.
type databaseClock struct {
	sql clockSQL

	// protects ready; held while the tables are created
	mu    sync.Mutex
	ready atomic.Bool
	// mark is the durable bound as last read or written: every value issued
	// so far is below it
	mark atomic.Int64
	// issued is the highest value this process has handed out: the clock
	// never goes below it, even where a rolled-back transaction (SQLite runs
	// the clock in the caller's) took the database's clock row back with it
	issued atomic.Int64
	// confirmed is the highest value this process has reserved outside a
	// transaction: the database's clock-sequence is past it for certain
	confirmed atomic.Int64
	// markedAt is when the mark was last written (Unix nanoseconds); it is
	// rewritten at least every markEvery, which repairs a mark that went back
	// under this process (a failover to a lagging replica, a restore)
	markedAt atomic.Int64
}

// markEvery is how often the durable mark is rewritten even when the cached
// one is still ahead of the clock-sequence.
const markEvery = DefaultMarkAhead / 2

func (c *databaseClock) ensure(ctx context.Context, conn Conn) error {
	if c.ready.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready.Load() {
		return nil
	}
	// The durable mark must be committed before the IDs below it are handed out.
	if err := requireAutocommit(ctx, conn, c.sql.autocommit); err != nil {
		return err
	}
	if err := c.createTables(ctx, conn); err != nil {
		return err
	}
	if err := c.readMark(ctx, conn); err != nil {
		return err
	}
	// Tables created inside a transaction may yet be rolled back with it.
	c.ready.Store(!isTransaction(conn))
	return nil
}

// readMark replaces the cached mark with the database's.
func (c *databaseClock) readMark(ctx context.Context, conn Conn) error {
	if c.sql.readMark == "" {
		return nil
	}
	var mark int64
	if err := conn.QueryRowContext(ctx, c.sql.readMark).Scan(&mark); err != nil {
		return err
	}
	c.mark.Store(mark)
	return nil
}

// isTransaction reports whether conn is a transaction.
func isTransaction(conn Conn) bool {
	_, ok := conn.(interface{ Commit() error })
	return ok
}

// txBeginner is a Conn that can begin a transaction (a pool, not a transaction).
type txBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// createTables creates the clock-sequence's tables on conn.
func (c *databaseClock) createTables(ctx context.Context, conn Conn) error {
	return runDDL(ctx, conn, c.sql.create, c.sql.transactionalDDL)
}

// reserve moves the clock-sequence by n and returns its new value, after
// making sure the durable mark is above it.
func (c *databaseClock) reserve(ctx context.Context, conn Conn, n int, markAhead int64) (int64, error) {
	atLeast := c.issued.Load() + int64(n)
	last, err := c.sql.advance(ctx, conn, n, atLeast)
	if errors.Is(err, sql.ErrNoRows) {
		// First use, or the database restarted and lost the clock row: seed
		// it at the durable mark, and trust the database's mark from now on.
		if _, err := conn.ExecContext(ctx, c.sql.seed); err != nil {
			return 0, err
		}
		if err := c.readMark(ctx, conn); err != nil {
			return 0, err
		}
		last, err = c.sql.advance(ctx, conn, n, atLeast)
	}
	if err != nil {
		return 0, err
	}
	for old := c.issued.Load(); old < last && !c.issued.CompareAndSwap(old, last); old = c.issued.Load() {
	}
	if c.sql.advanceMark == "" || last < c.mark.Load() && time.Now().UnixNano()-c.markedAt.Load() < int64(markEvery) {
		c.confirm(conn, last)
		return last, nil
	}
	// The mark must be durable above last before last is handed out.
	mark := last + 1 + markAhead
	if _, err := conn.ExecContext(ctx, c.sql.advanceMark, mark); err != nil {
		return 0, err
	}
	c.markedAt.Store(time.Now().UnixNano())
	for old := c.mark.Load(); old < mark && !c.mark.CompareAndSwap(old, mark); old = c.mark.Load() {
	}
	c.confirm(conn, last)
	return last, nil
}

// confirm notes last as reserved for certain, unless conn is a transaction,
// which may yet roll the clock row back.
func (c *databaseClock) confirm(conn Conn, last int64) {
	if isTransaction(conn) {
		return
	}
	for old := c.confirmed.Load(); old < last && !c.confirmed.CompareAndSwap(old, last); old = c.confirmed.Load() {
	}
}
