package strategies_test

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

	. "github.com/shardid/shardid/strategies"
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

// oneWorker is a layout of one worker ID.
var oneWorker = Layout{WorkerBits: NoWorkerBits}

// ownPool is target's database in a pool of its own. Closing that pool cuts
// a generator that uses it off, as a partition or a killed process would:
// its heartbeats fail and its Close releases nothing.
func ownPool(t *testing.T, target Target) Target {
	t.Helper()
	var driver, dsn string
	switch target.Dialect {
	case "sqlite":
		var seq int
		var schema string
		must(t, target.DB.QueryRow("PRAGMA database_list").Scan(&seq, &schema, &dsn))
		driver, dsn = "sqlite", "file:"+dsn+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	case "mysql":
		driver, dsn = "mysql", mysqlDSN(t, -1)
	default:
		driver, dsn = "pgx", postgresDSN(t, -1)
	}
	return openTarget(t, target.Name, target.Dialect, driver, dsn)
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
			// A TTL with room for a late renewal's round trip on a busy machine.
			const ttl = 5 * time.Second
			g := leased(t, Layout{}, LeaseOptions{Table: leaseTableFor(t, target), TTL: ttl})
			deadline := time.Now().Add(3 * ttl)
			for time.Now().Before(deadline) {
				generate(t, g, target, 10) // fails with ErrLeaseLost if the lease ran out
				time.Sleep(5 * time.Millisecond)
			}
			if s := g.Stats().Leases[0]; s.Renewals < 3 || s.Lost != 0 {
				t.Fatalf("after 3 TTLs: %+v, want at least 3 renewals and no loss", s)
			}
		})
	}
}

// A generator that cannot renew stops issuing before another may take the worker ID.
func TestLeaseFencedBeforeAnotherMayTakeIt(t *testing.T) {
	for _, target := range allTargets(t) {
		t.Run(target.Dialect, func(t *testing.T) {
			lo := LeaseOptions{Table: leaseTableFor(t, target), TTL: 5 * time.Second}
			a := leased(t, oneWorker, lo)
			partitioned := ownPool(t, target)
			generate(t, a, partitioned, 1)
			must(t, partitioned.DB.Close()) // the heartbeat fails from now on, as in a partition
			// The start of a's last call that issued an ID: one started after b took
			// the worker and still issuing is the overlap; stamps taken before a call
			// and after b's can only hide one, never invent it on a slow machine.
			var lastIssuedStart atomic.Int64
			fenced := make(chan struct{})
			go func() {
				defer close(fenced)
				for {
					start := time.Now().UnixNano()
					if err := a.Generate(context.Background(), partitioned, []int{3}, make([]int64, 1)); err != nil {
						if !errors.Is(err, ErrLeaseLost) {
							t.Errorf("a: %v, want ErrLeaseLost", err)
						}
						return
					}
					lastIssuedStart.Store(start)
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
			select {
			case <-fenced:
			case <-time.After(time.Minute):
				t.Fatal("a still issues IDs a minute after b took its worker")
			}
			if last := lastIssuedStart.Load(); last > takenAt {
				t.Fatalf("a issued an ID in a call it started after b took worker 0 (started %d, taken %d)", last, takenAt)
			}
			if w := workerOf(t, b); w != 0 {
				t.Fatalf("b leased %d, want the expired worker 0", w)
			}
		})
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
					firstPool := ownPool(t, target)
					before := generate(t, first, firstPool, 50)
					if graceful {
						if err := first.Close(); err != nil {
							t.Fatal(err)
						}
					} else {
						must(t, firstPool.DB.Close()) // a crash: no release
					}
					var clock Clock
					if graceful {
						// A clock that stands still but when waited on, set step behind
						// the time the released worker ID used: the wait is the step.
						var highWater int64
						if err := target.DB.QueryRow("SELECT high_water FROM " + lo.Table + " WHERE worker_id = 0").Scan(&highWater); err != nil {
							t.Fatal(err)
						}
						clock = &segmentClock{now: DefaultEpoch.Add(time.Duration(highWater+1)*time.Millisecond - step)}
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
					g, pod := leased(t, Layout{}, lo), ownPool(t, target)
					for _, id := range generate(t, g, pod, 3) { // fails with ErrNoWorkerID if none is free
						if seen[id] {
							t.Fatalf("round %d: ID %d made twice", round, id)
						}
						seen[id] = true
					}
					must(t, pod.DB.Close()) // a crash: no release
				}
			}
		})
	}
}
