package shardid

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardid/shardid/internal/mapstore"
)

// deleteChunk is how many rows a cancel or a cleanup deletes at a time.
const deleteChunk = 1000

// CancelMove stops the move of r before its cutover: the source serves the
// range as before, without triggers, and the target's copies are deleted.
// After the cutover it fails: the target serves the range (move it back, or
// CleanupMove). models are the move's, as given to Move (nil: as there).
func (p *Plugin) CancelMove(ctx context.Context, r Range, models ...any) error {
	mv, unlock, err := p.endingMover(ctx, r, models)
	if err != nil {
		return err
	}
	defer unlock()
	if mv.servedByTarget() || phaseIndex(mv.st.Phase) >= phaseIndex(PhaseServing) {
		return fmt.Errorf("%w: logical shards %d-%d are served by %s since map version %d: it is too late to cancel; CleanupMove, or move them back",
			ErrMoveInvalid, r.From, r.To, mv.st.To, mv.st.MapVersion)
	}
	if err := mv.unfence(ctx); err != nil {
		return err
	}
	for _, t := range mv.tables {
		if err := deleteRange(ctx, t, mv.target, r); err != nil {
			return fmt.Errorf("shardid: deleting the copies of %s on %s: %w", t.name, mv.st.To, err)
		}
	}
	mv.st.Phase = PhaseCancelled
	return p.maps.SaveMove(ctx, mv.st)
}

// CleanupMove ends a move after its cutover: once every live process routes
// by the new map (a process counts as live if it noted itself within three
// of its own refresh periods and a few seconds), it deletes the source's copies of the range in chunks
// and drops the source's triggers. It waits for lagging processes until ctx
// ends, and then fails naming them.
func (p *Plugin) CleanupMove(ctx context.Context, r Range, models ...any) error {
	mv, unlock, err := p.endingMover(ctx, r, models)
	if err != nil {
		return err
	}
	defer unlock()
	if mv.st.Phase != PhaseServing {
		return fmt.Errorf("%w: the move of %d-%d is in phase %s; only a move that reached %s can be cleaned up", ErrMoveInvalid, r.From, r.To, mv.st.Phase, PhaseServing)
	}
	if err := p.waitForProcesses(ctx, mv.st.MapVersion); err != nil {
		return err
	}
	if mv.fence.Dialect == "sqlite" {
		// No session state for the triggers to read: the fence goes first.
		// SQLite has one writing process, which routes by the new map.
		if err := mv.unfence(ctx); err != nil {
			return err
		}
	}
	if err := mv.deleteCopies(ctx); err != nil {
		return err
	}
	if err := p.forgetCopy(ctx, mv.st.From, r); err != nil {
		return err
	}
	if mv.fence.Dialect != "sqlite" {
		if err := mv.unfence(ctx); err != nil {
			return err
		}
	}
	mv.st.Phase = PhaseCleaned
	return p.maps.SaveMove(ctx, mv.st)
}

// forgetCopy writes the next map version without the frozen copy of r on
// source, which is gone.
func (p *Plugin) forgetCopy(ctx context.Context, source string, r Range) error {
	for range 8 { // each round loses only to another writer of the map
		latest, err := p.maps.Latest(ctx)
		if err != nil || latest == nil {
			return err
		}
		next := *latest
		next.Version, next.Floors = latest.Version+1, nil
		next.Copies = slices.DeleteFunc(slices.Clone(latest.Copies), func(c mapstore.Physical) bool {
			return c.Name == source && slices.Equal(c.Logical, []Range{r})
		})
		if len(next.Copies) == len(latest.Copies) {
			return nil
		}
		if err := p.maps.Write(ctx, &next); err == nil || !mapstore.DuplicateKey(err) {
			if err == nil {
				_, err = p.refreshMap(ctx)
			}
			return err
		}
	}
	return errors.New("shardid: other processes kept writing the shared map first")
}

// deleteCopies deletes the source's copies of the range on a connection of
// its own that passes the fence, and that is then closed, not handed back to
// the pool with the bypass set.
func (mv *mover) deleteCopies(ctx context.Context) (err error) {
	conn, err := mv.source.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() {
		// Raw with ErrBadConn closes the connection; Close then has nothing left to do.
		if discard := conn.Raw(func(any) error { return driver.ErrBadConn }); !errors.Is(discard, driver.ErrBadConn) {
			err = errors.Join(err, discard, conn.Close())
		}
	}()
	if mv.fence.Dialect != "sqlite" {
		if err := mv.fence.Bypass(ctx, conn); err != nil {
			return err
		}
	}
	for _, t := range mv.tables {
		if err := deleteRange(ctx, t, conn, mv.st.Logical); err != nil {
			return fmt.Errorf("shardid: deleting the copies of %s on %s: %w", t.name, mv.st.From, err)
		}
	}
	return nil
}

// endingMover loads a move that is to be cancelled or cleaned up.
func (p *Plugin) endingMover(ctx context.Context, r Range, models []any) (*mover, func(), error) {
	if p.maps == nil {
		return nil, nil, fmt.Errorf("%w: no Config.Shards", ErrMoveInvalid)
	}
	unlock, err := p.lockMove(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	mv, err := p.loadEnding(ctx, r, models)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return mv, unlock, nil
}

// loadEnding loads a move that is to be cancelled or cleaned up.
func (p *Plugin) loadEnding(ctx context.Context, r Range, models []any) (*mover, error) {
	if err := p.maps.PrepareMoves(ctx); err != nil {
		return nil, err
	}
	st, err := p.maps.LoadMove(ctx, r)
	if err != nil {
		return nil, err
	}
	if st == nil || st.Phase == PhaseCancelled || st.Phase == PhaseCleaned {
		return nil, fmt.Errorf("%w: no move of logical shards %d-%d under way", ErrMoveInvalid, r.From, r.To)
	}
	mv, err := p.newMover(ctx, Move{Logical: r, To: st.To, Models: models})
	if err != nil {
		return nil, err
	}
	return mv, nil
}

// unfence removes the range's fence row and the triggers and change log it
// needed: one move at a time runs off a source, so nothing else needs them.
func (mv *mover) unfence(ctx context.Context) error {
	if err := mv.fence.Close(ctx, mv.source, mv.fr); err != nil {
		return err
	}
	for _, t := range mv.tables {
		if err := mv.fence.Uninstall(ctx, mv.source, t.fenced); err != nil {
			return err
		}
	}
	for {
		changes, err := mv.fence.Changes(ctx, mv.source, 1000)
		if err != nil || len(changes) == 0 {
			return err
		}
		seqs := make([]int64, len(changes))
		for i, c := range changes {
			seqs[i] = c.Seq
		}
		if err := mv.fence.Forget(ctx, mv.source, seqs); err != nil {
			return err
		}
	}
}

// execQuerier is a pool or one connection of it.
type execQuerier interface {
	rangeQuerier
	deleter
}

// deleteRange deletes a table's rows of the range, a chunk at a time, so
// that no one statement holds locks on all of them.
func deleteRange(ctx context.Context, t *movedTable, db execQuerier, r Range) error {
	for {
		keys, err := t.rangeKeys(ctx, db, r, deleteChunk)
		if err != nil {
			return err
		}
		if err := t.deleteKeys(ctx, db, keys); err != nil {
			return err
		}
		if len(keys) < deleteChunk {
			return nil
		}
	}
}

// waitForProcesses waits until no live process routes by a map older than
// version.
func (p *Plugin) waitForProcesses(ctx context.Context, version int64) error {
	for {
		behind, err := p.maps.Behind(ctx, version)
		if err != nil {
			return err
		}
		if len(behind) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: processes still route by a map before version %d: %s: %w", ErrMoveInvalid, version, strings.Join(behind, ", "), ctx.Err())
		case <-time.After(p.maps.Heartbeat() / 2):
		}
	}
}

// MoveStatus is a move as the plugin's database records it.
type MoveStatus struct {
	Logical    Range
	From, To   string
	Phase      string
	Rows       map[string]int64
	Changes    int64
	Frozen     time.Duration
	MapVersion int64
	Started    time.Time
	CutoverAt  time.Time
}

// Moves lists the moves the plugin's database records, ended ones too.
func (p *Plugin) Moves(ctx context.Context) ([]MoveStatus, error) {
	if p.maps == nil {
		return nil, nil
	}
	if err := p.maps.PrepareMoves(ctx); err != nil {
		return nil, err
	}
	list, err := p.maps.Moves(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]MoveStatus, len(list))
	for i, st := range list {
		out[i] = MoveStatus{Logical: st.Logical, From: st.From, To: st.To, Phase: st.Phase, Rows: st.Copied, Changes: st.Changes,
			Frozen: st.Frozen, MapVersion: st.MapVersion, Started: st.Started, CutoverAt: st.CutoverAt}
	}
	return out, nil
}
