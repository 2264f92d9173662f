package mover

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/sqlscan"
)

// deleteChunk is how many rows a cancel or a cleanup deletes at a time.
const deleteChunk = 1000

// Cancel stops the move of r before its cutover: the source serves the
// range as before, without triggers, and the target's copies are deleted.
// After the cutover it fails: the target serves the range. models are the
// move's, as given to Move (nil: as there).
func (m *Mover) Cancel(ctx context.Context, d Driver, r Range, models []any) error {
	mv, unlock, err := endingRun(ctx, d, r, models)
	if err != nil {
		return err
	}
	defer unlock()
	if mv.servedByTarget() || phaseIndex(mv.st.Phase) >= phaseIndex(PhaseServing) {
		return fmt.Errorf("%w: logical shards %d-%d are served by %s since map version %d: it is too late to cancel; move them back (Move to %s, which cleans this move up first), or clean it up (CleanupMove, or shardid move cleanup)",
			ErrInvalid, r.From, r.To, mv.st.To, mv.st.MapVersion, mv.st.From)
	}
	if mv.st.Phase != PhasePrepare {
		// Rows of the target's own ranges referencing its copies, which
		// the deletes below would fail on, or delete or change with them.
		// A target that does not answer fails the deletes, after the source
		// was given back its writes.
		err := mv.refusedByRowsAcrossTheEdge(ctx, mv.target, mv.st.To, true, "the cancel's deletes of the copies would fail, or cascade to rows the target serves", nil)
		if errors.Is(err, ErrInvalid) {
			return err
		}
	}
	// Decided in the plugin's database: a mover that runs on, its lock lost
	// with its session, may have sealed the cutover and be writing the map.
	err = d.Store().BeginCancel(ctx, r, func(latest *mapstore.Map) (bool, error) {
		m, err := d.MapOf(latest)
		if err != nil {
			return false, err
		}
		for s := r.From; s <= r.To; s++ {
			if m.Physical(s) != mv.to {
				return false, nil
			}
		}
		return true, nil
	})
	if errors.Is(err, mapstore.ErrServed) {
		return fmt.Errorf("%w: logical shards %d-%d are served by %s since a map written as the cancel began: it is too late to cancel; move them back (Move to %s), or clean the move up (CleanupMove)",
			ErrInvalid, r.From, r.To, mv.st.To, mv.st.From)
	} else if err != nil {
		return err
	}
	if err := mv.unfence(ctx); err != nil {
		return err
	}
	if mv.st.Phase != PhasePrepare { // before the copy, no row of the range on the target is the move's
		for _, t := range slices.Backward(mv.tables) { // children before the parents their foreign keys reference
			if err := deleteRange(ctx, t, mv.target, r); err != nil {
				return errs.Wrap(err, "deleting the copies of %s on %s", t.name, mv.st.To)
			}
		}
	}
	mv.st.Phase = PhaseCancelled
	return d.Store().SaveMove(ctx, mv.st)
}

// Cleanup ends a move after its cutover: once every live process routes by
// the new map, it deletes the source's copies of the range in chunks and
// drops the source's triggers. It waits for lagging processes until ctx
// ends, and then fails naming them.
func (m *Mover) Cleanup(ctx context.Context, d Driver, r Range, models []any) error {
	mv, unlock, err := endingRun(ctx, d, r, models)
	if err != nil {
		return err
	}
	defer unlock()
	return mv.cleanup(ctx)
}

// cleanup is Cleanup of a move loaded and locked.
func (mv *run) cleanup(ctx context.Context) error {
	d, r := mv.d, mv.st.Logical
	if mv.st.Phase != PhaseServing {
		return fmt.Errorf("%w: the move of %d-%d is in phase %s; only a move that reached %s can be cleaned up", ErrInvalid, r.From, r.To, mv.st.Phase, PhaseServing)
	}
	if err := mv.refusedByForeignKeys(ctx); err != nil { // a key made since the prepare
		return err
	}
	waitCtx, cancel := processWait(ctx)
	defer cancel()
	if err := waitForProcesses(waitCtx, d.Store(), mv.st.MapVersion); err != nil {
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
	if err := forgetCopy(ctx, d, mv.st.From, r); err != nil {
		return err
	}
	if mv.fence.Dialect != "sqlite" {
		if err := mv.unfence(ctx); err != nil {
			return err
		}
	}
	mv.st.Phase = PhaseCleaned
	return d.Store().SaveMove(ctx, mv.st)
}

type processWaitKey struct{}

// WithProcessWait bounds a cleanup's wait for processes that route by an
// older map to wait, and not the deletion that follows it, which only ctx
// bounds: a large copy takes longer to delete than anyone would wait for a
// lagging process (the command's --wait).
func WithProcessWait(ctx context.Context, wait time.Duration) context.Context {
	return context.WithValue(ctx, processWaitKey{}, wait)
}

// processWait is ctx bounded by its WithProcessWait, if it has one.
func processWait(ctx context.Context) (context.Context, context.CancelFunc) {
	if wait, ok := ctx.Value(processWaitKey{}).(time.Duration); ok {
		return context.WithTimeout(ctx, wait)
	}
	return ctx, func() {}
}

// forgetCopy writes the next map version without the frozen copy of r on
// source, which is gone.
func forgetCopy(ctx context.Context, d Driver, source string, r Range) error {
	_, err := editMap(ctx, d, func(next *mapstore.Map) (bool, error) {
		kept := slices.DeleteFunc(next.Copies, func(c mapstore.Physical) bool {
			return c.Name == source && slices.Equal(c.Logical, []Range{r})
		})
		changed := len(kept) != len(next.Copies)
		next.Copies = kept
		return changed, nil
	})
	return err
}

// deleteCopies deletes the source's copies of the range on a connection of
// its own that passes the fence, and that is then closed, not handed back to
// the pool with the bypass set.
func (mv *run) deleteCopies(ctx context.Context) (err error) {
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
	for _, t := range slices.Backward(mv.tables) { // children before the parents their foreign keys reference
		if err := deleteRange(ctx, t, conn, mv.st.Logical); err != nil {
			return errs.Wrap(err, "deleting the copies of %s on %s", t.name, mv.st.From)
		}
	}
	return nil
}

// endingRun locks and loads a move that is to be cancelled or cleaned up.
func endingRun(ctx context.Context, d Driver, r Range, models []any) (*run, func(), error) {
	if err := withinLayout(d, r); err != nil {
		return nil, nil, err
	}
	unlock, held, err := lockMove(ctx, d.Store(), r)
	if err != nil {
		return nil, nil, err
	}
	mv, err := loadEnding(ctx, d, r, models)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	mv.held = held
	return mv, unlock, nil
}

// loadEnding loads a move that is to be cancelled or cleaned up.
func loadEnding(ctx context.Context, d Driver, r Range, models []any) (*run, error) {
	if err := d.Store().PrepareMoves(ctx); err != nil {
		return nil, err
	}
	st, err := d.Store().LoadMove(ctx, r)
	if err != nil {
		return nil, err
	}
	if st == nil || st.Phase == PhaseCancelled || st.Phase == PhaseCleaned {
		return nil, fmt.Errorf("%w: no move of logical shards %d-%d under way", ErrInvalid, r.From, r.To)
	}
	return newRun(ctx, d, Request{Logical: r, To: st.To, Models: models, ending: true})
}

// unfence removes the range's fence row and the triggers and change log it
// needed: one move at a time runs off a source, so nothing else needs them.
func (mv *run) unfence(ctx context.Context) error {
	if err := mv.fence.Close(ctx, mv.source, mv.fr); err != nil {
		return err
	}
	for _, t := range mv.tables {
		// A move that failed before its prepare installed the fence has no triggers.
		if err := mv.fence.Uninstall(ctx, mv.source, t.fenced); err != nil && !mv.fence.NotInstalled(err) {
			return err
		}
	}
	for {
		changes, err := mv.fence.Changes(ctx, mv.source, 1000)
		if mv.fence.NotInstalled(err) {
			return nil // a move that failed before its prepare installed the fence there
		}
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
	if t.referencesItself {
		return deleteRangeChildrenFirst(ctx, t, db, r)
	}
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

// deleteRangeChildrenFirst deletes the range's rows of a table
// referencing itself from the highest key down, so that replies, made
// after the rows they reference, go first; a row still referenced (by a
// row made before it, re-parented) is deleted after the rest.
func deleteRangeChildrenFirst(ctx context.Context, t *movedTable, db execQuerier, r Range) error {
	var held, below []any
	for {
		keys, err := t.rangeKeys(ctx, db, r, deleteChunk, below...)
		if err != nil {
			return err
		}
		left, err := t.deleteInAnyOrder(ctx, db, keys)
		if err != nil && !referencedRow(err) {
			return err
		}
		held = append(held, left...)
		if len(keys) < deleteChunk {
			break
		}
		below = keys[len(keys)-1:]
	}
	left, err := t.deleteInAnyOrder(ctx, db, held)
	if err != nil && t.dialect == "mysql" && referencedRow(err) {
		return deleteCycle(ctx, t, db, left, err)
	}
	return err
}

// deleteCycle deletes rows of a table referencing itself that reference
// each other in a cycle (re-parented so while the move ran), which InnoDB,
// checking each row as it deletes it, refuses in any order: when no row but
// theirs references them, they are deleted together with the session's
// foreign key checks off, which no other row relies on then; otherwise
// refusal is returned.
func deleteCycle(ctx context.Context, t *movedTable, db execQuerier, keys []any, refusal error) (err error) {
	if len(keys) == 0 || 2*len(keys) > maxParameters {
		return refusal
	}
	var conn *sql.Conn
	switch c := db.(type) {
	case *sql.Conn:
		conn = c
	case *sql.DB:
		if conn, err = c.Conn(ctx); err != nil {
			return err
		}
		defer func() {
			if err != nil { // the session's checks may be off still
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			}
			conn.Close()
		}()
	default:
		return refusal
	}
	refs, err := readRows(ctx, conn, 3, "SELECT TABLE_NAME, COLUMN_NAME, REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE() AND REFERENCED_TABLE_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME = ?", t.name)
	if err != nil {
		return err
	}
	in := placeholders(t.dialect, 0, len(keys))
	for _, ref := range refs {
		child, column, parent := asText(ref[0]), asText(ref[1]), asText(ref[2])
		q := "SELECT 1 FROM " + sqlscan.Quote(t.dialect, child) + " WHERE " + sqlscan.Quote(t.dialect, column) + " IN (SELECT " + sqlscan.Quote(t.dialect, parent) + " FROM " + sqlscan.Quote(t.dialect, t.name) + " WHERE " + sqlscan.Quote(t.dialect, t.key) + " IN (" + in + "))"
		args := keys
		if strings.EqualFold(child, t.name) {
			q += " AND " + sqlscan.Quote(t.dialect, t.key) + " NOT IN (" + in + ")"
			args = append(slices.Clone(keys), keys...)
		}
		others, err := readRows(ctx, conn, 1, q+" LIMIT 1", args...)
		if err != nil {
			return err
		}
		if len(others) > 0 {
			return refusal
		}
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION foreign_key_checks = 0"); err != nil {
		return err
	}
	derr := t.deleteKeys(ctx, conn, keys)
	if _, err := conn.ExecContext(ctx, "SET SESSION foreign_key_checks = 1"); err != nil {
		return errors.Join(derr, err)
	}
	return derr
}

// waitForProcesses waits until no live process routes by a map older than
// version.
func waitForProcesses(ctx context.Context, s *mapstore.Store, version int64) error {
	var seen []string // behind at the last look
	stillBehind := func() error {
		return fmt.Errorf("%w: processes still route by a map before version %d: %s: %w", ErrInvalid, version, strings.Join(seen, ", "), ctx.Err())
	}
	for {
		behind, err := s.Behind(ctx, version)
		if err != nil {
			if ctx.Err() != nil && len(seen) > 0 {
				return stillBehind() // the caller's time ran out during a look: name those it waited for
			}
			return err
		}
		if len(behind) == 0 {
			return nil
		}
		seen = behind
		select {
		case <-ctx.Done():
			return stillBehind()
		case <-time.After(s.Heartbeat() / 2):
		}
	}
}
