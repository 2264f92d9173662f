package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/twophase"
)

// An anchor's writes follow its transaction's savepoints: rolling back to a
// savepoint rolls back the branches of the anchored writes made after it,
// and the commit decision the rolled-back part recorded. A savepoint the
// plugin did not see set (before the anchor's first write, or by SQL it
// does not read) is placed by the decision's row: gone with the rollback,
// the savepoint came before every anchored write; still there, the plugin
// cannot tell which writes to undo, and none of them commits.

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
		if sameSavepoint(m.name, name) {
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
	var mark savepointMark // unseen: set before every anchored write, if the decision says so
	if last >= 0 {
		mark = a.savepoints[last]
		a.savepoints = a.savepoints[:last+1]
	} else {
		a.savepoints = nil
	}
	recorded := a.recorded != nil
	w.mu.Unlock()
	if last < 0 && recorded {
		still, err := e.decisions().Recorded(ctx, a.tx, a.gid)
		if err != nil || still {
			return e.doomAnchor(ctx, a, errors.Join(fmt.Errorf("the savepoint %s was set where the plugin did not see it, after a sharded row was created", name), err))
		}
	}
	w.mu.Lock()
	undone := slices.Clone(a.branches[mark.branches:])
	a.branches = a.branches[:mark.branches]
	a.recorded = mark.recorded // the decision's row went back with the savepoint
	w.mu.Unlock()
	finishing, cancel := ending(ctx)
	defer cancel()
	var errs []error
	for _, b := range undone {
		if err := finishBranch(finishing, b, false); err != nil {
			_, database, _ := e.sqlDBOf(finishing, b.k)
			errs = append(errs, &onError{name: database, err: err})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return e.doomAnchor(finishing, a, err)
	}
	return nil
}

// finishBranch commits or rolls back a prepared branch whose session was let
// go, trying again while its server has not yet seen that session end.
func finishBranch(ctx context.Context, b *branchPool, commit bool) error {
	for tries := 0; ; tries++ {
		err := b.branch.Finish(ctx, commit)
		if err == nil || !twophase.UnknownBranch(err) || tries == 50 || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond) // MySQL: its session has not ended yet on the server
	}
}

// doomAnchor makes sure none of the anchor's writes commits once the plugin
// cannot tell, or cannot undo, the ones a rollback to a savepoint undid: the
// decision is withdrawn in the transaction, so that an abort is decided at
// its end, every later anchored write in it fails, and on PostgreSQL the
// transaction itself can only roll back.
func (e *Engine) doomAnchor(ctx context.Context, a *anchor, cause error) error {
	err := fmt.Errorf("%w: rolling back to a savepoint: %w; no sharded row this transaction creates will commit", ErrNotAtomic, cause)
	w := &e.anchored
	w.mu.Lock()
	a.failed = err
	w.mu.Unlock()
	finishing, cancel := ending(ctx)
	defer cancel()
	errs := []error{err, e.decisions().Withdraw(finishing, a.tx, a.gid)}
	if e.db.Dialector.Name() == "postgres" { // its driver drops a savepoint's error: the commit reports this one
		_, abort := a.tx.ExecContext(finishing, "DO $$ BEGIN RAISE EXCEPTION 'shardid: a rollback to a savepoint could not be followed on the shards: this transaction can only roll back'; END $$")
		errs = append(errs, abort)
	}
	e.config.Log.Error("shardid: a transaction on the plugin's database can no longer commit its sharded rows", "gid", a.gid, "error", err)
	return errors.Join(errs...)
}
