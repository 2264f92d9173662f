package engine

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/twophase"
)

// A Create of sharded rows in a transaction on the plugin's own database
// (GORM's CreateInBatches opens one around its batches; an application may
// too) commits with that transaction: its rows are written in branches on
// their databases, prepared when the statement ends, and its commit
// decision is a row written in that transaction. Once the transaction ends,
// a watcher finds the decision committed with it, or gone with its
// rollback, and finishes the branches; recovery does if the process stops.

// anchoredCreate makes the global transaction of a Create in a transaction
// on the plugin's own database, where two phases are used; nil otherwise.
func (e *Engine) anchoredCreate(db *gorm.DB) *globalTx {
	stmt := db.Statement
	tx := sqlTx(stmt.ConnPool)
	if tx == nil || !e.twoPhaseHere() {
		return nil
	}
	if _, onShard := e.transactionPhysical(stmt); onShard {
		return nil
	}
	own, err := e.db.DB()
	state := routeStateOf(stmt)
	if err != nil || dbBehind(tx) != own || state == nil {
		return nil
	}
	g := e.newGlobalTx()
	g.implicit, g.anchor = true, tx
	state.anchored = g
	stmt.ConnPool = g
	return g
}

// endAnchored ends the anchored write of a Create, in its last callback:
// prepared and recorded in its anchor if it succeeded, rolled back if not.
func (e *Engine) endAnchored(db *gorm.DB) {
	state := routeStateOf(db.Statement)
	if state == nil || state.anchored == nil {
		return
	}
	g := state.anchored
	state.anchored = nil
	ctx := db.Statement.Context
	if db.Error != nil && db.Error != errRouted {
		_ = g.rollback(ctx)
		return
	}
	if err := g.prepareAnchored(ctx); err != nil {
		db.Error = err
	}
}

// prepareAnchored prepares every branch and records the commit in the
// anchor; the branches are finished once the anchor ends.
func (g *globalTx) prepareAnchored(ctx context.Context) error {
	if g.failed != nil {
		return errors.Join(g.failed, g.rollback(ctx))
	}
	branches := g.list()
	if len(branches) == 0 {
		return nil
	}
	if err := g.each(branches, func(b *branchPool) error { return b.branch.Prepare(ctx) }); err != nil {
		return errors.Join(err, g.rollback(ctx))
	}
	if err := g.e.decisions().Record(ctx, g.anchor, g.gid, twophase.Committed); err != nil {
		return errors.Join(err, g.rollback(ctx))
	}
	for _, b := range branches {
		b.branch.Detach() // the watcher finishes them from sessions of its own
	}
	g.e.anchored.add(g)
	g.e.background.Go(func() {
		defer g.e.anchored.remove(g)
		g.finishAnchored(branches)
	})
	return nil
}

// finishAnchored waits for the anchor to end, then commits the branches if
// its decision committed with it, or rolls them back: recording an abort
// waits on the anchor's uncommitted decision (the same key) and then fails
// (it committed) or succeeds (it rolled back). What the process cannot
// finish before it closes, recovery does.
func (g *globalTx) finishAnchored(branches []*branchPool) {
	ctx := g.e.lifetime
	var outcome twophase.Outcome
	for {
		var err error
		if outcome, err = g.e.decisions().Decide(ctx, g.gid, twophase.Aborted); err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // a lock wait that timed out: the anchor still runs
	}
	commit := outcome == twophase.Committed
	finished := true
	for _, b := range branches {
		for tries := 0; ; tries++ {
			err := b.branch.Finish(ctx, commit)
			if err == nil || !twophase.UnknownBranch(err) || tries == 50 {
				finished = finished && err == nil
				break
			}
			time.Sleep(100 * time.Millisecond) // MySQL: its session has not ended yet on the server
		}
	}
	counts := &g.e.txCounts
	if commit {
		g.e.countEnded(&counts.committed, len(branches), 0)
	} else {
		g.e.countEnded(&counts.rolledBack, len(branches), 0)
	}
	if commit && finished {
		_ = g.e.decisions().Forget(context.WithoutCancel(ctx), g.gid)
	}
}

// anchoredWrites are the anchored writes whose branches wait for their
// anchor to end, so that a statement after it waits for them: the process
// then reads what it wrote.
type anchoredWrites struct {
	pending atomic.Int64
	mu      sync.Mutex
	done    map[*globalTx]chan struct{} // closed once the branches are finished
}

func (a *anchoredWrites) add(g *globalTx) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done == nil {
		a.done = map[*globalTx]chan struct{}{}
	}
	a.done[g] = make(chan struct{})
	a.pending.Add(1)
}

func (a *anchoredWrites) remove(g *globalTx) {
	a.mu.Lock()
	defer a.mu.Unlock()
	close(a.done[g])
	delete(a.done, g)
	a.pending.Add(-1)
}

// awaitEndedAnchors holds a statement while anchored writes whose anchor
// has ended are being finished, for at most anchorWait: costs one atomic
// load when there are none.
func (e *Engine) awaitEndedAnchors(ctx context.Context) {
	if e.anchored.pending.Load() == 0 {
		return
	}
	e.anchored.mu.Lock()
	var waits []chan struct{}
	for g, done := range e.anchored.done {
		if txEnded(g.anchor) {
			waits = append(waits, done)
		}
	}
	e.anchored.mu.Unlock()
	if ctx == nil {
		ctx = context.Background()
	}
	timeout := time.NewTimer(anchorWait)
	defer timeout.Stop()
	for _, done := range waits {
		select {
		case <-done:
		case <-timeout.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// anchorWait bounds how long a statement waits for the branches of an
// ended anchor: they commit within a round trip of it, unless a database
// is unreachable, when recovery finishes them.
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
