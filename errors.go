package shardid

import (
	"errors"
	"fmt"

	"github.com/shardid/shardid/strategies"
)

var (
	// ErrInvalidTag is returned, at the first statement on a model, for a
	// shardid struct tag that cannot be used. The error names the model, the
	// field and the allowed values.
	ErrInvalidTag = errors.New("shardid: invalid shardid tag")
	// ErrNoShard is returned for a row or statement whose logical shard cannot
	// be determined.
	ErrNoShard = errors.New("shardid: no shard")
	// ErrInvalidConfig is returned by Initialize (db.Use) for a Config that
	// cannot work.
	ErrInvalidConfig = errors.New("shardid: invalid config")
	// ErrInvalidLayout is returned by Initialize for a bad [Layout].
	ErrInvalidLayout = strategies.ErrInvalidLayout
	// ErrInvalidID is returned for a preset ID the layout cannot have made.
	ErrInvalidID = strategies.ErrInvalidID
	// ErrTimeExhausted is returned once the layout's time field has run out.
	ErrTimeExhausted = strategies.ErrTimeExhausted
)

// FieldError is an error about one field of one model; it unwraps to one of
// the sentinels above.
type FieldError struct {
	Model  string // Go type name of the model
	Field  string // Go name of the field
	Err    error  // the sentinel: ErrInvalidTag, ErrNoShard, ErrInvalidID, ...
	Detail string // what is wrong and how to fix it
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: %s.%s: %s", e.Err, e.Model, e.Field, e.Detail)
}

func (e *FieldError) Unwrap() error { return e.Err }

// ErrCrossShard is returned for a statement that needs a physical database
// other than the one its transaction is on, or whose conditions name shards
// on different physical databases in a way that cannot be merged.
var ErrCrossShard = errors.New("shardid: cross-shard statement")
