package strategies

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Segment hands out IDs from blocks of a counter, as Spring's
// MySQLMaxValueIncrementer with a cache and Meituan's Leaf-segment do. Each
// physical database keeps, in its table shardid_segments, one counter row per
// sequence (the table the rows go into); a block of Step values is reserved
// by moving the row in one atomic statement, and the block's values are then
// handed out in-process, lock-free and without a round trip. When PrefetchAt
// of a block is used, the next one is reserved in the background (a double
// buffer), so callers wait only when IDs are taken faster than a block can be
// fetched. The step adapts to the rate: it doubles while blocks last less
// than GrowBelow and halves when one lasted more than ShrinkAbove.
//
// Counter value c becomes the ID
//
//	(c >> SequenceBits) << (ShardBits + SequenceBits) | shard << SequenceBits | c & (2^SequenceBits - 1)
//
// so the logical shard sits where [Layout.Shard] reads it, and the IDs of one
// shard ascend with c. c must stay below 2^(TimeBits+SequenceBits); past it
// Generate fails with [ErrSequenceExhausted].
//
// A reserved block is never handed out twice. A restarted process reserves
// above whatever the row says. The process remembers the highest value it
// ever reserved (its floor) and reserves at max(v, floor) + step, so a
// counter that went back in a failover cannot give it a block it already
// used. The row lives in the same physical database as the rows that carry
// its IDs, so a promoted replica has every reservation whose rows it has; but
// a process still drawing on blocks the promoted replica never saw shares
// them with a process that reserves from the counter that went back. Like
// Leaf, segment therefore needs a failover that loses no acknowledged write
// (semi-synchronous or synchronous replication).
//
// Reservations run on [Target.DB], never in the caller's transaction: a
// reservation rolled back with the rows would let another process reserve
// the same block. The one exception is SQLite, whose single writer may be the
// caller's own transaction: a caller there that finds no value left reserves
// just the values it needs in it, for itself alone (see reserveIn). A Segment
// is safe for concurrent use; call Close to stop its background refills.
type Segment struct {
	layout     Layout
	opts       SegmentOptions // with the defaults filled in
	limit      int64          // counter values must stay below 2^(TimeBits+SequenceBits)
	shardCount int
	// refillTimeout bounds a background refill, so a database that stopped
	// answering makes callers fetch for themselves instead of waiting forever.
	refillTimeout time.Duration

	sequences sync.Map // segmentKey → *segmentSequence

	mu          sync.Mutex      // protects the fields below
	tablesReady map[string]bool // physical databases whose shardid_segments exists
	closed      bool
	life        context.Context // cancelled by Close
	stop        context.CancelFunc
	background  sync.WaitGroup

	closedFast  atomic.Bool // closed, read without the lock on every call
	issued      atomic.Uint64
	refillWaits atomic.Uint64
}

var (
	_ Generator = (*Segment)(nil)
	_ Reporter  = (*Segment)(nil)
)

// SegmentOptions tunes [NewSegment]; the zero value takes every default.
type SegmentOptions struct {
	// InitialStep is the size of the first block; MinStep and MaxStep bound
	// the adapted ones. Defaults: 1000, 100 and 1,000,000.
	InitialStep, MinStep, MaxStep int64
	// GrowBelow and ShrinkAbove: a new block is twice as large when the
	// previous one lasted less than GrowBelow, half as large when it lasted
	// more than ShrinkAbove. Defaults: 15 and 30 minutes, Leaf's.
	GrowBelow, ShrinkAbove time.Duration
	// PrefetchAt is the share of a block used when the next one is fetched,
	// in (0, 1]. Default: 0.1.
	PrefetchAt float64
	// Clock measures how long blocks last. Default: [SystemClock].
	Clock Clock
}

// Defaults of [SegmentOptions].
const (
	DefaultSegmentInitialStep = 1000
	DefaultSegmentMinStep     = 100
	DefaultSegmentMaxStep     = 1_000_000
	DefaultSegmentGrowBelow   = 15 * time.Minute
	DefaultSegmentShrinkAbove = 30 * time.Minute
	DefaultSegmentPrefetchAt  = 0.1
)

// maxSegmentStep keeps the counter far from overflowing BIGINT: each process
// can push it at most one block past the limit of the layout (2^62).
const maxSegmentStep = 1 << 40

// defaultRefillTimeout bounds a background refill.
const defaultRefillTimeout = time.Minute

// errSegmentClosed is returned by Generate after Close.
var errSegmentClosed = errors.New("strategies: segment: generator is closed")

// NewSegment returns the generator for layout, which must be valid, and
// opts. Unset steps default around the ones that are set, so InitialStep
// alone is enough.
func NewSegment(layout Layout, opts SegmentOptions) (*Segment, error) {
	if opts.Clock == nil {
		opts.Clock = SystemClock
	}
	if err := layout.Validate(opts.Clock.Now()); err != nil {
		return nil, err
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	l := layout.Normalized()
	life, stop := context.WithCancel(context.Background())
	return &Segment{
		layout:        l,
		opts:          opts,
		limit:         1 << (l.TimeBits + l.SequenceBits),
		shardCount:    l.ShardCount(),
		refillTimeout: defaultRefillTimeout,
		tablesReady:   map[string]bool{},
		life:          life,
		stop:          stop,
	}, nil
}

func (o SegmentOptions) withDefaults() (SegmentOptions, error) {
	if o.MinStep == 0 {
		o.MinStep = DefaultSegmentMinStep
		if o.InitialStep > 0 {
			o.MinStep = min(o.MinStep, o.InitialStep)
		}
	}
	if o.MaxStep == 0 {
		o.MaxStep = max(DefaultSegmentMaxStep, o.InitialStep, o.MinStep)
	}
	if o.InitialStep == 0 {
		o.InitialStep = min(max(DefaultSegmentInitialStep, o.MinStep), o.MaxStep)
	}
	if o.GrowBelow == 0 {
		o.GrowBelow = DefaultSegmentGrowBelow
	}
	if o.ShrinkAbove == 0 {
		o.ShrinkAbove = max(DefaultSegmentShrinkAbove, o.GrowBelow)
	}
	if o.PrefetchAt == 0 {
		o.PrefetchAt = DefaultSegmentPrefetchAt
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("strategies: segment: invalid options: "+format, args...)
	}
	switch {
	case o.MinStep < 1 || o.MinStep > o.InitialStep || o.InitialStep > o.MaxStep:
		return o, bad("want 1 <= MinStep (%d) <= InitialStep (%d) <= MaxStep (%d)", o.MinStep, o.InitialStep, o.MaxStep)
	case o.MaxStep > maxSegmentStep:
		return o, bad("MaxStep (%d) must be at most 2^40", o.MaxStep)
	case o.GrowBelow < 0 || o.GrowBelow > o.ShrinkAbove:
		return o, bad("want 0 <= GrowBelow (%s) <= ShrinkAbove (%s)", o.GrowBelow, o.ShrinkAbove)
	case !(o.PrefetchAt > 0 && o.PrefetchAt <= 1): // also rejects NaN
		return o, bad("PrefetchAt (%g) must be in (0, 1]", o.PrefetchAt)
	}
	return o, nil
}

// Prepare creates shardid_segments on target, as Generate does on first use;
// migrations call it so that the first insert does not. It is idempotent and
// safe to run from several processes at once.
func (s *Segment) Prepare(ctx context.Context, target Target) error {
	sqls, err := segmentSQLFor(target.Dialect)
	if err != nil {
		return err
	}
	conn := target.Conn
	if conn == nil && target.DB != nil {
		conn = target.DB
	}
	if conn == nil {
		return fmt.Errorf("strategies: segment: target %q has no connection", target.Name)
	}
	s.mu.Lock()
	s.tablesReady[target.Name] = false // created again, should it have been dropped since
	s.mu.Unlock()
	if err := s.ensureTable(ctx, target.Name, sqls, conn); err != nil {
		return fmt.Errorf("strategies: segment: creating %s on %q: %w", segmentTable, target.Name, err)
	}
	return s.restoreFloors(ctx, target.Name, sqls, conn)
}

// restoreFloors raises the counters of target's sequences to the blocks this
// process reserved: a table made again (a teardown dropped it) starts them at
// 0, and another process reserving from there would get the blocks this one
// still hands out.
func (s *Segment) restoreFloors(ctx context.Context, database string, sqls segmentSQL, conn Conn) error {
	floors := map[string]int64{}
	s.sequences.Range(func(key, value any) bool {
		if k := key.(segmentKey); k.database == database {
			q := value.(*segmentSequence)
			q.mu.Lock()
			if q.floor > 0 {
				floors[k.name] = q.floor
			}
			q.mu.Unlock()
		}
		return true
	})
	for name, floor := range floors {
		if _, err := conn.ExecContext(ctx, sqls.seed, name); err != nil {
			return fmt.Errorf("strategies: segment: restoring the counter of %s on %q: %w", name, database, err)
		}
		if _, err := conn.ExecContext(ctx, sqls.raise, floor, name); err != nil {
			return fmt.Errorf("strategies: segment: restoring the counter of %s on %q: %w", name, database, err)
		}
	}
	return nil
}

// Generate implements [Generator]. It makes a round trip only when no
// reserved value is left: the first call for a sequence, or IDs taken faster
// than blocks are fetched. On error ids are zeroed.
func (s *Segment) Generate(ctx context.Context, target Target, shards []int, ids []int64) error {
	if len(shards) != len(ids) {
		return fmt.Errorf("strategies: segment: %d shards for %d ids", len(shards), len(ids))
	}
	if len(ids) == 0 {
		return nil
	}
	for _, shard := range shards {
		if shard < 0 || shard >= s.shardCount {
			return fmt.Errorf("strategies: segment: shard %d outside 0..%d", shard, s.shardCount-1)
		}
	}
	if s.closedFast.Load() {
		return errSegmentClosed
	}
	q, err := s.sequence(target)
	if err != nil {
		return err
	}
	var writer Conn
	if target.Dialect == "sqlite" && target.Conn != nil && target.Conn != Conn(target.DB) {
		writer = target.Conn
	}
	for filled := 0; filled < len(ids); {
		first, got, err := q.take(ctx, int64(len(ids)-filled), writer)
		if err != nil {
			clear(ids)
			return err
		}
		for c := first; c < first+got; c++ {
			ids[filled] = s.compose(c, shards[filled])
			filled++
		}
	}
	s.issued.Add(uint64(len(ids)))
	return nil
}

// compose spreads counter value c around the shard field.
func (s *Segment) compose(c int64, shard int) int64 {
	seqBits := s.layout.SequenceBits
	return (c>>seqBits)<<(s.layout.ShardBits+seqBits) | int64(shard)<<seqBits | c&(1<<seqBits-1)
}

// Stats implements [Reporter].
func (s *Segment) Stats() Stats {
	stats := Stats{Issued: s.issued.Load(), Waits: Waits{Refill: s.refillWaits.Load()}}
	s.sequences.Range(func(_, v any) bool {
		stats.Sequences = append(stats.Sequences, v.(*segmentSequence).state())
		return true
	})
	slices.SortFunc(stats.Sequences, func(a, b SequenceState) int {
		return cmp.Or(cmp.Compare(a.Database, b.Database), cmp.Compare(a.Sequence, b.Sequence))
	})
	return stats
}

// Close stops the background refills and waits for them to end. Generate
// fails after Close. The values left in the cached blocks are never issued.
func (s *Segment) Close() error {
	s.mu.Lock()
	s.closed = true
	s.closedFast.Store(true)
	s.stop()
	s.mu.Unlock()
	s.background.Wait()
	return nil
}

// startBackground registers a background refill, unless s is closed: the
// WaitGroup must not grow once Close waits on it.
func (s *Segment) startBackground() (context.Context, context.CancelFunc, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, false
	}
	s.background.Add(1)
	ctx, cancel := context.WithTimeout(s.life, s.refillTimeout)
	return ctx, cancel, true
}

// boundEnded is the error of a reservation whose own context ended: Close,
// or refillTimeout. That context is no caller's, so its error is told, not
// wrapped: a caller whose context is live must not take it for its own
// deadline or cancellation.
func (s *Segment) boundEnded(err error) error {
	if s.closedFast.Load() {
		return fmt.Errorf("%w: the reservation under way ended (%v)", errSegmentClosed, err)
	}
	return fmt.Errorf("the database did not answer within %s (%v)", s.refillTimeout, err)
}

// ensureTable creates shardid_segments once per physical database.
func (s *Segment) ensureTable(ctx context.Context, database string, sqls segmentSQL, conn Conn) error {
	s.mu.Lock()
	ready := s.tablesReady[database]
	s.mu.Unlock()
	if ready {
		return nil
	}
	// A block reserved must be committed before its values are handed out.
	if err := requireAutocommit(ctx, conn, sqls.autocommit); err != nil {
		return err
	}
	// Concurrent first uses may both create: the DDL is idempotent.
	if err := createSegmentTable(ctx, conn, sqls); err != nil {
		return err
	}
	// A table created inside a transaction may yet be rolled back with it.
	if !isTransaction(conn) {
		s.mu.Lock()
		s.tablesReady[database] = true
		s.mu.Unlock()
	}
	return nil
}

// segmentKey names one sequence in one physical database.
type segmentKey struct{ database, name string }

func (s *Segment) sequence(target Target) (*segmentSequence, error) {
	key := segmentKey{target.Name, target.Table}
	if q, ok := s.sequences.Load(key); ok {
		return q.(*segmentSequence), nil
	}
	if target.Table == "" || len(target.Table) > 191 {
		return nil, fmt.Errorf("strategies: segment: the sequence name (the target's table) must have 1 to 191 characters, not %q", target.Table)
	}
	sqls, err := segmentSQLFor(target.Dialect)
	if err != nil {
		return nil, err
	}
	pool := target.DB
	if db, ok := target.Conn.(*sql.DB); pool == nil && ok {
		pool = db
	}
	if pool == nil {
		return nil, fmt.Errorf("strategies: segment: target %q has no DB pool to reserve blocks with", target.Name)
	}
	q := &segmentSequence{seg: s, database: target.Name, name: target.Table, sql: sqls, pool: pool, step: s.opts.InitialStep}
	actual, _ := s.sequences.LoadOrStore(key, q)
	return actual.(*segmentSequence), nil
}

// segmentSequence is one sequence in one physical database.
type segmentSequence struct {
	seg            *Segment
	database, name string
	sql            segmentSQL
	pool           *sql.DB

	// current is the block IDs are taken from, lock-free.
	current atomic.Pointer[segmentBlock]

	mu         sync.Mutex // protects the fields below
	next       *segmentBlock
	inflight   *segmentRefill // the one reservation under way, if any
	exhausted  bool           // a reserved block started past the limit
	step       int64          // size of the last block reserved (the first: InitialStep)
	floor      int64          // highest counter value this process reserved
	reservedAt time.Time      // when the last block was reserved; zero before the first
	refills    uint64
	// epoch counts the Forget calls: a reservation started before one
	// installs no block, which may lie below a counter advanced meanwhile
	epoch uint64
}

// segmentRefill is one reservation under way; done is closed when it ends.
type segmentRefill struct {
	done       chan struct{}
	err        error
	background bool
	epoch      uint64 // the sequence's epoch when it started
}

// take returns up to want consecutive counter values, the first and how many.
//
// writer is the caller's transaction on SQLite, or nil: SQLite's one writer,
// which a reservation on the pool would wait for.
func (q *segmentSequence) take(ctx context.Context, want int64, writer Conn) (first, got int64, err error) {
	for {
		if b := q.current.Load(); b != nil {
			first, got, crossed := b.take(want)
			if crossed {
				q.prefetch()
			}
			if got > 0 {
				return first, got, nil
			}
		}
		if writer != nil {
			// Never wait on a reservation on the pool: it waits on this writer.
			if !q.swapIfReady() {
				return q.reserveIn(ctx, writer, want)
			}
			continue
		}
		if err := q.refill(ctx); err != nil {
			return 0, 0, err
		}
	}
}

// prefetch starts the background reservation of the next block, unless one
// is ready, under way or pointless.
func (q *segmentSequence) prefetch() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.next != nil || q.inflight != nil || q.exhausted {
		return
	}
	q.startLocked(true)
}

// startLocked starts a reservation in its own goroutine, bounded by the
// Segment's life rather than by a caller's context: a caller that gives up
// does not waste the block, and SQLite's busy wait, which ignores contexts,
// cannot hold a caller past its deadline. It returns nil after Close.
func (q *segmentSequence) startLocked(background bool) *segmentRefill {
	ctx, cancel, ok := q.seg.startBackground()
	if !ok {
		return nil
	}
	r := &segmentRefill{done: make(chan struct{}), background: background, epoch: q.epoch}
	q.inflight = r
	go func() {
		defer q.seg.background.Done()
		defer cancel()
		q.run(ctx, r)
	}()
	return r
}

// refill returns once the current block has values, or with the reason it
// cannot get any. It swaps in the prefetched block, or waits for the
// reservation under way, starting one if there is none.
func (q *segmentSequence) refill(ctx context.Context) error {
	waited := false
	for {
		q.mu.Lock()
		if b := q.current.Load(); b != nil && b.left() > 0 {
			q.mu.Unlock()
			return nil
		}
		if q.next != nil {
			q.current.Store(q.next)
			q.next = nil
			q.mu.Unlock()
			return nil
		}
		if q.exhausted {
			q.mu.Unlock()
			return q.errorf("%w", ErrSequenceExhausted)
		}
		if !waited {
			waited = true
			q.seg.refillWaits.Add(1)
		}
		r := q.inflight
		if r == nil {
			r = q.startLocked(false)
		}
		q.mu.Unlock()
		if r == nil {
			return errSegmentClosed
		}
		select {
		case <-r.done:
		case <-ctx.Done():
			return q.errorf("waiting for a block: %w", ctx.Err())
		}
		// A failed prefetch is retried once for the callers; a reservation
		// started for them that fails is their answer.
		if r.err != nil && !r.background {
			return q.errorf("reserving a block: %w", r.err)
		}
	}
}

// swapIfReady makes the prefetched block current if the current one is used
// up, and reports whether a value is at hand without a round trip.
func (q *segmentSequence) swapIfReady() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if b := q.current.Load(); b != nil && b.left() > 0 {
		return true
	}
	if q.next != nil {
		q.current.Store(q.next)
		q.next = nil
		return true
	}
	return false
}

// reserveIn reserves exactly want values in the caller's SQLite transaction,
// whose write lock a reservation on the pool would wait for, and gives them
// to that caller alone: if the transaction rolls back, the reservation and
// every row numbered from it go together, and no one else holds the values.
func (q *segmentSequence) reserveIn(ctx context.Context, writer Conn, want int64) (first, got int64, err error) {
	b, err := q.reserveSteps(ctx, writer, want)
	if err != nil {
		return 0, 0, q.errorf("reserving in the transaction: %w", err)
	}
	first, got, _ = b.take(want)
	return first, got, nil
}

func (q *segmentSequence) errorf(format string, args ...any) error {
	return fmt.Errorf("strategies: segment %q on %q: "+format, append([]any{q.name, q.database}, args...)...)
}

// run makes reservation r and installs the block: as the current one when
// that is used up, otherwise as the next; not at all when the sequence was
// forgotten meanwhile (the floor still counts the block, so it is never
// reserved again).
func (q *segmentSequence) run(ctx context.Context, r *segmentRefill) {
	b, err := q.reserve(ctx, q.pool)
	if err != nil && ctx.Err() != nil {
		err = q.seg.boundEnded(err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err == nil && r.epoch == q.epoch {
		q.installLocked(b)
	}
	q.inflight = nil
	r.err = err
	close(r.done)
}

// installLocked makes b the current block if that is used up, else the next.
func (q *segmentSequence) installLocked(b *segmentBlock) {
	if cur := q.current.Load(); cur == nil || cur.left() == 0 {
		q.current.Store(b)
	} else if q.next == nil {
		q.next = b
	}
}

// reserve moves the counter row by an adapted step, above this process's
// floor, and returns the block.
func (q *segmentSequence) reserve(ctx context.Context, conn Conn) (*segmentBlock, error) {
	return q.reserveSteps(ctx, conn, 0)
}

// reserveSteps reserves a block of exactly n values, or with n 0 of the
// adapted step; only adapted blocks count for the adaptation.
func (q *segmentSequence) reserveSteps(ctx context.Context, conn Conn, n int64) (*segmentBlock, error) {
	s := q.seg
	if err := s.ensureTable(ctx, q.database, q.sql, conn); err != nil {
		return nil, fmt.Errorf("creating %s: %w", segmentTable, err)
	}
	for {
		b, overlaps, err := q.reserveOnce(ctx, conn, n)
		if err != nil || !overlaps {
			return b, err
		}
	}
}

// reserveOnce makes one reservation. It reports overlaps when another
// reservation of this process raised the floor past the block's start
// meanwhile (one made in an SQLite transaction that then rolled back, say):
// the block may hold values already handed out, and is dropped.
func (q *segmentSequence) reserveOnce(ctx context.Context, conn Conn, n int64) (b *segmentBlock, overlaps bool, err error) {
	s := q.seg
	now := s.opts.Clock.Now()
	q.mu.Lock()
	step, floor := q.adaptedStep(now), q.floor
	q.mu.Unlock()
	if n > 0 {
		step = n
	}

	high, err := q.sql.reserve(ctx, conn, q.name, floor, step)
	if errors.Is(err, sql.ErrNoRows) {
		// First use, or the row was lost: create it; the floor still holds.
		if _, err = conn.ExecContext(ctx, q.sql.seed, q.name); err == nil {
			high, err = q.sql.reserve(ctx, conn, q.name, floor, step)
		}
	}
	if err != nil {
		return nil, false, err
	}
	if high < floor+step {
		return nil, false, fmt.Errorf("the counter moved to %d, below this process's floor %d plus the step %d", high, floor, step)
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	low := high - step // the block is (low, high]
	if low < q.floor {
		q.floor = max(q.floor, high)
		return nil, true, nil
	}
	q.floor = high
	if n == 0 {
		q.step, q.reservedAt = step, now
	}
	q.refills++
	if low+1 >= s.limit {
		q.exhausted = true
		return nil, false, ErrSequenceExhausted
	}
	return newSegmentBlock(low+1, min(high, s.limit-1)-low, s.opts.PrefetchAt), false, nil
}

// adaptedStep is the size of the block reserved at now: Leaf's rule on how
// long ago the previous block was reserved, which with prefetching is about
// how long a block lasts.
func (q *segmentSequence) adaptedStep(now time.Time) int64 {
	if q.reservedAt.IsZero() {
		return q.step
	}
	o := q.seg.opts
	switch lasted := now.Sub(q.reservedAt); {
	case lasted < o.GrowBelow:
		return min(q.step*2, o.MaxStep)
	case lasted > o.ShrinkAbove:
		return max(q.step/2, o.MinStep)
	}
	return q.step
}

func (q *segmentSequence) state() SequenceState {
	var left int64
	if b := q.current.Load(); b != nil {
		left = b.left()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.next != nil {
		left += q.next.left()
	}
	return SequenceState{Database: q.database, Sequence: q.name, Step: q.step, Left: left, Refills: q.refills, Refilling: q.inflight != nil}
}

// segmentBlock is a reserved run of counter values, handed out lock-free.
type segmentBlock struct {
	first, size int64
	prefetchAt  int64 // taking value number prefetchAt (1-based) fetches the next block
	taken       atomic.Int64
}

func newSegmentBlock(first, size int64, prefetchShare float64) *segmentBlock {
	at := int64(math.Ceil(float64(size) * prefetchShare))
	return &segmentBlock{first: first, size: size, prefetchAt: min(max(at, 1), size)}
}

// take claims up to want values: the first, how many, and whether this claim
// passed the prefetch mark (exactly one claim does).
func (b *segmentBlock) take(want int64) (first, got int64, crossed bool) {
	end := b.taken.Add(want)
	begin := end - want
	crossed = begin < b.prefetchAt && b.prefetchAt <= end
	if begin >= b.size {
		return 0, 0, crossed
	}
	return b.first + begin, min(end, b.size) - begin, crossed
}

func (b *segmentBlock) left() int64 { return max(b.size-b.taken.Load(), 0) }

// retire leaves b no value for the claims that come after: a caller that
// loaded b before it was dropped gets nothing from it.
func (b *segmentBlock) retire() { b.taken.Add(b.size) }
