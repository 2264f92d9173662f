package engine

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"weak"

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
	counted countedStatements
}

// countedStatements holds the routedBy each running statement counts itself
// in, by statement. A table of the engine's rather than a setting of the
// statement's: a setting costs each statement two allocations, and GORM
// copies it into every transaction it begins. Striped, so that goroutines
// seldom share a lock.
// Weakly: a statement whose callback panicked never reaches the last one,
// and is uncounted once collected (forgetCollected).
type countedStatements struct {
	stripes [64]struct {
		sync.Mutex
		by map[weak.Pointer[gorm.Statement]]*routedBy
	}
}

var stripeSeed = maphash.MakeSeed()

func (c *countedStatements) stripe(stmt *gorm.Statement) (*sync.Mutex, *map[weak.Pointer[gorm.Statement]]*routedBy) {
	s := &c.stripes[maphash.Comparable(stripeSeed, stmt)%uint64(len(c.stripes))]
	return &s.Mutex, &s.by
}

// forgetCollected uncounts the statements collected without having ended
// (a panic in one of their callbacks, recovered by the application).
func (c *countedStatements) forgetCollected() {
	for i := range c.stripes {
		s := &c.stripes[i]
		s.Lock()
		for key, r := range s.by {
			if key.Value() == nil {
				delete(s.by, key)
				r.running.Add(-1)
			}
		}
		s.Unlock()
	}
}

// add counts stmt in r, unless it is counted already.
func (c *countedStatements) add(stmt *gorm.Statement, r *routedBy) {
	mu, by := c.stripe(stmt)
	key := weak.Make(stmt)
	mu.Lock()
	defer mu.Unlock()
	if _, counted := (*by)[key]; counted {
		return
	}
	if *by == nil {
		*by = map[weak.Pointer[gorm.Statement]]*routedBy{}
	}
	(*by)[key] = r
	r.running.Add(1)
}

// remove returns what stmt was counted in, no longer holding it.
func (c *countedStatements) remove(stmt *gorm.Statement) (*routedBy, bool) {
	mu, by := c.stripe(stmt)
	key := weak.Make(stmt)
	mu.Lock()
	defer mu.Unlock()
	r, ok := (*by)[key]
	if ok {
		delete(*by, key)
	}
	return r, ok
}

// startRouting counts a statement in the version it is about to be routed
// by: counted first, the map read after is this version or a newer one.
func (e *Engine) startRouting(stmt *gorm.Statement) {
	if r := e.inflight.current.Load(); r != nil {
		e.inflight.counted.add(stmt, r)
	}
}

// endRouting uncounts a statement that ends.
func (e *Engine) endRouting(stmt *gorm.Statement) {
	left, ok := e.inflight.counted.remove(stmt)
	if !ok {
		return
	}
	if left.running.Add(-1) == 0 && left != e.inflight.current.Load() {
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
	e.inflight.counted.forgetCollected()
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
