package engine

import (
	"sync/atomic"
	"time"
)

// The parts of a fan-out run on worker goroutines that outlive one
// statement: a goroutine's stack grows while it scans rows (GORM's and
// database/sql's calls run deep), and growing a fresh one costs more than a
// part's own work on a fast database. A worker keeps its grown stack between
// parts and exits after workerIdle without work, so there are never more
// than the most parts that ran at once. Safe for concurrent use.

// partWork hands a part to an idle worker; unbuffered: only a worker
// waiting for work takes it.
var partWork = make(chan func())

const workerIdle = time.Minute

// goPart runs fn on an idle worker, or on a new one.
func goPart(fn func()) {
	select {
	case partWork <- fn:
	default:
		go partWorker(fn)
	}
}

func partWorker(fn func()) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(workerIdle)
		select {
		case fn = <-partWork:
		case <-idle.C:
			return
		}
	}
}

// handOff is about what handing a part to a worker and waiting for it
// costs, with room: a few microseconds on a busy two-core machine. Parts
// that answer faster than that run one after another in the caller's
// goroutine, where they cost less than at once.
const handOff = 20 * time.Microsecond

// partTime is a physical database's recent time per part of a query over
// several databases, a decaying average in nanoseconds; zero until one ran.
type partTime struct{ nanos atomic.Int64 }

// note counts a part that took d. Concurrent notes may lose one: an
// estimate.
func (t *partTime) note(d time.Duration) {
	old := t.nanos.Load()
	if old == 0 {
		t.nanos.Store(max(int64(d), 1))
		return
	}
	t.nanos.Store(max(old+(int64(d)-old)/4, 1))
}

// inTurn reports whether parts that take about the times given run sooner
// one after another than at once: when at most one of them is not known to
// take less than a hand-off (the caller's own would wait for it at once
// too). An unknown time (zero) counts as slow.
func inTurn(times []time.Duration, handOff time.Duration) bool {
	slow := 0
	for _, d := range times {
		if d == 0 || d >= handOff {
			slow++
		}
	}
	return slow <= 1
}
