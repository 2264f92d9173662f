package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// A transaction across shards: db.Clauses(shardid.AcrossShards()).Transaction
// begins a global transaction instead of a database's. Its statements route
// on their own and run in a branch of their database, opened on first use;
// unsharded models in one on the plugin's own database. Commit runs the two
// phases; Rollback, or a statement over several databases that failed after
// some of its parts wrote, rolls every branch back.

// acrossBeginner is the connection pool of a statement given AcrossShards:
// GORM's Begin begins a global transaction on it. A statement run on it
// without a transaction runs as it would without the clause.
type acrossBeginner struct {
	e    *Engine
	pool gorm.ConnPool // what the statement had
}

func (a *acrossBeginner) BeginTx(ctx context.Context, _ *sql.TxOptions) (gorm.ConnPool, error) {
	twoPhase, err := a.e.atomicityOf(ctx, nil)
	if err != nil {
		return nil, err
	}
	if !twoPhase {
		return nil, fmt.Errorf("%w: AcrossShards needs two-phase commit, and Config.Atomic is BestEffort", ErrNotAtomic)
	}
	g := a.e.newGlobalTx()
	g.ctx = ctx
	if ctx.Done() != nil {
		g.ctxEnd = make(chan struct{})
		g.stopCtxWatch = context.AfterFunc(ctx, g.rollbackAtContextEnd)
	}
	return g, nil
}

// rollbackAtContextEnd rolls the transaction back once the context it
// began with is done, as database/sql does: its branches let go of their
// rows and connections then, not when the application at last ends it. A
// statement in it after that fails with the context's error, as one on a
// branch does, whether or not it has a branch on its database yet.
func (g *globalTx) rollbackAtContextEnd() {
	if !g.claimed.CompareAndSwap(claimedByNone, claimedByContext) {
		return // Commit or Rollback came first: theirs is the end
	}
	g.fail(fmt.Errorf("%w: its context ended, which rolled it back: %w", sql.ErrTxDone, g.ctx.Err()))
	g.ctxErr = errors.Join(g.ctx.Err(), g.rollback(g.context()))
	close(g.ctxEnd)
}

// claim makes the application's Commit or Rollback the one that ends the
// transaction, if nothing has.
func (g *globalTx) claim() bool {
	if !g.claimed.CompareAndSwap(claimedByNone, claimedByApplication) {
		return false
	}
	if g.stopCtxWatch != nil {
		g.stopCtxWatch()
	}
	return true
}

// lostClaim is what a Commit or Rollback called after the transaction's end
// returns: a Commit after its context's end rolled it back, that end's
// error (once the rollback is over), as database/sql's does.
func (g *globalTx) lostClaim(commit bool) error {
	if commit && g.claimed.Load() == claimedByContext {
		<-g.ctxEnd
		return g.ctxErr
	}
	return sql.ErrTxDone
}

func (a *acrossBeginner) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return a.pool.ExecContext(ctx, query, args...)
}

func (a *acrossBeginner) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return a.pool.QueryContext(ctx, query, args...)
}

func (a *acrossBeginner) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return a.pool.QueryRowContext(ctx, query, args...)
}

func (a *acrossBeginner) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return a.pool.PrepareContext(ctx, query)
}

// GetDBConn gives GORM's DB(), and so Connection, the database the
// statement had: outside Begin and Transaction the clause does nothing.
func (a *acrossBeginner) GetDBConn() (*sql.DB, error) {
	switch pool := a.pool.(type) {
	case *sql.DB:
		return pool, nil
	case gorm.GetDBConnector:
		return pool.GetDBConn()
	}
	return nil, gorm.ErrInvalidDB
}

// The global transaction as the connection pool of its transaction's
// statements: what the plugin does not route (raw SQL on no sharded
// table, savepoints) reaches it. SQL runs in the branch on the plugin's own
// database; savepoints are set in, and rolled back to on, every branch.

func (g *globalTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if kind, name, ok := savepointStatement(query); ok {
		// The application's own: before or after each write over several
		// databases under way (from another goroutine), never amid its
		// parts, and before the commit or rollback begun meanwhile, or refused.
		if err := g.holdWrites(); err != nil {
			return nil, err
		}
		defer g.releaseWrites()
		return driver.RowsAffected(0), g.savepoint(ctx, kind, name, query)
	}
	b, err := g.branch(ctx, ownDatabase)
	if err != nil {
		return nil, err
	}
	return b.ExecContext(ctx, query, args...)
}

func (g *globalTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	b, err := g.branch(ctx, ownDatabase)
	if err != nil {
		return nil, err
	}
	return b.QueryContext(ctx, query, args...)
}

func (g *globalTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	b, err := g.branch(ctx, ownDatabase)
	if err != nil {
		g.fail(err) // a Row carries no error of ours: the commit reports it
		failed, cancel := context.WithCancel(ctx)
		cancel()
		return g.e.db.ConnPool.QueryRowContext(failed, query, args...)
	}
	return b.QueryRowContext(ctx, query, args...)
}

func (g *globalTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	b, err := g.branch(ctx, ownDatabase)
	if err != nil {
		return nil, err
	}
	return b.PrepareContext(ctx, query)
}

// Commit commits every branch in two phases; once the context the
// transaction began with is done, it rolls them back instead, as
// database/sql's Commit does. Its deadline bounds the prepare (and a
// commit in one phase); a decided commit finishes past it.
func (g *globalTx) Commit() error {
	if !g.claim() {
		return g.lostClaim(true) // a Rollback, another Commit, or the context's end came first (from another goroutine too): it alone ends the branches
	}
	if g.ctx != nil && g.ctx.Err() != nil {
		return errors.Join(g.ctx.Err(), g.rollback(g.context()))
	}
	ctx := g.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return g.commit(ctx)
}

// Rollback rolls every branch back. Like database/sql's, once Commit or
// Rollback has been called (from any goroutine), it does nothing and
// returns sql.ErrTxDone.
func (g *globalTx) Rollback() error {
	if !g.claim() {
		return g.lostClaim(false)
	}
	return g.rollback(g.context())
}

// context is what the transaction's own steps run under: the context it
// began with, not cancelled with it (a commit half done must finish).
func (g *globalTx) context() context.Context {
	if g.ctx == nil {
		return context.Background()
	}
	return context.WithoutCancel(g.ctx)
}

// savepointStatement reads SQL that sets, rolls back to or releases a
// savepoint, as GORM's dialectors and the servers write it: ROLLBACK [WORK |
// TRANSACTION] TO [SAVEPOINT] name, RELEASE [SAVEPOINT] name.
func savepointStatement(query string) (kind, name string, ok bool) {
	raw := strings.Fields(strings.TrimSuffix(strings.TrimSpace(query), ";"))
	words := make([]string, len(raw))
	for i, w := range raw {
		words[i] = strings.ToUpper(w)
	}
	if len(words) == 2 && words[0] == "SAVEPOINT" {
		return "set", raw[1], true
	}
	if len(words) >= 2 && words[0] == "RELEASE" {
		words, raw = words[1:], raw[1:]
		kind = "release"
	} else if len(words) >= 3 && words[0] == "ROLLBACK" {
		words, raw = words[1:], raw[1:]
		if words[0] == "WORK" || words[0] == "TRANSACTION" {
			words, raw = words[1:], raw[1:]
		}
		if len(words) == 0 || words[0] != "TO" {
			return "", "", false
		}
		words, raw = words[1:], raw[1:]
		kind = "rollback"
	} else {
		return "", "", false
	}
	if len(words) == 2 && words[0] == "SAVEPOINT" {
		words, raw = words[1:], raw[1:]
	}
	if len(words) != 1 {
		return "", "", false
	}
	return kind, raw[0], true
}

// maybeSavepoint says, cheaply, whether query may be a savepoint statement
// (savepointStatement reads it whole).
func maybeSavepoint(query string) bool {
	query = strings.TrimLeft(query, " \t\r\n")
	for _, word := range [...]string{"SAVEPOINT", "ROLLBACK", "RELEASE"} {
		if len(query) >= len(word) && strings.EqualFold(query[:len(word)], word) {
			return true
		}
	}
	return false
}

// sameSavepoint says whether two savepoint names, as written, name the same
// savepoint: quotes dropped, case folded.
func sameSavepoint(a, b string) bool {
	unquote := func(s string) string { return strings.Trim(s, "\"`") }
	return strings.EqualFold(unquote(a), unquote(b))
}

// savepoint applies a savepoint statement to every open branch; a branch
// opened later sets the savepoints open at that time first, so that
// rolling back to one undoes that branch's statements too.
func (g *globalTx) savepoint(ctx context.Context, kind, name, query string) error {
	g.mu.Lock()
	undoesParts := false
	switch kind {
	case "set":
		g.setCount++
		g.savepoints, g.setAs = append(g.savepoints, name), append(g.setAs, g.setCount)
	case "rollback", "release":
		at := -1
		for i, sp := range g.savepoints {
			if sameSavepoint(sp, name) {
				at = i
			}
		}
		if at < 0 {
			g.mu.Unlock()
			return fmt.Errorf("shardid: no savepoint %s in the transaction across shards", name)
		}
		keep := at + 1 // ROLLBACK TO keeps the savepoint itself
		if kind == "release" {
			keep = at
		}
		undoesParts = kind == "rollback" && g.partsFailed != nil && g.partsFailedIn >= g.setAs[at]
		g.savepoints, g.setAs = g.savepoints[:keep], g.setAs[:keep]
	}
	g.mu.Unlock()
	err := g.each(g.list(), func(b *branchPool) error {
		_, err := b.branch.ExecContext(ctx, query)
		return err
	})
	if err != nil {
		g.fail(err) // the branches no longer agree on what was undone: only a rollback is right
	} else if undoesParts {
		g.mu.Lock()
		g.partsFailed, g.partsFailedIn = nil, 0 // the failed statement's parts are undone on every branch
		g.mu.Unlock()
	}
	return err
}

// setSavepoints sets the transaction's open savepoints on a new branch.
func (g *globalTx) setSavepoints(ctx context.Context, b *branchPool) error {
	for _, name := range g.savepoints {
		if _, err := b.branch.ExecContext(ctx, "SAVEPOINT "+name); err != nil {
			return err
		}
	}
	return nil
}

// errAcrossFailed dooms a transaction across shards whose statement over
// several databases failed: some of its parts may have written.
var errAcrossFailed = errors.New("shardid: a statement over several databases failed in the transaction across shards, and its parts on other databases may have written: the transaction can only roll back, or roll back to a savepoint set before the statement")
