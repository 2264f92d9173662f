package strategies_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardid/shardid/internal/sqlscan"
	. "github.com/shardid/shardid/strategies"
)

// segmentClock is a Clock that moves only when told.
type segmentClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *segmentClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *segmentClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *segmentClock) Sleep(d time.Duration)           { c.advance(d) }
func (c *segmentClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// forEachSegmentTarget runs test in parallel on every database kind, each
// with a sequence name of its own: the test packages share these databases.
func forEachSegmentTarget(t *testing.T, test func(t *testing.T, target Target)) {
	t.Helper()
	for _, target := range allTargets(t) {
		t.Run(target.Dialect, func(t *testing.T) {
			t.Parallel()
			// Connections racing to switch a new SQLite file to WAL fail
			// with SQLITE_BUSY, busy timeout or not: open one first.
			if _, err := target.DB.Exec("SELECT 1"); err != nil {
				t.Fatal(err)
			}
			test(t, withSegmentSequence(t, target))
		})
	}
}

// withSegmentSequence gives target a fresh sequence name, and removes its
// counter row after the test.
func withSegmentSequence(t *testing.T, target Target) Target {
	target.Table = fmt.Sprintf("seg_test_%016x", rand.Uint64())
	t.Cleanup(func() {
		_, _ = target.DB.Exec(segmentRebind(target, "DELETE FROM shardid_segments WHERE name = ?"), target.Table)
	})
	return target
}

// segmentRebind turns ? placeholders into PostgreSQL's $n.
func segmentRebind(target Target, query string) string {
	if target.Dialect != "postgres" {
		return query
	}
	return sqlscan.NumberParameters(query)
}

func newTestSegment(t *testing.T, opts SegmentOptions) *Segment {
	t.Helper()
	s, err := NewSegment(Layout{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fixedStep makes every block step values long.
func fixedStep(step int64) SegmentOptions {
	return SegmentOptions{InitialStep: step, MinStep: step, MaxStep: step}
}

// generateN takes n IDs for shard 5, one call each.
func generateN(t *testing.T, s *Segment, target Target, n int) []int64 {
	t.Helper()
	out := make([]int64, 0, n)
	id := make([]int64, 1)
	for range n {
		if err := s.Generate(context.Background(), target, []int{5}, id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id[0])
	}
	return out
}

// segmentCounter recovers the counter value an ID was made from.
func segmentCounter(id int64) int64 {
	l := Layout{}.Normalized()
	return id>>(l.ShardBits+l.SequenceBits)<<l.SequenceBits | id&(1<<l.SequenceBits-1)
}

func counterRow(t *testing.T, target Target) int64 {
	t.Helper()
	var v int64
	err := target.DB.QueryRow(segmentRebind(target, "SELECT v FROM shardid_segments WHERE name = ?"), target.Table).Scan(&v)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func setCounterRow(t *testing.T, target Target, v int64) {
	t.Helper()
	if _, err := target.DB.Exec(segmentRebind(target, "UPDATE shardid_segments SET v = ? WHERE name = ?"), v, target.Table); err != nil {
		t.Fatal(err)
	}
}

// lockCounterRow holds the counter row from another connection, as a slow
// or stuck writer would, until release is called.
func lockCounterRow(t *testing.T, target Target) (release func()) {
	t.Helper()
	ctx := context.Background()
	if target.Dialect == "sqlite" {
		conn, err := target.DB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		return func() {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
			_ = conn.Close()
		}
	}
	tx, err := target.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var v int64
	if err := tx.QueryRow(segmentRebind(target, "SELECT v FROM shardid_segments WHERE name = ? FOR UPDATE"), target.Table).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return func() { _ = tx.Rollback() }
}

func sequenceState(t *testing.T, s *Segment) SequenceState {
	t.Helper()
	seqs := s.Stats().Sequences
	if len(seqs) != 1 {
		t.Fatalf("%d sequences, want 1", len(seqs))
	}
	return seqs[0]
}

// eventually polls cond for up to 10 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// requireUnique fails on an ID seen before.
func requireUnique(t *testing.T, seen map[int64]bool, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("ID %d (counter %d) issued twice", id, segmentCounter(id))
		}
		seen[id] = true
	}
}

func TestSegmentIDsAreUniqueAndShardAwareAcrossGoroutines(t *testing.T) {
	t.Parallel()
	forEachSegmentTarget(t, func(t *testing.T, target Target) {
		const goroutines, perGoroutine, maxStep = 8, 50_000, 400
		s := newTestSegment(t, SegmentOptions{InitialStep: 100, MinStep: 100, MaxStep: maxStep})
		layout := Layout{}
		shardChoices := []int{0, 1, 2, 3, 511, 4096, 8190, layout.ShardCount() - 1}
		type issued struct {
			id    int64
			shard int
		}
		results := make([][]issued, goroutines)
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 1))
				shards, ids := make([]int, 4), make([]int64, 4)
				for len(results[g]) < perGoroutine {
					n := min(1+rng.IntN(4), perGoroutine-len(results[g]))
					for i := range n {
						shards[i] = shardChoices[rng.IntN(len(shardChoices))]
					}
					if err := s.Generate(context.Background(), target, shards[:n], ids[:n]); err != nil {
						t.Error(err)
						return
					}
					for i := range n {
						results[g] = append(results[g], issued{ids[i], shards[i]})
					}
				}
			})
		}
		wg.Wait()
		seen := make(map[int64]bool, goroutines*perGoroutine)
		for g, out := range results {
			lastOfShard := map[int]int64{}
			for _, r := range out {
				requireUnique(t, seen, r.id)
				if got := layout.Shard(r.id); got != r.shard {
					t.Fatalf("ID %d decodes to shard %d, want %d", r.id, got, r.shard)
				}
				if last, ok := lastOfShard[r.shard]; ok && r.id <= last {
					t.Fatalf("goroutine %d: shard %d got %d after %d", g, r.shard, r.id, last)
				}
				lastOfShard[r.shard] = r.id
			}
		}
		if len(seen) != goroutines*perGoroutine {
			t.Fatalf("%d IDs, want %d", len(seen), goroutines*perGoroutine)
		}
		stats := s.Stats()
		if stats.Issued != goroutines*perGoroutine {
			t.Fatalf("Issued = %d, want %d", stats.Issued, goroutines*perGoroutine)
		}
		if refills := stats.Sequences[0].Refills; refills < goroutines*perGoroutine/maxStep {
			t.Fatalf("%d refills; blocks of at most %d should have taken %d", refills, maxStep, goroutines*perGoroutine/maxStep)
		}
	})
}

func TestSegmentRestartReservesAboveEverythingReserved(t *testing.T) {
	t.Parallel()
	forEachSegmentTarget(t, func(t *testing.T, target Target) {
		seen := map[int64]bool{}
		a := newTestSegment(t, fixedStep(100))
		requireUnique(t, seen, generateN(t, a, target, 30)...) // mid-block, the next block prefetched
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		reserved := counterRow(t, target)
		if reserved < 100 {
			t.Fatalf("the counter is %d after a block of 100 was used", reserved)
		}
		b := newTestSegment(t, fixedStep(100))
		for _, id := range generateN(t, b, target, 250) {
			if c := segmentCounter(id); c <= reserved {
				t.Fatalf("the restarted generator issued counter %d, which the first had reserved (up to %d)", c, reserved)
			}
			requireUnique(t, seen, id)
		}
	})
}

func TestSegmentTwoProcessesNeverShareAValue(t *testing.T) {
	t.Parallel()
	forEachSegmentTarget(t, func(t *testing.T, target Target) {
		const perProcess = 10_000
		processes := []*Segment{newTestSegment(t, fixedStep(50)), newTestSegment(t, SegmentOptions{InitialStep: 70, MinStep: 70, MaxStep: 300})}
		results := make([][]int64, len(processes))
		var wg sync.WaitGroup
		for p, s := range processes {
			wg.Go(func() {
				ids := make([]int64, 3)
				for len(results[p]) < perProcess {
					if err := s.Generate(context.Background(), target, []int{1, 2, 3}, ids); err != nil {
						t.Error(err)
						return
					}
					results[p] = append(results[p], ids...)
				}
			})
		}
		wg.Wait()
		seen := map[int64]bool{}
		for _, ids := range results {
			requireUnique(t, seen, ids...)
		}
	})
}

func TestSegmentFloorSurvivesACounterThatWentBack(t *testing.T) {
	t.Parallel()
	forEachSegmentTarget(t, func(t *testing.T, target Target) {
		s := newTestSegment(t, fixedStep(50))
		seen := map[int64]bool{}
		requireUnique(t, seen, generateN(t, s, target, 500)...)
		// A failover to a replica that missed the last reservations.
		setCounterRow(t, target, 10)
		issued := generateN(t, s, target, 500)
		requireUnique(t, seen, issued...)
		if row, last := counterRow(t, target), segmentCounter(issued[len(issued)-1]); row < last {
			t.Fatalf("the counter row is %d, below the issued %d", row, last)
		}
	})
}

func TestSegmentCallerGivesUpWithoutLosingTheReservation(t *testing.T) {
	t.Parallel()
	forEachSegmentTarget(t, func(t *testing.T, target Target) {
		seen := map[int64]bool{}
		first := newTestSegment(t, fixedStep(100))
		requireUnique(t, seen, generateN(t, first, target, 1)...) // creates the row
		_ = first.Close()

		s := newTestSegment(t, fixedStep(100))
		release := lockCounterRow(t, target)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := s.Generate(ctx, target, []int{5}, make([]int64, 1))
		waited := time.Since(start)
		release()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("while the counter row was locked: %v, want the caller's deadline", err)
		}
		// SQLite's busy wait ignores contexts; the caller must not.
		if waited > 2*time.Second {
			t.Fatalf("the caller gave up after %s, its deadline was 200ms", waited)
		}
		eventually(t, "the reservation completes", func() bool { return sequenceState(t, s).Refills == 1 })
		requireUnique(t, seen, generateN(t, s, target, 300)...)
	})
}

// impatientTarget is target with a pool where a locked row fails a
// reservation soon: within 50ms on SQLite (a new file: its busy wait ignores
// contexts), a second on MariaDB (its shortest lock wait), 100ms on
// PostgreSQL.
func impatientTarget(t *testing.T, target Target) Target {
	t.Helper()
	var driver, dsn string
	switch target.Dialect {
	case "sqlite":
		driver, dsn = "sqlite", "file:"+filepath.Join(t.TempDir(), "impatient.db")+"?_pragma=busy_timeout(50)&_pragma=journal_mode(WAL)"
	case "mysql":
		cfg, err := mysql.ParseDSN(mysqlDSN(t, -1))
		must(t, err)
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		cfg.Params["innodb_lock_wait_timeout"] = "1" // a session variable, set on each connection
		driver, dsn = "mysql", cfg.FormatDSN()
	default:
		u, err := url.Parse(postgresDSN(t, -1))
		must(t, err)
		q := u.Query()
		q.Set("lock_timeout", "100") // a run-time parameter, set on each connection
		u.RawQuery = q.Encode()
		driver, dsn = "pgx", u.String()
	}
	db, err := sql.Open(driver, dsn)
	must(t, err)
	t.Cleanup(func() { _ = db.Close() })
	target.Conn, target.DB = db, db
	return target
}

func TestSegmentFailedBackgroundRefillIsRetriedByTheCaller(t *testing.T) {
	t.Parallel()
	forEachSegmentTarget(t, func(t *testing.T, target Target) {
		target = impatientTarget(t, target)
		s := newTestSegment(t, fixedStep(100))
		seen := map[int64]bool{}
		requireUnique(t, seen, generateN(t, s, target, 1)...) // creates the table, however long that takes here
		release := lockCounterRow(t, target)
		requireUnique(t, seen, generateN(t, s, target, 20)...) // starts the background refill
		eventually(t, "the background refill fails", func() bool { return !sequenceState(t, s).Refilling })
		release()
		if refills := sequenceState(t, s).Refills; refills != 1 {
			t.Fatalf("%d refills while the row was locked, want 1", refills)
		}
		// The block runs out with no next one: a caller reserves it.
		requireUnique(t, seen, generateN(t, s, target, 300)...)
		if refills := sequenceState(t, s).Refills; refills < 3 {
			t.Fatalf("%d refills after the failed one, want the first block and two more", refills)
		}
	})
}

func TestSegmentServesTheCurrentBlockWhileTheRefillIsStuck(t *testing.T) {
	t.Parallel()
	forEachSegmentTarget(t, func(t *testing.T, target Target) {
		s := newTestSegment(t, fixedStep(100))
		seen := map[int64]bool{}
		requireUnique(t, seen, generateN(t, s, target, 1)...)
		waitsBefore := s.Stats().Waits.Refill

		release := lockCounterRow(t, target)
		requireUnique(t, seen, generateN(t, s, target, 50)...) // passes 10 %: the refill starts and blocks
		time.Sleep(100 * time.Millisecond)
		requireUnique(t, seen, generateN(t, s, target, 49)...) // the rest of the block
		state := sequenceState(t, s)
		release()
		if state.Refills != 1 {
			t.Fatalf("%d refills while the row was locked, want 1", state.Refills)
		}
		if waits := s.Stats().Waits.Refill; waits != waitsBefore {
			t.Fatalf("callers waited %d times while the current block had values", waits-waitsBefore)
		}
		eventually(t, "the stuck refill completes", func() bool { return sequenceState(t, s).Refills == 2 })
		requireUnique(t, seen, generateN(t, s, target, 300)...)
	})
}

func TestSegmentStepAdaptsToHowLongBlocksLast(t *testing.T) {
	t.Parallel()
	forEachSegmentTarget(t, func(t *testing.T, target Target) {
		clock := &segmentClock{now: time.Now()}
		s := newTestSegment(t, SegmentOptions{
			InitialStep: 4, MinStep: 2, MaxStep: 32,
			GrowBelow: 15 * time.Minute, ShrinkAbove: 30 * time.Minute,
			PrefetchAt: 1, // the next block is reserved as the last value is taken
			Clock:      clock,
		})
		ctx := context.Background()
		generateN(t, s, target, 1)
		left := int64(3)
		useBlock := func(lasted time.Duration, wantNext int64) {
			t.Helper()
			clock.advance(lasted)
			refills := sequenceState(t, s).Refills
			if err := s.Generate(ctx, target, make([]int, left), make([]int64, left)); err != nil {
				t.Fatal(err)
			}
			// Refills counts a block when it is reserved, a moment before it is installed.
			eventually(t, "the next block is reserved and installed", func() bool {
				state := sequenceState(t, s)
				return state.Refills == refills+1 && !state.Refilling
			})
			if state := sequenceState(t, s); state.Left != wantNext || state.Step != wantNext {
				t.Fatalf("after a block that lasted %s: next block of %d (step %d), want %d", lasted, state.Left, state.Step, wantNext)
			}
			left = wantNext
		}
		for _, want := range []int64{8, 16, 32, 32} {
			useBlock(time.Minute, want)
		}
		useBlock(20*time.Minute, 32) // between the bounds: kept
		for _, want := range []int64{16, 8, 4, 2, 2} {
			useBlock(31*time.Minute, want)
		}
		if row := counterRow(t, target); row != 4+8+16+32+32+32+16+8+4+2+2 {
			t.Fatalf("the counter row is %d, not the sum of the block sizes", row)
		}
	})
}

func TestSegmentCounterExhaustion(t *testing.T) {
	t.Parallel()
	forEachSegmentTarget(t, func(t *testing.T, target Target) {
		limit := int64(1) << (DefaultTimeBits + DefaultSequenceBits)
		s := newTestSegment(t, fixedStep(4))
		if err := s.Prepare(context.Background(), target); err != nil {
			t.Fatal(err)
		}
		if _, err := target.DB.Exec(segmentRebind(target, "INSERT INTO shardid_segments (name, v) VALUES (?, ?)"), target.Table, limit-5); err != nil {
			t.Fatal(err)
		}
		for i, id := range generateN(t, s, target, 4) {
			if c := segmentCounter(id); c != limit-4+int64(i) {
				t.Fatalf("ID %d has counter %d, want %d", i, c, limit-4+int64(i))
			}
			if shard := (Layout{}).Shard(id); shard != 5 {
				t.Fatalf("ID %d decodes to shard %d", id, shard)
			}
		}
		for range 2 { // and stays exhausted
			ids := []int64{-1, -1}
			err := s.Generate(context.Background(), target, []int{5, 6}, ids)
			if !errors.Is(err, ErrSequenceExhausted) {
				t.Fatalf("past the limit: %v, want ErrSequenceExhausted", err)
			}
			if ids[0] != 0 || ids[1] != 0 {
				t.Fatalf("a failed Generate left IDs %v", ids)
			}
		}
	})
}

func TestSegmentPrepareIsIdempotentFromSeveralProcesses(t *testing.T) {
	t.Parallel()
	forEachSegmentTarget(t, func(t *testing.T, target Target) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				s, err := NewSegment(Layout{}, SegmentOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				defer s.Close()
				for range 2 {
					if err := s.Prepare(context.Background(), target); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	})
}

func TestSegmentRejectsBadInput(t *testing.T) {
	t.Parallel()
	if _, err := NewSegment(Layout{TimeBits: 40, ShardBits: 10, SequenceBits: 10}, SegmentOptions{}); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("layout of 60 bits: %v, want ErrInvalidLayout", err)
	}
	for _, opts := range []SegmentOptions{
		{InitialStep: -1},
		{MinStep: 500, InitialStep: 100, MaxStep: 1000},
		{MaxStep: 1 << 41},
		{GrowBelow: time.Hour, ShrinkAbove: time.Minute},
		{PrefetchAt: 1.5},
	} {
		if _, err := NewSegment(Layout{}, opts); err == nil {
			t.Errorf("%+v: no error", opts)
		}
	}
	if _, err := NewSegment(Layout{}, SegmentOptions{InitialStep: 10}); err != nil {
		t.Errorf("InitialStep alone: %v", err)
	}

	s := newTestSegment(t, SegmentOptions{})
	target := sqliteTarget(t)
	ids := make([]int64, 1)
	if err := s.Generate(context.Background(), target, []int{0}, ids); err == nil {
		t.Error("no sequence name: no error")
	}
	target.Table = "seg_test_input"
	if err := s.Generate(context.Background(), target, []int{Layout{}.ShardCount()}, ids); err == nil {
		t.Error("shard past the layout: no error")
	}
	if err := s.Generate(context.Background(), target, []int{0, 1}, ids); err == nil {
		t.Error("two shards for one ID: no error")
	}
	bad := target
	bad.Name, bad.Dialect = "other", "oracle"
	if err := s.Generate(context.Background(), bad, []int{0}, ids); !errors.Is(err, ErrUnsupportedDialect) {
		t.Errorf("oracle: %v, want ErrUnsupportedDialect", err)
	}
	_ = s.Close()
	if err := s.Generate(context.Background(), target, []int{0}, ids); err == nil {
		t.Error("after Close: no error")
	}
}

// On SQLite a caller inside its write transaction reserves in it; when that
// transaction rolls back, the values go with it and nobody else holds them:
// the values handed out afterwards, by this process and another, never meet.
func TestSegmentSQLiteReservationRolledBackWithItsTransaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ids.db")
	one := withSegmentSequence(t, sqliteTargetAt(t, path))
	other := sqliteTargetAt(t, path)
	other.Table = one.Table
	if _, err := one.DB.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	p1, p2 := newTestSegment(t, fixedStep(100)), newTestSegment(t, fixedStep(100))
	tx, err := one.DB.Begin()
	if err != nil {
		t.Fatal(err)
	}
	inTx := one
	inTx.Conn = tx
	rolledBack := make([]int64, 3)
	if err := p1.Generate(context.Background(), inTx, []int{1, 1, 1}, rolledBack); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	requireUnique(t, seen, generateN(t, p1, one, 300)...)
	requireUnique(t, seen, generateN(t, p2, other, 300)...)
}

// A failover lands while a refill is under way: the counter goes back (the
// promoted replica missed the last reservations) just as the stuck refill
// gets through. The refill must reserve above everything this process used.
func TestSegmentFailoverMidRefill(t *testing.T) {
	t.Parallel()
	forEachSegmentTarget(t, func(t *testing.T, target Target) {
		s := newTestSegment(t, fixedStep(100))
		seen := map[int64]bool{}
		requireUnique(t, seen, generateN(t, s, target, 1)...)
		ctx := context.Background()
		var conn Conn
		var commit func() error
		if target.Dialect == "sqlite" {
			c, err := target.DB.Conn(ctx)
			must(t, err)
			defer c.Close()
			_, err = c.ExecContext(ctx, "BEGIN IMMEDIATE")
			must(t, err)
			conn, commit = c, func() error { _, err := c.ExecContext(ctx, "COMMIT"); return err }
		} else {
			tx, err := target.DB.BeginTx(ctx, nil)
			must(t, err)
			conn, commit = tx, tx.Commit
		}
		_, err := conn.ExecContext(ctx, segmentRebind(target, "UPDATE shardid_segments SET v = 10 WHERE name = ?"), target.Table)
		must(t, err)
		requireUnique(t, seen, generateN(t, s, target, 50)...) // past 10 %: the refill starts and waits on the row
		time.Sleep(50 * time.Millisecond)
		must(t, commit()) // the failover: the counter is back at 10 as the refill goes through
		requireUnique(t, seen, generateN(t, s, target, 600)...)
	})
}

// A background refill that waited on the caller's own SQLite transaction
// while that transaction reserved values in it: after the rollback, the
// refill's block would start below what the transaction took, and is dropped.
func TestSegmentRefillBehindARolledBackReservationIsDropped(t *testing.T) {
	target := withSegmentSequence(t, sqliteTarget(t))
	s := newTestSegment(t, fixedStep(100))
	generateN(t, s, target, 1) // block (0, 100]
	tx, err := target.DB.Begin()
	must(t, err)
	_, err = tx.Exec("UPDATE shardid_segments SET v = v WHERE name = ?", target.Table) // the write lock
	must(t, err)
	inTx := target
	inTx.Conn = tx
	generateN(t, s, inTx, 99)              // the rest of the block; the refill starts and waits on the lock
	rolledBack := generateN(t, s, inTx, 3) // reserved in the transaction: (100, 103]
	must(t, tx.Rollback())
	seen := map[int64]bool{}
	requireUnique(t, seen, rolledBack...)
	requireUnique(t, seen, generateN(t, s, target, 300)...)
}
