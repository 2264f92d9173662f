package mover

import (
	"context"
	"fmt"
	"slices"
)

// catchUp replays the change log until its backlog is small.
func (mv *run) catchUp(ctx context.Context) error {
	below := int64(mv.req.CatchUpBelow)
	if below <= 0 {
		below = 200
	}
	last := int64(-1)
	for {
		backlog, err := mv.fence.Backlog(ctx, mv.source)
		if err != nil {
			return err
		}
		mv.progress(Progress{Phase: PhaseCatchUp, Step: "round", Backlog: backlog})
		if caughtUp(backlog, last, below) {
			return nil
		}
		last = backlog
		if _, err := mv.replay(ctx); err != nil {
			return err
		}
	}
}

// caughtUp reports whether a catch-up whose backlog was previous (-1: none
// yet) and now is backlog may freeze the range: the backlog is below below,
// or it stopped shrinking within one batch, as it does when writers keep
// pace with the replay; the freeze then drains it in about one round.
func caughtUp(backlog, previous, below int64) bool {
	return backlog < below || previous >= 0 && backlog <= replayBatch && backlog >= previous
}

// replayBatch is how many changes one round of the replay applies.
const replayBatch = 1000

// replay applies one batch of the change log to the target: each changed key
// is read again on the source and written, or deleted, on the target. It
// returns how many changes it applied.
func (mv *run) replay(ctx context.Context) (int, error) {
	changes, err := mv.fence.Changes(ctx, mv.source, replayBatch)
	if err != nil || len(changes) == 0 {
		return 0, err
	}
	byTable := map[string][]any{}
	seqs := make([]int64, len(changes))
	for i, c := range changes {
		seqs[i] = c.Seq
		if !slices.Contains(byTable[c.Table], c.Key) {
			byTable[c.Table] = append(byTable[c.Table], c.Key)
		}
	}
	for name, keys := range byTable {
		i := slices.IndexFunc(mv.tables, func(t *movedTable) bool { return t.name == name })
		if i < 0 {
			return 0, fmt.Errorf("the change log names table %s, which the move does not carry", name)
		}
		t := mv.tables[i]
		if t.join { // the key logged is the owner's: all its join rows are replaced
			if err := t.replaceOwners(ctx, mv.source, mv.target, keys); err != nil {
				return 0, err
			}
			continue
		}
		rows, err := t.byKeys(ctx, mv.source, keys)
		if err != nil {
			return 0, err
		}
		present := map[any]bool{}
		for _, row := range rows {
			present[normalizeKey(row[t.keyIndex()])] = true
		}
		var gone []any
		for _, k := range keys {
			mv.noteKey(t, k)
			if !present[k] {
				gone = append(gone, k)
			}
		}
		if err := t.upsert(ctx, mv.target, rows); err != nil {
			return 0, err
		}
		if err := t.deleteKeys(ctx, mv.target, gone); err != nil {
			return 0, err
		}
	}
	if err := mv.fence.Forget(ctx, mv.source, seqs); err != nil {
		return 0, err
	}
	mv.st.Changes += int64(len(changes))
	return len(changes), nil
}
