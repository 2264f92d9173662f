package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardid/shardid/internal/mover"
)

// Misplaced is a count of rows of one table on one physical database whose
// logical shards the map sends elsewhere: the mover's report as it is.
type Misplaced = mover.Misplaced

// UnreadDatabaseError is a physical database Audit could not read.
type UnreadDatabaseError = mover.UnreadDatabaseError

// Audit reads every physical database and reports the rows of the sharded
// tables the plugin has migrated that sit on a database their logical shard
// does not map to. Nothing is misplaced after a move is cleaned up; a
// database it cannot read is named in the error beside what the others hold.
func (e *Engine) Audit(ctx context.Context) ([]Misplaced, error) {
	if err := e.notClosed(); err != nil {
		return nil, err
	}
	if e.maps == nil {
		return nil, fmt.Errorf("%w: no Config.Shards: every row is on the plugin's database", ErrInvalidConfig)
	}
	misplaced, err := e.moves.Audit(ctx, moverDriver{e})
	if errors.Is(err, errNoShardedTables) { // not an invalid move: nothing the plugin migrated to audit
		return nil, fmt.Errorf("shardid: audit: %s %w: migrate the models with the plugin (Plugin.AutoMigrate), which records their tables there", e.tablesTable(), errNoShardedTables)
	}
	return misplaced, err
}
