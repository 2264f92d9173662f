package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardid/shardid/internal/mapstore"
)

// The shared map routes a process's statements only while the process has
// read it lately. A move's cleanup counts a process live for three of its
// refresh periods and a margin after it last noted itself; a process that
// cannot read the map, or note itself, for three periods and a second
// refuses statements on sharded models, so that it never reads a frozen
// copy past that, nor writes to a source whose fence the cleanup dropped. A
// process that reads a map it cannot route by (a database its config lacks)
// refuses them at once.

// mapTrust is what a process knows of its map's freshness.
type mapTrust struct {
	distrust   atomic.Pointer[error] // nil: the map was read lately
	unroutable atomic.Pointer[error] // nil: the newest map read is one this process can route by
	mu         sync.Mutex
	timer      *time.Timer // distrusts the map when no reading renews it
	until      time.Time   // the end of the last reading's trust; zero: never read
	within     time.Duration
	lastErr    error // of the last reading that failed
}

// usable returns the error statements on sharded models fail with while the
// map is not to be trusted, or nil.
func (t *mapTrust) usable() error {
	if err := t.unroutable.Load(); err != nil {
		return *err
	}
	if err := t.distrust.Load(); err != nil {
		return *err
	}
	return nil
}

// readAt notes a reading of the map, and its noting of this process, both
// begun at start: the map is trusted until start plus within.
func (t *mapTrust) readAt(start time.Time, within time.Duration, table string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastErr = nil
	t.until, t.within = start.Add(within), within
	left := time.Until(t.until)
	if left <= 0 { // a reading so slow that its trust has ended already
		t.lastErr = fmt.Errorf("its last reading took %v", time.Since(start).Round(time.Millisecond))
		t.expireLocked(within, table)
		return
	}
	if t.timer == nil {
		t.timer = time.AfterFunc(left, func() { t.expire(within, table) })
	} else {
		t.timer.Reset(left)
	}
	t.distrust.Store(nil)
}

// routable notes a reading whose newest map this process routes by.
func (t *mapTrust) routable() { t.unroutable.Store(nil) }

// failed notes a reading that failed; a map distrusted already says the
// newest error.
func (t *mapTrust) failed(err error, table string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastErr = err
	if t.distrust.Load() != nil {
		t.expireLocked(t.within, table)
	}
}

// cannotRouteBy notes a newest map this process cannot route by: it is
// distrusted at once, until a reading finds one it can.
func (t *mapTrust) cannotRouteBy(err error, table string) {
	var refused error = &mapNotReadError{fmt.Errorf("%w: this process cannot route by the newest shared map, and the map it routes by may send statements to a database that no longer serves their rows: %w",
		ErrShardUnavailable, err)}
	t.unroutable.Store(&refused)
	t.failed(err, table)
}

// expire distrusts the map: no reading renewed it in time.
func (t *mapTrust) expire(within time.Duration, table string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.within = within
	t.expireLocked(within, table)
}

func (t *mapTrust) expireLocked(within time.Duration, table string) {
	if time.Now().Before(t.until) {
		return // a reading renewed it as the timer fired
	}
	why := "its reading has not returned: the plugin's database does not answer, or is busy"
	if t.lastErr != nil {
		why = "last error: " + t.lastErr.Error()
	}
	if t.until.IsZero() {
		t.store(fmt.Errorf("%w: this process has not read the shared map in %s yet (%s); until it does, it does not know where logical shards are, so statements on sharded models are refused",
			ErrShardUnavailable, table, why))
		return
	}
	t.store(fmt.Errorf("%w: this process has not read the shared map in %s for %v (%s); a move may have changed where logical shards are, so statements on sharded models are refused until it reads it again",
		ErrShardUnavailable, table, within, why))
}

func (t *mapTrust) store(err error) {
	var distrusted error = &mapNotReadError{err}
	t.distrust.Store(&distrusted)
}

// mapNotReadError is a refusal for want of a map read lately: no database
// was asked.
type mapNotReadError struct{ err error }

func (e *mapNotReadError) Error() string { return e.err.Error() }
func (e *mapNotReadError) Unwrap() error { return e.err }

// stop ends the timer, when the process stops following the map.
func (t *mapTrust) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
	}
}

// mapUsable is nil when statements on sharded models may route by the map.
func (e *Engine) mapUsable() error {
	if e.maps == nil {
		return nil
	}
	return e.maps.trust.usable()
}

// trustWindow is how long a reading of the map is trusted.
func (s *mapStore) trustWindow() time.Duration { return mapstore.TrustWindow(s.Heartbeat()) }
