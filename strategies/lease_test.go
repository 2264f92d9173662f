package strategies

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// leaseTable returns a lease table name no other test uses, dropped at the end.
func leaseTableFor(t *testing.T, target Target) string {
	t.Helper()
	table := fmt.Sprintf("shardid_workers_test_%08x", rand.Uint32())
	t.Cleanup(func() { _, _ = target.DB.Exec("DROP TABLE IF EXISTS " + table) })
	return table
}

func leased(t *testing.T, layout Layout, lo LeaseOptions, opts ...SnowflakeOption) *Snowflake {
	t.Helper()
	g, err := NewLeasedSnowflake(layout, lo, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

func generate(t *testing.T, g *Snowflake, target Target, n int) []int64 {
	t.Helper()
	shards := make([]int, n)
	for i := range shards {
		shards[i] = i % 5
	}
	ids := make([]int64, n)
	if err := g.Generate(context.Background(), target, shards, ids); err != nil {
		t.Fatal(err)
	}
	return ids
}

// The leases' tests on SQLite, MariaDB and PostgreSQL are in the integration
// module's strategies package; these run on SQLite, some inside the package.

func workerOf(t *testing.T, g *Snowflake) int {
	t.Helper()
	leases := g.Stats().Leases
	if len(leases) != 1 || !leases[0].Held {
		t.Fatalf("leases %+v, want one held", leases)
	}
	return leases[0].Worker
}

func TestLeaseLostByFakeClockStopsIssuing(t *testing.T) {
	target := sqliteTarget(t)
	clock := newFakeClock(now)
	g := leased(t, Layout{}, LeaseOptions{Table: "workers", TTL: time.Minute}, WithClock(clock))
	generate(t, g, target, 3)
	clock.advance(54 * time.Second) // the real heartbeat has not run: the lease holds until 54s
	err := g.Generate(context.Background(), target, []int{1}, make([]int64, 1))
	if !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "worker 0 on test") {
		t.Fatalf("got %v, want ErrLeaseLost naming the worker and database", err)
	}
	if s := g.Stats().Leases[0]; s.Held {
		t.Fatalf("stats say %+v after the lease ran out", s)
	}
}

func TestLeaseTakenAwayIsReplaced(t *testing.T) {
	target := sqliteTarget(t)
	lo := LeaseOptions{Table: "workers", TTL: 600 * time.Millisecond}
	g := leased(t, Layout{WorkerBits: 1}, lo)
	generate(t, g, target, 3)
	// Another process took worker 0 (its generation moved on).
	if _, err := target.DB.Exec("UPDATE workers SET generation = generation + 100, owner = 'other' WHERE worker_id = 0"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "worker 1 is leased instead", func() bool {
		s := g.Stats().Leases[0]
		return s.Worker == 1 && s.Held
	})
	if s := g.Stats().Leases[0]; s.Lost != 1 {
		t.Fatalf("%+v, want the lease found lost once", s)
	}
	for _, id := range generate(t, g, target, 10) {
		if w := (Layout{WorkerBits: 1}).Decode(id).Worker; w != 1 {
			t.Fatalf("ID %d has worker %d after worker 0 was taken away", id, w)
		}
	}
}

// A lease table emptied and its worker ID's row made anew by another
// process starts the row's generation at 1 again, the generation a lease
// just taken holds: the renewal, a compare-and-swap on the generation, must
// not extend the other's row as its own.
func TestLeaseRowMadeAgainByAnotherIsNotRenewedAsOurs(t *testing.T) {
	target := sqliteTarget(t)
	lo := LeaseOptions{Table: "workers", TTL: 600 * time.Millisecond}
	g := leased(t, Layout{WorkerBits: 1}, lo)
	generate(t, g, target, 3)
	// A teardown emptied the table; another process inserted worker 0.
	_, err := target.DB.Exec("DELETE FROM workers")
	must(t, err)
	_, err = target.DB.Exec("INSERT INTO workers (worker_id, owner, expires_at, high_water, generation) VALUES (0, 'other#0000000000000000/w1', CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + 60000, 0, 1)")
	must(t, err)
	eventually(t, "worker 1 is leased instead", func() bool {
		s := g.Stats().Leases[0]
		return s.Worker == 1 && s.Held
	})
	var owner string
	must(t, target.DB.QueryRow("SELECT owner FROM workers WHERE worker_id = 0").Scan(&owner))
	if owner != "other#0000000000000000/w1" {
		t.Fatalf("worker 0's row names %q, want the other process", owner)
	}
}

// Within a process the wall clock plays no part: its steps back of 5ms, 1s
// and 1h leave the IDs ascending and the lease held.
func TestLeaseWallClockStepsWithinAProcess(t *testing.T) {
	target := sqliteTarget(t)
	clock := newFakeClock(now)
	g := leased(t, Layout{}, LeaseOptions{Table: "workers", TTL: time.Minute}, WithClock(clock))
	last := generate(t, g, target, 1)[0]
	for _, step := range []time.Duration{5 * time.Millisecond, time.Second, time.Hour} {
		clock.wall = clock.wall.Add(-step)
		clock.advance(time.Millisecond)
		id := generate(t, g, target, 1)[0]
		if id <= last {
			t.Fatalf("after a %s step back: %d, not above %d", step, id, last)
		}
		last = id
	}
}

// BenchmarkSnowflakeLease compares a leased generator with a fixed-worker
// one, both through Generate for one ID at a time: the lease costs a lookup
// of the database's slot and one atomic load per ID.
func BenchmarkSnowflakeLease(b *testing.B) {
	target := sqliteTarget(b)
	static, _ := NewSnowflake(Layout{WorkerBits: 4}, 3)
	leasedGen, err := NewLeasedSnowflake(Layout{WorkerBits: 4}, LeaseOptions{Table: "workers"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = leasedGen.Close() })
	if err := leasedGen.Prepare(context.Background(), target); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		g    *Snowflake
	}{{"static", static}, {"leased", leasedGen}} {
		b.Run(c.name, func(b *testing.B) {
			ctx, shards, ids := context.Background(), []int{0}, []int64{0}
			b.ReportAllocs()
			for b.Loop() {
				shards[0]++
				if err := c.g.Generate(ctx, target, shards, ids); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"-parallel", func(b *testing.B) {
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				ctx, shards, ids := context.Background(), []int{int(next.Add(1000))}, []int64{0}
				for pb.Next() {
					shards[0]++
					if err := c.g.Generate(ctx, target, shards, ids); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// A worker ID whose time is far ahead of this clock (its last holder's clock
// was fast) is passed over; the next one is leased.
func TestLeaseSkipsAWorkerWhoseTimeIsAhead(t *testing.T) {
	target := sqliteTarget(t)
	lo := LeaseOptions{Table: "workers"}
	first := leased(t, Layout{WorkerBits: 1}, lo)
	generate(t, first, target, 1)
	must(t, first.Close())
	ahead := time.Since(DefaultEpoch).Milliseconds() + time.Hour.Milliseconds()
	if _, err := target.DB.Exec("UPDATE workers SET high_water = ? WHERE worker_id = 0", ahead); err != nil {
		t.Fatal(err)
	}
	g := leased(t, Layout{WorkerBits: 1}, lo)
	generate(t, g, target, 1)
	if w := workerOf(t, g); w != 1 {
		t.Fatalf("leased worker %d, want 1: worker 0's time is an hour ahead", w)
	}
	// With no other worker ID left, the error says why.
	third := leased(t, Layout{WorkerBits: 1}, lo)
	err := third.Generate(context.Background(), target, []int{1}, make([]int64, 1))
	if !errors.Is(err, ErrClockBackwards) || !strings.Contains(err.Error(), "ahead of this clock") || !strings.Contains(err.Error(), "workers [0]") {
		t.Fatalf("got %v, want ErrClockBackwards naming the worker whose time is ahead", err)
	}
}

func TestLeaseNoIDAfterClose(t *testing.T) {
	target := sqliteTarget(t)
	g := leased(t, Layout{}, LeaseOptions{Table: "workers"})
	generate(t, g, target, 1)
	must(t, g.Close())
	if err := g.Generate(context.Background(), target, []int{1}, make([]int64, 1)); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Generate after Close: %v, want ErrLeaseLost", err)
	}
	var owner string
	var expires int64
	if err := target.DB.QueryRow("SELECT owner, expires_at FROM workers WHERE worker_id = 0").Scan(&owner, &expires); err != nil || owner != "/w6" || expires != 0 {
		t.Fatalf("worker 0 is owned by %q until %d after Close (%v), want released, marked with its width", owner, expires, err)
	}
}

// A renewal that committed but whose reply was lost moved the generation on:
// the row still names this process, which keeps its worker ID.
func TestLeaseRenewalWithALostReplyKeepsTheWorker(t *testing.T) {
	target := sqliteTarget(t)
	g := leased(t, Layout{WorkerBits: 1}, LeaseOptions{Table: "workers", TTL: 600 * time.Millisecond})
	generate(t, g, target, 1)
	if _, err := target.DB.Exec("UPDATE workers SET generation = generation + 1 WHERE worker_id = 0"); err != nil {
		t.Fatal(err)
	}
	renewals := g.Stats().Leases[0].Renewals
	eventually(t, "two renewals after the lost reply", func() bool { return g.Stats().Leases[0].Renewals >= renewals+2 })
	if s := g.Stats().Leases[0]; s.Lost != 0 || s.Worker != 0 {
		t.Fatalf("%+v, want worker 0 kept and never lost", s)
	}
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

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Two generators given the same Owner label are still two holders: one whose
// lease was taken over by the other does not mistake the row for its own.
func TestLeaseSameOwnerLabelIsNotTheSameHolder(t *testing.T) {
	target := sqliteTarget(t)
	lo := LeaseOptions{Table: "workers", Owner: "svc", TTL: time.Second} // b renews in time on a busy machine too
	a := leased(t, Layout{WorkerBits: 1}, lo)
	generate(t, a, target, 1)
	slot := (*a.leases.slots.Load())[0]
	slot.halt() // a stalls; its lease expires
	time.Sleep(3 * lo.TTL)
	b := leased(t, Layout{WorkerBits: 1}, lo)
	generate(t, b, target, 1)
	if w := workerOf(t, b); w != 0 {
		t.Fatalf("b leased %d, want the expired worker 0", w)
	}
	slot.halted = false // a wakes up and renews as its heartbeat would
	for range 2 {
		a.renew(context.Background(), slot)
	}
	if s := a.Stats().Leases[0]; s.Worker == 0 {
		t.Fatalf("a still holds worker 0 after b took it: %+v", s)
	}
	seen := map[int64]bool{}
	for _, g := range []*Snowflake{a, b} {
		for _, id := range generate(t, g, target, 500) {
			if seen[id] {
				t.Fatalf("ID %d made twice", id)
			}
			seen[id] = true
		}
	}
}

// TestLeaseReleaseKeepsTheTimeUsed: a clock that stepped back before Close
// does not lower the worker's recorded time below the ticks it issued, which
// its next holder waits past.
func TestLeaseReleaseKeepsTheTimeUsed(t *testing.T) {
	target := sqliteTarget(t)
	clock := newFakeClock(now)
	g := leased(t, Layout{}, LeaseOptions{Table: "workers", TTL: time.Minute}, WithClock(clock))
	generate(t, g, target, 1)
	clock.advance(5 * time.Second)
	ids := make([]int64, 1)
	must(t, g.Generate(context.Background(), target, []int{5}, ids))
	clock.advance(-5 * time.Second)
	must(t, g.Close())
	var highWater int64
	must(t, target.DB.QueryRow("SELECT high_water FROM workers WHERE worker_id = 0").Scan(&highWater))
	if used := (Layout{}).Decode(ids[0]).Ticks; highWater < used {
		t.Fatalf("released with high water %d, below tick %d of an ID it issued", highWater, used)
	}
}

// TestLeaseOfAnotherWorkerWidthIsRefused: while a worker ID is leased with
// one Layout.WorkerBits, a generator of another width leases none (their
// IDs would be equal); once it is released, the other width takes over.
func TestLeaseOfAnotherWorkerWidthIsRefused(t *testing.T) {
	target := sqliteTarget(t)
	six := leased(t, Layout{WorkerBits: 6}, LeaseOptions{Table: "workers"})
	generate(t, six, target, 1)
	seven := leased(t, Layout{WorkerBits: 7}, LeaseOptions{Table: "workers"})
	err := seven.Generate(context.Background(), target, []int{1}, make([]int64, 1))
	if !errors.Is(err, ErrInvalidLayout) || !strings.Contains(err.Error(), "WorkerBits 6") {
		t.Fatalf("a lease of width 7 beside one of width 6: %v, want ErrInvalidLayout naming the other width", err)
	}
	must(t, six.Close())
	generate(t, seven, target, 1)
	if w := workerOf(t, seven); w != 0 {
		t.Fatalf("worker %d, want 0", w)
	}
}

// TestLeaseOfAnotherWidthWaitsPastItsTime: a new width waits past the time
// every worker ID of another width used, not only its own row's.
func TestLeaseOfAnotherWidthWaitsPastItsTime(t *testing.T) {
	target := sqliteTarget(t)
	clock := newFakeClock(now)
	six := leased(t, Layout{WorkerBits: 6}, LeaseOptions{Table: "workers"}, WithClock(clock))
	generate(t, six, target, 1)
	must(t, six.Close())
	// Worker 5 of width 6 used time 1.5 s ahead, as a process that died holding it.
	used := Layout{}.Ticks(now) + 1500
	if _, err := target.DB.Exec("INSERT INTO workers (worker_id, owner, expires_at, high_water, generation) VALUES (5, 'gone#0000000000000000/w6', 0, ?, 1)", used); err != nil {
		t.Fatal(err)
	}
	seven := leased(t, Layout{WorkerBits: 7}, LeaseOptions{Table: "workers"}, WithClock(clock))
	ids := make([]int64, 1)
	must(t, seven.Generate(context.Background(), target, []int{1}, ids))
	if got := (Layout{}).Decode(ids[0]).Ticks; got <= used {
		t.Fatalf("the new width's first ID has tick %d, not past %d, which width 6 used", got, used)
	}
}

// TestLeaseCheckRunsOncePerDatabaseBeforeTheLease: a leased generator asks
// its lease check, with the database and the lease table, before it creates
// the table and takes its first lease there; a refusal stops the IDs for
// that database, and once it passes, further IDs do not ask it again.
func TestLeaseCheckRunsOncePerDatabaseBeforeTheLease(t *testing.T) {
	target := sqliteTarget(t)
	refuse := errors.New("refused")
	var asked atomic.Int32
	var answer atomic.Pointer[error]
	answer.Store(&refuse)
	check := func(_ context.Context, on Target, table string) error {
		asked.Add(1)
		if on.Name != "test" || on.DB != target.DB || table != "checked_workers" {
			t.Errorf("check asked for %s (%v) and table %s", on.Name, on.DB == target.DB, table)
		}
		return *answer.Load()
	}
	g := leased(t, Layout{}, LeaseOptions{Table: "checked_workers"}, WithLeaseCheck(check))
	if err := g.Generate(context.Background(), target, []int{1}, make([]int64, 1)); !errors.Is(err, refuse) {
		t.Fatalf("Generate with the check refusing: %v, want its error", err)
	}
	var tables int
	if err := target.DB.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'checked_workers'").Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("lease table made before the check passed: %d (%v)", tables, err)
	}
	var pass error
	answer.Store(&pass)
	generate(t, g, target, 3)
	generate(t, g, target, 3)
	if n := asked.Load(); n != 2 {
		t.Fatalf("check asked %d times, want 2: once refused, once passed", n)
	}
}

// cancellingClock is a fakeClock that ends a context when first slept on:
// a caller's deadline that passes while it waits for the clock.
type cancellingClock struct {
	*fakeClock
	cancel context.CancelFunc
}

func (c cancellingClock) Sleep(d time.Duration) {
	c.cancel()
	c.fakeClock.Sleep(d)
}

// A generator that takes a worker ID whose time is ahead of its clock waits
// for the clock, within the tolerance; should the statement's context end
// meanwhile, it fails with the context's error at once, not after the wait,
// and gives the worker ID back.
func TestLeaseWaitForTheClockEndsWithTheContext(t *testing.T) {
	target := sqliteTarget(t)
	lo := LeaseOptions{Table: "workers", TTL: time.Minute}
	first := leased(t, oneWorker, lo, WithClock(newFakeClock(now.Add(time.Second))))
	generate(t, first, target, 1)
	must(t, first.Close()) // its time is a second ahead of the next one's

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := cancellingClock{newFakeClock(now), cancel}
	g := leased(t, oneWorker, lo, WithClock(clock))
	err := g.Generate(ctx, target, []int{0}, make([]int64, 1))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's error", err)
	}
	if slept := time.Duration(clock.slept.Load()); slept >= 100*time.Millisecond {
		t.Fatalf("slept %s after the context ended, of the second the clock is behind", slept)
	}
	again := leased(t, oneWorker, lo) // the worker ID was given back
	generate(t, again, target, 1)
}
