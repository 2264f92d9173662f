package engine

import (
	"errors"
	"fmt"

	"github.com/shardid/shardid/strategies"
)

// The errors a user tests with errors.Is; the shardid package documents
// each under the same name.
var (
	ErrInvalidTag       = errors.New("shardid: invalid shardid tag")
	ErrNoShard          = errors.New("shardid: no shard")
	ErrInvalidConfig    = errors.New("shardid: invalid config")
	ErrCrossShard       = errors.New("shardid: cross-shard statement")
	ErrShardMoved       = errors.New("shardid: logical shard moved")
	ErrShardUnavailable = errors.New("shardid: physical database unavailable")
	ErrPluginNotOpen    = errors.New("shardid: plugin not open")
	ErrNotAtomic        = errors.New("shardid: a write over several databases cannot be atomic here")
	ErrInDoubt          = errors.New("shardid: the outcome of a transaction over several databases is not known yet")
	ErrInvalidLayout    = strategies.ErrInvalidLayout
	ErrInvalidID        = strategies.ErrInvalidID
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
