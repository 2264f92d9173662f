package engine

import (
	"context"
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

// countedIn carries, in a statement's context, the routedBy the statement
// counts itself in: a setting would cost a query two allocations more and a
// Create three, as GORM copies the settings when it begins a transaction.
type countedIn struct {
	context.Context
	stmt  *gorm.Statement // keyed by the statement: statements made from it share its context
	in    *routedBy
	ended bool
}

type inflightKey struct{ stmt *gorm.Statement }

func (c *countedIn) Value(key any) any {
	if k, ok := key.(inflightKey); ok && k.stmt == c.stmt {
		return c
	}
	return c.Context.Value(key)
}

// countOf is the count a statement is in, or nil.
func countOf(stmt *gorm.Statement) *countedIn {
	if stmt.Context == nil {
		return nil
	}
	c, _ := stmt.Context.Value(inflightKey{stmt}).(*countedIn)
	if c == nil || c.ended {
		return nil
	}
	return c
}

// startRouting counts a statement in the version it is about to be routed
// by: counted first, the map read after is this version or a newer one.
func (e *Engine) startRouting(stmt *gorm.Statement) {
	r := e.inflight.current.Load()
	if r == nil || countOf(stmt) != nil {
		return
	}
	parent := stmt.Context
	if parent == nil {
		parent = context.Background()
	}
	stmt.Context = &countedIn{Context: parent, stmt: stmt, in: r}
	r.running.Add(1)
}

// endRouting uncounts a statement that ends.
func (e *Engine) endRouting(stmt *gorm.Statement) {
	c := countOf(stmt)
	if c == nil {
		return
	}
	c.ended = true
	if left := c.in; left.running.Add(-1) == 0 && left != e.inflight.current.Load() {
		select {
		case e.inflight.drained <- struct{}{}:
		default: // one is pending already
		}
	}
}

// dropCount gives an ended statement back the context it came with, unless
// another plugin has wrapped it since: a statement instance may run again.
func dropCount(stmt *gorm.Statement) {
	if c, ok := stmt.Context.(*countedIn); ok && c.stmt == stmt && c.ended {
		stmt.Context = c.Context
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
