package engine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/twophase"
)

// defaultInDoubtAfter is how long a prepared branch of a live coordinator
// is left to it before recovery rolls it back.
const defaultInDoubtAfter = time.Minute

// keepAborts is how long an abort recovery recorded stays: a coordinator
// paused longer than that could commit a transaction recovery rolled back.
const keepAborts = 24 * time.Hour

// recoveryLoop runs RecoverTransactions at db.Use and then periodically.
type recoveryLoop struct {
	running  sync.Mutex // one recovery at a time in a process
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// twoPhaseHere says whether writes over several databases may commit in
// two phases here, so that there is something to recover.
func (e *Engine) twoPhaseHere() bool {
	return e.routed() && e.config.Atomic == TwoPhase && twophase.Supported(e.db.Dialector.Name())
}

// startRecovery prepares the decisions table, warns when the plugin's
// database cannot prepare transactions, and starts the loop.
func (e *Engine) startRecovery(ctx context.Context) error {
	if !e.twoPhaseHere() {
		return nil
	}
	if err := e.decisions().Prepare(ctx); err != nil && !mapstore.AlreadyExists(err) {
		return err
	}
	cluster, err := e.decisions().Cluster(ctx)
	if err != nil {
		return err
	}
	e.cluster = cluster
	sqlDB, err := e.db.DB()
	if err != nil {
		return err
	}
	if err := twoPhaseUsable(ctx, sqlDB, e.db.Dialector.Name(), "the plugin's database"); err != nil {
		e.config.Log.Warn("shardid: writes over several databases will be refused", "error", err)
	}
	r := &e.recovery
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.done)
		every := e.inDoubtAfter() / 2
		for {
			ctx, cancel := context.WithTimeout(context.Background(), every)
			_ = e.RecoverTransactions(ctx) // logged per action; a database down is tried again next time
			cancel()
			select {
			case <-r.stop:
				return
			case <-time.After(every):
			}
		}
	}()
	return nil
}

// stopRecovery ends the loop.
func (e *Engine) stopRecovery() {
	r := &e.recovery
	r.stopOnce.Do(func() {
		if r.stop != nil {
			close(r.stop)
			<-r.done
		}
	})
}

func (e *Engine) inDoubtAfter() time.Duration {
	if e.config.InDoubtAfter > 0 {
		return e.config.InDoubtAfter
	}
	return defaultInDoubtAfter
}

// RecoverTransactions finishes the transactions over several databases that
// coordinators left prepared: a branch of a decided commit is committed;
// one of no decision, whose coordinator no longer runs or has had it for
// Config.InDoubtAfter, is rolled back once an abort is recorded. Every
// action is logged with its global transaction ID. A database it cannot
// reach is an error; the others are recovered anyway.
func (e *Engine) RecoverTransactions(ctx context.Context) error {
	if err := e.registered(); err != nil {
		return err
	}
	if !e.twoPhaseHere() {
		return nil
	}
	e.recovery.running.Lock()
	defer e.recovery.running.Unlock()
	r := twophase.Recovery{Decisions: e.decisions(), Cluster: e.cluster, Patience: e.inDoubtAfter(), KeepAborts: keepAborts}
	databases, errs := e.openForRecovery(ctx)
	for _, db := range databases {
		if db.DB != nil {
			r.Databases = append(r.Databases, db)
		}
	}
	if e.maps != nil {
		live, err := e.maps.LiveTokens(ctx)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		r.Live = func(process string) bool { return live[process] }
	}
	actions, err := r.Run(ctx)
	for _, a := range actions {
		if err := e.noteRecovered(a); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, err)...)
}

// noteRecovered logs what recovery did with a branch, and counts it among
// the branches recovery finished if it did: one whose commit or rollback
// failed is still prepared, tried again on the next pass, and counted then.
// It returns the action's error, naming the branch's database.
func (e *Engine) noteRecovered(a twophase.Action) error {
	if a.Outcome == twophase.Undecided {
		return nil
	}
	database := e.branchDatabase(a)
	e.config.Log.Info("shardid: recovered a branch of a transaction over several databases",
		"gid", a.GID, "database", database, "outcome", string(a.Outcome), "error", a.Err)
	if a.Err != nil {
		return &onError{name: database, err: a.Err}
	}
	e.countRecovered(a.Outcome)
	return nil
}

// recoveryOpens is how many databases recovery opens at once.
const recoveryOpens = 16

// openForRecovery opens the plugin's database and every physical one, a few
// at once: each that does not answer costs up to ConnectTimeout, and one after
// another they would spend the pass's context before the others were listed.
// The list is in the order of the databases; one that failed has no DB.
func (e *Engine) openForRecovery(ctx context.Context) ([]twophase.Database, []error) {
	n := len(e.physical) - ownDatabase
	databases, errs := make([]twophase.Database, n), make([]error, n)
	turns := make(chan struct{}, recoveryOpens)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		turns <- struct{}{}
		go func() {
			defer func() { <-turns; wg.Done() }()
			sqlDB, name, err := e.sqlDBOf(ctx, i+ownDatabase)
			if err != nil {
				errs[i] = err
				return
			}
			databases[i] = twophase.Database{Name: name, DB: sqlDB, Dialect: e.db.Dialector.Name()}
		}()
	}
	wg.Wait()
	return databases, errs
}

// branchDatabase names the database of a recovered branch by its name, which
// begins with its database's place among the shards: MySQL lists a server's
// branches on each of its databases, and recovery finishes one on the first
// that lists it, often the plugin's own.
func (e *Engine) branchDatabase(a twophase.Action) string {
	digits := len(a.Branch) - len(strings.TrimLeft(a.Branch, "0123456789"))
	if k, err := strconv.Atoi(a.Branch[:digits]); err == nil && k >= 0 && k < len(e.physical) {
		return e.physical[k].name
	}
	if strings.HasPrefix(a.Branch, branchName(ownDatabase)) {
		return ownDatabaseName
	}
	return a.Database
}
