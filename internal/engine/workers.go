package engine

import "time"

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
