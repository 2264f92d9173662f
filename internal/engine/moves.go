package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/mover"
	"github.com/shardid/shardid/internal/sqlerr"
)

// Move runs a move of logical shards with this engine's databases and map.
func (e *Engine) Move(ctx context.Context, req mover.Request) (*mover.Report, error) {
	if err := e.notClosed(); err != nil {
		return nil, err
	}
	if e.maps == nil {
		return nil, fmt.Errorf("%w: no Config.Shards: every logical shard is on the plugin's database", mover.ErrInvalid)
	}
	report, err := e.moves.Move(ctx, moverDriver{e}, req)
	return report, e.namedUnreachable(ctx, err)
}

// namedUnreachable makes an error of a move, cancel or cleanup that lost a
// connection an ErrShardUnavailable naming the databases that do not answer
// now, the plugin's own among them (the mover runs its SQL on their pools,
// which do not name them). A timeout of a context that ended is the
// context's error.
func (e *Engine) namedUnreachable(ctx context.Context, err error) error {
	err = sqlerr.OfEndedContext(ctx, err)
	if err != nil && e.closed.Load() { // its pools closed under it: as a crash, it resumes when run again
		return fmt.Errorf("%w: closed while it ran; run it again (another process may) to resume it: %w", ErrPluginNotOpen, err)
	}
	if err == nil || errors.Is(err, ErrShardUnavailable) || !sqlerr.Unreachable(err) {
		return err
	}
	pinging, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.config.connectTimeout())
	defer cancel()
	results, _ := e.Ping(pinging)
	var down []string
	if own, ownErr := e.db.DB(); ownErr != nil || own.PingContext(pinging) != nil { // the map and the moves' records
		down = append(down, "the plugin's database")
	}
	for _, r := range results {
		if r.Kind == KindPhysical && r.Err != nil {
			down = append(down, r.Name)
		}
	}
	if len(down) == 0 {
		return fmt.Errorf("%w: a connection was lost, and every database answers again now; run it again: %w", ErrShardUnavailable, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrShardUnavailable, strings.Join(down, ", "), err)
}

// CancelMove stops the move of r before its cutover.
func (e *Engine) CancelMove(ctx context.Context, r Range, models []any) error {
	if err := e.notClosed(); err != nil {
		return err
	}
	if e.maps == nil {
		return fmt.Errorf("%w: no Config.Shards", mover.ErrInvalid)
	}
	return e.namedUnreachable(ctx, e.moves.Cancel(ctx, moverDriver{e}, r, models))
}

// CleanupMove ends a move after its cutover.
func (e *Engine) CleanupMove(ctx context.Context, r Range, models []any) error {
	if err := e.notClosed(); err != nil {
		return err
	}
	if e.maps == nil {
		return fmt.Errorf("%w: no Config.Shards", mover.ErrInvalid)
	}
	return e.namedUnreachable(ctx, e.moves.Cleanup(ctx, moverDriver{e}, r, models))
}

// Moves lists the moves the plugin's database records, ended ones too.
func (e *Engine) Moves(ctx context.Context) ([]mover.Status, error) {
	if err := e.notClosed(); err != nil {
		return nil, err
	}
	if e.maps == nil {
		return nil, nil
	}
	return e.moves.Moves(ctx, moverDriver{e})
}

// MoveStats returns the moves this process is running.
func (e *Engine) MoveStats() []mover.Stats { return e.moves.Stats() }

// Processes lists the processes of the shared map and the version each
// follows; none without Config.Shards.
func (e *Engine) Processes(ctx context.Context) ([]mapstore.Process, error) {
	if err := e.notClosed(); err != nil {
		return nil, err
	}
	if e.maps == nil {
		return nil, nil
	}
	return e.maps.Processes(ctx)
}
