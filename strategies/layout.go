package strategies

import (
	"fmt"
	"math"
	"time"
)

// Default widths and epoch of a [Layout] whose fields are zero. Instagram's
// scheme is 41/13/10, but that is 64 bits with the sign bit as the top time
// bit; keeping IDs positive leaves 40 bits of time: milliseconds until 2059-11.
const (
	DefaultTimeBits     = 40
	DefaultShardBits    = 13
	DefaultSequenceBits = 10
	// DefaultWorkerBits gives snowflake 64 worker IDs per physical database:
	// 32 processes, each restarted once within a lease's TTL, find one free.
	DefaultWorkerBits = 6
	// NoWorkerBits, as Layout.WorkerBits, leaves snowflake one worker ID.
	NoWorkerBits = -1
	// MaxShardBits bounds the logical shards at 65,536, and so the per-shard
	// state a process keeps (about 1 MiB for snowflake, 640 KiB for the map).
	MaxShardBits = 16
	// minSequenceLeft is what a default WorkerBits leaves of a narrow
	// sequence field: 16 IDs per tick.
	minSequenceLeft = 4
)

// DefaultEpoch is the epoch of the default layout: 2025-01-01T00:00:00Z.
var DefaultEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// minLifetime is how long a layout must still be able to make IDs when it is
// validated: a layout about to run out would fail in production, not in review.
const minLifetime = 365 * 24 * time.Hour

// maxEpochAge keeps the time since the epoch, and some years after, within
// a time.Duration, in which the strategies measure it.
const maxEpochAge = 280 * 8766 * time.Hour

// Layout says how a 64-bit ID is cut into fields, most significant bit first:
// one sign bit (always 0), TimeBits of time units since Epoch, ShardBits of
// logical shard, and SequenceBits of sequence. The snowflake strategy carves
// WorkerBits out of the top of the sequence field.
//
// The zero value is the default layout: 40 bits of milliseconds since
// 2025-01-01 (good until 2059-11), 13 bits of logical shard (8192 shards) and 10
// bits of sequence (1024 IDs per millisecond per shard). A Layout is a plain
// value, safe for concurrent use.
type Layout struct {
	// Epoch is the instant of time field 0. Default: [DefaultEpoch]. It must be
	// in the past.
	Epoch time.Time
	// TimeUnit is the length of one tick of the time field, a positive
	// multiple of a millisecond. Default: 1ms.
	TimeUnit time.Duration
	// TimeBits, ShardBits and SequenceBits are the widths of the three fields,
	// each at least 1, adding up to 63; ShardBits at most [MaxShardBits].
	// Unset (zero) widths are filled: the last unset of TimeBits, ShardBits,
	// SequenceBits takes what the others leave of 63, any other unset one
	// its default (40, 13, 10). So Layout{ShardBits: 12} is 40/12/11.
	TimeBits, ShardBits, SequenceBits int
	// WorkerBits is the part of the sequence field that the snowflake strategy
	// fills with its worker ID; other strategies use the whole sequence.
	// Default (zero): 6, 64 worker IDs, leaving 4 bits (16 IDs per tick per
	// logical shard per process); on a narrower sequence, what leaves 4 bits.
	// [NoWorkerBits] gives one worker ID. It must leave at least one bit of
	// sequence.
	WorkerBits int

	filled bool // by Normalized, which must not fill twice: a NoWorkerBits layout has WorkerBits 0 then
}

// Parts are the fields of one ID, as [Layout.Decode] reads them.
type Parts struct {
	Time     time.Time // start of the time unit the ID was made in
	Ticks    int64     // the raw time field
	Shard    int       // logical shard
	Worker   int       // worker ID (snowflake only; 0 when the layout has no worker bits)
	Sequence int       // the whole sequence field: the count within the time unit (instagram)
	// WorkerSequence is the sequence below the worker bits: snowflake's count
	// within the time unit for its worker.
	WorkerSequence int
}

// Normalized returns the layout with every zero field set to its default.
func (l Layout) Normalized() Layout {
	if l.filled {
		return l
	}
	l.filled = true
	if l.Epoch.IsZero() {
		l.Epoch = DefaultEpoch
	}
	if l.TimeUnit == 0 {
		l.TimeUnit = time.Millisecond
	}
	widths := []*int{&l.TimeBits, &l.ShardBits, &l.SequenceBits}
	defaults := []int{DefaultTimeBits, DefaultShardBits, DefaultSequenceBits}
	last := -1
	for i, w := range widths {
		if *w == 0 {
			last = i
		}
	}
	for i, w := range widths {
		if *w == 0 && i != last {
			*w = defaults[i]
		}
	}
	if last >= 0 {
		*widths[last] = 63 - l.TimeBits - l.ShardBits - l.SequenceBits
	}
	switch {
	case l.WorkerBits == NoWorkerBits:
		l.WorkerBits = 0
	case l.WorkerBits == 0:
		l.WorkerBits = max(0, min(DefaultWorkerBits, l.SequenceBits-minSequenceLeft))
	}
	return l
}

// Validate reports, as an error wrapping [ErrInvalidLayout] that names the
// field, whether the layout can make IDs now and for at least a year.
func (l Layout) Validate(now time.Time) error {
	l = l.Normalized()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidLayout}, args...)...)
	}
	switch {
	case l.TimeBits < 1 || l.ShardBits < 1 || l.SequenceBits < 1:
		return bad("TimeBits (%d), ShardBits (%d) and SequenceBits (%d) must each be at least 1", l.TimeBits, l.ShardBits, l.SequenceBits)
	case l.TimeBits+l.ShardBits+l.SequenceBits != 63:
		return bad("TimeBits (%d) + ShardBits (%d) + SequenceBits (%d) = %d, want 63 (the sign bit is the 64th)",
			l.TimeBits, l.ShardBits, l.SequenceBits, l.TimeBits+l.ShardBits+l.SequenceBits)
	case l.ShardBits > MaxShardBits:
		return bad("ShardBits (%d) must be at most %d (%d logical shards): each process keeps state per logical shard", l.ShardBits, MaxShardBits, 1<<MaxShardBits)
	case l.WorkerBits < 0 || l.WorkerBits >= l.SequenceBits:
		return bad("WorkerBits (%d) must be between 0 and SequenceBits-1 (%d), leaving at least one bit of sequence", l.WorkerBits, l.SequenceBits-1)
	case l.TimeUnit < time.Millisecond || l.TimeUnit%time.Millisecond != 0:
		return bad("TimeUnit (%s) must be a positive multiple of 1ms", l.TimeUnit)
	case l.Epoch.After(now):
		return bad("Epoch (%s) is in the future", l.Epoch.UTC().Format(time.RFC3339))
	case now.Sub(l.Epoch) > maxEpochAge:
		return bad("Epoch (%s) is more than 280 years ago: the time since it is kept in a time.Duration, which holds 292 years", l.Epoch.UTC().Format(time.RFC3339))
	}
	if runsOut := l.RunsOut(); runsOut.Before(now.Add(minLifetime)) {
		return bad("the time field runs out on %s, less than a year from now: widen TimeBits or move Epoch", runsOut.UTC().Format(time.RFC3339))
	}
	return nil
}

// The methods below shift by unsigned counts and divide by at least 1ms: on
// a layout Validate refuses (a negative width, a sub-millisecond unit) they
// give meaningless fields, never a panic.

// RunsOut returns the first instant the time field cannot hold.
func (l Layout) RunsOut() time.Time {
	l = l.Normalized()
	return l.TimeOf(int64(1) << uint(l.TimeBits))
}

// unitMs is the time unit in milliseconds, at least 1.
func (l Layout) unitMs() int64 { return max(int64(l.TimeUnit/time.Millisecond), 1) }

// ShardCount is the number of logical shards, 2^ShardBits.
func (l Layout) ShardCount() int {
	if !l.filled { // a normalized layout, as the plugin's, is read as it is: routing asks on every statement
		l = l.Normalized()
	}
	return 1 << uint(l.ShardBits)
}

// WorkerCount is the number of snowflake worker IDs, 2^WorkerBits.
func (l Layout) WorkerCount() int { return 1 << uint(l.Normalized().WorkerBits) }

// IDsPerTick is how many IDs one logical shard can get in one time unit
// from the strategies that use the whole sequence field (instagram).
func (l Layout) IDsPerTick() int { return 1 << uint(l.Normalized().SequenceBits) }

// WorkerIDsPerTick is how many IDs one snowflake worker can make in one
// logical shard in one time unit: the sequence below the worker bits.
func (l Layout) WorkerIDsPerTick() int {
	l = l.Normalized()
	return 1 << uint(l.SequenceBits-l.WorkerBits)
}

// Ticks returns the time field for instant t: whole time units since Epoch.
func (l Layout) Ticks(t time.Time) int64 {
	l = l.Normalized()
	return floorDiv(t.UnixMilli()-l.Epoch.UnixMilli(), l.unitMs())
}

// TimeOf returns the start of tick ticks; past what a time in milliseconds
// holds, the last instant it does.
func (l Layout) TimeOf(ticks int64) time.Time {
	l = l.Normalized()
	unit, epoch := l.unitMs(), l.Epoch.UnixMilli()
	if ticks > 0 && ticks > (math.MaxInt64-max(epoch, 0))/unit { // an epoch before 1970 is negative
		return time.UnixMilli(math.MaxInt64).UTC()
	}
	if ticks < 0 && ticks < (math.MinInt64-min(epoch, 0))/unit {
		return time.UnixMilli(math.MinInt64).UTC()
	}
	return time.UnixMilli(epoch + ticks*unit).UTC()
}

// Compose builds the ID for instant t, logical shard and sequence. Bits of
// shard and sequence beyond their widths are dropped; use [Layout.Validate]
// on the layout and [Layout.Check] on the result where that matters.
func (l Layout) Compose(t time.Time, shard, sequence int) int64 {
	return l.ComposeTicks(l.Ticks(t), shard, sequence)
}

// ComposeTicks builds the ID from a raw time field. Ticks the field cannot
// hold (before Epoch, or once it ran out) give 0, which no strategy makes and
// [Layout.Check] refuses: shifted, they would wrap into an ID of another time.
func (l Layout) ComposeTicks(ticks int64, shard, sequence int) int64 {
	l = l.Normalized()
	if ticks < 0 || ticks >= int64(1)<<uint(l.TimeBits) {
		return 0
	}
	return ticks<<uint(l.ShardBits+l.SequenceBits) |
		int64(shard)&(1<<uint(l.ShardBits)-1)<<uint(l.SequenceBits) |
		int64(sequence)&(1<<uint(l.SequenceBits)-1)
}

// Shard returns the logical shard of id: (id >> SequenceBits) & (2^ShardBits - 1).
// It is the same for every int64 strategy.
func (l Layout) Shard(id int64) int {
	if !l.filled {
		l = l.Normalized()
	}
	return int(id >> uint(l.SequenceBits) & (1<<uint(l.ShardBits) - 1))
}

// Decode splits id into its fields.
func (l Layout) Decode(id int64) Parts {
	l = l.Normalized()
	seqOnly := uint(l.SequenceBits - l.WorkerBits)
	ticks := id >> uint(l.ShardBits+l.SequenceBits)
	return Parts{
		Time:           l.TimeOf(ticks),
		Ticks:          ticks,
		Shard:          l.Shard(id),
		Worker:         int(id >> seqOnly & (1<<uint(l.WorkerBits) - 1)),
		Sequence:       int(id & (1<<uint(l.SequenceBits) - 1)),
		WorkerSequence: int(id & (1<<seqOnly - 1)),
	}
}

// maxFutureSkew is how far ahead of now an ID's time may be and still be one
// this layout could have made (strategies borrow a few ticks under load).
const maxFutureSkew = 24 * time.Hour

// Check reports, as an error wrapping [ErrInvalidID], whether id is one the
// layout could have made by now: positive, and not timed more than a day
// after now.
func (l Layout) Check(id int64, now time.Time) error {
	if id <= 0 {
		return fmt.Errorf("%w: %d is not positive", ErrInvalidID, id)
	}
	// By ticks, not times: a coarse unit's far ticks pass what a time holds.
	if p := l.Decode(id); p.Ticks > l.Ticks(now.Add(maxFutureSkew)) {
		return fmt.Errorf("%w: %d decodes to %s, more than %s after now", ErrInvalidID, id, p.Time.UTC().Format(time.RFC3339), maxFutureSkew)
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
