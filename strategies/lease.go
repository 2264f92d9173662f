package strategies

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// LeaseOptions configures the worker leases of a leased [Snowflake].
type LeaseOptions struct {
	// TTL is how long a lease lasts without renewal. A heartbeat renews it
	// every TTL/3; a generator that could not renew stops issuing IDs for the
	// database's shards a tenth of TTL before another process may take the
	// worker ID. Default: [DefaultLeaseTTL]; at least 30ms.
	TTL time.Duration
	// ClockTolerance is how long a generator that leased a worker ID waits
	// for its clock to pass the time that worker ID already used, before it
	// fails with [ErrClockBackwards]. Default: [DefaultClockTolerance].
	ClockTolerance time.Duration
	// Owner names the process in the lease rows, for operators; a random
	// suffix is added to it, which tells generators with the same Owner
	// apart. Default: host:pid.
	Owner string
	// Table is the lease table in each database. Default: [DefaultLeaseTable].
	Table string
	// Log gets an event when a lease is taken and when one is lost.
	// Default: slog.Default().
	Log *slog.Logger
}

// plainIdentifier is a table name that needs no quoting in any dialect.
var plainIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// Defaults of [LeaseOptions].
const (
	DefaultLeaseTTL       = 10 * time.Second
	DefaultClockTolerance = 2 * time.Second
)

// lease is one worker ID held in one physical database.
type lease struct {
	worker     int
	workerBits int64 // the worker ID shifted into place
	generation atomic.Int64
	validUntil atomic.Int64 // generator-clock nanoseconds before which IDs may be issued
}

// leaseSlot is the lease of one physical database and its heartbeat.
type leaseSlot struct {
	name     string
	db       *sql.DB
	target   Target // the database, for the lease check: its Conn is the pool
	sql      leaseSQL
	current  atomic.Pointer[lease] // nil: none held
	acquire  sync.Mutex            // one taker at a time; guards prepared
	prepared bool
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	unsure   map[int]int64 // guarded by acquire; see markUnsure
	// life guards started and halted, held only briefly: Close must not
	// wait for acquire, which a taker holds through its statements.
	life    sync.Mutex
	started bool
	halted  bool

	renewals, lost atomic.Uint64
}

// leaseKeeper holds a leased Snowflake's slots, one per physical database.
type leaseKeeper struct {
	opts   LeaseOptions
	margin time.Duration // how long before the database's expiry the generator stops
	slots  atomic.Pointer[[]*leaseSlot]
	mu     sync.Mutex // adds slots; guards closed
	closed bool
}

// NewLeasedSnowflake returns a generator that leases its worker ID from each
// physical database it makes IDs for, in that database's shardid_workers
// table: the lease authority for a logical shard is the server that stores
// it. A lease expires unless a heartbeat renews it; the generator stops
// issuing IDs for a database whose lease it could not renew in time
// ([ErrLeaseLost]) before any other process may take the worker ID, and the
// lease row keeps the highest time tick the worker may have used, so that
// its next holder, after a restart too, never reuses time. Call Close to
// release the leases.
func NewLeasedSnowflake(layout Layout, lo LeaseOptions, opts ...SnowflakeOption) (*Snowflake, error) {
	if lo.TTL == 0 {
		lo.TTL = DefaultLeaseTTL
	}
	if lo.ClockTolerance == 0 {
		lo.ClockTolerance = DefaultClockTolerance
	}
	if lo.TTL < 30*time.Millisecond || lo.ClockTolerance < 0 {
		return nil, fmt.Errorf("%w: lease TTL %s (at least 30ms) or clock tolerance %s (not negative)", ErrInvalidLease, lo.TTL, lo.ClockTolerance)
	}
	if lo.Table == "" {
		lo.Table = DefaultLeaseTable
	}
	if lo.Log == nil {
		lo.Log = slog.Default()
	}
	if !plainIdentifier.MatchString(lo.Table) {
		return nil, fmt.Errorf("%w: lease table %q is not a plain SQL identifier", ErrInvalidLease, lo.Table)
	}
	label := strings.ToValidUTF8(lo.Owner, "?") // the column is text
	if label == "" {
		host, _ := os.Hostname()
		label = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	for len(label) > 128-22 {
		_, last := utf8.DecodeLastRuneInString(label)
		label = label[:len(label)-last]
	}
	s, err := NewSnowflake(layout, 0, opts...)
	if err != nil {
		return nil, err
	}
	// The suffix is what a lease row is recognised by: never another
	// generator's, whatever label they were given; and it says the width of
	// the worker field, which a released row keeps.
	lo.Owner = fmt.Sprintf("%s#%016x%s", label, rand.Uint64(), widthMark(s.workerCountBits))
	s.leases = &leaseKeeper{opts: lo, margin: lo.TTL / 10}
	return s, nil
}

// widthMark ends the owner of a lease row, released ones too: the
// Layout.WorkerBits the worker ID was leased with. IDs of worker 3 with 6
// bits and of worker 6 or 7 with 7 bits are equal, so no two widths may be
// leased at once, and a new width waits past the time every worker of
// another used.
func widthMark(workerBits int) string { return fmt.Sprintf("/w%d", workerBits) }

// widthOf reads the width a lease row's owner names; ok is false for a row
// of a version that did not name it.
func widthOf(owner string) (workerBits int, ok bool) {
	i := strings.LastIndex(owner, "/w")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(owner[i+2:])
	return n, err == nil
}

// Prepare creates the lease table in target and takes the lease, so that a
// statement need not (on SQLite, whose one writer may be that statement's
// transaction, it could not). A leased generator otherwise does both on
// first use.
func (s *Snowflake) Prepare(ctx context.Context, target Target) error {
	if s.leases == nil {
		return nil
	}
	slot, err := s.leases.slot(target)
	if err != nil {
		return err
	}
	if err := s.prepareAgain(ctx, slot); err != nil {
		return err
	}
	_, err = s.leaseFor(ctx, target)
	return err
}

// prepareAgain creates the lease table again and, for a lease held, its row,
// should a teardown have dropped them since: the heartbeat then renews it.
func (s *Snowflake) prepareAgain(ctx context.Context, slot *leaseSlot) error {
	slot.acquire.Lock()
	defer slot.acquire.Unlock()
	slot.prepared = false
	if err := s.prepare(ctx, slot); err != nil {
		return err
	}
	l := slot.current.Load()
	if l == nil {
		return nil
	}
	var owner string
	var generation int64
	err := slot.db.QueryRowContext(ctx, slot.sql.owner, l.worker).Scan(&owner, &generation)
	if !errors.Is(err, sql.ErrNoRows) {
		return err // there, as it should be, or not known
	}
	ttl := s.leases.opts.TTL
	res, err := slot.db.ExecContext(ctx, slot.sql.insert, l.worker, s.leases.opts.Owner, ttl.Milliseconds(), s.tickAt(s.clock.Since(s.start)+ttl))
	if err != nil {
		return fmt.Errorf("strategies: writing worker %d's lease again on %s: %w", l.worker, slot.name, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		l.generation.Store(1) // the row's, as inserted; else another process took it, which the next renewal finds
	}
	return nil
}

// held returns the lease held in database, or nil: the path of every ID,
// kept to a load and a scan of a few names.
func (k *leaseKeeper) held(database string) *lease {
	if list := k.slots.Load(); list != nil {
		for _, slot := range *list {
			if slot.name == database {
				return slot.current.Load()
			}
		}
	}
	return nil
}

// slot returns the lease slot of target's database, adding it on first use.
func (k *leaseKeeper) slot(target Target) (*leaseSlot, error) {
	if list := k.slots.Load(); list != nil {
		for _, slot := range *list {
			if slot.name == target.Name {
				return slot, nil
			}
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var list []*leaseSlot
	if p := k.slots.Load(); p != nil {
		list = *p
	}
	for _, slot := range list {
		if slot.name == target.Name {
			return slot, nil
		}
	}
	if k.closed {
		return nil, fmt.Errorf("%w: the generator is closed", ErrLeaseLost)
	}
	if target.DB == nil {
		return nil, fmt.Errorf("strategies: leased snowflake: target %s has no DB to lease a worker ID from", target.Name)
	}
	q, err := leaseSQLFor(target.Dialect, k.opts.Table)
	if err != nil {
		return nil, err
	}
	checked := Target{Name: target.Name, Dialect: target.Dialect, Conn: target.DB, DB: target.DB}
	slot := &leaseSlot{name: target.Name, db: target.DB, target: checked, sql: q, stop: make(chan struct{}), done: make(chan struct{})}
	list = append(list[:len(list):len(list)], slot)
	k.slots.Store(&list)
	return slot, nil
}

// prepare runs the lease check, if any, and creates the lease table.
func (s *Snowflake) prepare(ctx context.Context, slot *leaseSlot) error {
	if slot.prepared {
		return nil
	}
	if s.leaseCheck != nil {
		if err := s.leaseCheck(ctx, slot.target, s.leases.opts.Table); err != nil {
			return err
		}
	}
	// A lease taken must be committed before its worker ID makes IDs.
	if err := requireAutocommit(ctx, slot.db, slot.sql.autocommit); err != nil {
		return fmt.Errorf("strategies: leasing a worker ID on %s: %w", slot.name, err)
	}
	if err := runDDL(ctx, slot.db, slot.sql.create, slot.sql.transactionalDDL); err != nil {
		return fmt.Errorf("strategies: creating the lease table on %s: %w", slot.name, err)
	}
	slot.prepared = true
	return nil
}

// leaseFor returns the lease of target's database, taking one on first use.
func (s *Snowflake) leaseFor(ctx context.Context, target Target) (*lease, error) {
	slot, err := s.leases.slot(target)
	if err != nil {
		return nil, err
	}
	if l := slot.current.Load(); l != nil {
		return l, nil
	}
	if target.Dialect == "sqlite" && target.Conn != Conn(target.DB) {
		return nil, fmt.Errorf("%w: %s has no worker lease yet, and SQLite's one writer is this statement's transaction: take the lease first (AutoMigrate does, as does a statement outside a transaction)", ErrLeaseLost, target.Name)
	}
	return s.takeLease(ctx, slot)
}

// takeLease leases the lowest worker ID of slot's database that is free or
// expired, waits for the clock to pass the time that worker ID already used,
// and starts the heartbeat.
func (s *Snowflake) takeLease(ctx context.Context, slot *leaseSlot) (*lease, error) {
	slot.acquire.Lock()
	defer slot.acquire.Unlock()
	return s.takeLeaseLocked(ctx, slot)
}

// heartbeatTake is takeLease for the heartbeat, which must not wait for a
// caller's taker: that one may stall as long as the database does, on a
// context without a deadline, and Close waits for the heartbeat. It reports
// whether the slot holds a lease afterwards.
func (s *Snowflake) heartbeatTake(ctx context.Context, slot *leaseSlot) bool {
	if !slot.acquire.TryLock() {
		return false // a caller is taking one; the next beat looks again
	}
	defer slot.acquire.Unlock()
	_, err := s.takeLeaseLocked(ctx, slot)
	return err == nil
}

// takeLeaseLocked is takeLease with slot.acquire held.
func (s *Snowflake) takeLeaseLocked(ctx context.Context, slot *leaseSlot) (*lease, error) {
	if l := slot.current.Load(); l != nil {
		return l, nil
	}
	if slot.isHalted() {
		return nil, fmt.Errorf("%w: the generator is closed", ErrLeaseLost)
	}
	if err := s.prepare(ctx, slot); err != nil {
		return nil, err
	}
	l, floor, err := s.claim(ctx, slot)
	if err != nil {
		return nil, err
	}
	waited, err := s.waitPast(ctx, floor, slot.name, l.worker)
	if waited {
		// The wait used part of the lease: start it afresh.
		err = s.extend(ctx, slot, l)
	}
	if err != nil {
		s.giveBack(slot, l, floor)
		return nil, err
	}
	// Close may have run meanwhile: it did not wait for this taker, so the
	// lease is given back here, and no heartbeat starts after it.
	slot.life.Lock()
	if slot.halted {
		slot.life.Unlock()
		s.giveBack(slot, l, floor)
		return nil, fmt.Errorf("%w: the generator is closed", ErrLeaseLost)
	}
	slot.current.Store(l)
	if !slot.started {
		slot.started = true
		go s.heartbeat(slot)
	}
	slot.life.Unlock()
	s.leases.opts.Log.Info("shardid: snowflake worker lease taken", "database", slot.name, "worker", l.worker, "owner", s.leases.opts.Owner)
	return l, nil
}

func (slot *leaseSlot) isHalted() bool {
	slot.life.Lock()
	defer slot.life.Unlock()
	return slot.halted
}

// claim takes a worker ID row: a row-less ID by insert, or an expired row by
// compare-and-swap on its generation. It returns the lease and the highest
// tick the worker ID used before.
//
// A worker ID whose time is ahead of this clock by more than the tolerance is
// passed over, so that one row a fast clock wrote does not stop every process.
func (s *Snowflake) claim(ctx context.Context, slot *leaseSlot) (*lease, int64, error) {
	ttl := s.leases.opts.TTL
	workers := 1 << s.workerCountBits
	for range 16 { // each round loses only to another taker
		rows, dbNow, err := s.listLeases(ctx, slot)
		if err != nil {
			return nil, 0, err
		}
		otherWidthUsed, err := s.otherWidth(slot, rows, dbNow)
		if err != nil {
			return nil, 0, err
		}
		start := s.clock.Since(s.start)
		highWater := s.tickAt(start + ttl)
		raced := false
		var ahead []int
		// A row this process claimed without taking it up is taken up again
		// first, by the renewal's compare-and-swap on its owner.
		for worker, floor := range slot.unsure {
			r, taken := rows[worker]
			if !taken || r.expires < dbNow || r.owner != s.leases.opts.Owner {
				if !taken || r.owner != s.leases.opts.Owner {
					delete(slot.unsure, worker) // not ours: another process's, or never written
				}
				continue
			}
			res, err := slot.db.ExecContext(ctx, slot.sql.renew, ttl.Milliseconds(), highWater, worker, r.generation, s.leases.opts.Owner)
			if err != nil {
				return nil, 0, fmt.Errorf("strategies: leasing worker %d again on %s: %w", worker, slot.name, err)
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				raced = true
				break
			}
			delete(slot.unsure, worker)
			l := &lease{worker: worker, workerBits: int64(worker) << s.seqBits}
			l.generation.Store(r.generation + 1)
			l.validUntil.Store(int64(start + ttl - s.leases.margin))
			return s.checkWidth(ctx, slot, l, max(floor, otherWidthUsed))
		}
		if raced {
			continue
		}
		for worker := range workers {
			r, taken := rows[worker]
			if taken && r.expires >= dbNow {
				continue
			}
			if time.Duration(r.highWater+1)*s.unit-(s.startOffset+start) > s.leases.opts.ClockTolerance {
				ahead = append(ahead, worker)
				continue
			}
			var res sql.Result
			if taken {
				res, err = slot.db.ExecContext(ctx, slot.sql.take, s.leases.opts.Owner, ttl.Milliseconds(), highWater, worker, r.generation)
			} else {
				res, err = slot.db.ExecContext(ctx, slot.sql.insert, worker, s.leases.opts.Owner, ttl.Milliseconds(), highWater)
			}
			if err != nil {
				// The server may have applied it: the row may be ours now.
				s.markUnsure(slot, worker, max(r.highWater, otherWidthUsed))
				return nil, 0, fmt.Errorf("strategies: leasing worker %d on %s: %w", worker, slot.name, err)
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				raced = true // another process was first: read the rows again
				break
			}
			delete(slot.unsure, worker) // an expired row of ours, taken as any other
			l := &lease{worker: worker, workerBits: int64(worker) << s.seqBits}
			l.generation.Store(r.generation + 1)
			l.validUntil.Store(int64(start + ttl - s.leases.margin))
			return s.checkWidth(ctx, slot, l, max(r.highWater, otherWidthUsed))
		}
		if !raced && len(ahead) > 0 {
			return nil, 0, fmt.Errorf("%w: of the %d worker IDs (Layout.WorkerBits %d) of %s, those free have used time ahead of this clock by more than the tolerance %s (workers %v): check this machine's clock",
				ErrClockBackwards, workers, s.workerCountBits, slot.name, s.leases.opts.ClockTolerance, ahead)
		}
		if !raced {
			return nil, 0, fmt.Errorf("%w: all %d worker IDs (Layout.WorkerBits %d) of %s are held by live processes; stop a process, or give the layout more WorkerBits (each one doubles the processes and halves a shard's IDs per tick; two widths never run at once: change it with every process stopped)",
				ErrNoWorkerID, workers, s.workerCountBits, slot.name)
		}
	}
	return nil, 0, fmt.Errorf("%w: %s: other processes kept taking the free worker IDs first", ErrNoWorkerID, slot.name)
}

// checkWidth returns lease l, just claimed, and the tick floor it must wait
// past, unless another width was leased since the rows were read: of two
// takers that both see the other, both give way.
func (s *Snowflake) checkWidth(ctx context.Context, slot *leaseSlot, l *lease, floor int64) (*lease, int64, error) {
	rows, dbNow, err := s.listLeases(ctx, slot)
	if err == nil {
		_, err = s.otherWidth(slot, rows, dbNow)
	}
	if err != nil {
		s.giveBack(slot, l, floor)
		return nil, 0, err
	}
	return l, floor, nil
}

// markUnsure notes that worker's row may be held under this process's owner
// though no lease of it is: a claim whose answer was lost (its context
// ended, its connection broke), or a lease given back by a release that did
// not reach the row. Such a row is held until its TTL, and no other process
// may take it; the next claim takes it up again rather than another worker
// ID. floor is the tick to wait past: the row's high water before this
// process wrote it. The caller holds slot.acquire.
func (s *Snowflake) markUnsure(slot *leaseSlot, worker int, floor int64) {
	if slot.unsure == nil {
		slot.unsure = map[int]int64{}
	}
	slot.unsure[worker] = max(slot.unsure[worker], floor)
}

// giveBack releases lease l, which was claimed but not taken up, recording
// floor as its high water; should the release not reach the row, the next
// claim takes the row up again. The caller holds slot.acquire.
func (s *Snowflake) giveBack(slot *leaseSlot, l *lease, floor int64) {
	if released, err := s.release(slot, l, floor); err != nil || !released {
		s.markUnsure(slot, l.worker, floor)
	}
}

// leaseRow is a row of the lease table.
type leaseRow struct {
	owner                          string
	expires, highWater, generation int64
}

// listLeases reads slot's lease rows by worker ID, and the database's time.
func (s *Snowflake) listLeases(ctx context.Context, slot *leaseSlot) (map[int]leaseRow, int64, error) {
	rows := map[int]leaseRow{}
	var dbNow int64
	list, err := slot.db.QueryContext(ctx, slot.sql.list)
	if err != nil {
		return nil, 0, fmt.Errorf("strategies: reading the worker leases of %s: %w", slot.name, err)
	}
	for list.Next() {
		var id int
		var r leaseRow
		if err := list.Scan(&id, &r.owner, &r.expires, &r.highWater, &r.generation, &dbNow); err != nil {
			_ = list.Close()
			return nil, 0, fmt.Errorf("strategies: reading the worker leases of %s: %w", slot.name, err)
		}
		rows[id] = r
	}
	if err := errors.Join(list.Err(), list.Close()); err != nil {
		return nil, 0, fmt.Errorf("strategies: reading the worker leases of %s: %w", slot.name, err)
	}
	return rows, dbNow, nil
}

// otherWidth fails when a live lease of rows was taken with another
// Layout.WorkerBits than this generator's, and otherwise returns the latest
// tick a worker of another width used, which this one must wait past.
func (s *Snowflake) otherWidth(slot *leaseSlot, rows map[int]leaseRow, dbNow int64) (int64, error) {
	var used int64
	for worker, r := range rows {
		width, named := widthOf(r.owner)
		if !named || width == s.workerCountBits {
			continue
		}
		if r.expires >= dbNow {
			return 0, fmt.Errorf("%w: worker %d of %s is leased by %q with Layout.WorkerBits %d, and this process has %d: their IDs would be equal; change WorkerBits only once no process runs with the old one",
				ErrInvalidLayout, worker, slot.name, r.owner, width, s.workerCountBits)
		}
		used = max(used, r.highWater)
	}
	return used, nil
}

// waitPast waits until the clock is past tick floor, the time a worker ID
// already used, or fails with ErrClockBackwards if that is further away than
// the tolerance, or with ctx's error should it end meanwhile.
func (s *Snowflake) waitPast(ctx context.Context, floor int64, database string, worker int) (waited bool, err error) {
	now := s.startOffset + s.clock.Since(s.start)
	behind := time.Duration(floor+1)*s.unit - now
	if behind <= 0 {
		return false, nil
	}
	if behind > s.leases.opts.ClockTolerance {
		return false, fmt.Errorf("%w: worker %d on %s has used time up to %s, %s ahead of this clock (tolerance %s)",
			ErrClockBackwards, worker, database, s.epoch.Add(time.Duration(floor)*s.unit).UTC().Format(time.RFC3339Nano), behind, s.leases.opts.ClockTolerance)
	}
	s.clockWaits.Add(1)
	if err := sleepWatching(ctx, s.clock, behind); err != nil {
		return true, fmt.Errorf("strategies: waiting %s for the clock to pass the time worker %d used on %s: %w", behind, worker, database, err)
	}
	return true, nil
}

// sleepWatching sleeps d on clock, in slices short enough that ctx's end is
// seen within a few milliseconds: any Clock can only be told to sleep.
func sleepWatching(ctx context.Context, clock Clock, d time.Duration) error {
	const slice = 5 * time.Millisecond
	for d > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		step := min(d, slice)
		clock.Sleep(step)
		d -= step
	}
	return ctx.Err()
}

// heartbeat renews slot's lease every TTL/3, more often while renewals fail;
// a lease found taken is dropped and another taken.
func (s *Snowflake) heartbeat(slot *leaseSlot) {
	defer close(slot.done)
	ttl := s.leases.opts.TTL
	timer := time.NewTimer(ttl / 3)
	defer timer.Stop()
	for {
		select {
		case <-slot.stop:
			return
		case <-timer.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), ttl/3)
		ok := s.renew(ctx, slot)
		cancel()
		if ok {
			timer.Reset(ttl / 3)
		} else {
			timer.Reset(ttl / 10)
		}
	}
}

// renew extends slot's lease, or takes one if none is held. It reports
// whether the slot holds a lease afterwards.
func (s *Snowflake) renew(ctx context.Context, slot *leaseSlot) bool {
	l := slot.current.Load()
	if l == nil {
		return s.heartbeatTake(ctx, slot)
	}
	err := s.extend(ctx, slot, l)
	if !errors.Is(err, errLeaseTaken) {
		return err == nil // after other errors the lease runs out on its own if they go on
	}
	slot.lost.Add(1) // first: Stats never shows the lease gone and the loss uncounted
	l.validUntil.Store(0)
	slot.current.CompareAndSwap(l, nil)
	s.leases.opts.Log.Warn("shardid: snowflake worker lease lost to another process; taking another", "database", slot.name, "worker", l.worker)
	return s.heartbeatTake(ctx, slot)
}

// errLeaseTaken: the lease row has moved on; the worker ID is another process's.
var errLeaseTaken = errors.New("strategies: the worker lease was taken over")

// extend renews lease l for another TTL, counted from before the request.
func (s *Snowflake) extend(ctx context.Context, slot *leaseSlot, l *lease) error {
	ttl := s.leases.opts.TTL
	start := s.clock.Since(s.start)
	generation := l.generation.Load()
	res, err := slot.db.ExecContext(ctx, slot.sql.renew, ttl.Milliseconds(), s.tickAt(start+ttl), l.worker, generation, s.leases.opts.Owner)
	if err != nil {
		return fmt.Errorf("strategies: renewing worker %d on %s: %w", l.worker, slot.name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		// A renewal whose reply was lost moved the generation on: the row is
		// still ours if it names this process, and the next renewal takes it up.
		var owner string
		var current int64
		switch err := slot.db.QueryRowContext(ctx, slot.sql.owner, l.worker).Scan(&owner, &current); {
		case errors.Is(err, sql.ErrNoRows) || err == nil && owner != s.leases.opts.Owner:
			return errLeaseTaken
		case err != nil: // not known yet: the fence holds meanwhile
			return fmt.Errorf("strategies: renewing worker %d on %s: %w", l.worker, slot.name, err)
		}
		l.generation.Store(current)
		return fmt.Errorf("strategies: renewing worker %d on %s: an earlier renewal's reply was lost; retrying", l.worker, slot.name)
	}
	l.generation.Store(generation + 1)
	l.validUntil.Store(int64(start + ttl - s.leases.margin))
	slot.renewals.Add(1)
	return nil
}

// halt stops the heartbeat, if it runs, and waits for it (its statements
// are bounded by TTL/3); no lease is taken up after. It does not wait for a
// taker on a caller's context, which may stall as long as the database
// does: that taker gives its lease back itself.
func (slot *leaseSlot) halt() {
	slot.stopOnce.Do(func() { close(slot.stop) })
	slot.life.Lock()
	started := slot.started
	slot.started, slot.halted = true, true
	slot.life.Unlock()
	if started {
		<-slot.done
	}
}

// release gives the lease back, recording highWater as the last tick used;
// released is false when the row had moved on (another process's, or a
// write of this one whose answer was lost).
func (s *Snowflake) release(slot *leaseSlot, l *lease, highWater int64) (released bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.leases.opts.TTL)
	defer cancel()
	res, err := slot.db.ExecContext(ctx, slot.sql.release, widthMark(s.workerCountBits), highWater, l.worker, l.generation.Load(), s.leases.opts.Owner)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return err == nil && n == 1, nil
}

// Close stops the heartbeats and releases the leases, recording the time
// used so far, so a restarted process may take the worker IDs at once. The
// generator issues no ID after Close.
func (s *Snowflake) Close() error {
	if s.leases == nil {
		return nil
	}
	k := s.leases
	k.mu.Lock()
	already := k.closed
	k.closed = true
	k.mu.Unlock()
	if already {
		return nil
	}
	type held struct {
		slot  *leaseSlot
		lease *lease
	}
	var leases []held
	if list := k.slots.Load(); list != nil {
		for _, slot := range *list {
			slot.halt()
			if l := slot.current.Swap(nil); l != nil {
				l.validUntil.Store(0)
				leases = append(leases, held{slot, l})
			}
		}
	}
	// Every ID issued so far has a tick up to now, or up to its shard's last
	// tick where the clock stepped back or a floor was ahead of it.
	used := max(s.tickAt(s.clock.Since(s.start)), s.lastTick())
	var errs []error
	for _, h := range leases {
		if _, err := s.release(h.slot, h.lease, used); err != nil {
			errs = append(errs, fmt.Errorf("strategies: releasing worker %d on %s: %w", h.lease.worker, h.slot.name, err))
		}
	}
	return errors.Join(errs...)
}

// leaseStates reports the leases for Stats.
func (s *Snowflake) leaseStates() []LeaseState {
	if s.leases == nil {
		return nil
	}
	list := s.leases.slots.Load()
	if list == nil {
		return nil
	}
	elapsed := int64(s.clock.Since(s.start))
	states := make([]LeaseState, 0, len(*list))
	for _, slot := range *list {
		state := LeaseState{Database: slot.name, Worker: -1, Renewals: slot.renewals.Load(), Lost: slot.lost.Load()}
		if l := slot.current.Load(); l != nil {
			state.Worker = l.worker
			if left := l.validUntil.Load() - elapsed; left > 0 {
				state.Held, state.ValidFor = true, time.Duration(left)
			}
		}
		states = append(states, state)
	}
	return states
}
