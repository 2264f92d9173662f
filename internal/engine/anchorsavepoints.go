package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"
)

// An anchor's writes follow its transaction's savepoints: rolling back to a
// savepoint rolls back the branches of the anchored writes made after it,
// and the commit decision the rolled-back part recorded (a savepoint set
// before the anchor's first write, which the anchor never saw, undoes all
// of them).

// savepointMark is what an anchor held when a savepoint was set.
type savepointMark struct {
	name     string
	branches int      // prepared before it
	recorded []string // the databases its decision named then; nil: none recorded yet
}

// followSavepoint applies a savepoint statement that ran on a transaction
// on the plugin's own database to that transaction's anchor, if it has one.
func (e *Engine) followSavepoint(db *gorm.DB) {
	if db.Error != nil || db.DryRun || e.anchored.pending.Load() == 0 {
		return
	}
	tx := sqlTx(db.Statement.ConnPool)
	if tx == nil {
		return
	}
	kind, name, ok := savepointStatement(db.Statement.SQL.String())
	if !ok {
		return
	}
	e.anchored.mu.Lock()
	a := e.anchored.byTx[tx]
	e.anchored.mu.Unlock()
	if a != nil {
		db.AddError(e.anchorSavepoint(db.Statement.Context, a, kind, name))
	}
}

// anchorSavepoint records a savepoint set or released, or rolls back the
// anchored writes made after the one rolled back to.
func (e *Engine) anchorSavepoint(ctx context.Context, a *anchor, kind, name string) error {
	w := &e.anchored
	w.mu.Lock()
	last := -1 // the latest of that name: a name set again hides the earlier one
	for i, m := range a.savepoints {
		if strings.EqualFold(m.name, name) {
			last = i
		}
	}
	switch kind {
	case "set":
		a.savepoints = append(a.savepoints, savepointMark{name: name, branches: len(a.branches), recorded: a.recorded})
		w.mu.Unlock()
		return nil
	case "release":
		if last >= 0 {
			a.savepoints = a.savepoints[:last]
		}
		w.mu.Unlock()
		return nil
	}
	var mark savepointMark // unknown: set before the anchor's first write
	if last >= 0 {
		mark = a.savepoints[last]
		a.savepoints = a.savepoints[:last+1]
	} else {
		a.savepoints = nil
	}
	undone := slices.Clone(a.branches[mark.branches:])
	a.branches = a.branches[:mark.branches]
	a.recorded = mark.recorded // the decision's row went back with the savepoint
	w.mu.Unlock()
	var errs []error
	for _, b := range undone {
		if err := b.branch.Finish(ctx, false); err != nil {
			_, database, _ := e.sqlDBOf(ctx, b.k)
			errs = append(errs, &onError{name: database, err: err})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return e.doomAnchor(ctx, a, err)
	}
	return nil
}

// doomAnchor makes sure none of the anchor's writes commits when a branch
// rolled back to a savepoint could not be rolled back (it stays prepared
// under the anchor's transaction ID): the decision is withdrawn in the
// transaction, so that an abort is decided at its end, and every later
// anchored write in it fails.
func (e *Engine) doomAnchor(ctx context.Context, a *anchor, cause error) error {
	err := fmt.Errorf("shardid: a write rolled back to a savepoint could not be rolled back on its database, so no sharded row this transaction creates will commit: %w", cause)
	w := &e.anchored
	w.mu.Lock()
	a.failed = err
	recorded := a.recorded != nil
	w.mu.Unlock()
	if recorded {
		err = errors.Join(err, e.decisions().Withdraw(ctx, a.tx, a.gid))
	}
	return err
}
