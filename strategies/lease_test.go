package strategies

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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

// crash stops g's heartbeats without releasing its leases, as a killed process would.
func crash(g *Snowflake) {
	for _, slot := range *g.leases.slots.Load() {
		slot.halt()
	}
	g.leases.slots.Store(&[]*leaseSlot{})
}

func workerOf(t *testing.T, g *Snowflake) int {
	t.Helper()
	leases := g.Stats().Leases
	if len(leases) != 1 || !leases[0].Held {
		t.Fatalf("leases %+v, want one held", leases)
	}
	return leases[0].Worker
}

func TestLeaseDistinctWorkersAndAClearErrorWhenAllAreTaken(t *testing.T) {
	for _, target := range allTargets(t) {
		t.Run(target.Dialect, func(t *testing.T) {
			lo := LeaseOptions{Table: leaseTableFor(t, target)}
			layout := Layout{WorkerBits: 2}
			var holders []*Snowflake
			seen := map[int64]bool{}
			for i := range 4 {
				g := leased(t, layout, lo)
				for _, id := range generate(t, g, target, 200) {
					if seen[id] {
						t.Fatalf("generator %d made %d again", i, id)
					}
					seen[id] = true
				}
				if w := workerOf(t, g); w != i {
					t.Fatalf("generator %d leased worker %d, want the lowest free one, %d", i, w, i)
				}
				holders = append(holders, g)
			}
			fifth := leased(t, layout, lo)
			err := fifth.Generate(context.Background(), target, []int{1}, make([]int64, 1))
			if !errors.Is(err, ErrNoWorkerID) || !strings.Contains(err.Error(), "all 4 worker IDs") || !strings.Contains(err.Error(), "WorkerBits 2") {
				t.Fatalf("fifth generator: %v, want ErrNoWorkerID saying how many exist and how to widen the field", err)
			}
			if err := holders[2].Close(); err != nil {
				t.Fatal(err)
			}
			generate(t, fifth, target, 10)
			if w := workerOf(t, fifth); w != 2 {
				t.Fatalf("after worker 2 was released the fifth generator leased %d", w)
			}
		})
	}
}

func TestLeaseHeartbeatRenews(t *testing.T) {
	for _, target := range allTargets(t) {
		t.Run(target.Dialect, func(t *testing.T) {
			t.Parallel()
			// A TTL with room for a renewal's round trip on a busy machine.
			g := leased(t, Layout{}, LeaseOptions{Table: leaseTableFor(t, target), TTL: 1500 * time.Millisecond})
			deadline := time.Now().Add(4500 * time.Millisecond)
			for time.Now().Before(deadline) {
				generate(t, g, target, 10) // fails with ErrLeaseLost if the lease ran out
				time.Sleep(5 * time.Millisecond)
			}
			if s := g.Stats().Leases[0]; s.Renewals < 3 || s.Lost != 0 {
				t.Fatalf("after 4 TTLs: %+v, want at least 3 renewals and no loss", s)
			}
		})
	}
}

// A generator that cannot renew stops issuing before another may take the worker ID.
func TestLeaseFencedBeforeAnotherMayTakeIt(t *testing.T) {
	for _, target := range allTargets(t) {
		t.Run(target.Dialect, func(t *testing.T) {
			lo := LeaseOptions{Table: leaseTableFor(t, target), TTL: time.Second} // a tenth of it is the fence's margin
			a := leased(t, oneWorker, lo)
			generate(t, a, target, 1)
			for _, slot := range *a.leases.slots.Load() { // the heartbeat stops, as in a partition
				slot.halt()
			}
			var fencedAt atomic.Int64
			go func() {
				for {
					if err := a.Generate(context.Background(), target, []int{3}, make([]int64, 1)); err != nil {
						if !errors.Is(err, ErrLeaseLost) {
							t.Errorf("a: %v, want ErrLeaseLost", err)
						}
						fencedAt.Store(time.Now().UnixNano())
						return
					}
				}
			}()
			b := leased(t, oneWorker, lo)
			for {
				err := b.Generate(context.Background(), target, []int{3}, make([]int64, 1))
				if err == nil {
					break
				}
				if !errors.Is(err, ErrNoWorkerID) {
					t.Fatal(err)
				}
				time.Sleep(2 * time.Millisecond)
			}
			takenAt := time.Now().UnixNano()
			if f := fencedAt.Load(); f == 0 || f > takenAt {
				t.Fatalf("b took worker 0 before a stopped issuing (fenced %d, taken %d)", f, takenAt)
			}
			if w := workerOf(t, b); w != 0 {
				t.Fatalf("b leased %d, want the expired worker 0", w)
			}
		})
	}
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

// offsetClock is the system clock with its wall time moved by offset: another
// machine's clock, or this one's after a step. Its monotonic time is real.
type offsetClock struct{ offset time.Duration }

func (c offsetClock) Now() time.Time                  { return time.Now().Add(c.offset) }
func (c offsetClock) Since(t time.Time) time.Duration { return time.Since(t.Add(-c.offset)) } // Add moved t's monotonic reading too
func (c offsetClock) Sleep(d time.Duration)           { time.Sleep(d) }

// A restarted generator whose clock is behind the time its worker ID already
// used waits up to the tolerance, or fails; it never reuses that time.
func TestLeaseRestartWithClockBehind(t *testing.T) {
	for _, target := range allTargets(t) {
		t.Run(target.Dialect, func(t *testing.T) {
			t.Parallel()
			lo := LeaseOptions{Table: leaseTableFor(t, target), TTL: time.Second, ClockTolerance: 2 * time.Second}
			for _, step := range []time.Duration{5 * time.Millisecond, time.Second, time.Hour} {
				for _, graceful := range []bool{true, false} {
					first := leased(t, oneWorker, lo) // one worker ID: the restart must take the same one
					before := generate(t, first, target, 50)
					if graceful {
						if err := first.Close(); err != nil {
							t.Fatal(err)
						}
					} else {
						crash(first)
					}
					var clock Clock
					if graceful {
						// A clock that stands still but when waited on, set step behind
						// the time the released worker ID used: the wait is the step.
						var highWater int64
						if err := target.DB.QueryRow("SELECT high_water FROM " + lo.Table + " WHERE worker_id = 0").Scan(&highWater); err != nil {
							t.Fatal(err)
						}
						clock = newFakeClock(DefaultEpoch.Add(time.Duration(highWater+1)*time.Millisecond - step))
					} else {
						clock = offsetClock{-step} // real time, to see the crashed lease expire
					}
					restarted := leased(t, oneWorker, lo, WithClock(clock))
					var ids []int64
					var err error
					for {
						ids = make([]int64, 50)
						err = restarted.Generate(context.Background(), target, make([]int, 50), ids)
						if !errors.Is(err, ErrNoWorkerID) {
							break // a crashed holder's lease has expired
						}
						time.Sleep(10 * time.Millisecond)
					}
					name := fmt.Sprintf("step %s graceful %v", step, graceful)
					if step > lo.ClockTolerance {
						if !errors.Is(err, ErrClockBackwards) {
							t.Fatalf("%s: got %v, want ErrClockBackwards", name, err)
						}
						continue
					}
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if ids[0] <= slices.Max(before) {
						t.Fatalf("%s: the restarted generator made %d, not above %d", name, ids[0], slices.Max(before))
					}
					if graceful && restarted.Stats().Waits.ClockBehind != 1 {
						t.Fatalf("%s: waits %+v, want one wait for the clock", name, restarted.Stats().Waits)
					}
					if err := restarted.Close(); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
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
	if err := target.DB.QueryRow("SELECT owner FROM workers WHERE worker_id = 0").Scan(&owner); err != nil || owner != "" {
		t.Fatalf("worker 0 is owned by %q after Close (%v), want released", owner, err)
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

// The default layout serves 32 processes per physical database at once, and
// each of them, restarted after a crash while its old lease still runs, gets
// a worker ID at once.
func TestLeaseDefaultLayoutServesPodsAndRestarts(t *testing.T) {
	for _, target := range allTargets(t) {
		t.Run(target.Dialect, func(t *testing.T) {
			lo := LeaseOptions{Table: leaseTableFor(t, target), TTL: time.Minute} // no lease expires during the test
			seen := map[int64]bool{}
			for round := range 2 { // the pods, then each restarted after a crash
				for range 32 {
					g := leased(t, Layout{}, lo)
					for _, id := range generate(t, g, target, 3) { // fails with ErrNoWorkerID if none is free
						if seen[id] {
							t.Fatalf("round %d: ID %d made twice", round, id)
						}
						seen[id] = true
					}
					crash(g)
				}
			}
		})
	}
}
