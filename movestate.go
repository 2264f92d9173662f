package shardid

// Phases of a move, in order.
const (
	PhasePrepare   = "prepare"   // target tables, triggers on the source, ID sources advanced
	PhaseCopy      = "copy"      // rows of the range copied in key order
	PhaseCatchUp   = "catch-up"  // the change log replayed
	PhaseCutover   = "cutover"   // frozen on the source, log drained, verified, new map written
	PhaseServing   = "serving"   // the target serves the range; the source keeps a frozen copy
	PhaseCancelled = "cancelled" // cancelled before cutover
	PhaseCleaned   = "cleaned"   // the source's copies deleted, its triggers dropped
)
