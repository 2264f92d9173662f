package strategies

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Moving logical shards from a source physical database to a target one
// hands the issuing of their IDs to the target. The functions here make the
// target's ID sources issue, for every logical shard, only IDs above every ID
// the source issued: Instagram's and Segment's Advance move the target's
// rows, Segment's Forget drops the blocks a process holds below them, and
// Snowflake's SetFloor keeps a process's in-memory time above the source's.
//
// Each rounds up to a whole time tick (instagram, snowflake) or a whole block
// of 2^SequenceBits counter values (segment): IDs of different shards in one
// tick are ordered by shard before sequence, so only a later tick is above
// every ID of every shard of an earlier one.

// Advance makes target's clock-sequence issue, from now on and for every
// logical shard, only IDs whose time tick is above the tick of every ID the
// source's clock-sequence issued so far and above the tick of atLeast: the
// target's clock row (and its durable mark, on MySQL/MariaDB and PostgreSQL)
// is moved to the end of that tick at least. atLeast is an ID of the layout,
// such as the highest one copied, or 0 for none; a negative one fails with
// [ErrInvalidID].
//
// The clock never goes back: Advance with lower values changes nothing, so
// it may be repeated, and should be once the source is frozen, as the source
// may have issued IDs since. It creates the clock tables of either database
// where they are missing, and runs on each Target's DB (its Conn when DB is
// nil), never in a caller's transaction. It fails with [ErrTimeExhausted]
// when the tick is past the layout's time field.
func (g *Instagram) Advance(ctx context.Context, source, target Target, atLeast int64) error {
	if atLeast < 0 {
		return fmt.Errorf("%w: instagram: advancing past %d", ErrInvalidID, atLeast)
	}
	from, err := g.prepared(ctx, source)
	if err != nil {
		return err
	}
	to, err := g.prepared(ctx, target)
	if err != nil {
		return err
	}
	issued, err := from.highest(ctx, poolOf(source))
	if err != nil {
		return fmt.Errorf("strategies: instagram: reading the clock-sequence of %q: %w", source.Name, err)
	}
	seqBits := g.layout.SequenceBits
	ticks := max(max(issued, from.issued.Load())>>seqBits, g.layout.Decode(atLeast).Ticks)
	if ticks+1 >= 1<<g.layout.TimeBits {
		return ErrTimeExhausted
	}
	end := (ticks+1)<<seqBits - 1 // the last value of the tick: later values start the next one
	if err := to.raise(ctx, poolOf(target), end, g.markAhead); err != nil {
		return fmt.Errorf("strategies: instagram: advancing the clock-sequence of %q: %w", target.Name, err)
	}
	return nil
}

// IssuedPast reports whether target's clock-sequence, as far as this
// process has seen it reserve outside a transaction, has issued the value
// id was made from or a later one: it never issues that value again, and id
// needs no Advance (the IDs a Create just made, written by its parts, among
// them). The database's clock, not the process's, decides, as the two may
// differ.
func (g *Instagram) IssuedPast(target Target, id int64) bool {
	c, err := g.clock(target)
	if err != nil || id < 0 {
		return false
	}
	// The clock-sequence value id was made from: the clock never gives it, or one below it, again.
	parts := g.layout.Decode(id)
	return c.confirmed.Load() >= parts.Ticks<<g.layout.SequenceBits|int64(parts.Sequence)
}

// prepared is the clock of target, its tables created on target's pool.
func (g *Instagram) prepared(ctx context.Context, target Target) (*databaseClock, error) {
	conn := poolOf(target)
	if conn == nil {
		return nil, fmt.Errorf("strategies: instagram: target %q has no connection", target.Name)
	}
	c, err := g.clock(target)
	if err != nil {
		return nil, err
	}
	if err := c.ensure(ctx, conn); err != nil {
		return nil, fmt.Errorf("strategies: instagram: creating the clock-sequence on %q: %w", target.Name, err)
	}
	return c, nil
}

// highest is the highest value the database's clock-sequence may have
// issued: its row, or below the durable mark when a restart lost the row.
func (c *databaseClock) highest(ctx context.Context, conn Conn) (int64, error) {
	var v int64
	switch err := conn.QueryRowContext(ctx, c.sql.read).Scan(&v); {
	case err == nil:
		return v, nil
	case !errors.Is(err, sql.ErrNoRows):
		return 0, err
	case c.sql.readMark == "":
		return 0, nil // SQLite's clock row is durable: the clock was never used
	}
	var mark int64
	if err := conn.QueryRowContext(ctx, c.sql.readMark).Scan(&mark); err != nil {
		return 0, err
	}
	return max(mark-1, 0), nil
}

// raise moves the clock-sequence above value, durable mark included: the
// floor every reservation of this process takes, then one reservation,
// which seeds a missing row and writes the mark above what it returns.
func (c *databaseClock) raise(ctx context.Context, conn Conn, value, markAhead int64) error {
	for old := c.issued.Load(); old < value && !c.issued.CompareAndSwap(old, value); old = c.issued.Load() {
	}
	_, err := c.reserve(ctx, conn, 1, markAhead)
	return err
}

// Advance makes target's counter of the sequence target.Table issue, from
// now on and for every logical shard, only IDs above every ID the source's
// counter of the same sequence reserved so far and above atLeast: the
// target's row is moved to the end of that block of 2^SequenceBits values at
// least. atLeast is an ID of the layout, such as the highest one copied, or
// 0 for none; a negative one fails with [ErrInvalidID]. source.Table is not
// read.
//
// The counter never goes back: Advance with lower values changes nothing, so
// it may be repeated, and should be once the source is frozen. It creates
// shardid_segments and the row where they are missing, on each Target's DB,
// and drops this process's blocks of the target's sequence, as [Segment.Forget]
// does. Other processes must call Forget before they issue IDs of the moved
// shards on the target: blocks reserved before the Advance are below it.
func (s *Segment) Advance(ctx context.Context, source, target Target, atLeast int64) error {
	if atLeast < 0 {
		return fmt.Errorf("%w: segment: advancing past %d", ErrInvalidID, atLeast)
	}
	q, err := s.sequence(target)
	if err != nil {
		return err
	}
	reserved, err := s.reserved(ctx, source, target.Table)
	if err != nil {
		return err
	}
	if err := s.Prepare(ctx, Target{Name: target.Name, Dialect: target.Dialect, Conn: q.pool}); err != nil {
		return err
	}
	seqBits := s.layout.SequenceBits
	blocks := max(reserved>>seqBits, atLeast>>(s.layout.ShardBits+seqBits))
	end := (blocks+1)<<seqBits - 1 // the last value of the block: later values are above every shard's IDs in it
	if _, err := q.pool.ExecContext(ctx, q.sql.seed, q.name); err != nil {
		return q.errorf("creating the counter: %w", err)
	}
	if _, err := q.pool.ExecContext(ctx, q.sql.raise, end, q.name); err != nil {
		return q.errorf("advancing the counter to %d: %w", end, err)
	}
	q.forget()
	return nil
}

// reserved is the highest value of sequence name reserved in source's
// database, by its row or by this process.
func (s *Segment) reserved(ctx context.Context, source Target, name string) (int64, error) {
	sqls, err := segmentSQLFor(source.Dialect)
	if err != nil {
		return 0, err
	}
	conn := poolOf(source)
	if err := s.Prepare(ctx, Target{Name: source.Name, Dialect: source.Dialect, Conn: conn}); err != nil {
		return 0, err
	}
	var v int64
	if err := conn.QueryRowContext(ctx, sqls.read, name).Scan(&v); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("strategies: segment %q on %q: reading the counter: %w", name, source.Name, err)
	}
	if q, ok := s.sequences.Load(segmentKey{source.Name, name}); ok {
		q := q.(*segmentSequence)
		q.mu.Lock()
		v = max(v, q.floor)
		q.mu.Unlock()
	}
	return v, nil
}

// Forget drops the blocks this process holds for physical database, the
// current and the prefetched ones, and any block a reservation under way
// would install, so that its next IDs there are reserved from the counter
// as it is then: after [Segment.Advance] on that database, above the moved
// shards' IDs. Calls of Generate under way may still finish from the old
// blocks; those after Forget returns do not. The values dropped are never
// issued.
func (s *Segment) Forget(database string) {
	s.sequences.Range(func(key, q any) bool {
		if key.(segmentKey).database == database {
			q.(*segmentSequence).forget()
		}
		return true
	})
}

// forget drops q's blocks and makes the reservation under way, if any, keep
// its block to itself. The floor stays: it still bounds what was reserved.
func (q *segmentSequence) forget() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.epoch++
	if b := q.current.Swap(nil); b != nil {
		b.retire()
	}
	q.next = nil
}

// SetFloor makes this generator issue IDs of the logical shards (each taken
// modulo the shard count, as Next does) only with a time tick above tick,
// for every database: a process that learns of a move of those shards sets
// the floor to the last tick any process may have used for them on the
// source. A caller whose clock is not yet past the floor waits for it, as
// for a full tick, for at most the clock tolerance (the lease's
// ClockTolerance, else [DefaultClockTolerance]); further away, Generate and
// Next fail with [ErrClockBackwards]. A floor never goes down: a lower tick
// changes nothing. A negative tick changes nothing.
//
// The floor is kept in the shards' own sequence state, as a full sequence
// at tick, so that the path of an ID reads nothing more.
func (s *Snowflake) SetFloor(shards []int, tick int64) {
	if tick < 0 {
		return
	}
	full := uint64(min(tick, s.maxTicks))<<s.seqBits | uint64(s.seqMask)
	for _, shard := range shards {
		state := &s.shards[shard&s.shardMask]
		for old := state.last.Load(); old < full && !state.last.CompareAndSwap(old, full); old = state.last.Load() {
		}
	}
}

// clockTolerance is how long a caller waits for the clock to pass a floor.
func (s *Snowflake) clockTolerance() time.Duration {
	if s.leases != nil {
		return s.leases.opts.ClockTolerance
	}
	return DefaultClockTolerance
}

// poolOf is target's pool, or its Conn when it has none: the moves of a
// counter must not roll back with a caller's transaction.
func poolOf(target Target) Conn {
	if target.DB != nil {
		return target.DB
	}
	return target.Conn
}
