package strategies

import "time"

// Stats are a strategy's counters for monitoring, read with [Reporter.Stats].
// Counts only grow; the states describe the moment of the call.
type Stats struct {
	// Issued is how many IDs the strategy handed out.
	Issued uint64
	// Waits counts the times a caller waited, by reason.
	Waits Waits
	// Leases are the snowflake worker leases, one per physical database.
	Leases []LeaseState
	// Servers are the ticket servers.
	Servers []ServerState
	// Sequences are the segment sequences, one per name and physical database.
	Sequences []SequenceState
}

// Waits counts the times a caller of a strategy waited, by reason.
type Waits struct {
	// SequenceFull: a tick's sequence was used up; the caller waited for the next tick.
	SequenceFull uint64
	// ClockBehind: the clock was behind time already used; the caller waited for it.
	ClockBehind uint64
	// Refill: no reserved value was left; the caller waited for a block.
	Refill uint64
	// Failover: a ticket server failed the request, which went to the next.
	Failover uint64
}

// LeaseState is one snowflake worker lease.
type LeaseState struct {
	Database string
	Worker   int
	// Held reports whether IDs may be issued under the lease now.
	Held bool
	// ValidFor is how long the lease stays valid without another renewal.
	ValidFor time.Duration
	// Renewals and Lost count the heartbeats that renewed the lease and the
	// times it was found lost (expired or taken).
	Renewals, Lost uint64
}

// ServerState is one ticket server.
type ServerState struct {
	Name string
	// Up is false while the server is skipped after a failure.
	Up bool
	// Issued and Failures count the tickets it gave and the requests that failed.
	Issued, Failures uint64
	// RetryAt is when a server that is down is tried again.
	RetryAt time.Time
}

// SequenceState is one segment sequence in one physical database.
type SequenceState struct {
	Database, Sequence string
	// Step is the size of the last block reserved by the adaptive rule (not
	// counting exact reservations made in an SQLite transaction).
	Step int64
	// Left is how many values the current and the prefetched block still hold.
	Left int64
	// Refills counts the blocks reserved.
	Refills uint64
	// Refilling reports a reservation under way: one that lasts points at a
	// database slow to answer or a counter row held locked.
	Refilling bool
}

// Reporter is a strategy that reports [Stats]; every strategy of this
// package is one.
type Reporter interface {
	Stats() Stats
}
