package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Executing a plan. The callbacks plan a statement (shardrouter) and then run
// it: on one database by binding it there (route.go's bind), or in parts.
// A query's parts run at once, through runQueryParts (querypart.go); a
// write's parts, a split Create's or a fan-out update's or delete's, run
// through runParts: the one place where the parts of a write over several
// databases write and commit, and where committing them together (two-phase
// commit) belongs.
//
// A write's parts run as one statement. Each part is a statement of its own
// on its database, in GORM's transaction there, run on a goroutine of its
// own, one part at a time, in turns; each stops at two gates among its
// callbacks: planned, once its hooks ran and its keys were checked, before it
// writes; written, once it wrote, before its After hooks; after hooks, once
// they ran, before its transaction commits. No part writes before every part
// is planned, no After hook runs before every part has written, and none
// commits before every part's After hooks ran: a part that fails before that
// makes every part roll back, so a refused plan writes nothing anywhere, and
// a failed write runs no After hook.

// gate is where a part of a write stops for its turn.
type gate uint8

const (
	partEnded      gate = iota // not a gate: the part's statement returned
	gatePlanned                // its hooks ran and its keys were checked; it has not written
	gateWritten                // it wrote; its After hooks have not run
	gateAfterHooks             // its After hooks ran; its transaction has not committed
)

// errPartRolledBack is what a part that was fine reports when another part
// of its statement failed, and it rolled back.
var errPartRolledBack = errors.New("shardid: another part of the statement failed; this one rolled back")

// writePart is a part of a write over several databases, made before any
// part runs.
type writePart struct {
	k  int
	db *gorm.DB // its statement, to run by its processor
	// start, if set, is called when the part's turn to start comes, after
	// the parts before it are planned; it returns false when the part has
	// nothing to do.
	start func(part *gorm.DB) bool
	// guarded: the write has no condition of the caller's, and no
	// AllowGlobalUpdate; plugins is how many conditions the part holds that
	// are the plugin's. With no more at its gate (no hook or callback added
	// one), the part is refused as GORM refuses an update or delete without
	// conditions.
	guarded bool
	plugins int
}

// turn is a part's place in the run: the statement whose gates stop it (not
// its sub-statements'), and the coordinator's answer at a gate.
type turn struct {
	index  int
	stmt   *gorm.Statement
	stops  chan<- partStop
	resume chan bool // go on (true) or roll back (false)
	// hooked are the part's conditions once its Before hooks ran, before
	// GORM's build added its rows' keys (set by the gate), and set an
	// update's SET (set by its build).
	hooked []clause.Expression
	set    clause.Set
	// guarded and plugins are the part's writePart's.
	guarded bool
	plugins int
}

// partStop is a part stopped at a gate, or ended, with its error.
type partStop struct {
	index int
	at    gate
	err   error
	pan   any // a panic of the part's goroutine, raised again in the caller's
}

// turnKey is the context key of a part's turn.
type turnKey struct{}

// turnContext carries a part's turn to its callbacks.
type turnContext struct {
	context.Context
	turn *turn
}

func (c *turnContext) Value(key any) any {
	if key == (turnKey{}) {
		return c.turn
	}
	return c.Context.Value(key)
}

// atGate is the callback at gate g: a part's own statement stops there for
// its turn, and rolls back when told to.
func (e *Engine) atGate(g gate) func(*gorm.DB) {
	return func(db *gorm.DB) {
		t, ok := db.Statement.Context.Value(turnKey{}).(*turn)
		if !ok || t.stmt != db.Statement {
			return
		}
		t.stops <- partStop{index: t.index, at: g, err: db.Error}
		if !<-t.resume && db.Error == nil {
			db.AddError(errPartRolledBack)
		}
	}
}

// writeBeforeCommit is a write's gate after its hooks, which also notes a
// failure before GORM's commit: that rolls the rows back, the IDs its
// Creates made with them, where a commit that fails may have written them
// (the IDs are kept for a retry to find).
func (e *Engine) writeBeforeCommit() func(*gorm.DB) {
	gate := e.atGate(gateAfterHooks)
	return func(db *gorm.DB) {
		gate(db)
		forgetStaleBegin(db)
		if db.Error != nil && db.Error != errRouted {
			if state := routeStateOf(db.Statement); state != nil {
				state.failedBeforeCommit = true
			}
		}
	}
}

// forgetStaleBegin drops GORM's note that it began the statement's
// transaction when the statement holds none: GORM keeps the note in the
// statement's settings, and a *gorm.DB used again for a write that the
// plugin ran part by part, or refused, before GORM's begin would have GORM
// end a transaction that is not there ("invalid transaction").
func forgetStaleBegin(db *gorm.DB) {
	if _, inOne := db.Statement.ConnPool.(gorm.TxCommitter); inOne {
		return
	}
	db.Statement.Settings.Delete(fmt.Sprintf("%p", db.Statement) + "gorm:started_transaction")
}

// runParts runs the parts of a write over several databases as one
// statement (see above), and makes the statement's outcome theirs: the rows
// they affected, and the errors of the parts that failed, each naming its
// database. agree, if set, is asked once every part is planned, with each
// part's turn, which holds its conditions after its hooks and its SET (nil
// for a part not started); its error refuses the statement, every part
// rolled back. It returns whether the statement failed with every part
// rolled back by it, so that nothing it ran stays written.
func (e *Engine) runParts(db *gorm.DB, kind statementKind, parts []writePart, agree func([]*turn) error) (undone bool) {
	processor := db.Callback().Create()
	switch kind {
	case kindUpdate:
		processor = db.Callback().Update()
	case kindDelete:
		processor = db.Callback().Delete()
	}
	g, own, err := e.partsTransaction(db, parts)
	if err == nil && g != nil && !own {
		// In an application's transaction: its commit waits for this write,
		// or this write, begun after the commit, is refused whole.
		if err = g.startWrite(); err == nil {
			defer g.endWrite()
		}
	}
	if err != nil {
		db.AddError(err) // nothing ran
		return true
	}
	var txs []*sql.Tx
	if g == nil {
		if txs, err = e.partTransactions(db, parts); err != nil {
			db.AddError(err) // nothing ran
			return true
		}
	}
	e.countFanOut(db, kind, len(parts))
	stops := make(chan partStop)
	turns := make([]*turn, len(parts))
	stopped := make([]partStop, len(parts))
	failed := false
	var pan any
	wait := func(i int) { // for part i's next stop
		s := <-stops
		stopped[i] = s
		failed = failed || s.err != nil
		if s.pan != nil && pan == nil {
			pan = s.pan
		}
	}
	// Planned: each part starts in turn and runs to its first gate.
	for i, p := range parts {
		if failed {
			break // the parts not started have nothing to undo
		}
		if p.start != nil && !p.start(p.db) {
			continue
		}
		if g != nil {
			branch, err := g.branch(db.Statement.Context, p.k)
			if k, down := loadSetting(p.db.Statement, unavailableKey{}); err != nil && down && k == p.k {
				e.countPart(p.k, kind, time.Now(), err) // its database could not be opened: failed there
			}
			if err != nil {
				stopped[i], failed = partStop{index: i, at: partEnded, err: err}, true
				turns[i] = &turn{index: i} // ended before it ran: its error is the statement's
				break
			}
			p.db.Statement.ConnPool = branch
		}
		t := &turn{index: i, stmt: p.db.Statement, stops: stops, resume: make(chan bool), guarded: p.guarded, plugins: p.plugins}
		turns[i] = t
		callerCtx := db.Statement.Context
		go func() {
			s := partStop{index: i, at: partEnded}
			defer func() {
				if r := recover(); r != nil {
					s.pan, s.err = r, errPartRolledBack
				}
				stops <- s
			}()
			e.traced(callerCtx, p.k, operations[kind], db.Statement.Table, func(ctx context.Context) (string, error) {
				p.db.Statement.Context = &turnContext{Context: ctx, turn: t}
				processor.Execute(p.db)
				p.db.Statement.Context = ctx
				return ranSQL(p.db.Statement), p.db.Error
			})
			s.err = p.db.Error
		}()
		wait(i)
	}
	var refused error
	if !failed && agree != nil {
		refused = agree(turns)
		failed = refused != nil
	}
	// Written, its After hooks run, then committed: each part planned goes
	// on in turn to its next gate, and then its end, or rolls back.
	sentToCommit := make([]bool, len(parts)) // past its last gate, on to GORM's commit
	var written []int64                      // each part's count, once every part wrote
	for at := range gateAfterHooks {
		if gate(at)+1 == gateWritten && !failed {
			written = shareAffected(parts, turns, stopped)
		}
		for i, t := range turns {
			if t == nil || stopped[i].at == partEnded {
				continue
			}
			t.resume <- !failed
			sentToCommit[i] = at == gateAfterHooks-1 && !failed
			wait(i)
		}
	}
	// Rolled back next, none committed; parts in GORM's own transactions
	// committed as they ended, or may have where their commit failed.
	committed := false
	for i, t := range turns {
		committed = committed || t != nil && stopped[i].at == partEnded && (stopped[i].err == nil || sentToCommit[i])
	}
	undone = failed && (own || txs != nil || g == nil && !committed)
	if g != nil {
		failed = e.endParts(db, g, own, failed, &refused)
	}
	if txs != nil {
		failed = e.endPartTransactions(parts, txs, failed, &refused)
	}
	if pan != nil {
		panic(pan)
	}
	var errs []error
	wrote := refused == nil // as one statement: it wrote unless a part's own write failed (an After hook failed after it)
	for i, p := range parts {
		if turns[i] == nil {
			continue
		}
		if err := stopped[i].err; err != nil && !errors.Is(err, errPartRolledBack) {
			errs = append(errs, e.partError(p.k, err))
			wrote = wrote && partAffected(parts, written, i) > 0
		}
	}
	var affected int64 // set, not added to: a *gorm.DB used again keeps its last count
	for i := range parts {
		if turns[i] != nil && wrote {
			affected += partAffected(parts, written, i)
		}
	}
	db.RowsAffected = affected
	db.Error = errors.Join(append(errs, refused)...)
	if db.Error == nil {
		db.Error = errRouted
	}
	return undone
}

// shareAffected gives every part written the rows the parts affected
// together, which their After hooks see (tx.Statement.RowsAffected) as
// GORM's hooks see the whole statement's, and returns each part's own.
func shareAffected(parts []writePart, turns []*turn, stopped []partStop) []int64 {
	own := make([]int64, len(parts))
	var all int64
	for i, p := range parts {
		if turns[i] != nil {
			own[i] = p.db.RowsAffected
			all += own[i]
		}
	}
	for i, p := range parts {
		if turns[i] != nil && stopped[i].at == gateWritten {
			p.db.RowsAffected = all
		}
	}
	return own
}

// partAffected is the rows part i affected on its database: its count when
// every part wrote (written), else its statement's.
func partAffected(parts []writePart, written []int64, i int) int64 {
	if written != nil {
		return written[i]
	}
	return parts[i].db.RowsAffected
}

// ranSQL is the SQL a statement ran, as its clock kept it for tracers.
func ranSQL(stmt *gorm.Statement) string {
	if v, ok := loadSetting(stmt, routeKey{stmt}); ok {
		return v.(*statementClock).sql
	}
	return ""
}

// partTransactions begins a transaction for each part on its database when
// none would hold it: GORM begins none with SkipDefaultTransaction, and a
// part that fails must roll back the parts that wrote before it.
func (e *Engine) partTransactions(db *gorm.DB, parts []writePart) ([]*sql.Tx, error) {
	if !db.SkipDefaultTransaction || inTransaction(db.Statement.ConnPool) {
		return nil, nil
	}
	ctx := db.Statement.Context
	txs := make([]*sql.Tx, len(parts))
	for i, p := range parts {
		sqlDB, _, err := e.sqlDBOf(ctx, p.k)
		if err == nil {
			txs[i], err = sqlDB.BeginTx(ctx, nil)
		}
		if err != nil {
			for _, tx := range txs[:i] {
				_ = tx.Rollback()
			}
			return nil, e.partError(p.k, err)
		}
		p.db.Statement.ConnPool = txs[i]
	}
	return txs, nil
}

// endPartTransactions commits the parts' own transactions, one after
// another, or rolls them all back when a part failed. It returns whether
// the statement failed, with a commit's error in refused.
func (e *Engine) endPartTransactions(parts []writePart, txs []*sql.Tx, failed bool, refused *error) bool {
	for i, tx := range txs {
		if failed {
			_ = tx.Rollback()
			continue
		}
		if err := tx.Commit(); err != nil {
			*refused = errors.Join(*refused, e.partError(parts[i].k, err))
			failed = true // the parts after it roll back; those before stay committed (BestEffort)
		}
	}
	return failed
}
