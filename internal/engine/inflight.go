package engine

import (
	"sync"
	"sync/atomic"
	"weak"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid/shardrouter"
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
	// older are the versions left while statements of theirs ran, held
	// weakly: a statement that panicked (its last callback never ran) keeps
	// its version's count up, and its version only until it is collected.
	older   []weak.Pointer[routedBy]
	drained chan struct{} // the last statement of an older version ended
}

// countedClause is the key, among a statement's clauses, of the version it
// counts in: kept by the statement itself, which a hook replacing its context
// cannot drop, and no weak pointer per statement, which costs the collector
// a record each. GORM marks soft deletes among the clauses so too.
const countedClause = shardrouter.CountedClause

// countedBy is the statement a counted mark is of: a statement copied from
// a counted one (a Session of it) carries the mark without being counted.
type countedBy gorm.Statement

// Build builds nothing: the marks are never among the clauses built.
func (*countedBy) Build(clause.Builder) {}
func (*routedBy) Build(clause.Builder)  {}

// countedIn returns the version stmt counts in, if it is counted.
func countedIn(stmt *gorm.Statement) (*routedBy, bool) {
	c, ok := stmt.Clauses[countedClause]
	if !ok {
		return nil, false
	}
	if by, _ := c.BeforeExpression.(*countedBy); (*gorm.Statement)(by) != stmt {
		return nil, false
	}
	r, ok := c.Expression.(*routedBy)
	return r, ok
}

// startRouting counts a statement in the version it is about to be routed
// by: counted first, the map read after is this version or a newer one.
func (e *Engine) startRouting(stmt *gorm.Statement) {
	r := e.inflight.current.Load()
	if r == nil || stmt.Clauses == nil {
		return
	}
	if _, counted := countedIn(stmt); counted {
		return
	}
	stmt.Clauses[countedClause] = clause.Clause{Expression: r, BeforeExpression: (*countedBy)(stmt)}
	r.running.Add(1)
}

// countCreate counts a Create in the version it is about to be routed by,
// its mark kept aside until its routing state holds it: GORM's begin copies
// the statement's clauses, and an empty map copies without an allocation (a
// Create has no clause yet). It returns nil for one counted already.
func (e *Engine) countCreate(stmt *gorm.Statement) *routedBy {
	r := e.inflight.current.Load()
	if r == nil || stmt.Clauses == nil {
		return nil
	}
	if _, counted := countedIn(stmt); counted {
		return nil
	}
	r.running.Add(1)
	return r
}

// countedBack puts a Create's mark back among its clauses after GORM's
// begin, before its hooks, which may replace the context that holds it.
func countedBack(stmt *gorm.Statement) {
	if state := routeStateOf(stmt); state != nil && state.counted != nil {
		stmt.Clauses[countedClause] = clause.Clause{Expression: state.counted, BeforeExpression: (*countedBy)(stmt)}
		state.counted = nil
	}
}

// endRouting uncounts a statement that ends.
func (e *Engine) endRouting(stmt *gorm.Statement) {
	left, ok := countedIn(stmt)
	if !ok {
		return
	}
	delete(stmt.Clauses, countedClause)
	e.uncount(left)
}

// uncount ends a statement counted in left.
func (e *Engine) uncount(left *routedBy) {
	if left == nil {
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
		if left.version > version { // the map's table made anew: the statements still running route by none of its versions
			for _, w := range e.inflight.older {
				if r := w.Value(); r != nil {
					r.version = 0
				}
			}
			left.version = 0
		}
		e.inflight.older = append(e.inflight.older, weak.Make(left))
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
	for _, w := range e.inflight.older {
		if r := w.Value(); r != nil && r.running.Load() > 0 {
			kept = append(kept, w)
			oldest = min(oldest, r.version)
		}
	}
	clear(e.inflight.older[len(kept):])
	e.inflight.older = kept
	return oldest
}
