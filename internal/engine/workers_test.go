package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPartsRunInTurnWhenFasterThanAHandOff(t *testing.T) {
	const handOff = 20 * time.Microsecond
	for _, c := range []struct {
		name  string
		times []time.Duration
		want  bool
	}{
		{"all fast", []time.Duration{5 * time.Microsecond, 7 * time.Microsecond, 6 * time.Microsecond}, true},
		{"one slow, which the caller waits for either way", []time.Duration{5 * time.Microsecond, time.Millisecond}, true},
		{"two slow", []time.Duration{time.Millisecond, 5 * time.Microsecond, time.Millisecond}, false},
		{"one unknown", []time.Duration{0, 5 * time.Microsecond}, true},
		{"two unknown", []time.Duration{0, 0}, false},
		{"at the hand-off", []time.Duration{handOff, handOff}, false},
	} {
		if got := inTurn(c.times, handOff); got != c.want {
			t.Errorf("%s: inTurn(%v) = %v", c.name, c.times, got)
		}
	}
}

// TestPartsOfSlowDatabasesRunAtOnce: a query over two databases whose parts
// take longer than a hand-off runs them at once (each part waits in its
// tracer until both have begun), and parts known to take less run one after
// another (each lingers in its tracer, and still no two run at once), giving
// the same rows.
func TestPartTimeIsADecayingAverage(t *testing.T) {
	var p partTime
	p.note(100 * time.Microsecond)
	if got := p.nanos.Load(); got != 100_000 {
		t.Fatalf("after one part of 100 µs: %d ns", got)
	}
	p.note(20 * time.Microsecond)
	if got := p.nanos.Load(); got != 80_000 {
		t.Errorf("after a part of 20 µs: %d ns, want a quarter of the way there", got)
	}
}

func TestPartsOfSlowDatabasesRunAtOnce(t *testing.T) {
	db, e := openEngine(t, Config{}, true)
	must(t, e.Migrator(db).AutoMigrate(&gateRow{}))
	for i := range 20 {
		must(t, db.Create(&gateRow{Name: string(rune('a' + i))}).Error)
	}
	var running, most atomic.Int64
	var begun sync.WaitGroup
	var waitForBoth, linger atomic.Bool
	e.TraceParts(func(ctx context.Context, _ TracedPart) (context.Context, func(string, error)) {
		now := running.Add(1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		if waitForBoth.Load() {
			begun.Done()
			done := make(chan struct{})
			go func() { begun.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Error("a part waited 10 s for the other to begin: the parts did not run at once")
			}
		}
		if linger.Load() {
			time.Sleep(50 * time.Millisecond) // long enough for a part at once to begin meanwhile
		}
		return ctx, func(string, error) { running.Add(-1) }
	})
	all := func() []gateRow {
		var rows []gateRow
		must(t, db.Clauses(hinted{AllShards()}).Order("id").Find(&rows).Error)
		return rows
	}

	e.handOff = 0 // every part is slower than a hand-off
	waitForBoth.Store(true)
	begun.Add(2)
	atOnce := all()
	waitForBoth.Store(false)
	if len(atOnce) != 20 || most.Load() != 2 {
		t.Fatalf("at once: %d rows, at most %d parts running", len(atOnce), most.Load())
	}

	e.handOff = time.Hour // every part is faster, now that each database ran one
	most.Store(0)
	linger.Store(true)
	for range 3 {
		if inTurn := all(); len(inTurn) != 20 || inTurn[0] != atOnce[0] || inTurn[19] != atOnce[19] {
			t.Fatalf("in turn: %v, at once: %v", inTurn, atOnce)
		}
	}
	if most.Load() != 1 {
		t.Errorf("in turn: %d parts ran at once", most.Load())
	}
}
