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
)
