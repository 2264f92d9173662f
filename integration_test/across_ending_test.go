package integration

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// How a transaction across shards ends when the application calls Commit
// and Rollback more than once or from two goroutines, and what a hook's
// nested transaction and Connection do in and beside one.

// TestRollbackAfterACommitLeftForRecoveryUndoesNothing: a transaction across
// shards whose Commit decided and committed one branch, the other's commit
// left to recovery (its database unreachable for a moment), reports success;
// the application's deferred Rollback after that Commit (the usual
// `defer tx.Rollback()`), or a second Commit, must not roll back the branch left to recovery:
// the transaction committed, and recovery then commits that branch.
func TestRollbackAfterACommitLeftForRecoveryUndoesNothing(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, proxy, accounts := twoDatabasesOneChaotic(t, b)
		tx := r.db.Clauses(shardid.AcrossShards()).Begin()
		must(t, tx.Error)
		must(t, tx.Model(&accounts[0]).Update("balance", gorm.Expr("balance + 5")).Error)
		must(t, tx.Model(&accounts[1]).Update("balance", gorm.Expr("balance - 5")).Error)
		unlock := lockDecisions(t, r)
		done := make(chan error, 1)
		go func() { done <- tx.Commit().Error }()
		waitForDecisionWrite(t, r)
		proxy.setRefuse(true)
		proxy.cutAll(0)
		unlock()
		if err := <-done; err != nil {
			t.Fatalf("commit: %v", err)
		}
		proxy.setRefuse(false)
		// A second Commit, then the deferred Rollback: each finds the transaction ended.
		if err := tx.Commit().Error; !errors.Is(err, sql.ErrTxDone) {
			t.Errorf("Commit after the Commit: %v; want sql.ErrTxDone", err)
		}
		if err := tx.Rollback().Error; !errors.Is(err, sql.ErrTxDone) {
			t.Errorf("Rollback after the Commit: %v; want sql.ErrTxDone", err)
		}
		must(t, r.plugin.RecoverTransactions(context.Background()))
		var got [2]account
		for k := range got {
			must(t, r.direct[k].First(&got[k], accounts[k].ID).Error)
		}
		if got[0].Balance != 105 || got[1].Balance != 95 {
			t.Fatalf("after a Commit that succeeded and a Rollback after it: balances %d and %d, want 105 and 95 (the commit whole)", got[0].Balance, got[1].Balance)
		}
		r.noPrepared(t)
	})
}

// TestRollbackRacingCommitOfATransactionAcrossShardsIsOneOrTheOther: one
// transaction across shards used from two goroutines, one calling Commit and
// the other Rollback while the commit waits to record its decision (its
// branches prepared): as with database/sql's transaction, one of them wins
// whole: the first to call ends it, and the other returns sql.ErrTxDone;
// never a success with a branch rolled back.
func TestRollbackRacingCommitOfATransactionAcrossShardsIsOneOrTheOther(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		accounts := accountsOnEvery(t, r)
		x := accounts[0]
		i := slices.IndexFunc(accounts, func(a account) bool { return r.physicalOf(a.ID) != r.physicalOf(x.ID) })
		y := accounts[i] // on another database: the commit has two phases, and a decision to wait on
		tx := r.db.Clauses(shardid.AcrossShards()).Begin()
		must(t, tx.Error)
		must(t, tx.Model(&x).Update("balance", gorm.Expr("balance + 5")).Error)
		must(t, tx.Model(&y).Update("balance", gorm.Expr("balance - 5")).Error)
		unlock := lockDecisions(t, r)
		done := make(chan error, 1)
		go func() { done <- tx.Commit().Error }()
		// The commit holds the transaction, waiting to record its decision
		// (or it failed before: then nothing may be written).
		var commitErr error
		ended := false
		for deadline := time.Now().Add(30 * time.Second); !ended && !decisionWriteWaits(t, r); {
			select {
			case commitErr = <-done:
				ended = true
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				unlock()
				t.Fatal("the commit neither came to write its decision nor ended")
			}
		}
		// The Rollback finds the transaction ended and returns at once,
		// before the unlock (one that rolls back waits on the decision too:
		// unlocked after a bound).
		rolledBack := make(chan error, 1)
		go func() { rolledBack <- tx.Session(&gorm.Session{}).Rollback().Error }()
		var rollbackErr error
		select {
		case rollbackErr = <-rolledBack:
			unlock()
		case <-time.After(10 * time.Second):
			unlock()
			rollbackErr = <-rolledBack
		}
		if !ended {
			commitErr = <-done
		} else if commitErr != nil {
			t.Logf("the commit failed before it came to record its decision: %v", commitErr)
		}
		if !errors.Is(rollbackErr, sql.ErrTxDone) {
			t.Errorf("Rollback after the Commit began: %v; want sql.ErrTxDone", rollbackErr)
		}
		var gx, gy account
		must(t, r.direct[r.physicalOf(x.ID)].First(&gx, x.ID).Error)
		must(t, r.direct[r.physicalOf(y.ID)].First(&gy, y.ID).Error)
		committed := gx.Balance == 1005 && gy.Balance == 995
		none := gx.Balance == 1000 && gy.Balance == 1000
		if !(committed && commitErr == nil) && !(none && commitErr != nil) {
			t.Fatalf("commit %v, rollback %v: balances %d and %d, want 1005 and 995 with the commit's success, or 1000 and 1000 with its failure", commitErr, rollbackErr, gx.Balance, gy.Balance)
		}
		r.noPrepared(t)
	})
}

// TestConnectionWithAcrossShardsRunsOnOneConnection: outside Begin and
// Transaction the AcrossShards clause does nothing: db.Connection given it
// runs its function on one connection of the plugin's database, as without
// it, instead of failing with GORM's "invalid db".
func TestConnectionWithAcrossShardsRunsOnOneConnection(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		set, get := "SET @x = 42", "SELECT @x"
		if b.name == "postgres" {
			set, get = "SET my.x = '42'", "SELECT current_setting('my.x', true)"
		}
		var got string
		err := r.db.Clauses(shardid.AcrossShards()).Connection(func(tx *gorm.DB) error {
			if err := tx.Exec(set).Error; err != nil {
				return err
			}
			return tx.Raw(get).Scan(&got).Error
		})
		if err != nil || got != "42" {
			t.Fatalf("Connection with AcrossShards: %v, the session's variable %q; want it run on one connection", err, got)
		}
		if _, err := r.db.Clauses(shardid.AcrossShards()).DB(); err != nil {
			t.Fatalf("DB() with AcrossShards: %v", err)
		}
	})
}

// hookedEntry's AfterCreate runs a nested Transaction that writes an entry
// beside it and one on another author's database, then fails: the nested
// transaction's writes are undone, as on one database.
type hookedEntry struct {
	ID       shardid.ID `shardid:"colocate:AuthorID"`
	AuthorID int64
	Ref      string
	Other    int64 `gorm:"-"`
}

func (h *hookedEntry) AfterCreate(tx *gorm.DB) error {
	if h.Other == 0 {
		return nil
	}
	_ = tx.Transaction(func(t2 *gorm.DB) error {
		if err := t2.Create(&entry{AuthorID: h.AuthorID, Ref: h.Ref + "-same"}).Error; err != nil {
			return err
		}
		if err := t2.Create(&entry{AuthorID: h.Other, Ref: h.Ref + "-other"}).Error; err != nil {
			return err
		}
		return errors.New("undo the nested transaction")
	})
	return nil
}

// TestNestedTransactionInAHookOfATransactionAcrossShardsUndoesEveryDatabase:
// a nested Transaction run by a hook inside a transaction across shards
// sets its savepoint on every branch: its failure undoes its writes on the
// hook's database and on the other it wrote, as a savepoint does on one
// database; only the hooked row commits.
func TestNestedTransactionInAHookOfATransactionAcrossShardsUndoesEveryDatabase(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		fresh(t, r.db, &hookedEntry{})
		err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			return tx.Create(&hookedEntry{AuthorID: authors[0].ID, Ref: "h", Other: authors[1].ID}).Error
		})
		must(t, err)
		got := r.refsOn(t)
		var hooked int64
		for _, d := range r.direct {
			var n int64
			must(t, d.Model(&hookedEntry{}).Count(&n).Error)
			hooked += n
		}
		if len(got) != 0 || hooked != 1 {
			t.Fatalf("entries %v and %d hooked rows committed; want none of the nested transaction's entries, and the hooked row", got, hooked)
		}
		r.noPrepared(t)
	})
}

// refsOn returns the refs of the entries on every physical database, read
// directly.
func (r *routing) refsOn(t *testing.T) []string {
	t.Helper()
	var refs []string
	for _, d := range r.direct {
		var on []string
		must(t, d.Model(&entry{}).Pluck("ref", &on).Error)
		refs = append(refs, on...)
	}
	return refs
}

// TestStatementAfterTheContextOfATransactionAcrossShardsEndedFailsWithIt: a
// transaction across shards whose context ends is rolled back then, as
// database/sql's is; a statement run in it after that, on a database it has
// no branch on yet, fails with the context's error (and sql.ErrTxDone), as
// the statements on its branches do, not with sql.ErrTxDone alone. Nothing
// is written, nothing left prepared, and the next transaction works.
func TestStatementAfterTheContextOfATransactionAcrossShardsEndedFailsWithIt(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, pools, accounts := smallPools(t, b, 0, shardid.Config{})
		before := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		err := r.db.WithContext(ctx).Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			must(t, tx.Model(&accounts[0]).Update("balance", 5).Error)
			cancel()
			// The rollback at the context's end releases the first branch's row lock.
			locked := "SELECT id FROM accounts WHERE id = ? FOR UPDATE NOWAIT"
			for deadline := time.Now().Add(10 * time.Second); ; {
				probe := r.direct[0].Begin()
				must(t, probe.Error)
				err := probe.Exec(locked, accounts[0].ID).Error
				_ = probe.Rollback()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the first branch still holds its row 10s after its context ended: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			return tx.Model(&accounts[1]).Update("balance", 5).Error
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a statement on a new database after the transaction's context ended: %v, want context.Canceled", err)
		}
		if got := balances(t, r, accounts); got != [2]int64{100, 100} {
			t.Errorf("balances %v, want 100 each", got)
		}
		r.noPrepared(t)
		must(t, r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			return tx.Model(&accounts[1]).Update("balance", 6).Error
		}))
		settled(t, pools, before)
	})
}
