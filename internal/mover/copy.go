package mover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// copyAll copies each table's rows of the range, in primary key order (a
// join table's: its owner's column first), from where a run before stopped.
// A row refused for a parent the target lacks, by a key made since the
// move ordered the tables, has the tables ordered again, and the copy goes
// on in that order, each table from where it stopped.
func (mv *run) copyAll(ctx context.Context) error {
	for {
		err := mv.copyInOrder(ctx)
		if !missingParent(err) {
			return err
		}
		if changed, rerr := mv.reordered(ctx); rerr != nil || !changed {
			return errors.Join(err, rerr)
		}
	}
}

// copyInOrder copies the tables not copied yet, in their order.
func (mv *run) copyInOrder(ctx context.Context) error {
	for _, t := range mv.tables {
		if mv.st.Done[t.name] {
			continue
		}
		if err := mv.copyTable(ctx, t); err != nil {
			return fmt.Errorf("copying %s: %w", t.name, err)
		}
	}
	return nil
}

func (mv *run) chunkSize(t *movedTable) int {
	n := mv.req.ChunkSize
	if n <= 0 {
		n = 1000
	}
	return min(n, max(1, maxParameters/len(t.columns)))
}

func (mv *run) copyTable(ctx context.Context, t *movedTable) error {
	var total int64
	if mv.req.Progress != nil {
		var err error
		if total, err = t.count(ctx, mv.source, mv.st.Logical); err != nil {
			return err
		}
	}
	most := mv.chunkSize(t)
	limit := most // fewer after a chunk that chunkBytes cut short, the rest of which was read for nothing
	for {
		args := []any{mv.st.Logical.From, mv.st.Logical.To}
		cursor, started := mv.st.Cursors[t.name]
		if started {
			args = append(args, t.afterArgs(cursor)...)
		}
		var rows [][]any
		var full bool
		err := valuesInUTC(ctx, mv.source, t.dialect, func(source dataConn) (err error) {
			rows, full, err = t.readValues(ctx, source, t.chunkQuery(started, limit), args...)
			return err
		})
		if err != nil {
			return err
		}
		if err := mv.stillHolds(ctx); err != nil {
			return err
		}
		if len(rows) > 0 {
			if err := mv.upsertCopied(ctx, t, rows); err != nil {
				return err
			}
			last := t.cursorOf(rows[len(rows)-1])
			mv.st.Cursors[t.name] = last
			mv.st.Copied[t.name] += int64(len(rows))
			mv.noteKey(t, last) // a join table's cursor is a list: no ID source to advance
		}
		if len(rows) < limit && !full {
			if err := mv.copyDeferred(ctx, t); err != nil {
				return err
			}
			mv.st.Done[t.name] = true
		}
		if full {
			limit = len(rows) + 1
		} else {
			limit = min(most, 2*limit)
		}
		if err := mv.d.Store().SaveMove(ctx, mv.st); err != nil {
			return err
		}
		mv.progress(Progress{Phase: PhaseCopy, Step: "chunk", Table: t.name, Copied: mv.st.Copied[t.name], Total: total})
		if mv.st.Done[t.name] {
			return nil
		}
		if mv.req.Throttle > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(mv.req.Throttle):
			}
		}
	}
}

// upsertCopied writes a chunk of the copy on the target. A row whose
// foreign key references a row of another moved table that the target
// lacks, one written on the source after that table's copy read past it,
// has its parent in the change log, and so has a copy of a row the source
// deleted or changed since it was copied whose value of a unique index a
// row of the chunk now takes: the log is replayed and the rows left
// read again on the source and written as they are now, for as long as the
// replay finds changes to apply. (Not as the chunk read them: the replay
// may have written a later version of one and forgotten its change, which
// the chunk's older values would then undo for good.) Rows left of a table
// referencing itself may wait for their parents in its later chunks: their
// keys are kept for copyDeferred, which replays.
func (mv *run) upsertCopied(ctx context.Context, t *movedTable, rows [][]any) error {
	left, err := mv.upsertInAnyOrder(ctx, t, rows)
	held := 0 // replays after which a unique value was held still
	for missingParent(err) || uniqueConflict(err) {
		if t.referencesItself && missingParent(err) {
			for _, row := range left {
				mv.st.Deferred[t.name] = append(mv.st.Deferred[t.name], normalizeKey(row[t.keyIndex()]))
			}
			return nil
		}
		n, rerr := mv.replay(ctx)
		if rerr != nil || n == 0 {
			return errors.Join(err, rerr)
		}
		if uniqueConflict(err) && n < replayBatch {
			// The change of a copy holding the value was in the log, all
			// of it replayed: held still after two, the value is held by
			// a row the move does not carry, which no replay changes.
			if held++; held > 2 {
				return err
			}
		}
		// Read again: the replay deleted any copy of those the source no
		// longer has.
		_, err = mv.replayKeys(ctx, t, keysOfRows(t, left))
	}
	return err
}

// keysOfRows is the distinct keys of rows, as the change log names them
// (a join table's: its owners').
func keysOfRows(t *movedTable, rows [][]any) []any {
	var keys []any
	seen := map[any]bool{}
	for _, row := range rows {
		k := normalizeKey(row[t.keyIndex()])
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// upsertInAnyOrder upserts rows on the target, those of a table
// referencing itself parents first, then in any order; it returns the rows
// not written.
func (mv *run) upsertInAnyOrder(ctx context.Context, t *movedTable, rows [][]any) ([][]any, error) {
	write := func(rows [][]any) error {
		return valuesInUTC(ctx, mv.target, t.dialect, func(target dataConn) error { return t.upsert(ctx, target, rows) })
	}
	if mv.anyOrder {
		return inAnyOrderWhile(rows, write, func(err error) bool { return referencedRow(err) || uniqueConflict(err) })
	}
	err := write(rows) // most chunks of a table referencing itself hold parents first too
	if err == nil {
		return nil, nil
	}
	if !t.referencesItself || !referencedRow(err) {
		return rows, err
	}
	ordered, waiting := t.parentsFirst(ctx, mv.target, rows)
	left, err := inAnyOrder(ordered, write)
	if err != nil || len(waiting) == 0 {
		return append(left, waiting...), err
	}
	if err := write(waiting); err != nil { // tried together: refused together while their parents are not there
		return waiting, err
	}
	return nil, nil
}

// copyDeferred writes, after a table's last chunk, its rows the chunks
// could not write before their parents: read again from the source,
// replayKeys keys at a time (there may be more of them than a statement
// takes parameters), again while some go through, as parents among them
// do, and while the change log has parents to replay.
func (mv *run) copyDeferred(ctx context.Context, t *movedTable) error {
	for pending := mv.st.Deferred[t.name]; len(pending) > 0; {
		var left []any
		var refusal error
		for keys := range slices.Chunk(pending, replayKeys) {
			keys = slices.Clone(keys)
			for i, k := range keys {
				keys[i] = jsonKey(k)
			}
			if _, err := mv.replayKeys(ctx, t, keys); missingParent(err) {
				left, refusal = append(left, keys...), err
			} else if err != nil {
				return err
			}
		}
		if len(left) == len(pending) {
			if n, rerr := mv.replay(ctx); rerr != nil || n == 0 {
				return errors.Join(refusal, rerr)
			}
		}
		pending = left
	}
	delete(mv.st.Deferred, t.name)
	return nil
}

// jsonKey turns a key read back from the state's JSON into the key's type.
func jsonKey(k any) any {
	switch v := k.(type) {
	case json.Number: // the store reads numbers so, exactly
		if n, err := v.Int64(); err == nil {
			return n
		}
		return v.String()
	case float64:
		return int64(v)
	}
	return k
}

// noteKey remembers the highest int64 key of the range seen, deleted rows'
// too, for advancing the target's ID sources past it.
func (mv *run) noteKey(t *movedTable, key any) {
	if n, ok := jsonKey(key).(int64); ok && n > mv.st.MaxKeys[t.name] {
		mv.st.MaxKeys[t.name] = n
	}
}
