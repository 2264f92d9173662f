package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/twophase"
)

// A Create of sharded rows in a transaction on the plugin's own database
// (GORM's CreateInBatches opens one around its batches; an application may
// too) commits with that transaction, the anchor: its rows are written in
// branches on their databases, prepared when the statement ends, and the
// commit decision of the anchor's global transaction is a row written in
// the anchor. Once the anchor ends, one watcher finds the decision
// committed with it, or gone with its rollback, and finishes every branch
// of its statements; recovery does if the process stops.

// anchoredLockWait bounds a lock wait of an anchored branch: a later
// statement of the anchor may wait on an earlier one's prepared branch
// (the same unique key twice), which ends only with the anchor.
const anchoredLockWait = 5 * time.Second

// anchor is a transaction on the plugin's own database that anchored
// Creates commit with.
type anchor struct {
	tx         *sql.Tx
	gid        string
	statements int // anchored so far, naming their branches apart
	recorded   []string
	branches   []*branchPool // prepared, for the watcher to finish
	prepared   time.Time     // when its first branch was prepared, for TransactionStats.InDoubtSeconds
	writes     []*globalTx   // every statement's, for the watcher to roll back those never prepared (a panic skipped their end)
	done       chan struct{} // closed once they are finished
	finished   atomic.Int64  // branches finished so far: a statement waits while they advance
	savepoints []savepointMark
	failed     error // set once none of its writes can commit
}

// anchoredWrites are the open anchors, by their transaction, so that a
// statement after one ended waits for its branches: the process then reads
// what it wrote.
type anchoredWrites struct {
	pending atomic.Int64
	mu      sync.Mutex // guards byTx and each anchor's fields
	byTx    map[*sql.Tx]*anchor
}

// anchoredCreate makes the global transaction of a Create in a transaction
// on the plugin's own database, where two phases are used; nil otherwise.
// A transaction that ended anchors nothing: the Create fails as its
// statements do.
func (e *Engine) anchoredCreate(db *gorm.DB) (*globalTx, error) {
	stmt := db.Statement
	if !e.twoPhaseHere() {
		return nil, nil
	}
	tx, own := e.ownTransaction(stmt)
	state := routeStateOf(stmt)
	if !own || state == nil {
		return nil, nil
	}
	if txEnded(tx) {
		return nil, sql.ErrTxDone
	}
	a := e.anchored.of(tx, e)
	g := e.newGlobalTx()
	e.anchored.mu.Lock()
	if a.failed != nil {
		e.anchored.mu.Unlock()
		return nil, a.failed
	}
	a.statements++
	g.gid, g.branchTag = a.gid, fmt.Sprintf("s%d", a.statements)
	a.writes = append(a.writes, g)
	e.anchored.mu.Unlock()
	g.implicit, g.anchor, g.options = true, a, twophase.Options{LockWait: anchoredLockWait}
	state.anchored, state.anchorPool = g, stmt.ConnPool
	stmt.ConnPool = g
	return g, nil
}

// ownTransaction returns the transaction stmt runs in when it is one on the
// plugin's own database.
func (e *Engine) ownTransaction(stmt *gorm.Statement) (*sql.Tx, bool) {
	tx := sqlTx(stmt.ConnPool)
	if tx == nil {
		return nil, false
	}
	if _, onShard := e.transactionPhysical(stmt); onShard {
		return nil, false
	}
	own, err := e.db.DB()
	return tx, err == nil && dbBehind(tx) == own
}

// of returns the anchor of tx, made, with its watcher, on first use.
func (w *anchoredWrites) of(tx *sql.Tx, e *Engine) *anchor {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a, ok := w.byTx[tx]; ok {
		return a
	}
	if w.byTx == nil {
		w.byTx = map[*sql.Tx]*anchor{}
	}
	a := &anchor{tx: tx, gid: e.newGlobalTx().gid, done: make(chan struct{})}
	w.byTx[tx] = a
	w.pending.Add(1)
	e.background.Go(func() { e.watchAnchor(a) })
	return a
}

// endAnchored ends the anchored write of a Create, in its last callback:
// prepared and recorded in its anchor if it succeeded, rolled back if not.
// It returns the anchor's pool, which the statement is to be given back as
// it ends (nil if it was not anchored): run again, a *gorm.DB left on the
// write's ended branch would write there.
func (e *Engine) endAnchored(db *gorm.DB) gorm.ConnPool {
	state := routeStateOf(db.Statement)
	if state == nil || state.anchored == nil {
		return nil
	}
	g := state.anchored
	state.anchored = nil
	ctx := db.Statement.Context
	if db.Error != nil && db.Error != errRouted {
		state.undone = g.rollback(ctx) == nil // its writes taken back, its IDs with them
		return state.anchorPool
	}
	if undone, err := g.prepareAnchored(ctx); err != nil {
		db.Error, state.undone = err, undone
	}
	return state.anchorPool
}

// prepareAnchored prepares every branch of the statement and records the
// anchor's commit in it, or the databases the statement adds to it; the
// first statement starts the anchor's watcher. A failure says whether the
// branches were rolled back.
func (g *globalTx) prepareAnchored(ctx context.Context) (bool, error) {
	defer g.fail(sql.ErrTxDone)
	defer g.ended.Store(true)
	rolledBack := func(err error) (bool, error) {
		rollbackErr := g.rollback(ctx)
		return rollbackErr == nil, errors.Join(err, rollbackErr)
	}
	if failed := g.doomed(); failed != nil {
		return rolledBack(failed)
	}
	branches := g.endBranches()
	if len(branches) == 0 {
		return false, nil
	}
	preparedAt := time.Now()
	if err := g.each(branches, func(b *branchPool) error { return b.branch.Prepare(ctx) }); err != nil {
		return rolledBack(err)
	}
	w, a := &g.e.anchored, g.anchor
	w.mu.Lock()
	first := a.recorded == nil
	databases := a.recorded
	for _, name := range g.databases(branches) {
		if !slices.Contains(databases, name) {
			databases = append(databases, name)
		}
	}
	w.mu.Unlock()
	decisions := g.e.decisions()
	var err error
	if first {
		err = decisions.Record(ctx, a.tx, a.gid, twophase.Committed, databases)
	} else if len(databases) > len(a.recorded) {
		err = decisions.Databases(ctx, a.tx, a.gid, databases)
	}
	if err == nil && !first {
		err = decisionKept(ctx, decisions, a)
	}
	if err != nil {
		return rolledBack(err)
	}
	for _, b := range branches {
		b.branch.Detach() // the watcher finishes them from sessions of its own
	}
	w.mu.Lock()
	a.recorded = databases
	a.branches = append(a.branches, branches...)
	if a.prepared.IsZero() {
		a.prepared = preparedAt
	}
	w.mu.Unlock()
	return false, nil
}

// decisionKept fails when the anchor's decision is gone: MySQL rolls a
// transaction back whole on a deadlock and runs its next statements on their
// own, so the rows of a statement after it would be rolled back at its commit.
func decisionKept(ctx context.Context, decisions twophase.Decisions, a *anchor) error {
	kept, err := decisions.Recorded(ctx, a.tx, a.gid)
	if err == nil && !kept {
		err = fmt.Errorf("%w: the database rolled the transaction back before this statement (a deadlock, or an error that ends it), and its sharded writes with it; roll back and run it again", sql.ErrTxDone)
	}
	return err
}

// watchAnchor waits for the anchor to end, then commits its branches if its
// decision committed with it, or rolls them back: recording an abort waits
// on the anchor's uncommitted decision (the same key) and then fails (it
// committed) or succeeds (it rolled back). What the process cannot finish
// before it closes, recovery does.
func (e *Engine) watchAnchor(a *anchor) {
	defer func() {
		e.anchored.mu.Lock()
		delete(e.anchored.byTx, a.tx)
		e.anchored.mu.Unlock()
		e.anchored.pending.Add(-1)
		close(a.done)
	}()
	ctx := e.lifetime
	for wait := time.Millisecond; !txEnded(a.tx); wait = min(2*wait, 20*time.Millisecond) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait): // one atomic load a turn; no connection held meanwhile
		}
	}
	var outcome twophase.Outcome
	for {
		var err error
		if outcome, err = e.decisions().Decide(ctx, a.gid, twophase.Aborted); err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.anchored.mu.Lock()
	branches, writes, prepared := a.branches, a.writes, a.prepared
	e.anchored.mu.Unlock()
	for _, g := range writes {
		if !g.ended.Load() {
			_ = g.rollback(ctx) // a panic skipped its end: its branches are still open
		}
	}
	if len(branches) == 0 {
		return // nothing was prepared: the abort recorded is all there is
	}
	commit := outcome == twophase.Committed
	// At once, Config.PartsAtOnce at a time: a CreateInBatches of many
	// batches leaves thousands of branches, one by one minutes of commits.
	var unfinished atomic.Bool
	lanes := make(chan struct{}, e.config.partsAtOnce())
	var wg sync.WaitGroup
	for _, b := range branches {
		lanes <- struct{}{}
		wg.Go(func() {
			defer func() { <-lanes }()
			if finishBranch(ctx, b, commit) != nil {
				unfinished.Store(true)
			}
			a.finished.Add(1)
		})
	}
	wg.Wait()
	finished := !unfinished.Load()
	counts := &e.txCounts
	if commit {
		e.countEnded(&counts.committed, len(branches), time.Since(prepared))
	} else {
		e.countEnded(&counts.rolledBack, len(branches), 0)
	}
	if commit && finished {
		_ = e.decisions().Forget(context.WithoutCancel(ctx), a.gid)
	}
}

// awaitEndedAnchors holds a statement while the branches of an anchor that
// has ended are being finished, for at most anchorWait: costs one atomic
// load when there are none.
func (e *Engine) awaitEndedAnchors(ctx context.Context) {
	if e.anchored.pending.Load() == 0 {
		return
	}
	e.waitForAnchors(ctx)
}

// awaitEndedAnchorsOf is awaitEndedAnchors for stmt, which a part of a
// statement over several databases skips: its statement waited before any
// part held a connection, which the branches' commits may need.
func (e *Engine) awaitEndedAnchorsOf(stmt *gorm.Statement) {
	if e.anchored.pending.Load() == 0 {
		return
	}
	if _, part := loadSetting(stmt, pinKey{}); !part {
		e.waitForAnchors(stmt.Context)
	}
}

func (e *Engine) waitForAnchors(ctx context.Context) {
	e.anchored.mu.Lock()
	var waits []*anchor
	for tx, a := range e.anchored.byTx {
		if txEnded(tx) {
			waits = append(waits, a)
		}
	}
	e.anchored.mu.Unlock()
	if ctx == nil {
		ctx = context.Background()
	}
	timeout := time.NewTimer(anchorWait)
	defer timeout.Stop()
	for _, a := range waits {
		for seen, waiting := a.finished.Load(), true; waiting; {
			select {
			case <-a.done:
				waiting = false
			case <-timeout.C:
				now := a.finished.Load()
				if now == seen {
					return // no branch finished meanwhile: a database does not answer
				}
				seen = now
				timeout.Reset(anchorWait)
			case <-ctx.Done():
				return
			}
		}
	}
}

// anchorWait bounds how long a statement waits for the branches of an
// ended anchor without one of them finishing: each commits within a round
// trip, unless a database is unreachable, when recovery finishes them.
const anchorWait = 2 * time.Second

// txDoneField is the flag a *sql.Tx sets when its commit or rollback begins.
var txDoneField, _ = reflect.TypeFor[sql.Tx]().FieldByName("done")

// txEnded reports whether tx's commit or rollback has begun.
func txEnded(tx *sql.Tx) bool {
	if txDoneField.Type != reflect.TypeFor[atomic.Bool]() {
		return true // not the database/sql this was written against: do not wait on it
	}
	return (*atomic.Bool)(reflect.ValueOf(tx).Elem().FieldByIndex(txDoneField.Index).Addr().UnsafePointer()).Load()
}
