package mover

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/mapstore"
)

// newRun checks the request against the current map and loads or starts
// the move's state.
func newRun(ctx context.Context, d Driver, req Request) (*run, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
	store := d.Store()
	if !req.DryRun { // a dry run writes nothing: without the table, no move is recorded
		if err := store.PrepareMoves(ctx); err != nil {
			return nil, err
		}
	}
	if _, err := d.RefreshMap(ctx); err != nil {
		return nil, errs.Wrap(err, "reading the shared map")
	}
	names := d.Databases()
	r := req.Logical
	if err := withinLayout(d, r); err != nil {
		return nil, err
	}
	to := slices.Index(names, req.To)
	if to < 0 {
		return nil, bad("%q is not a physical database of Config.Shards", req.To)
	}
	if err := fence.CheckTarget(req.To); err != nil { // before the target's tables are made, not at the fence
		return nil, bad("shard %q cannot take a move: the triggers name the target in their refusal, %w", req.To, err)
	}
	st, err := store.LoadMove(ctx, r)
	if err != nil {
		return nil, err
	}
	if st != nil && (st.Phase == PhaseCancelled || st.Phase == PhaseCleaned) {
		st = nil // ended: the range may move again
	}
	if st != nil && st.Cancelling && !req.ending { // a cancel run again ends it
		return nil, cancelBegun(st)
	}
	if st != nil && st.Phase == PhaseServing && st.To != req.To {
		return nil, bad("logical shards %d-%d were moved to %s, whose move is not cleaned up: clean it up first (CleanupMove, or shardid move cleanup), then move them on", r.From, r.To, st.To)
	}
	if st != nil && st.To != req.To {
		return nil, bad("logical shards %d-%d are moving to %s; cancel that move first (CancelMove, or shardid move cancel)", r.From, r.To, st.To)
	}
	shardMap := d.ShardMap()
	from := shardMap.Physical(r.From)
	if st != nil {
		from = slices.Index(names, st.From)
	} else {
		for s := r.From; s <= r.To; s++ {
			if k := shardMap.Physical(s); k != from {
				return nil, bad("logical shards %d-%d are on more than one database (%d on %s, %d on %s); move each part on its own",
					r.From, r.To, r.From, names[from], s, names[k])
			}
		}
		if from == to {
			return nil, bad("logical shards %d-%d are on %s already", r.From, r.To, req.To)
		}
		if err := oneMoveAt(ctx, store, names[from], r); err != nil {
			return nil, err
		}
	}
	if from < 0 {
		return nil, bad("the move's source %s is not in Config.Shards", st.From)
	}
	mv := &run{d: d, req: req, from: from, to: to, fr: fence.Range{From: r.From, To: r.To}, fence: d.Fence()}
	for k, db := range map[int]**sql.DB{from: &mv.source, to: &mv.target} {
		opened, err := d.Open(ctx, k)
		if err != nil {
			return nil, err
		}
		*db = opened
	}
	if mv.tables, err = movedTables(ctx, d, req.Models, st, mv.source, req.ending); err != nil {
		return nil, fmt.Errorf("the move's source %s: %w", names[from], err)
	}
	if mv.tables, err = byForeignKeys(ctx, mv.fence.Dialect, mv.tables, mv.source, mv.target); err != nil {
		return nil, err
	}
	mv.resumed = st != nil
	if st == nil {
		st = &mapstore.MoveState{Logical: r, From: names[from], To: req.To, Phase: PhasePrepare, Started: time.Now().UTC(),
			Cursors: map[string]any{}, Copied: map[string]int64{}, Done: map[string]bool{}, MaxKeys: map[string]int64{}}
		for _, t := range mv.tables {
			st.Tables = append(st.Tables, t.name)
		}
		slices.Sort(st.Tables)
	}
	copyAnewWhereColumnsChanged(st, mv.tables)
	for _, m := range []*map[string]int64{&st.Copied, &st.MaxKeys} {
		if *m == nil { // a state read back without them
			*m = map[string]int64{}
		}
	}
	if st.Cursors == nil {
		st.Cursors = map[string]any{}
	}
	if st.Done == nil {
		st.Done = map[string]bool{}
	}
	if st.Deferred == nil {
		st.Deferred = map[string][]any{}
	}
	mv.st = st
	return mv, nil
}

// copyAnewWhereColumnsChanged records the columns each table's copy
// carries, and sends a resumed move whose table's columns changed since
// (a migration during the move) back to copying that table from its start:
// the rows copied before lack the new columns. The upsert rewrites them.
func copyAnewWhereColumnsChanged(st *mapstore.MoveState, tables []*movedTable) {
	if st.Columns == nil {
		st.Columns = map[string][]string{}
	}
	for _, t := range tables {
		before, known := st.Columns[t.name]
		st.Columns[t.name] = t.columns
		if !known || slices.Equal(before, t.columns) || phaseIndex(st.Phase) >= phaseIndex(PhaseServing) {
			continue
		}
		delete(st.Cursors, t.name)
		delete(st.Done, t.name)
		delete(st.Copied, t.name)
		delete(st.Deferred, t.name)
		if phaseIndex(st.Phase) > phaseIndex(PhaseCopy) {
			st.Phase = PhaseCopy
		}
	}
}

// withinLayout refuses a range that is not one of the layout's logical
// shards, before any statement takes it (PostgreSQL would refuse a number
// past its int4 column in its own words).
func withinLayout(d Driver, r Range) error {
	if n := d.Layout().ShardCount(); r.From < 0 || r.From > r.To || r.To >= n {
		return fmt.Errorf("%w: logical shards %d-%d are not within 0-%d", ErrInvalid, r.From, r.To, n-1)
	}
	return nil
}

// oneMoveAt refuses a second move off the same source while one runs (the
// source's change log is the move's), and a move of r overlapping one that
// has not ended.
func oneMoveAt(ctx context.Context, store *mapstore.Store, source string, r Range) error {
	list, err := store.Moves(ctx)
	if err != nil {
		return err
	}
	for _, st := range list {
		if phaseIndex(st.Phase) < 0 || phaseIndex(st.Phase) >= phaseIndex(PhaseCleaned) {
			continue
		}
		if st.From == source && st.Phase == PhaseServing {
			return fmt.Errorf("%w: logical shards %d-%d moved off %s to %s, which serves them, and %s keeps their frozen copy until that move is cleaned up: clean it up first (CleanupMove, or shardid move cleanup)",
				ErrInvalid, st.Logical.From, st.Logical.To, source, st.To, source)
		}
		if st.From == source {
			return fmt.Errorf("%w: logical shards %d-%d are moving off %s (phase %s); finish or cancel that move first",
				ErrInvalid, st.Logical.From, st.Logical.To, source, st.Phase)
		}
		// Its source's triggers still fence the range, and its record would
		// end under this move's feet.
		if st.Logical.From <= r.To && r.From <= st.Logical.To {
			return fmt.Errorf("%w: logical shards %d-%d overlap the move of %d-%d from %s to %s (phase %s), which has not ended: finish, cancel or clean it up first",
				ErrInvalid, r.From, r.To, st.Logical.From, st.Logical.To, st.From, st.To, st.Phase)
		}
	}
	return nil
}

// plan reports what the move would copy, or what its prepare would refuse.
func (mv *run) plan(ctx context.Context) (*Report, error) {
	report := mv.report(false)
	report.Rows = map[string]int64{}
	if !mv.resumed {
		if err := mv.refusedByForeignKeys(ctx); err != nil {
			return nil, errs.Wrap(err, "move of %d-%d to %s, %s", mv.st.Logical.From, mv.st.Logical.To, mv.st.To, PhasePrepare)
		}
	}
	for _, t := range mv.tables {
		if !mv.resumed {
			if err := mv.wouldRefuse(ctx, t); err != nil {
				return nil, errs.Wrap(err, "move of %d-%d to %s, %s", mv.st.Logical.From, mv.st.Logical.To, mv.st.To, PhasePrepare)
			}
		}
		n, err := t.count(ctx, mv.source, mv.st.Logical)
		if err != nil {
			return nil, errs.Wrap(err, "counting %s on %s", t.name, mv.st.From)
		}
		report.Rows[t.name] = n
	}
	return report, nil
}
