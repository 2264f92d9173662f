package strategies

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The moves' tests of Advance and Forget on SQLite, MariaDB and PostgreSQL
// are in the integration module's strategies package.

func TestSnowflakeSetFloor(t *testing.T) {
	clock := newFakeClock(now)
	g, err := NewSnowflake(oneWorker, 0, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	layout := oneWorker
	ticks := func(id int64, err error) int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return layout.Decode(id).Ticks
	}
	clock.advance(300 * time.Microsecond)
	start := ticks(g.Next(1))
	g.SetFloor([]int{1, 2}, start+5)
	if got := ticks(g.Next(3)); got != start || clock.sleeps.Load() != 0 {
		t.Fatalf("shard 3, not floored: tick %d after %d sleeps, want %d at once", got, clock.sleeps.Load(), start)
	}
	if got := ticks(g.Next(1)); got != start+6 {
		t.Fatalf("shard 1: tick %d, want %d, the first above the floor", got, start+6)
	}
	if clock.sleeps.Load() != 1 || g.Stats().Waits.ClockBehind != 1 {
		t.Fatalf("%d sleeps, %d clock waits: want one wait for the clock", clock.sleeps.Load(), g.Stats().Waits.ClockBehind)
	}
	last, _ := g.Next(1)

	// A lower floor changes nothing, a higher one holds.
	g.SetFloor([]int{1}, start)
	if id, _ := g.Next(1); id <= last {
		t.Fatalf("after a lower floor shard 1 issued %d, not above %d", id, last)
	}
	g.SetFloor([]int{1}, start+100)
	g.SetFloor([]int{1}, start+50)
	if got := ticks(g.Next(1)); got <= start+100 {
		t.Fatalf("shard 1: tick %d after floors at %d then %d", got, start+100, start+50)
	}

	// A floor beyond the tolerance fails; other shards go on.
	current := ticks(g.Next(5))
	beyond := current + int64(DefaultClockTolerance/time.Millisecond) + 10
	g.SetFloor([]int{4}, beyond)
	sleeps := clock.sleeps.Load()
	if _, err := g.Next(4); !errors.Is(err, ErrClockBackwards) {
		t.Fatalf("floor %d ticks ahead: got %v, want ErrClockBackwards", beyond-current, err)
	}
	if clock.sleeps.Load() != sleeps {
		t.Fatal("slept for a floor beyond the tolerance")
	}
	if got := ticks(g.Next(5)); got != current {
		t.Fatalf("shard 5: tick %d, want %d", got, current)
	}
	g.SetFloor([]int{6}, -1) // nothing
	if got := ticks(g.Next(6)); got != current {
		t.Fatalf("shard 6 after a negative floor: tick %d, want %d", got, current)
	}
}

func TestLeasedSnowflakeFloorUsesTheLeaseTolerance(t *testing.T) {
	target := sqliteTarget(t)
	clock := newFakeClock(now)
	g := leased(t, oneWorker, LeaseOptions{Table: leaseTableFor(t, target), ClockTolerance: 50 * time.Millisecond}, WithClock(clock))
	ids := generate(t, g, target, 1)
	tick := oneWorker.Decode(ids[0]).Ticks
	g.SetFloor([]int{0}, tick+20)
	got := generate(t, g, target, 1)
	if p := oneWorker.Decode(got[0]); p.Ticks <= tick+20 {
		t.Fatalf("tick %d, not above the floor %d", p.Ticks, tick+20)
	}
	g.SetFloor([]int{0}, tick+200)
	err := g.Generate(context.Background(), target, []int{0}, make([]int64, 1))
	if !errors.Is(err, ErrClockBackwards) {
		t.Fatalf("a floor 200ms ahead with a 50ms tolerance: got %v, want ErrClockBackwards", err)
	}
}

// A Generate that waits for its clock to pass a floor fails with its
// context's error as soon as the context ends, not after the wait.
func TestSnowflakeFloorWaitEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := cancellingClock{newFakeClock(now), cancel}
	g, err := NewSnowflake(oneWorker, 0, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	id, err := g.Next(1)
	if err != nil {
		t.Fatal(err)
	}
	g.SetFloor([]int{1}, oneWorker.Decode(id).Ticks+time.Second.Milliseconds())
	err = g.Generate(ctx, Target{Name: "test"}, []int{1}, make([]int64, 1))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's error", err)
	}
	if slept := time.Duration(clock.slept.Load()); slept >= 100*time.Millisecond {
		t.Fatalf("slept %s after the context ended, of the second to the floor", slept)
	}
}
