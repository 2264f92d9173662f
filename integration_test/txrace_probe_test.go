package integration

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// TestRollbackRacingCommitOfATransactionAcrossShardsIsOneOrTheOther: one
// transaction across shards used from two goroutines, one calling Commit and
// the other Rollback while the commit waits to record its decision (its
// branches prepared): as with database/sql's transaction, one of them wins
// whole: the commit reports success and both writes are there, or it fails
// and neither is; never a success with a branch rolled back.
func TestRollbackRacingCommitOfATransactionAcrossShardsIsOneOrTheOther(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		accounts := accountsOnEvery(t, r)
		x, y := accounts[0], accounts[len(accounts)-1]
		tx := r.db.Clauses(shardid.AcrossShards()).Begin()
		must(t, tx.Error)
		must(t, tx.Model(&x).Update("balance", gorm.Expr("balance + 5")).Error)
		must(t, tx.Model(&y).Update("balance", gorm.Expr("balance - 5")).Error)
		unlock := lockDecisions(t, r)
		done := make(chan error, 1)
		go func() { done <- tx.Commit().Error }()
		waitForDecisionWrite(t, r)
		rolledBack := make(chan error, 1)
		go func() { rolledBack <- tx.Session(&gorm.Session{}).Rollback().Error }()
		// the rollback runs while the commit waits on the lock
		r.waitAWhile()
		unlock()
		commitErr, rollbackErr := <-done, <-rolledBack
		t.Logf("commit: %v; rollback: %v", commitErr, rollbackErr)
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

func (r *routing) waitAWhile() { sleepMs(300) }

func sleepMs(ms int) { <-time.After(time.Duration(ms) * time.Millisecond) }
