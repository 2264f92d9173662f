package mover

import (
	"context"
	"fmt"
	"slices"

	"github.com/shardid/shardid/internal/sqlscan"
)

// catchUp replays the change log until its backlog is small.
func (mv *run) catchUp(ctx context.Context) error {
	below := int64(mv.req.CatchUpBelow)
	if below <= 0 {
		below = 200
	}
	last := int64(-1)
	refused := 0 // rounds in a row that a foreign key refused
	for {
		if err := mv.stillHolds(ctx); err != nil {
			return err
		}
		backlog, err := mv.fence.Backlog(ctx, mv.source)
		if err != nil {
			return err
		}
		mv.progress(Progress{Phase: PhaseCatchUp, Step: "round", Backlog: backlog})
		if caughtUp(backlog, last, below) {
			return nil
		}
		last = backlog
		_, err = mv.replay(ctx)
		if missingParent(err) {
			// A key made since the move ordered the tables may ask for
			// another order, in which the round runs again.
			changed, rerr := mv.reordered(ctx)
			if rerr != nil {
				return rerr
			} else if changed {
				continue
			}
		}
		if missingParent(err) && refused < 3 {
			// A row read again on the source references a parent written
			// after the round read the log: the next round carries it.
			refused++
			continue
		} else if err != nil {
			return err
		}
		refused = 0
	}
}

// caughtUp reports whether a catch-up whose backlog was previous (-1: none
// yet) and now is backlog may freeze the range: the backlog is below below,
// or it stopped shrinking while within steadyBacklog, as it does when
// writers keep pace with the replay; the freeze then drains it in one round.
func caughtUp(backlog, previous, below int64) bool {
	return backlog < below || previous >= 0 && backlog <= steadyBacklog && backlog >= previous
}

const (
	// replayBatch is how many changes one round of the replay reads. A round
	// costs what its distinct keys cost, and a bulk update logs a change per
	// row each time: rounds of a thousand changes fell behind writers that
	// updated the same few hundred rows over and over.
	replayBatch = 20000
	// replayKeys is how many keys one read of the source asks for.
	replayKeys = 1000
	// steadyBacklog is the largest backlog the catch-up freezes on when it
	// stops shrinking: the range is frozen while the rest is replayed.
	steadyBacklog = 1000
)

// replay applies one batch of the change log to the target: each changed key
// is read again on the source and written, or deleted, on the target, once
// however many times it was logged. It returns how many changes it applied.
func (mv *run) replay(ctx context.Context) (int, error) {
	changes, err := mv.fence.Changes(ctx, mv.source, replayBatch)
	if err != nil || len(changes) == 0 {
		return 0, err
	}
	var tables []string
	keysOf := map[string][]any{}
	logged := map[string]map[any]bool{}
	seqs := make([]int64, len(changes))
	for i, c := range changes {
		seqs[i] = c.Seq
		if logged[c.Table] == nil {
			tables = append(tables, c.Table)
			logged[c.Table] = map[any]bool{}
		}
		if !logged[c.Table][c.Key] {
			logged[c.Table][c.Key] = true
			keysOf[c.Table] = append(keysOf[c.Table], c.Key)
		}
	}
	for _, name := range tables {
		if !slices.ContainsFunc(mv.tables, func(t *movedTable) bool { return t.name == name }) {
			return 0, fmt.Errorf("the change log names table %s, which the move does not carry", name)
		}
	}
	err = mv.applyChanges(ctx, keysOf)
	if uniqueConflict(err) {
		// A row read again takes a unique value that the target's copy of
		// another row of the range still holds: one the source deleted,
		// whose delete comes after the round's writes, or one changed that
		// gave the value up, whose write came later in the statement. The
		// round's deletes go first, then its writes again, in any order
		// that lets each through.
		err = mv.deleteGoneFirst(ctx, keysOf)
		if err == nil {
			mv.anyOrder = true
			err = mv.applyChanges(ctx, keysOf)
			mv.anyOrder = false
		}
	}
	if err != nil {
		return 0, err
	}
	if err := mv.fence.Forget(ctx, mv.source, seqs); err != nil {
		return 0, err
	}
	mv.st.Changes += int64(len(changes))
	return len(changes), nil
}

// replayKeys copies the rows of t with the given keys from the source to
// the target as they are now, and returns the keys of those the source no
// longer has, for the caller to delete on the target.
func (mv *run) replayKeys(ctx context.Context, t *movedTable, keys []any) ([]any, error) {
	if t.join { // the key logged is the owner's: all its join rows are replaced
		return nil, t.replaceOwners(ctx, mv.source, mv.target, keys)
	}
	for _, k := range keys {
		mv.noteKey(t, k)
	}
	// Read again up to chunkBytes at a time: the keys a read cut short did
	// not reach are asked again, fewer at a time; those a whole read did
	// not find are gone.
	var gone []any
	pending, per := keys, len(keys)
	for len(pending) > 0 {
		ask := pending[:min(per, len(pending))]
		var rows [][]any
		var full bool
		err := valuesInUTC(ctx, mv.source, t.dialect, func(source dataConn) (err error) {
			rows, full, err = t.byKeys(ctx, source, ask)
			return err
		})
		if err != nil {
			return nil, err
		}
		found := map[any]bool{}
		for _, row := range rows {
			found[normalizeKey(row[t.keyIndex()])] = true
		}
		if _, err := mv.upsertInAnyOrder(ctx, t, rows); err != nil {
			return nil, err
		}
		var unread []any
		for _, k := range ask {
			switch {
			case found[k]:
			case full:
				unread = append(unread, k)
			default:
				gone = append(gone, k)
			}
		}
		if full && len(unread) == len(ask) {
			return nil, fmt.Errorf("reading the changed rows of %s again: the rows read match none of the keys asked", t.name)
		}
		if full {
			per = max(1, len(rows))
		}
		pending = append(unread, pending[len(ask):]...)
	}
	return gone, nil
}

// applyChanges writes each table's rows of the keys changed as the source
// has them now, in the tables' order (parents before the children their
// foreign keys reference them from), and deletes those the source no
// longer has, in the reverse one.
func (mv *run) applyChanges(ctx context.Context, keysOf map[string][]any) error {
	gone := map[string][]any{}
	for _, t := range mv.tables {
		for keys := range slices.Chunk(keysOf[t.name], replayKeys) {
			if err := mv.stillHolds(ctx); err != nil {
				return err
			}
			left, err := mv.replayKeys(ctx, t, keys)
			if err != nil {
				return err
			}
			if len(left) > 0 {
				gone[t.name] = append(gone[t.name], left...)
			}
		}
	}
	return mv.deleteCopiesOfGone(ctx, gone)
}

// deleteCopiesOfGone deletes on the target the copies of the rows gone from the
// source, children first, once no row there that the move does not carry
// would be refused or changed by it.
func (mv *run) deleteCopiesOfGone(ctx context.Context, gone map[string][]any) error {
	if err := mv.withCopiesGoneWithThem(ctx, gone); err != nil {
		return err
	}
	if err := mv.refusedByRowsReferencingDeletedCopies(ctx, gone); err != nil {
		return err
	}
	for i := len(mv.tables) - 1; i >= 0; i-- {
		t := mv.tables[i]
		for keys := range slices.Chunk(gone[t.name], replayKeys) {
			if _, err := t.deleteInAnyOrder(ctx, mv.target, keys); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteGoneFirst deletes on the target the copies of the rows of keysOf
// that the source no longer has (a join table's rows are replaced whole
// by applyChanges), before their tables' writes.
func (mv *run) deleteGoneFirst(ctx context.Context, keysOf map[string][]any) error {
	gone := map[string][]any{}
	for _, t := range mv.tables {
		if t.join {
			continue
		}
		for keys := range slices.Chunk(keysOf[t.name], replayKeys) {
			if err := mv.stillHolds(ctx); err != nil {
				return err
			}
			found, err := readRows(ctx, mv.source, 1, "SELECT "+sqlscan.Quote(t.dialect, t.key)+" FROM "+sqlscan.Quote(t.dialect, t.name)+
				" WHERE "+sqlscan.Quote(t.dialect, t.key)+" IN ("+placeholders(t.dialect, 0, len(keys))+")", keys...)
			if err != nil {
				return err
			}
			have := map[any]bool{}
			for _, row := range found {
				have[normalizeKey(row[0])] = true
			}
			for _, k := range keys {
				if !have[k] {
					gone[t.name] = append(gone[t.name], k)
				}
			}
		}
	}
	return mv.deleteCopiesOfGone(ctx, gone)
}
