package engine

import (
	"sync"
	"sync/atomic"

	"gorm.io/gorm"
)

// routedBy counts the statements running that began routing by one map
// version: until they end, the process does not say it has left it, so that
// a cleanup does not delete rows such a statement still reads.
type routedBy struct {
	version int64
	running atomic.Int64
}

// inflight is what the process's statements still route by.
type inflight struct {
	current atomic.Pointer[routedBy]
	mu      sync.Mutex
	older   []*routedBy   // versions left while statements of theirs ran
	drained chan struct{} // the last statement of an older version ended
}

// inflightKey is the Statement.Settings key of the routedBy a statement
// counts itself in; keyed by the statement, since statements made from it
// copy its settings.
type inflightKey struct{ stmt *gorm.Statement }

// startRouting counts a statement in the version it is about to be routed
// by: counted first, the map read after is this version or a newer one.
func (e *Engine) startRouting(stmt *gorm.Statement) {
	r := e.inflight.current.Load()
	if r == nil {
		return
	}
	if _, counted := stmt.Settings.LoadOrStore(inflightKey{stmt}, r); !counted {
		r.running.Add(1)
	}
}

// endRouting uncounts a statement that ends.
func (e *Engine) endRouting(stmt *gorm.Statement) {
	if settingsUntouched(&stmt.Settings) {
		return // never counted
	}
	r, ok := stmt.Settings.LoadAndDelete(inflightKey{stmt})
	if !ok {
		return
	}
	if left := r.(*routedBy); left.running.Add(-1) == 0 && left != e.inflight.current.Load() {
		select {
		case e.inflight.drained <- struct{}{}:
		default: // one is pending already
		}
	}
}

// routeBy makes version the one new statements count in, once the router
// routes by it.
func (e *Engine) routeBy(version int64) {
	next := &routedBy{version: version}
	if left := e.inflight.current.Swap(next); left != nil {
		e.inflight.mu.Lock()
		e.inflight.older = append(e.inflight.older, left)
		e.inflight.mu.Unlock()
	}
}

// oldestRouted is the oldest map version a running statement routes by:
// the version the process says it follows.
func (e *Engine) oldestRouted(current int64) int64 {
	e.inflight.mu.Lock()
	defer e.inflight.mu.Unlock()
	oldest := current
	kept := e.inflight.older[:0]
	for _, r := range e.inflight.older {
		if r.running.Load() > 0 {
			kept = append(kept, r)
			oldest = min(oldest, r.version)
		}
	}
	clear(e.inflight.older[len(kept):])
	e.inflight.older = kept
	return oldest
}
