package strategies

import "errors"

var (
	// ErrInvalidLayout is returned by [Layout.Validate] for widths, epoch or time
	// unit that cannot make IDs.
	ErrInvalidLayout = errors.New("strategies: invalid layout")
	// ErrInvalidID is returned for an ID the layout cannot have made.
	ErrInvalidID = errors.New("strategies: invalid id")
	// ErrTimeExhausted is returned when the time field has run out: the layout's
	// epoch plus 2^TimeBits time units is in the past.
	ErrTimeExhausted = errors.New("strategies: the time field of the layout has run out")
	// ErrInvalidWorker is returned for a worker ID that does not fit the
	// layout's worker bits.
	ErrInvalidWorker = errors.New("strategies: invalid worker id")
	// ErrUnsupportedDialect is returned for a database the strategy has no
	// implementation for.
	ErrUnsupportedDialect = errors.New("strategies: unsupported database dialect")
	// ErrLeaseLost is returned by a snowflake generator whose worker lease on
	// a database could not be renewed in time: it issues no ID for that
	// database's shards until it holds a lease again.
	ErrLeaseLost = errors.New("strategies: worker lease lost")
	// ErrInvalidLease is returned for lease options that cannot work.
	ErrInvalidLease = errors.New("strategies: invalid lease options")
	// ErrNoWorkerID is returned when every worker ID of a database is leased.
	ErrNoWorkerID = errors.New("strategies: every worker id is leased")
	// ErrClockBackwards is returned when the clock is behind time already used
	// by more than the tolerance.
	ErrClockBackwards = errors.New("strategies: clock is behind time already used")
	// ErrNoTicketServer is returned when no ticket server answers.
	ErrNoTicketServer = errors.New("strategies: no ticket server answers")
	// ErrNoAutocommit is returned for a MySQL/MariaDB database whose
	// connections do not commit each statement on their own (autocommit
	// off: autocommit=0 in the DSN, the server's init_connect or its
	// default): a segment block reserved, a worker ID leased there would
	// stay uncommitted in one session, unseen by other processes and rolled
	// back when the connection closes, and be handed out again.
	ErrNoAutocommit = errors.New("strategies: the database's connections do not commit on their own (autocommit is off): remove autocommit=0 from the DSN or the server's init_connect")
	// ErrSequenceExhausted is returned when a segment counter has run past
	// what the ID can hold.
	ErrSequenceExhausted = errors.New("strategies: segment counter exhausted")
)
