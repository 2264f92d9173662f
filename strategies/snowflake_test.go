package strategies

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a Clock whose time moves only when told, or when a caller sleeps.
type fakeClock struct {
	wall    time.Time    // what Now returns; a step of it must not matter after start
	elapsed atomic.Int64 // nanoseconds since the first Now, what Since reports
	slept   atomic.Int64 // total nanoseconds callers asked to sleep
	sleeps  atomic.Int64
}

func newFakeClock(wall time.Time) *fakeClock { return &fakeClock{wall: wall} }

func (c *fakeClock) Now() time.Time                { return c.wall }
func (c *fakeClock) Since(time.Time) time.Duration { return time.Duration(c.elapsed.Load()) }
func (c *fakeClock) Sleep(d time.Duration) {
	c.sleeps.Add(1)
	c.slept.Add(int64(d))
	c.elapsed.Add(int64(d))
}
func (c *fakeClock) advance(d time.Duration) { c.elapsed.Add(int64(d)) }

func TestSnowflakeConcurrentUniqueAndIncreasing(t *testing.T) {
	g, err := NewSnowflake(oneWorker, 0)
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, perGoroutine = 16, 100_000
	results := make([][]int64, goroutines)
	var wg sync.WaitGroup
	for w := range goroutines {
		wg.Go(func() {
			ids := make([]int64, perGoroutine)
			for i := range ids {
				// Four goroutines share each shard, so the CAS is contended and sequences overflow.
				id, err := g.Next(w % 4)
				if err != nil {
					t.Error(err)
					return
				}
				ids[i] = id
			}
			results[w] = ids
		})
	}
	wg.Wait()
	seen := make(map[int64]struct{}, goroutines*perGoroutine)
	layout := oneWorker
	for w, ids := range results {
		for i, id := range ids {
			if _, dup := seen[id]; dup {
				t.Fatalf("duplicate ID %d", id)
			}
			seen[id] = struct{}{}
			if layout.Shard(id) != w%4 {
				t.Fatalf("ID %d in shard %d, want %d", id, layout.Shard(id), w%4)
			}
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("goroutine %d: ID %d after %d", w, id, ids[i-1])
			}
		}
	}
	if g.OverflowWaits() == 0 {
		t.Error("1.6M IDs in 4 shards should have filled a tick at least once")
	}
}

func TestSnowflakeOverflowWaitsForNextTick(t *testing.T) {
	clock := newFakeClock(now)
	g, err := NewSnowflake(oneWorker, 0, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	clock.advance(300 * time.Microsecond) // 0.3 ms into a tick, frozen there
	layout := oneWorker
	var first int64
	for i := range 1024 {
		id, err := g.Next(7)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = id
		}
		if p := layout.Decode(id); p.Sequence != i || p.Ticks != layout.Decode(first).Ticks {
			t.Fatalf("ID %d of the tick decodes to %+v", i, p)
		}
	}
	if clock.sleeps.Load() != 0 {
		t.Fatal("slept before the tick was full")
	}
	id, err := g.Next(7)
	if err != nil {
		t.Fatal(err)
	}
	p := layout.Decode(id)
	if p.Ticks != layout.Decode(first).Ticks+1 || p.Sequence != 0 {
		t.Fatalf("the 1025th ID decodes to %+v, want the next tick, sequence 0", p)
	}
	if clock.sleeps.Load() != 1 || clock.slept.Load() != int64(700*time.Microsecond) {
		t.Fatalf("slept %d times for %s, want once for the 700µs left in the tick", clock.sleeps.Load(), time.Duration(clock.slept.Load()))
	}
	// Another shard has its own sequence and does not wait.
	if _, err := g.Next(8); err != nil || clock.sleeps.Load() != 1 {
		t.Fatalf("shard 8: %v, sleeps %d", err, clock.sleeps.Load())
	}
}

func TestSnowflakeIgnoresWallClockSteps(t *testing.T) {
	clock := newFakeClock(now)
	g, err := NewSnowflake(oneWorker, 0, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := g.Next(1)
	clock.wall = now.Add(-time.Hour) // NTP steps the wall clock back an hour
	clock.advance(time.Millisecond)  // the monotonic clock keeps going
	after, _ := g.Next(1)
	if after <= before {
		t.Fatalf("ID %d after a wall-clock step back is not above %d", after, before)
	}
	if d := (oneWorker).Decode(after).Time.Sub((oneWorker).Decode(before).Time); d != time.Millisecond {
		t.Fatalf("IDs are %s apart, want the 1ms the monotonic clock moved", d)
	}
}

func TestSnowflakeWorkers(t *testing.T) {
	layout := Layout{WorkerBits: 4}
	clock := newFakeClock(now)
	a, err := NewSnowflake(layout, 9, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSnowflake(layout, 10, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for range 64 { // a full tick for each: 2^(10-4) IDs
		for _, g := range []*Snowflake{a, b} {
			id, err := g.Next(3)
			if err != nil {
				t.Fatal(err)
			}
			if seen[id] {
				t.Fatalf("workers 9 and 10 both made %d", id)
			}
			seen[id] = true
		}
	}
	id, _ := a.Next(3)
	if p := layout.Decode(id); p.Worker != 9 || p.Shard != 3 {
		t.Fatalf("decoded %+v, want worker 9 shard 3", p)
	}
	for _, w := range []int{-1, 16} {
		if _, err := NewSnowflake(layout, w); !errors.Is(err, ErrInvalidWorker) {
			t.Errorf("worker %d: got %v, want ErrInvalidWorker", w, err)
		}
	}
}

func TestSnowflakeTimeExhausted(t *testing.T) {
	clock := newFakeClock(now)
	g, err := NewSnowflake(oneWorker, 0, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	clock.advance(oneWorker.RunsOut().Sub(now))
	if _, err := g.Next(0); !errors.Is(err, ErrTimeExhausted) {
		t.Fatalf("got %v, want ErrTimeExhausted", err)
	}
}

func TestSnowflakeNextDoesNotAllocate(t *testing.T) {
	g, _ := NewSnowflake(oneWorker, 0)
	shard := 0
	if n := testing.AllocsPerRun(10_000, func() { shard++; _, _ = g.Next(shard) }); n != 0 {
		t.Fatalf("Next allocates %v times per ID", n)
	}
}

// BenchmarkSnowflake: an unsaturated generator (IDs spread over shards), in
// one goroutine and in parallel, and one saturated shard, whose rate is capped
// at 2^SequenceBits IDs per millisecond (ids/s is reported).
func BenchmarkSnowflake(b *testing.B) {
	b.Run("spread", func(b *testing.B) {
		g, _ := NewSnowflake(oneWorker, 0)
		b.ReportAllocs()
		shard := 0
		for b.Loop() {
			shard++
			_, _ = g.Next(shard)
		}
	})
	b.Run("spread-parallel", func(b *testing.B) {
		g, _ := NewSnowflake(oneWorker, 0)
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			shard := int(next.Add(1000))
			for pb.Next() {
				shard++
				_, _ = g.Next(shard)
			}
		})
	})
	b.Run("one-shard", func(b *testing.B) {
		g, _ := NewSnowflake(oneWorker, 0)
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			_, _ = g.Next(1)
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ids/s")
	})
}
