package integration

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// A transaction across shards when its commit races a statement, loses an
// answer, or meets a database that stops answering.

// TestAWriteOverSeveralDatabasesRacingItsTransactionsCommitIsWhole: in a
// transaction across shards with branches open on two databases, a split
// Create (one row on each) or an update of a row on each runs while Commit
// runs on another goroutine, the INSERT or UPDATE slow on one database: the
// commit waits for the write, which is in it whole, never half.
func TestAWriteOverSeveralDatabasesRacingItsTransactionsCommitIsWhole(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		for _, kind := range []string{"split Create", "update of both"} {
			for _, slow := range []int{0, 1} {
				dir := t.TempDir()
				list := shards(t, b, dir)[:2]
				count := shardid.Layout{}.ShardCount()
				list[0].Logical = []shardid.Range{{From: 0, To: count/2 - 1}}
				list[1].Logical = []shardid.Range{{From: count / 2, To: count - 1}}
				var proxy *holdProxy
				list[slow].Dialector, proxy = physicalViaHold(t, b, slow)
				db := open(t, b, dir, shardid.Config{Shards: list})
				fresh(t, db, &account{}, &leg{})
				var accounts [2]account
				for k := range accounts {
					accounts[k] = account{Balance: 100}
					must(t, db.Clauses(shardid.OnShard(k*count/2)).Create(&accounts[k]).Error)
				}
				tx := db.Clauses(shardid.AcrossShards()).Begin()
				must(t, tx.Error)
				must(t, tx.Model(&accounts[0]).Update("balance", gorm.Expr("balance - 1")).Error)
				must(t, tx.Model(&accounts[1]).Update("balance", gorm.Expr("balance + 1")).Error)
				slowed := map[string]string{"mariadb": "INTO `legs`", "postgres": `INTO "legs"`}[b.name]
				write := func() error {
					return tx.Create(&[]leg{{AccountID: accounts[0].ID, Transfer: "race", Amount: 1}, {AccountID: accounts[1].ID, Transfer: "race", Amount: 1}}).Error
				}
				if kind == "update of both" {
					slowed = map[string]string{"mariadb": "UPDATE `accounts`", "postgres": `UPDATE "accounts"`}[b.name]
					write = func() error {
						return tx.Model(&account{}).Where("id IN ?", []int64{accounts[0].ID, accounts[1].ID}).Update("balance", gorm.Expr("balance + 1000")).Error
					}
				}
				proxy.delayStatements(slowed, time.Second)
				var writeErr error
				var wg sync.WaitGroup
				wg.Go(func() { writeErr = write() })
				time.Sleep(400 * time.Millisecond) // the write's part on the other database has run
				commitErr := tx.Commit().Error
				wg.Wait()
				proxy.delayStatements("", 0)
				written := 0
				for k, d := range direct(t, b, dir)[:2] {
					var legs int64
					must(t, d.Model(&leg{}).Where("transfer = ?", "race").Count(&legs).Error)
					var a account
					must(t, d.First(&a, accounts[k].ID).Error)
					if legs > 0 || a.Balance > 1000 {
						written++
					}
				}
				if writeErr != nil && written != 0 || writeErr == nil && commitErr == nil && written != 2 {
					t.Errorf("%s, slow on database %d: the write said %v, the commit %v, and %d of its 2 databases hold it", kind, slow, writeErr, commitErr, written)
				}
			}
		}
	})
}

// TestACommitInOnePhaseWhoseAnswerIsLostIsInDoubt: a transaction across
// shards that wrote on one database commits there in one phase; the
// connection cut once the server has the COMMIT, the caller is told
// ErrInDoubt, not a failure, for the row may be (and here is) written.
func TestACommitInOnePhaseWhoseAnswerIsLostIsInDoubt(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, proxy, accounts := twoDatabasesOneChaotic(t, b)
		proxy.arm(map[string]string{"mariadb": "ONE PHASE", "postgres": "COMMIT"}[b.name], true, 0)
		err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			return tx.Model(&accounts[1]).Update("balance", gorm.Expr("balance + 5")).Error
		})
		proxy.calm()
		var got account
		must(t, r.direct[1].First(&got, accounts[1].ID).Error)
		if got.Balance != 105 || !errors.Is(err, shardid.ErrInDoubt) {
			t.Errorf("a commit whose answer was lost: %v, balance %d; want ErrInDoubt, and the write there", err, got.Balance)
		}
		if stats := r.plugin.TransactionStats(); stats.RolledBack != 0 || stats.InDoubt != 1 {
			t.Errorf("a commit whose answer was lost is counted %+v, want in doubt", stats)
		}
	})
}

// TestATransactionAcrossShardsEndsByItsContextsDeadline: a transaction
// across shards with a one-second context whose commit meets a database
// that holds its answers (to a one-phase COMMIT, or to PREPARE) returns soon
// after the deadline, not when the database answers: the prepare is rolled
// back, a COMMIT's outcome is in doubt; Close does not wait for it either.
func TestATransactionAcrossShardsEndsByItsContextsDeadline(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		for _, c := range []struct {
			what    string
			held    string
			touched []int
		}{
			{"a commit in one phase", map[string]string{"mariadb": "ONE PHASE", "postgres": "COMMIT"}[b.name], []int{1}},
			{"a prepare", map[string]string{"mariadb": "XA PREPARE", "postgres": "PREPARE TRANSACTION"}[b.name], []int{0, 1}},
		} {
			r, proxy, accounts := twoDatabasesOneDelayed(t, b, shardid.Config{})
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			done := make(chan error, 1)
			go func() {
				done <- r.db.WithContext(ctx).Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
					for _, k := range c.touched {
						if err := tx.Model(&accounts[k]).Update("balance", gorm.Expr("balance + 5")).Error; err != nil {
							return err
						}
					}
					proxy.holdAnswersFrom(c.held)
					return nil
				})
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(15 * time.Second):
				t.Errorf("%s held: the transaction had not returned 14 s after its context's deadline", c.what)
			}
			closed := make(chan error, 1)
			go func() { closed <- r.plugin.Close() }()
			select {
			case <-closed:
			case <-time.After(15 * time.Second):
				t.Errorf("%s held: Close had not returned after 15 s", c.what)
			}
			proxy.releaseHeld()
			if err == nil {
				err = <-done
			}
			cancel()
			if err == nil || c.what == "a prepare" && errors.Is(err, shardid.ErrInDoubt) {
				t.Errorf("%s held past the deadline: %v; want it failed (a prepare rolled back) or in doubt (a commit)", c.what, err)
			}
			r.noPrepared(t) // a branch left prepared would hold its row's lock, and fail later tests' DROP TABLE
			if c.what == "a prepare" {
				for k := range accounts {
					var a account
					must(t, r.direct[k].First(&a, accounts[k].ID).Error)
					if a.Balance != 100 {
						t.Errorf("a prepare held past the deadline: database %d holds the write (balance %d)", k, a.Balance)
					}
				}
			}
		}
	})
}

// TestAPrepareWhoseAnswerIsLostIsRolledBackOnceItsSessionEnds: a transfer
// across two databases whose PREPARE runs on the second and whose answer is
// lost, the server ending that session only a second later (a half-open
// connection), is rolled back when the session ends, not left prepared,
// holding its row's lock, until recovery.
func TestAPrepareWhoseAnswerIsLostIsRolledBackOnceItsSessionEnds(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, proxy, accounts := twoDatabasesOneChaotic(t, b)
		proxy.arm(map[string]string{"mariadb": "XA PREPARE", "postgres": "PREPARE TRANSACTION"}[b.name], true, time.Second)
		err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			for k := range accounts {
				if err := tx.Model(&accounts[k]).Update("balance", gorm.Expr("balance + 5")).Error; err != nil {
					return err
				}
			}
			return nil
		})
		proxy.calm()
		if err == nil {
			t.Fatal("a transfer whose PREPARE's answer was lost committed")
		}
		if left := prepared(t, r.db, r.direct); len(left) > 0 {
			t.Errorf("a transfer that failed (%v) left %v prepared, for recovery to find", err, left)
		}
		for k := range accounts {
			var a account
			must(t, r.direct[k].First(&a, accounts[k].ID).Error)
			if a.Balance != 100 {
				t.Errorf("a transfer that failed (%v): database %d holds its write (balance %d)", err, k, a.Balance)
			}
		}
	})
}

// TestAPrepareReachingItsServerAfterItsContextEndedIsRolledBack: a
// transfer across two databases whose context ends as its PREPARE is on
// its way to the second, which runs it a second later (a slow network, a
// busy server), fails, and leaves no branch prepared there holding its
// row's lock until recovery: the PREPARE that arrived late is rolled back
// before the transfer returns.
func TestAPrepareReachingItsServerAfterItsContextEndedIsRolledBack(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, proxy, accounts := twoDatabasesOneDelayed(t, b, shardid.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		proxy.delayStatements(map[string]string{"mariadb": "XA PREPARE", "postgres": "PREPARE TRANSACTION"}[b.name], time.Second)
		proxy.whenDelayed(cancel) // the context ends as the PREPARE reaches the proxy
		err := r.db.WithContext(ctx).Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			for k := range accounts {
				if err := tx.Model(&accounts[k]).Update("balance", gorm.Expr("balance + 5")).Error; err != nil {
					return err
				}
			}
			return nil
		})
		proxy.delayStatements("", 0)
		proxy.whenDelayed(nil)
		if ctx.Err() == nil {
			t.Fatal("no PREPARE reached the second database's proxy: the test shows nothing")
		}
		if err == nil {
			t.Fatal("a transfer whose context ended as it prepared committed")
		}
		// The row the transfer wrote on the second database is locked until
		// its branch ends: at once if the PREPARE never runs there, soon after
		// it runs if it is rolled back then, at recovery if it is left prepared.
		locked, release := context.WithTimeout(context.Background(), 15*time.Second)
		defer release()
		if err := r.direct[1].WithContext(locked).Model(&account{}).Where("id = ?", accounts[1].ID).Update("balance", gorm.Expr("balance")).Error; err != nil {
			t.Fatalf("the row the failed transfer wrote on the second database is still locked 15 s after it returned (%v); prepared: %v", err, prepared(t, r.db, r.direct))
		}
		r.noPrepared(t)
		for k := range accounts {
			var a account
			must(t, r.direct[k].First(&a, accounts[k].ID).Error)
			if a.Balance != 100 {
				t.Errorf("a transfer that failed (%v): database %d holds its write (balance %d)", err, k, a.Balance)
			}
		}
	})
}

// twoDatabasesOneChaotic is twoDatabasesOneProxied with a chaosProxy.
func twoDatabasesOneChaotic(t *testing.T, b backend) (*routing, *chaosProxy, [2]account) {
	t.Helper()
	var proxy *chaosProxy
	r, accounts := twoDatabasesOneProxied(t, b, shardid.Config{ConnectTimeout: time.Second}, func() gorm.Dialector {
		dialector, chaos := physicalViaChaos(t, b, 1)
		proxy = chaos
		return dialector
	})
	return r, proxy, accounts
}
