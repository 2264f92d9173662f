package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/sqlerr"
	"github.com/shardid/shardid/internal/twophase"
)

// Atomicity is shardid.Atomicity: what a write over several databases
// promises.
type Atomicity uint8

const (
	// TwoPhase commits a write over several databases with the servers'
	// two-phase commit, and refuses it where they have none.
	TwoPhase Atomicity = iota
	// BestEffort writes each database's part in a transaction of its own.
	BestEffort
)

// decisionsTable is where coordinators record their commits (the plugin's
// own database).
const decisionsTable = "shardid_transactions"

// ownDatabase is the key of the plugin's own database among a global
// transaction's branches.
const ownDatabase = -1

// ownDatabaseName is how errors and logs name the plugin's own database.
const ownDatabaseName = "the plugin's database"

// globalTx is one write over several databases, or an application's
// transaction across shards: a branch on each database it touches, opened
// on first use, committed together.
type globalTx struct {
	e         *Engine
	gid       string
	implicit  bool            // a statement's own, not an application's transaction across shards
	ctx       context.Context // an application's transaction's, from its Begin
	anchor    *anchor         // a transaction on the plugin's database whose commit is this one's
	branchTag string          // after the database in a branch's name: the statement's, among an anchor's
	options   twophase.Options
	ended     atomic.Bool // committed, rolled back, or (anchored) prepared
	// decided says its commit was recorded: its branches are the
	// decision's, and no rollback (the application's after Commit, or a
	// second Commit) may touch one whose commit was left to recovery.
	decided atomic.Bool
	// claimed says what ends the transaction: the application's first
	// Commit or Rollback (from any goroutine) alone, as with database/sql,
	// or the end of the context it began with.
	claimed atomic.Uint32
	// The end of an application's transaction's context rolls it back:
	// stopCtxWatch stops that, ctxEnd is closed once it has, with ctxErr.
	stopCtxWatch func() bool
	ctxEnd       chan struct{}
	ctxErr       error

	mu sync.Mutex // guards the fields below: parts open branches at once
	// branches by database, ownDatabase for the plugin's own.
	branches   map[int]*branchPool
	order      []int    // the branches in the order they were opened
	failed     error    // a branch rolled back: the transaction cannot commit
	savepoints []string // open, in the order they were set
	setAs      []uint64 // each open savepoint's number, in the order they were set
	setCount   uint64
	// partsFailed dooms an application's transaction in which a statement
	// over several databases failed, unless a rollback to a savepoint set
	// before it (number partsFailedIn or lower) undoes its parts.
	partsFailed   error
	partsFailedIn uint64
	ending        bool // its commit or rollback has taken the branches: no new one opens
	// writing counts the writes over several databases under way in it,
	// which its end waits for: each is in the commit, or dooms it, whole.
	writing      int
	savepointing bool      // the application's savepoint is being applied: no such write starts
	writesEnd    sync.Cond // on mu, signalled as the last of them ends, and as a savepoint is applied
}

// Who claimed a transaction's end (globalTx.claimed).
const (
	claimedByNone uint32 = iota
	claimedByApplication
	claimedByContext
)

// branchPool is a branch as a statement's connection pool: GORM begins no
// transaction in it (it has no BeginTx) and sees one (it has Commit and
// Rollback), which only its global transaction ends.
type branchPool struct {
	branch *twophase.Branch
	g      *globalTx
	k      int
}

func (b *branchPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	// A savepoint a statement of the branch sets (a hook's nested
	// Transaction) is the transaction's: set on, and rolled back to on,
	// every branch, as the statements under it may write on any.
	if maybeSavepoint(query) {
		if kind, name, ok := savepointStatement(query); ok {
			return driver.RowsAffected(0), b.g.savepoint(ctx, kind, name, query)
		}
	}
	return b.branch.ExecContext(ctx, query, args...)
}

func (b *branchPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return b.branch.QueryContext(ctx, query, args...)
}

func (b *branchPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return b.branch.QueryRowContext(ctx, query, args...)
}

func (b *branchPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return b.branch.PrepareContext(ctx, query)
}

// errBranchCommit is what a commit of one branch alone says.
var errBranchCommit = errors.New("shardid: a branch of a transaction over several databases commits with the whole transaction, not alone")

func (b *branchPool) Commit() error { return errBranchCommit }

// Rollback dooms the whole transaction: one branch cannot go back alone.
func (b *branchPool) Rollback() error {
	b.g.fail(errors.New("shardid: a branch was rolled back"))
	return nil
}

// gidSeq numbers this process's global transactions.
var gidSeq atomic.Uint64

// newGlobalTx starts a global transaction; branches open as they are used.
func (e *Engine) newGlobalTx() *globalTx {
	gid := twophase.GID{Cluster: e.cluster, Process: e.processToken(), Started: time.Now(), Seq: gidSeq.Add(1)}
	g := &globalTx{e: e, gid: gid.String(), branches: map[int]*branchPool{}}
	g.writesEnd.L = &g.mu
	return g
}

// processToken names this process in global transaction IDs: the random
// part of its name in the processes table, by which recovery tells whether
// it still runs.
func (e *Engine) processToken() string {
	if e.maps != nil {
		return e.maps.Token()
	}
	return "local"
}

// atomicityOf says whether a write over the databases ks commits with two
// phases (true), runs best effort (false), or is refused.
func (e *Engine) atomicityOf(ctx context.Context, ks []int) (bool, error) {
	if e.config.Atomic == BestEffort {
		return false, nil
	}
	dialect := e.db.Dialector.Name()
	if !twophase.Supported(dialect) {
		return false, fmt.Errorf("%w: %s has no two-phase commit; set Config.Atomic to shardid.BestEffort to write each database's part in a transaction of its own", ErrNotAtomic, dialect)
	}
	for _, k := range ks {
		if err := e.checkTwoPhase(ctx, k); err != nil {
			return false, err
		}
	}
	return true, nil
}

// branch returns the branch on database k (ownDatabase: the plugin's own),
// opening it on first use.
func (g *globalTx) branch(ctx context.Context, k int) (*branchPool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.failure(); err != nil {
		return nil, err
	}
	if b, ok := g.branches[k]; ok {
		return b, nil
	}
	if g.ending { // a statement racing the commit: part of it, or refused as by a database's transaction
		return nil, sql.ErrTxDone
	}
	if err := g.e.checkTwoPhase(ctx, k); err != nil {
		return nil, err // PostgreSQL without prepared transactions: refused before anything is written there
	}
	sqlDB, name, err := g.e.sqlDBOf(ctx, k)
	if err != nil {
		return nil, err
	}
	b, err := twophase.BeginWith(ctx, sqlDB, g.e.db.Dialector.Name(), twophase.XID{GID: g.gid, Branch: branchName(k) + g.branchTag}, g.options)
	if err != nil {
		return nil, &onError{name: name, err: err}
	}
	pool := &branchPool{branch: b, g: g, k: k}
	if err := g.setSavepoints(ctx, pool); err != nil {
		_ = b.Rollback(ctx)
		return nil, &onError{name: name, err: err}
	}
	g.branches[k] = pool
	g.order = append(g.order, k)
	return pool, nil
}

// branchName names the branch of database k in its XID.
func branchName(k int) string {
	if k == ownDatabase {
		return "own"
	}
	return strconv.Itoa(k)
}

// fail dooms the transaction.
func (g *globalTx) fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failed == nil {
		g.failed = err
	}
}

// failParts dooms the transaction for a statement over several databases
// that failed in it, under the savepoints open now.
func (g *globalTx) failParts() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.partsFailed == nil {
		g.partsFailed = errAcrossFailed
		if n := len(g.setAs); n > 0 {
			g.partsFailedIn = g.setAs[n-1]
		}
	}
}

// failure is why the transaction can only roll back, or nil; g.mu held.
func (g *globalTx) failure() error {
	if g.failed != nil {
		return g.failed
	}
	return g.partsFailed
}

// sqlDBOf returns database k's *sql.DB and name.
func (e *Engine) sqlDBOf(ctx context.Context, k int) (*sql.DB, string, error) {
	if k == ownDatabase {
		sqlDB, err := e.db.DB()
		return sqlDB, ownDatabaseName, err
	}
	opened, err := e.opened(ctx, k)
	if err != nil {
		return nil, e.physical[k].name, err
	}
	sqlDB, err := opened.database()
	return sqlDB, e.physical[k].name, err
}

// commit runs the two phases: every branch prepared, the decision recorded,
// every branch committed. A branch that fails to prepare rolls every branch
// back; a decision that cannot be recorded or read leaves the prepared
// branches to recovery (ErrInDoubt); a branch that fails to commit after
// the decision is committed by recovery, and the transaction has committed.
func (g *globalTx) commit(ctx context.Context) error {
	defer g.fail(sql.ErrTxDone) // a statement after the end fails, as after a database's transaction
	defer g.ended.Store(true)
	branches := g.endBranches() // after the writes over several databases under way, whose failure dooms it
	if failed := g.doomed(); failed != nil {
		return errors.Join(failed, g.rollback(ctx))
	}
	if len(branches) == 0 {
		return nil
	}
	counts := &g.e.txCounts
	if len(branches) == 1 {
		err := branches[0].branch.Commit(ctx)
		switch {
		case err == nil:
			g.e.countEnded(&counts.committed, 1, 0)
		case answerLost(err):
			g.e.countEnded(&counts.inDoubt, 1, 0)
			return fmt.Errorf("%w: %s: the answer to its commit was lost, and it may have committed: a transaction on one database commits in one phase, which leaves nothing for recovery; read its rows to know: %w",
				ErrInDoubt, g.gid, g.named(branches[0], err))
		default:
			g.e.countEnded(&counts.rolledBack, 1, 0) // its database rolled it back
		}
		return g.named(branches[0], err)
	}
	// Once decided, its branches commit on the pools, which Close keeps open
	// until they have.
	g.e.committing.RLock()
	defer g.e.committing.RUnlock()
	if g.e.closed.Load() { // Close has begun, and closes the pools a decided commit needs: nothing prepared yet
		return errors.Join(fmt.Errorf("%w: %s: the plugin is closed", ErrShardUnavailable, g.gid), g.rollback(ctx))
	}
	log := g.e.config.Log
	log.Debug("shardid: two-phase: preparing", "gid", g.gid, "branches", len(branches))
	prepared := time.Now()
	if err := g.each(branches, func(b *branchPool) error {
		err := b.branch.Prepare(ctx)
		if err == nil {
			log.Debug("shardid: two-phase: branch prepared", "gid", g.gid, "branch", branchName(b.k))
		}
		return err
	}); err != nil {
		return errors.Join(err, g.rollback(ctx))
	}
	log.Debug("shardid: two-phase: every branch prepared", "gid", g.gid)
	// Not the statement's context, whose end would leave every branch
	// prepared, holding its locks; a bound, as a pool with no connection
	// left must not hold them for good either.
	deciding, cancel := context.WithTimeout(context.WithoutCancel(ctx), decideWithin)
	outcome, err := g.e.decisions().Commit(deciding, g.gid, g.databases(branches))
	cancel()
	switch {
	case err != nil:
		for _, b := range branches {
			b.branch.Abandon()
		}
		g.e.countEnded(&counts.inDoubt, len(branches), time.Since(prepared))
		return fmt.Errorf("%w: %s: its decision could not be recorded (%w); RecoverTransactions commits or rolls it back", ErrInDoubt, g.gid, err)
	case outcome != twophase.Committed:
		return errors.Join(fmt.Errorf("shardid: %s was rolled back by recovery before it could commit", g.gid), g.rollback(ctx))
	}
	g.decided.Store(true)
	log.Debug("shardid: two-phase: decided", "gid", g.gid, "outcome", string(outcome))
	finishing, cancel := ending(ctx)
	defer cancel()
	err = g.each(branches, func(b *branchPool) error {
		err := b.branch.Commit(finishing)
		if err == nil {
			log.Debug("shardid: two-phase: branch committed", "gid", g.gid, "branch", branchName(b.k))
		}
		return err
	})
	g.e.countEnded(&counts.committed, len(branches), time.Since(prepared))
	if err != nil {
		log.Warn("shardid: a branch of a committed transaction is left for recovery", "gid", g.gid, "error", err)
		return nil
	}
	g.e.forgetDecision(g.gid)
	return nil
}

// databases names the databases of branches, for the decision.
func (g *globalTx) databases(branches []*branchPool) []string {
	names := make([]string, len(branches))
	for i, b := range branches {
		_, names[i], _ = g.e.sqlDBOf(context.Background(), b.k)
	}
	return names
}

// decideWithin bounds the writing of a decision; past it the branches are
// left prepared for recovery (ErrInDoubt).
const decideWithin = 30 * time.Second

// doomed returns why the transaction can only roll back, if it can.
func (g *globalTx) doomed() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failure()
}

// rollback rolls every branch back, even past the end of ctx.
func (g *globalTx) rollback(ctx context.Context) error {
	defer g.fail(sql.ErrTxDone)
	if g.decided.Load() {
		return sql.ErrTxDone // committed: a branch left to recovery is the decision's to commit
	}
	already := g.ended.Swap(true) // GORM rolls back a transaction whose commit failed: counted once
	branches := g.endBranches()
	if len(branches) == 0 {
		return nil
	}
	if !already {
		g.e.countEnded(&g.e.txCounts.rolledBack, len(branches), 0)
	}
	finishing, cancel := ending(ctx)
	defer cancel()
	return g.each(branches, func(b *branchPool) error { return b.branch.Rollback(finishing) })
}

// endWithin bounds the ending of branches once it has begun.
const endWithin = 30 * time.Second

// ending is the context a decided commit, or a rollback, of branches runs
// under: the statement's end does not cancel it, so that a commit half done
// finishes, and a branch that prepared does not hold its locks until
// recovery.
func ending(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), endWithin)
}

// endBranches returns the branches for the transaction's commit or
// rollback, after which no new branch opens, once the writes over several
// databases and the savepoint under way have ended.
func (g *globalTx) endBranches() []*branchPool {
	g.mu.Lock()
	g.ending = true
	for g.writing > 0 || g.savepointing { // each is in it whole
		g.writesEnd.Wait()
	}
	g.mu.Unlock()
	return g.list()
}

// startWrite counts a write over several databases in the transaction, or
// refuses it once the transaction's end has begun, before any part runs.
func (g *globalTx) startWrite() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.savepointing {
		g.writesEnd.Wait()
	}
	if g.ending {
		return sql.ErrTxDone
	}
	g.writing++
	return nil
}

// holdWrites waits for the writes over several databases under way to end
// and holds off new ones until releaseWrites, for a savepoint the
// application sets or rolls back to: else it could land between a write's
// parts, and undo the write on some databases only. A hook's savepoint,
// which may run inside such a write, does not wait.
func (g *globalTx) holdWrites() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.writing > 0 || g.savepointing {
		g.writesEnd.Wait()
	}
	if g.ending { // after the commit's or rollback's start: refused whole, as a write is
		return sql.ErrTxDone
	}
	g.savepointing = true
	return nil
}

// releaseWrites ends what holdWrites held.
func (g *globalTx) releaseWrites() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.savepointing = false
	g.writesEnd.Broadcast()
}

// endWrite ends what startWrite counted.
func (g *globalTx) endWrite() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.writing--; g.writing == 0 {
		g.writesEnd.Broadcast()
	}
}

func (g *globalTx) list() []*branchPool {
	g.mu.Lock()
	defer g.mu.Unlock()
	list := make([]*branchPool, len(g.order))
	for i, k := range g.order {
		list[i] = g.branches[k]
	}
	return list
}

// each runs step on every branch at once, and joins their errors, each
// naming its database.
func (g *globalTx) each(branches []*branchPool, step func(*branchPool) error) error {
	if len(branches) == 0 {
		return nil
	}
	errs := make([]error, len(branches))
	var wg sync.WaitGroup
	for i, b := range branches[1:] {
		wg.Go(func() { errs[i+1] = g.named(b, step(b)) })
	}
	errs[0] = g.named(branches[0], step(branches[0]))
	wg.Wait()
	return errors.Join(errs...)
}

// named names the database of b in err.
func (g *globalTx) named(b *branchPool, err error) error {
	if err == nil {
		return nil
	}
	_, name, _ := g.e.sqlDBOf(context.Background(), b.k)
	return &onError{name: name, err: err}
}

// answerLost reports whether a commit's error leaves its outcome unknown:
// the connection was lost, or the caller's context ended, once it was sent.
func answerLost(err error) bool {
	return (sqlerr.Unreachable(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) && !sqlerr.Unsent(err)
}

// decisions is the table of the plugin's commit decisions.
func (e *Engine) decisions() twophase.Decisions {
	sqlDB, _ := e.db.DB()
	if e.maps != nil && !e.closed.Load() {
		// The plugin's own pool: a branch on the plugin's database may hold the last connection of the application's.
		sqlDB = e.maps.DB()
	}
	return twophase.Decisions{DB: sqlDB, Dialect: e.db.Dialector.Name(), Table: decisionsTable}
}

// forgetDecision deletes a decision all of whose branches committed, off
// the statement's path.
func (e *Engine) forgetDecision(gid string) {
	e.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.decisions().Forget(ctx, gid) // recovery forgets what this misses
	})
}

// checkTwoPhase checks once that physical database k can prepare
// transactions: PostgreSQL refuses them unless max_prepared_transactions
// is above 0.
func (e *Engine) checkTwoPhase(ctx context.Context, k int) error {
	if err, checked := e.twoPhase.Load(k); checked {
		return asError(err)
	}
	sqlDB, name, err := e.sqlDBOf(ctx, k)
	if err != nil {
		return err // not remembered: it may answer later
	}
	err = twoPhaseUsable(ctx, sqlDB, e.db.Dialector.Name(), name)
	if err != nil && !errors.Is(err, ErrNotAtomic) {
		return &onError{name: name, err: err}
	}
	e.twoPhase.Store(k, err)
	return err
}

func asError(v any) error {
	err, _ := v.(error)
	return err
}

// twoPhaseUsable reads whether a database of dialect can prepare
// transactions.
func twoPhaseUsable(ctx context.Context, db *sql.DB, dialect, name string) error {
	if dialect == "mysql" {
		var version string
		if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
			return err
		}
		if !keepsPreparedXA(version) {
			return fmt.Errorf("%w: %s is %s, which rolls a prepared XA branch back when its connection ends: MariaDB 10.5.2 or MySQL 5.7.7 and later keep it; or set Config.Atomic to shardid.BestEffort", ErrNotAtomic, name, version)
		}
		return nil
	}
	if dialect != "postgres" {
		return nil
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT current_setting('max_prepared_transactions')::int").Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: %s has max_prepared_transactions = 0, so a write there cannot commit atomically with another database's (a write over several databases, a Create in a transaction on the plugin's database, a transaction across shards): set it above 0 (as many as such writes at once; it needs a restart), or set Config.Atomic to shardid.BestEffort", ErrNotAtomic, name)
	}
	return nil
}

// partsTransaction returns the global transaction the parts of a write run
// in, with own set when it is the statement's own (it commits with the
// statement): the application's transaction across shards, or a new one
// where two phases are used; nil for best effort.
func (e *Engine) partsTransaction(db *gorm.DB, parts []writePart) (*globalTx, bool, error) {
	if g := globalOf(db.Statement.ConnPool); g != nil {
		return g, false, nil
	}
	ks := make([]int, len(parts))
	for i, p := range parts {
		ks[i] = p.k
	}
	twoPhase, err := e.atomicityOf(db.Statement.Context, ks)
	if err != nil || !twoPhase {
		return nil, false, err
	}
	g := e.newGlobalTx()
	g.implicit = true
	return g, true, nil
}

// endParts ends the parts' branches: the statement's own transaction
// commits if no part failed, and rolls back otherwise; an application's is
// doomed by a failed statement, whose other parts wrote. It returns
// whether the statement failed, with the commit's error in refused.
func (e *Engine) endParts(db *gorm.DB, g *globalTx, own, failed bool, refused *error) bool {
	ctx := db.Statement.Context
	switch {
	case !own:
		if failed {
			g.failParts()
		}
		return failed
	case failed:
		*refused = errors.Join(*refused, g.rollback(ctx))
		return true
	}
	if err := g.commit(ctx); err != nil {
		*refused = errors.Join(*refused, err)
		return true
	}
	return false
}

// globalOf returns the global transaction a connection pool is a branch
// of, or is.
func globalOf(pool gorm.ConnPool) *globalTx {
	switch p := pool.(type) {
	case *branchPool:
		return p.g
	case *globalTx:
		return p
	}
	return nil
}

// keepsPreparedXA says whether a MySQL or MariaDB server of version keeps a
// prepared XA branch when the connection that prepared it ends, as recovery
// needs: MariaDB from 10.5.2, MySQL from 5.7.7.
func keepsPreparedXA(version string) bool {
	var major, minor, patch int
	if _, err := fmt.Sscanf(version, "%d.%d.%d", &major, &minor, &patch); err != nil {
		return false
	}
	at := [3]int{major, minor, patch}
	least := [3]int{5, 7, 7}
	if strings.Contains(version, "MariaDB") {
		least = [3]int{10, 5, 2}
	}
	return slices.Compare(at[:], least[:]) >= 0
}
