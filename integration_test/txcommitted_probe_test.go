package integration

import (
	"context"
	"testing"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

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
		second := tx.Commit().Error // a second Commit, then the deferred Rollback
		rollback := tx.Rollback().Error
		t.Logf("Commit again: %v; Rollback after the Commit: %v", second, rollback)
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
