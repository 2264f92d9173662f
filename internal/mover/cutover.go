package mover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/shardrouter"
	"github.com/shardid/shardid/strategies"
)

// defaultFreezeLease bounds a freeze whose mover stopped renewing it.
const defaultFreezeLease = 3 * time.Second

// cutoverAttempts is how often a cutover whose freeze lapsed (a renewal late
// on a busy source) is tried; the writes that went through meanwhile are in
// the log, which the next attempt drains.
const cutoverAttempts = 3

// cutover freezes the range on the source, drains the log, compares the two
// sides, advances the target's ID sources and writes the map that sends the
// range to the target. A difference thaws the range and fails the move.
func (mv *run) cutover(ctx context.Context) error {
	if mv.servedByTarget() {
		mv.st.MapVersion = mv.d.MapVersion() // written by a run that stopped before saving its state
		return nil
	}
	for attempt := 1; ; attempt++ {
		err := mv.cutoverOnce(ctx)
		if !errors.Is(err, fence.ErrLapsed) || attempt == cutoverAttempts {
			return err
		}
		mv.d.Events().Warn("shardid: the freeze lapsed before the cutover committed; freezing again", "from", mv.st.Logical.From, "through", mv.st.Logical.To, "attempt", attempt)
	}
}

// cutoverOnce is one attempt at the cutover, under a freeze the mover renews
// while it runs. The seal on the source, then the map, commit it; until
// the seal any failure thaws the range, and a mover that dies leaves a
// freeze that lapses by itself; after it, a map write whose outcome is not
// known leaves the range sealed: the map may send it to the target already.
func (mv *run) cutoverOnce(ctx context.Context) (err error) {
	lease := mv.req.FreezeLease
	if lease <= 0 {
		lease = defaultFreezeLease
	}
	committed := false
	if err := mv.stillHolds(ctx); err != nil {
		return err
	}
	if err := mv.announceFreeze(ctx, 3*lease); err != nil {
		return errors.Join(err, mv.endAnnouncement(context.WithoutCancel(ctx)))
	}
	frozenAt := time.Now()
	if err := mv.fence.FreezeFor(ctx, mv.source, mv.fr, lease); err != nil {
		return errors.Join(err, mv.endAnnouncement(context.WithoutCancel(ctx)))
	}
	sealed := false
	frozen, stopRenewing := mv.renewFreeze(ctx, lease)
	defer func() {
		stopRenewing()
		if !committed {
			thawing, cancel := context.WithTimeout(context.WithoutCancel(ctx), lease)
			defer cancel()
			if !sealed { // once sealed, the map may name the target already: the source takes no write of the range again
				err = errors.Join(err, mv.fence.Thaw(thawing, mv.source, mv.fr))
			}
			err = errors.Join(err, mv.endAnnouncement(thawing))
		}
	}()
	lapsed := func(err error) error {
		if cause := context.Cause(frozen); errors.Is(cause, fence.ErrLapsed) {
			return cause
		}
		return err
	}
	mv.st.FrozenAt = frozenAt.UTC()
	mv.progress(Progress{Phase: PhaseCutover, Step: "frozen"})
	if err := mv.sameColumns(frozen); err != nil {
		return lapsed(err)
	}
	if err := mv.noNewTables(frozen); err != nil {
		return lapsed(err)
	}
	for {
		n, err := mv.replay(frozen)
		if missingParent(err) { // a key made since the move ordered the tables
			changed, rerr := mv.reordered(frozen)
			if rerr != nil {
				return lapsed(rerr)
			} else if changed {
				continue
			}
		}
		if err != nil {
			return lapsed(err)
		}
		if n == 0 {
			break
		}
	}
	for _, t := range mv.tables {
		src, dst, err := mv.summarizeBoth(frozen, t)
		if err != nil {
			return lapsed(err)
		}
		if src != dst {
			return fmt.Errorf("%w: %s: %d rows (checksum %s) on %s, %d (checksum %s) on %s",
				ErrVerify, t.name, src.Rows, src.Sum, mv.st.From, dst.Rows, dst.Sum, mv.st.To)
		}
	}
	if err := mv.stillHolds(frozen); err != nil { // a run that lost its lock does not seal
		return lapsed(err)
	}
	mv.progress(Progress{Phase: PhaseCutover, Step: "verified"})
	if err := mv.advance(frozen); err != nil {
		return lapsed(err)
	}
	if err := stopRenewing(); err != nil {
		return err
	}
	// Sealed, the source takes no write of the range again: the map may send it on.
	if err := mv.fence.Seal(ctx, mv.source, mv.fr); err != nil {
		return err
	}
	sealed = true
	served := *mv.st // the record the map is written with: the range served by the target
	served.Phase = PhaseServing
	version, err := mv.writeMap(ctx, func(version int64) *mapstore.MoveState {
		served.Frozen, served.MapVersion, served.CutoverAt = time.Since(frozenAt), version, time.Now().UTC()
		return &served
	})
	if errors.Is(err, mapstore.ErrCancelling) {
		return fmt.Errorf("%w: a cancel of the move of %d-%d began (CancelMove, by a run that found the move's lock free): the map is not written, and the cancel ends the move (run it again, CancelMove or shardid move cancel, if it stopped)", ErrInvalid, mv.st.Logical.From, mv.st.Logical.To)
	}
	if err != nil {
		if _, readErr := mv.d.RefreshMap(context.WithoutCancel(ctx)); readErr != nil || !mv.servedByTarget() {
			return fmt.Errorf("%w; the range stays sealed on %s, its writes refused, until the move is run again", err, mv.st.From)
		}
		version = mv.d.MapVersion() // written, though its answer was lost
	}
	committed = true
	mv.progress(Progress{Phase: PhaseCutover, Step: "map written"})
	if served.MapVersion != version { // not the version this run's figures were recorded with
		served.Frozen, served.MapVersion, served.CutoverAt = time.Since(frozenAt), version, time.Now().UTC()
	}
	mv.st.Frozen, mv.st.MapVersion, mv.st.CutoverAt = served.Frozen, served.MapVersion, served.CutoverAt
	if _, err := mv.d.RefreshMap(ctx); err != nil {
		mv.d.Events().Warn("shardid: the map the move wrote cannot be read yet; it is read at the next refresh",
			"from", mv.st.Logical.From, "through", mv.st.Logical.To, "to", mv.st.To, "error", err)
	}
	return nil
}

// renewFreeze renews the freeze every third of its lease until stopped.
// The context it returns ends, with fence.ErrLapsed as its cause, when the
// freeze lapsed; stop waits for the renewer and returns that error.
func (mv *run) renewFreeze(ctx context.Context, lease time.Duration) (context.Context, func() error) {
	frozen, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var lapsed error
	go func() {
		defer close(done)
		tick := time.NewTicker(lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-frozen.Done():
				return
			case <-tick.C:
			}
			renewing, stop := context.WithTimeout(frozen, lease/3)
			err := mv.fence.Renew(renewing, mv.source, mv.fr, lease)
			stop()
			if errors.Is(err, fence.ErrLapsed) || errors.Is(err, fence.ErrNotOpen) {
				lapsed = err
				cancel(err)
				return
			} // another error: the next renewal, or the seal, finds out whether the freeze held
		}
	}()
	var once sync.Once
	return frozen, func() error {
		once.Do(func() {
			cancel(nil)
			<-done
		})
		return lapsed
	}
}

// sameColumns fails the move's check when a table's columns on the source
// changed since the copy began (a migration during the move): the rows
// copied and replayed before it lack the new columns. The move run again
// copies those tables anew (newRun).
func (mv *run) sameColumns(ctx context.Context) error {
	for _, t := range mv.tables {
		now, err := columnsOf(ctx, mv.source, t.dialect, t.name)
		if err != nil {
			return err
		}
		if !slices.Equal(now, t.columns) {
			return mv.columnsChangedOnSource(ctx, t, now)
		}
	}
	return nil
}

// noNewTables fails the move's check when a sharded table it does not carry
// was recorded since it began: a migration that raced its start (on SQLite
// the migrations' lock holds within one process). The move neither fences
// nor copies it, and its rows of the range would stay on the source, which
// the new map no longer reads.
func (mv *run) noNewTables(ctx context.Context) error {
	recorded, err := mv.d.Tables(ctx, nil)
	if err != nil {
		return err
	}
	var fresh []string
	for _, t := range recorded {
		if !slices.ContainsFunc(mv.tables, func(m *movedTable) bool { return strings.EqualFold(m.name, t.Name) }) {
			fresh = append(fresh, t.Name)
		}
	}
	if len(fresh) > 0 {
		return fmt.Errorf("%w: the sharded tables %v were made during the move, which neither fences nor copies them (a migration that raced its start): cancel it (CancelMove), then move again",
			ErrVerify, fresh)
	}
	return nil
}

// columnsChangedOnSource is the check's failure for a table whose columns
// on the source are now, no longer those the copy began with; a column
// added there that the target lacks (a migration that stopped part way)
// must be migrated there before a copy anew can carry it.
func (mv *run) columnsChangedOnSource(ctx context.Context, t *movedTable, now []string) error {
	onTarget, err := columnsOf(ctx, mv.target, t.dialect, t.name)
	if lacks := missing(now, onTarget); err == nil && len(lacks) > 0 {
		return targetLacks(t, mv.st.To, mv.st.From, lacks)
	}
	return columnsChanged(t, mv.st.From, describeChange(t.columns, now))
}

// targetLacks is the check's failure for a table that lacks on the target
// columns the source has: running the move again cannot carry them.
func targetLacks(t *movedTable, target, source string, lacks []string) error {
	return fmt.Errorf("%w: %s on %s has no column %s, which %s has: finish the migration on every database (ids.AutoMigrate, or the migrator's change run again), then run the move again",
		ErrVerify, t.name, target, strings.Join(lacks, ", "), source)
}

// columnsChangedUnder makes a phase's failure the move's check failing when
// a table's columns changed under it (a migration during the move): the
// copy's and the replay's SQL name the columns the copy began with, and one
// dropped since fails them with the driver's error, as does a target's
// column changed so that it cannot take the source's rows. A failure with
// the columns as they were is returned as it is.
func (mv *run) columnsChangedUnder(ctx context.Context, failure error) error {
	if errors.Is(failure, ErrVerify) || errors.Is(failure, ErrInvalid) || ctx.Err() != nil { // a refusal says why already
		return failure
	}
	for _, t := range mv.tables {
		onSource, err := columnsOf(ctx, mv.source, t.dialect, t.name)
		if err == nil && !slices.Equal(onSource, t.columns) {
			return fmt.Errorf("%w (it failed with: %v)", mv.columnsChangedOnSource(ctx, t, onSource), failure)
		}
		// The target may hold more columns than the source, not fewer.
		onTarget, err := columnsOf(ctx, mv.target, t.dialect, t.name)
		if lacks := missing(t.columns, onTarget); err == nil && len(lacks) > 0 {
			return fmt.Errorf("%w (it failed with: %v)", targetLacks(t, mv.st.To, mv.st.From, lacks), failure)
		}
		// A migration of the target alone since the prepare checked it.
		if why, err := mv.columnsMisfit(ctx, t); err == nil && why != "" {
			return fmt.Errorf("%w: table %s on %s: %s; then run the move again (it failed with: %v)", ErrVerify, t.name, mv.st.To, why, failure)
		}
	}
	return failure
}

// columnsChanged is the check's failure for a table whose columns changed
// on database db during the move.
func columnsChanged(t *movedTable, db, change string) error {
	return fmt.Errorf("%w: %s: its columns changed on %s during the move (%s); run the move again, which copies it anew",
		ErrVerify, t.name, db, change)
}

// describeChange names the columns added to before and dropped from it.
func describeChange(before, now []string) string {
	var parts []string
	if added := missing(now, before); len(added) > 0 {
		parts = append(parts, "added "+strings.Join(added, ", "))
	}
	if dropped := missing(before, now); len(dropped) > 0 {
		parts = append(parts, "dropped "+strings.Join(dropped, ", "))
	}
	if len(parts) == 0 {
		return "reordered"
	}
	return strings.Join(parts, "; ")
}

// missing is the columns of want that have lacks: added or dropped ones.
func missing(want, have []string) []string {
	var out []string
	for _, c := range want {
		if !slices.Contains(have, c) {
			out = append(out, c)
		}
	}
	return out
}

// summarizeBoth summarizes a table's rows of the range on both sides at
// once: the range is frozen meanwhile.
func (mv *run) summarizeBoth(ctx context.Context, t *movedTable) (src, dst summary, err error) {
	var wg sync.WaitGroup
	var dstErr error
	wg.Go(func() { dst, dstErr = t.summarize(ctx, mv.target, mv.st.Logical) })
	src, err = t.summarize(ctx, mv.source, mv.st.Logical)
	wg.Wait()
	return src, dst, errors.Join(err, dstErr)
}

// servedByTarget reports whether the shared map already sends the range to
// the target.
func (mv *run) servedByTarget() bool {
	m := mv.d.ShardMap()
	for s := mv.st.Logical.From; s <= mv.st.Logical.To; s++ {
		if m.Physical(s) != mv.to {
			return false
		}
	}
	return true
}

// writeMap writes the next map version, with the range on the target and
// the snowflake floor of the moved shards, and the move's record that saved
// returns, in one transaction.
func (mv *run) writeMap(ctx context.Context, saved func(version int64) *mapstore.MoveState) (int64, error) {
	return editMapWith(ctx, mv.d, func(next *mapstore.Map) (bool, error) {
		current, err := mv.d.MapOf(next)
		if err != nil {
			return false, err
		}
		physical := make([]shardrouter.Physical, current.Len())
		for k := range physical {
			physical[k].Name = current.Name(k)
			for _, sh := range current.Logical(k) {
				if sh < mv.st.Logical.From || sh > mv.st.Logical.To {
					physical[k].Logical = append(physical[k].Logical, Range{From: sh, To: sh})
				}
			}
			if k == mv.to {
				physical[k].Logical = append(physical[k].Logical, mv.st.Logical)
			}
		}
		moved, err := shardrouter.NewMap(current.ShardCount(), physical)
		if err != nil {
			return false, err
		}
		next.Physical = mapstore.MapOf(moved, next.Version).Physical
		if tick := mv.snowflakeFloor(); tick > 0 {
			next.Floors = withFloor(next.Floors, mapstore.Floor{Logical: mv.st.Logical, Tick: tick})
		}
		next.Copies = append(next.Copies, mapstore.Physical{Name: mv.st.From, Logical: []Range{mv.st.Logical}})
		next.Freezing = withoutFreezing(next.Freezing, mv.st.Logical)
		return true, nil
	}, saved)
}

// withFloor adds floor to floors, in place of one of the same range.
func withFloor(floors []mapstore.Floor, floor mapstore.Floor) []mapstore.Floor {
	for i, f := range floors {
		if f.Logical == floor.Logical {
			floors[i].Tick = max(f.Tick, floor.Tick)
			return floors
		}
	}
	return append(floors, floor)
}

// snowflakeFloor is the time tick the snowflake IDs of the moved shards must
// pass on the target: the highest of the range the move saw, and the freeze.
func (mv *run) snowflakeFloor() int64 {
	layout := mv.d.Layout()
	var tick int64
	for _, t := range mv.tables {
		maxima := map[string]int64{}
		if t.strategy == strategies.NameSnowflake {
			maxima[t.name] = mv.st.MaxKeys[t.name]
		}
		for _, c := range t.idColumns {
			if c.Strategy == strategies.NameSnowflake {
				maxima[t.name+"."+c.Column] = mv.st.MaxKeys[t.name+"."+c.Column]
			}
		}
		for _, highest := range maxima {
			// The freeze's own time too: IDs of rows deleted before the move.
			tick = max(tick, layout.Ticks(mv.st.FrozenAt))
			if highest > 0 {
				tick = max(tick, layout.Decode(highest).Ticks)
			}
		}
	}
	return tick
}
