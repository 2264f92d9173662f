package integration

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// twoDatabasesOneDelayed opens the plugin over two physical databases of
// b, the second reached through a proxy that can delay statements, with an
// account on each.
func twoDatabasesOneDelayed(t *testing.T, b backend, cfg shardid.Config) (*routing, *holdProxy, [2]account) {
	t.Helper()
	var proxy *holdProxy
	r, accounts := twoDatabasesOneProxied(t, b, cfg, func() gorm.Dialector {
		dialector, held := physicalViaHold(t, b, 1)
		proxy = held
		return dialector
	})
	return r, proxy, accounts
}

// twoDatabasesOneProxied opens the plugin over two physical databases of b,
// the second through the proxy of via, with an account on each.
func twoDatabasesOneProxied(t *testing.T, b backend, cfg shardid.Config, via func() gorm.Dialector) (*routing, [2]account) {
	t.Helper()
	dir := t.TempDir()
	list := shards(t, b, dir)[:2]
	count := shardid.Layout{}.ShardCount()
	list[0].Logical = []shardid.Range{{From: 0, To: count/2 - 1}}
	list[1].Logical = []shardid.Range{{From: count / 2, To: count - 1}}
	list[1].Dialector = via()
	cfg.Shards = list
	db := open(t, b, dir, cfg)
	r := &routing{b: b, db: db, direct: direct(t, b, dir)[:2], plugin: db.Config.Plugins["shardid"].(*shardid.Plugin)}
	fresh(t, db, &account{})
	t.Cleanup(func() { r.noLockLeft(t, &account{}) }) // the tests of this rig cut and hold its connections
	var accounts [2]account
	for k := range accounts {
		accounts[k] = account{Balance: 100}
		must(t, db.Clauses(shardid.OnShard(k*count/2)).Create(&accounts[k]).Error)
	}
	return r, accounts
}

// TestWriteOverDatabasesFinishesCommitPastItsDeadline: a write over two
// databases whose context expires while its branches commit, after its
// decision, still commits them before it returns: what it reports written
// is there to read, and nothing is left prepared for recovery.
func TestWriteOverDatabasesFinishesCommitPastItsDeadline(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, proxy, accounts := twoDatabasesOneDelayed(t, b, shardid.Config{})
		commit := map[string]string{"mariadb": "XA COMMIT", "postgres": "COMMIT PREPARED"}[b.name]
		// The context ends as the second branch's commit reaches the proxy,
		// which sends it on a second later: past its deadline, however long
		// what came before took.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		proxy.delayStatements(commit, time.Second)
		proxy.whenDelayed(cancel)
		ids := []int64{accounts[0].ID, accounts[1].ID}
		must(t, r.db.WithContext(ctx).Model(&account{}).Where("id IN ?", ids).Update("balance", 7).Error)
		proxy.delayStatements("", 0)
		proxy.whenDelayed(nil)
		if ctx.Err() == nil {
			t.Fatalf("no %s reached the second database's proxy: the test shows nothing", commit)
		}
		for k, d := range r.direct {
			var got account
			must(t, d.First(&got, ids[k]).Error)
			if got.Balance != 7 {
				t.Fatalf("database %d holds balance %d right after the update returned, want 7", k, got.Balance)
			}
		}
		r.noPrepared(t)
	})
}

// TestWriteOverDatabasesRollsBackPastItsDeadline: a write over two
// databases whose context expires while its branches prepare rolls back
// the branch that did prepare: it holds no lock afterwards.
func TestWriteOverDatabasesRollsBackPastItsDeadline(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, proxy, accounts := twoDatabasesOneDelayed(t, b, shardid.Config{InDoubtAfter: 100 * time.Millisecond})
		prepare := map[string]string{"mariadb": "XA PREPARE", "postgres": "PREPARE TRANSACTION"}[b.name]
		proxy.delayStatements(prepare, 2*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ids := []int64{accounts[0].ID, accounts[1].ID}
		if err := r.db.WithContext(ctx).Model(&account{}).Where("id IN ?", ids).Update("balance", 7).Error; err == nil {
			t.Fatal("the update succeeded past its deadline, with a branch not prepared")
		}
		proxy.delayStatements("", 0)
		// The delayed database may still prepare its branch once the statement
		// reaches it, after its client has gone: recovery's to decide. The
		// other's was prepared in time and must be rolled back now.
		for _, left := range prepared(t, r.db, r.direct[:1]) {
			if strings.HasSuffix(left, "/0") {
				t.Fatalf("the branch prepared on the first database is left: %s", left)
			}
		}
		var got account
		must(t, r.direct[0].First(&got, ids[0]).Error)
		if got.Balance != 100 {
			t.Fatalf("the first database holds balance %d, want 100", got.Balance)
		}
		for deadline := time.Now().Add(10 * time.Second); len(prepared(t, r.db, r.direct)) > 0; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("recovery left %v prepared", prepared(t, r.db, r.direct))
			}
			must(t, r.plugin.RecoverTransactions(context.Background())) // the late branch, no decision: rolled back
		}
	})
}

// TestWriteOverDatabasesWhosePrepareRanPastItsDeadlineRollsItBack: a
// write over two databases whose context ends after a PREPARE reached its
// server, and ran there, before the answer came back, rolls that branch
// back by its name from another session: no branch is left prepared,
// holding its rows' locks, for recovery to find a minute later.
func TestWriteOverDatabasesWhosePrepareRanPastItsDeadlineRollsItBack(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, proxy, accounts := twoDatabasesOneDelayed(t, b, shardid.Config{})
		proxy.holdAnswersFrom(map[string]string{"mariadb": "XA PREPARE", "postgres": "PREPARE TRANSACTION"}[b.name])
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ids := []int64{accounts[0].ID, accounts[1].ID}
		err := r.db.WithContext(ctx).Model(&account{}).Where("id IN ?", ids).Update("balance", 7).Error
		proxy.releaseHeld()
		if err == nil {
			t.Fatal("the update succeeded though its context ended while a branch prepared")
		}
		if left := prepared(t, r.db, r.direct); len(left) > 0 {
			t.Fatalf("the failed update left %v prepared", left)
		}
		for k, d := range r.direct {
			var got account
			must(t, d.First(&got, ids[k]).Error)
			if got.Balance != 100 {
				t.Fatalf("database %d holds balance %d, want 100", k, got.Balance)
			}
		}
	})
}

// TestTransactionRolledBackIsCountedOnce: a transaction across two
// databases whose commit fails while preparing is rolled back by the plugin,
// and again by GORM's Transaction after the failed Commit: counted once,
// with its two branches.
func TestTransactionRolledBackIsCountedOnce(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, proxy, accounts := twoDatabasesOneDelayed(t, b, shardid.Config{})
		before := r.plugin.TransactionStats()
		err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			if err := tx.Model(&accounts[0]).Update("balance", gorm.Expr("balance - 10")).Error; err != nil {
				return err
			}
			if err := tx.Model(&accounts[1]).Update("balance", gorm.Expr("balance + 10")).Error; err != nil {
				return err
			}
			proxy.close() // the second database's connections drop before the commit
			return nil
		})
		after := r.plugin.TransactionStats()
		if err == nil {
			t.Fatal("a commit whose second database dropped its connections succeeded")
		}
		if rolledBack, branches := after.RolledBack-before.RolledBack, after.Branches-before.Branches; rolledBack != 1 || branches != 2 {
			t.Fatalf("one transaction of 2 branches rolled back counted as %d rolled back, %d branches (%v)", rolledBack, branches, err)
		}
	})
}

type deferredCode struct {
	ID   int64 `shardid:""`
	Code string
}

// TestTransactionWhoseOneCommitFailsIsCountedRolledBack: a transaction on
// one database whose COMMIT fails (a deferred unique constraint, on
// PostgreSQL) is counted rolled back, once.
func TestTransactionWhoseOneCommitFailsIsCountedRolledBack(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "postgres" {
			t.Skip("MySQL and MariaDB check unique keys at each statement")
		}
		r, _, _ := twoDatabasesOneDelayed(t, b, shardid.Config{})
		for _, d := range r.direct {
			must(t, d.Exec("DROP TABLE IF EXISTS deferred_codes").Error)
			must(t, d.Exec("CREATE TABLE deferred_codes (id bigint PRIMARY KEY, code text, CONSTRAINT deferred_code UNIQUE (code) DEFERRABLE INITIALLY DEFERRED)").Error)
		}
		before := r.plugin.TransactionStats()
		err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			for _, shard := range []int{1, 2} { // one database, one code twice: its COMMIT fails
				if err := tx.Clauses(shardid.OnShard(shard)).Create(&deferredCode{Code: "x"}).Error; err != nil {
					return err
				}
			}
			return nil
		})
		after := r.plugin.TransactionStats()
		if err == nil {
			t.Fatal("a COMMIT of one code twice succeeded")
		}
		if rolledBack := after.RolledBack - before.RolledBack; rolledBack != 1 {
			t.Fatalf("a transaction whose COMMIT failed counted %d rolled back (%+v)", rolledBack, after)
		}
	})
}

// TestWriteOverDatabasesWhoseContextEndsBeforeItsPrepareFailsWithIt: a
// write over two databases whose context is cancelled once its parts have
// written (by a callback after the write), before its branches prepare,
// fails with context.Canceled, as GORM's commit on one database does, not
// as a failed statement; nothing is written, nothing left prepared.
func TestWriteOverDatabasesWhoseContextEndsBeforeItsPrepareFailsWithIt(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, pools, accounts := smallPools(t, b, 0, shardid.Config{})
		var cancel context.CancelFunc
		must(t, r.db.Callback().Update().After("gorm:update").Register("test:cancel", func(*gorm.DB) { cancel() }))
		before := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ids := []int64{accounts[0].ID, accounts[1].ID}
		err := r.db.WithContext(ctx).Model(&account{}).Where("id IN ?", ids).Update("balance", 7).Error
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if got := balances(t, r, accounts); got != [2]int64{100, 100} {
			t.Errorf("balances %v after the cancelled update, want 100 each", got)
		}
		r.noPrepared(t)
		settled(t, pools, before)
	})
}

// TestWriteOverDatabasesWhoseContextEndsDuringAPartFailsWithItAlone: a
// write over two databases whose context ends while a part runs fails with
// the context's error and not ErrShardUnavailable: the part's connection,
// which the driver drops as the context ends, takes its branch's
// transaction with it (it was not prepared), so its rollback finding the
// connection gone is no failure. Nothing is written, nothing left prepared,
// and the pools of one connection serve the next statement.
func TestWriteOverDatabasesWhoseContextEndsDuringAPartFailsWithItAlone(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, pools, accounts := smallPools(t, b, 1, shardid.Config{})
		before := runtime.NumGoroutine()
		ids := []int64{accounts[0].ID, accounts[1].ID}
		cond, args := sleepWhere(b, accounts[1].ID, 3)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		err := r.db.WithContext(ctx).Model(&account{}).Where("id IN ?", ids).Where(cond, args...).Update("balance", 9).Error
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, shardid.ErrShardUnavailable) {
			t.Errorf("err = %v, want context.DeadlineExceeded and not ErrShardUnavailable", err)
		}
		if got := balances(t, r, accounts); got != [2]int64{100, 100} {
			t.Errorf("balances %v after the update that ran past its deadline, want 100 each", got)
		}
		r.noPrepared(t)
		settled(t, pools, before)
		must(t, r.db.Model(&account{}).Where("id IN ?", ids).Update("balance", 101).Error)
	})
}
