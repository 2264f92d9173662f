package shardid

import "github.com/shardid/shardid/internal/engine"

// Atomicity is what a write over several physical databases promises
// (Config.Atomic).
type Atomicity uint8

const (
	// TwoPhaseCommit commits a write over several databases wholly or not
	// at all, with the servers' two-phase commit; where there is none
	// (SQLite) the write is refused with ErrNotAtomic.
	TwoPhaseCommit = Atomicity(engine.TwoPhase)
	// BestEffort writes each database's part in a transaction of its own:
	// a part that fails leaves the parts before it written.
	BestEffort = Atomicity(engine.BestEffort)
)

// TransactionStats counts the writes over several databases committed in
// two phases, and the transactions begun AcrossShards (one that wrote on one
// database commits there in one phase), by outcome: by their coordinator (committed, rolled back,
// left in doubt) and branches finished by recovery.
type TransactionStats = engine.TransactionStats
