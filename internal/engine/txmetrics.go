package engine

import (
	"sync/atomic"
	"time"

	"github.com/shardid/shardid/internal/twophase"
)

// TransactionStats counts the transactions over several databases that
// committed in two phases, and those begun AcrossShards (one that wrote on
// one database commits there in one phase), by outcome, since db.Use.
type TransactionStats struct {
	Committed         uint64  // by their coordinator
	RolledBack        uint64  // by their coordinator: a part failed, or the application rolled back
	InDoubt           uint64  // left to recovery: the decision could not be recorded
	RecoveredCommit   uint64  // branches recovery committed
	RecoveredRollback uint64  // branches recovery rolled back
	Branches          uint64  // of the transactions that ended, in all
	InDoubtSeconds    float64 // from the first prepare to the last commit, in all
}

type transactionCounters struct {
	committed, rolledBack, inDoubt     atomic.Uint64
	recoveredCommit, recoveredRollback atomic.Uint64
	branches, inDoubtNanos             atomic.Uint64
}

// TransactionStats returns the counts so far.
func (e *Engine) TransactionStats() TransactionStats {
	c := &e.txCounts
	return TransactionStats{
		Committed: c.committed.Load(), RolledBack: c.rolledBack.Load(), InDoubt: c.inDoubt.Load(),
		RecoveredCommit: c.recoveredCommit.Load(), RecoveredRollback: c.recoveredRollback.Load(),
		Branches: c.branches.Load(), InDoubtSeconds: time.Duration(c.inDoubtNanos.Load()).Seconds(),
	}
}

func (e *Engine) countRecovered(outcome twophase.Outcome) {
	if outcome == twophase.Committed {
		e.txCounts.recoveredCommit.Add(1)
	} else {
		e.txCounts.recoveredRollback.Add(1)
	}
}

// countEnded counts a transaction its coordinator ended.
func (e *Engine) countEnded(outcome *atomic.Uint64, branches int, inDoubt time.Duration) {
	// The outcome last: a reader that sees it counted sees its branches and time too.
	e.txCounts.branches.Add(uint64(branches))
	e.txCounts.inDoubtNanos.Add(uint64(inDoubt))
	outcome.Add(1)
}
