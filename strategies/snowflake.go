package strategies

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Snowflake makes IDs in-process, without a round trip: time from the
// monotonic clock, the worker ID in the top WorkerBits of the sequence field,
// and a per-logical-shard sequence advanced by compare-and-swap. When a
// shard's sequence is full within one tick, the caller sleeps until the next
// tick; the sequence never wraps.
//
// Two processes must not share a worker ID: [NewLeasedSnowflake] leases one
// per physical database; [NewSnowflake] takes a fixed one, which the caller
// must keep unique, and whose time is not remembered across restarts.
// A Snowflake is safe for concurrent use.
type Snowflake struct {
	clock           Clock
	start           time.Time     // clock reading the elapsed time is measured from
	startOffset     time.Duration // start minus the epoch, by the wall clock
	epoch           time.Time
	unit            time.Duration
	maxTicks        int64
	seqBits         uint // width of the sequence below the worker bits
	seqMask         int64
	shardShift      uint
	timeShift       uint
	workerBits      int64 // the fixed worker ID, already shifted into place
	workerCountBits int
	shardMask       int
	shards          []shardSequence
	leases          *leaseKeeper // nil: a fixed worker ID
	leaseCheck      LeaseCheck   // nil: none

	overflowWaits, clockWaits atomic.Uint64
}

// shardSequence is the state of one logical shard: its last tick and
// sequence, and how many IDs it issued (counted here, beside the state the
// same callers already write, so that counting costs no shared cache line).
type shardSequence struct {
	last   atomic.Uint64 // last tick << seqBits | last sequence
	issued atomic.Uint64
}

var _ Generator = (*Snowflake)(nil)

// SnowflakeOption configures [NewSnowflake].
type SnowflakeOption func(*Snowflake)

// WithClock makes the generator read time from c instead of [SystemClock].
func WithClock(c Clock) SnowflakeOption { return func(s *Snowflake) { s.clock = c } }

// LeaseCheck is asked, for a database and the lease table a leased
// generator names, whether it may lease a worker ID there; an error stops
// the lease, and so every ID for that database's shards.
type LeaseCheck func(ctx context.Context, target Target, leaseTable string) error

// WithLeaseCheck makes a leased generator run check in each database before
// it creates the lease table there and takes its first lease (and again
// should it create the table again): once per database, not per ID.
func WithLeaseCheck(check LeaseCheck) SnowflakeOption {
	return func(s *Snowflake) { s.leaseCheck = check }
}

// NewSnowflake returns a generator for layout and worker. It fails with
// [ErrInvalidLayout] or [ErrInvalidWorker].
func NewSnowflake(layout Layout, worker int, opts ...SnowflakeOption) (*Snowflake, error) {
	s := &Snowflake{clock: SystemClock}
	for _, opt := range opts {
		opt(s)
	}
	s.start = s.clock.Now()
	if err := layout.Validate(s.start); err != nil {
		return nil, err
	}
	l := layout.Normalized()
	if worker < 0 || worker >= 1<<l.WorkerBits {
		return nil, fmt.Errorf("%w: %d does not fit WorkerBits %d (0..%d)", ErrInvalidWorker, worker, l.WorkerBits, 1<<l.WorkerBits-1)
	}
	s.startOffset = s.start.Sub(l.Epoch)
	s.epoch = l.Epoch
	s.workerCountBits = l.WorkerBits
	s.unit = l.TimeUnit
	s.maxTicks = 1<<l.TimeBits - 1
	s.seqBits = uint(l.SequenceBits - l.WorkerBits)
	s.seqMask = 1<<s.seqBits - 1
	s.shardShift = uint(l.SequenceBits)
	s.timeShift = uint(l.SequenceBits + l.ShardBits)
	s.workerBits = int64(worker) << s.seqBits
	s.shardMask = 1<<l.ShardBits - 1
	s.shards = make([]shardSequence, 1<<l.ShardBits)
	return s, nil
}

// Next returns a new ID in logical shard shard (taken modulo the shard
// count) from a generator with a fixed worker ID. A leased generator needs
// the database of the shard: use Generate.
func (s *Snowflake) Next(shard int) (int64, error) {
	if s.leases != nil {
		return 0, errors.New("strategies: a leased snowflake makes IDs with Generate, for the database of the shard")
	}
	return s.next(context.Background(), shard, s.workerBits, nil)
}

// next makes an ID in shard with the worker ID workerBits, under lease l
// unless l is nil. A wait for the clock to pass a floor ends with ctx's
// error should ctx end first.
func (s *Snowflake) next(ctx context.Context, shard int, workerBits int64, l *lease) (int64, error) {
	shard &= s.shardMask
	state := &s.shards[shard]
	for {
		since := s.clock.Since(s.start)
		if l != nil && int64(since) >= l.validUntil.Load() {
			return 0, ErrLeaseLost
		}
		elapsed := s.startOffset + since
		now := int64(elapsed / s.unit)
		old := state.last.Load()
		lastTick, lastSeq := int64(old>>s.seqBits), int64(old)&s.seqMask
		tick, seq := now, int64(0)
		if now <= lastTick {
			if lastSeq == s.seqMask {
				// Full for this tick: wait for the next one rather than wrap.
				wait := time.Duration(lastTick+1)*s.unit - elapsed
				if wait <= s.unit {
					s.overflowWaits.Add(1)
				} else if err := s.floorAhead(shard, lastTick, wait); err != nil {
					return 0, err
				} else if ctx.Done() != nil {
					if err := sleepWatching(ctx, s.clock, wait); err != nil {
						return 0, fmt.Errorf("strategies: waiting %s for the clock to pass logical shard %d's floor: %w", wait, shard, err)
					}
					continue
				}
				s.clock.Sleep(wait)
				continue
			}
			tick, seq = lastTick, lastSeq+1
		}
		if tick > s.maxTicks {
			return 0, ErrTimeExhausted
		}
		if state.last.CompareAndSwap(old, uint64(tick)<<s.seqBits|uint64(seq)) {
			state.issued.Add(1)
			return tick<<s.timeShift | int64(shard)<<s.shardShift | workerBits | seq, nil
		}
	}
}

// Generate implements [Generator]. A leased generator uses the worker ID it
// holds in target's database, leasing one on first use.
func (s *Snowflake) Generate(ctx context.Context, target Target, shards []int, ids []int64) error {
	workerBits, l := s.workerBits, (*lease)(nil)
	if s.leases != nil {
		if l = s.leases.held(target.Name); l == nil {
			var err error
			if l, err = s.leaseFor(ctx, target); err != nil {
				return err
			}
		}
		workerBits = l.workerBits
	}
	for i := 0; i < len(shards); i++ {
		id, err := s.next(ctx, shards[i], workerBits, l)
		if err != nil {
			if !errors.Is(err, ErrLeaseLost) {
				return err
			}
			if renewed := s.leases.held(target.Name); renewed != nil && renewed != l {
				l, workerBits = renewed, renewed.workerBits // taken again while this call ran
				i--
				continue
			}
			return fmt.Errorf("%w: worker %d on %s was not renewed in time; no ID is issued for its shards until a lease is held again", err, l.worker, target.Name)
		}
		ids[i] = id
	}
	return nil
}

// floorAhead accounts for a wait longer than a tick, which only a floor
// (SetFloor) ahead of the clock makes, or fails when it is beyond the tolerance.
func (s *Snowflake) floorAhead(shard int, floor int64, wait time.Duration) error {
	if tolerance := s.clockTolerance(); wait > tolerance {
		return fmt.Errorf("%w: logical shard %d has a floor at %s, %s ahead of this clock (tolerance %s)",
			ErrClockBackwards, shard, s.epoch.Add(time.Duration(floor)*s.unit).UTC().Format(time.RFC3339Nano), wait, tolerance)
	}
	s.clockWaits.Add(1)
	return nil
}

// lastTick is the latest tick of any logical shard's last ID or floor.
func (s *Snowflake) lastTick() int64 {
	var last int64
	for i := range s.shards {
		last = max(last, int64(s.shards[i].last.Load()>>s.seqBits))
	}
	return last
}

// tickAt is the time tick at elapsed on the generator's clock.
func (s *Snowflake) tickAt(elapsed time.Duration) int64 {
	return int64((s.startOffset + elapsed) / s.unit)
}

// OverflowWaits is how many times a caller slept because a shard's sequence
// was full for the current tick.
func (s *Snowflake) OverflowWaits() uint64 { return s.overflowWaits.Load() }

// Stats implements [Reporter].
func (s *Snowflake) Stats() Stats {
	var issued uint64
	for i := range s.shards {
		issued += s.shards[i].issued.Load()
	}
	return Stats{
		Issued: issued,
		Waits:  Waits{SequenceFull: s.overflowWaits.Load(), ClockBehind: s.clockWaits.Load()},
		Leases: s.leaseStates(),
	}
}
