package engine

import (
	"context"
	"fmt"
)

// Misplaced is a count of rows of one table on one physical database whose
// logical shards the map sends elsewhere.
type Misplaced struct {
	Table    string
	Database string
	Rows     int64
	Keys     []any // up to ten of their keys
	// LeftByMove says that the rows are the frozen copy a move left on its
	// source, which CleanupMove deletes.
	LeftByMove bool
}

// Audit reads every physical database and reports the rows of the sharded
// tables the plugin has migrated that sit on a database their logical shard
// does not map to. Nothing is misplaced after a move is cleaned up.
func (e *Engine) Audit(ctx context.Context) ([]Misplaced, error) {
	if e.maps == nil {
		return nil, fmt.Errorf("%w: no Config.Shards: every row is on the plugin's database", ErrInvalidConfig)
	}
	found, err := e.moves.Audit(ctx, moverDriver{e})
	if err != nil {
		return nil, err
	}
	var all []Misplaced
	for _, m := range found {
		all = append(all, Misplaced(m))
	}
	return all, nil
}
