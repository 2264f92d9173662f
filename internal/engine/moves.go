package engine

import (
	"context"
	"fmt"

	"github.com/shardid/shardid/internal/mover"
)

// Move runs a move of logical shards with this engine's databases and map.
func (e *Engine) Move(ctx context.Context, req mover.Request) (*mover.Report, error) {
	if e.maps == nil {
		return nil, fmt.Errorf("%w: no Config.Shards: every logical shard is on the plugin's database", mover.ErrInvalid)
	}
	return e.moves.Move(ctx, moverDriver{e}, req)
}

// CancelMove stops the move of r before its cutover.
func (e *Engine) CancelMove(ctx context.Context, r Range, models []any) error {
	if e.maps == nil {
		return fmt.Errorf("%w: no Config.Shards", mover.ErrInvalid)
	}
	return e.moves.Cancel(ctx, moverDriver{e}, r, models)
}

// CleanupMove ends a move after its cutover.
func (e *Engine) CleanupMove(ctx context.Context, r Range, models []any) error {
	if e.maps == nil {
		return fmt.Errorf("%w: no Config.Shards", mover.ErrInvalid)
	}
	return e.moves.Cleanup(ctx, moverDriver{e}, r, models)
}

// Moves lists the moves the plugin's database records, ended ones too.
func (e *Engine) Moves(ctx context.Context) ([]mover.Status, error) {
	if e.maps == nil {
		return nil, nil
	}
	return e.moves.Moves(ctx, moverDriver{e})
}

// MoveStats returns the moves this process is running.
func (e *Engine) MoveStats() []mover.Stats { return e.moves.Stats() }
