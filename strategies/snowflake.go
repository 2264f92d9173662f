package strategies

import (
	"context"
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
// Two processes must not share a worker ID: until worker IDs are leased, give
// each process its own WorkerID, with enough WorkerBits in the layout.
// A Snowflake is safe for concurrent use.
type Snowflake struct {
	clock        Clock
	start        time.Time     // clock reading the elapsed time is measured from
	startOffset  time.Duration // start minus the epoch, by the wall clock
	unit         time.Duration
	maxTicks     int64
	seqBits      uint // width of the sequence below the worker bits
	seqMask      int64
	shardShift   uint
	timeShift    uint
	workerBits   int64 // worker ID, already shifted into place
	shardMask    int
	shardsIssued []atomic.Uint64 // per logical shard: last tick << seqBits | last sequence

	overflowWaits atomic.Uint64
}

var _ Generator = (*Snowflake)(nil)

// SnowflakeOption configures [NewSnowflake].
type SnowflakeOption func(*Snowflake)

// WithClock makes the generator read time from c instead of [SystemClock].
func WithClock(c Clock) SnowflakeOption { return func(s *Snowflake) { s.clock = c } }

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
	s.unit = l.TimeUnit
	s.maxTicks = 1<<l.TimeBits - 1
	s.seqBits = uint(l.SequenceBits - l.WorkerBits)
	s.seqMask = 1<<s.seqBits - 1
	s.shardShift = uint(l.SequenceBits)
	s.timeShift = uint(l.SequenceBits + l.ShardBits)
	s.workerBits = int64(worker) << s.seqBits
	s.shardMask = 1<<l.ShardBits - 1
	s.shardsIssued = make([]atomic.Uint64, 1<<l.ShardBits)
	return s, nil
}

// Next returns a new ID in logical shard shard (taken modulo the shard count).
func (s *Snowflake) Next(shard int) (int64, error) {
	shard &= s.shardMask
	issued := &s.shardsIssued[shard]
	for {
		elapsed := s.startOffset + s.clock.Since(s.start)
		now := int64(elapsed / s.unit)
		old := issued.Load()
		lastTick, lastSeq := int64(old>>s.seqBits), int64(old)&s.seqMask
		tick, seq := now, int64(0)
		if now <= lastTick {
			if lastSeq == s.seqMask {
				// Full for this tick: wait for the next one rather than wrap.
				s.overflowWaits.Add(1)
				s.clock.Sleep(time.Duration(lastTick+1)*s.unit - elapsed)
				continue
			}
			tick, seq = lastTick, lastSeq+1
		}
		if tick > s.maxTicks {
			return 0, ErrTimeExhausted
		}
		if issued.CompareAndSwap(old, uint64(tick)<<s.seqBits|uint64(seq)) {
			return tick<<s.timeShift | int64(shard)<<s.shardShift | s.workerBits | seq, nil
		}
	}
}

// Generate implements [Generator]; the target is not used.
func (s *Snowflake) Generate(_ context.Context, _ Target, shards []int, ids []int64) error {
	for i, shard := range shards {
		id, err := s.Next(shard)
		if err != nil {
			return err
		}
		ids[i] = id
	}
	return nil
}

// OverflowWaits is how many times a caller slept because a shard's sequence
// was full for the current tick.
func (s *Snowflake) OverflowWaits() uint64 { return s.overflowWaits.Load() }
