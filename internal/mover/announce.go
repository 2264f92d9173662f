package mover

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/shardid/shardid/internal/mapstore"
)

// defaultAnnounceWait bounds how long a cutover waits for the live
// processes to read its announcement unless the request says; one that has
// not held nothing, and its writes the triggers refuse as before.
const defaultAnnounceWait = 2 * time.Second

// editMap writes the next version of the shared map as edit makes it from
// the latest, and reads it; edit reports whether it changed anything. An
// error is the write's: the version written is read at the next refresh
// if not now.
func editMap(ctx context.Context, d Driver, edit func(next *mapstore.Map) (bool, error)) (int64, error) {
	return editMapWith(ctx, d, edit, nil)
}

// editMapWith is editMap whose write also saves, in the same transaction,
// the move state that saved returns for the version written, unless saved
// is nil.
func editMapWith(ctx context.Context, d Driver, edit func(next *mapstore.Map) (bool, error), saved func(version int64) *mapstore.MoveState) (int64, error) {
	s := d.Store()
	for range 8 { // each round loses only to another writer of the map
		latest, err := s.Latest(ctx)
		if err != nil {
			return 0, err
		}
		if latest == nil {
			return 0, errors.New("the shared map table is empty")
		}
		next := *latest
		next.Version, next.Floors = latest.Version+1, slices.Clone(latest.Floors) // a process that reads a later version first still passes them
		next.Copies, next.Freezing = slices.Clone(latest.Copies), slices.Clone(latest.Freezing)
		if changed, err := edit(&next); err != nil || !changed {
			return latest.Version, err
		}
		write := func() error { return s.Write(ctx, &next) }
		if saved != nil {
			write = func() error { return s.WriteWithMove(ctx, &next, saved(next.Version)) }
		}
		if err := write(); err == nil {
			_, _ = d.RefreshMap(ctx)
			return next.Version, nil
		} else if !mapstore.DuplicateKey(err) {
			return 0, err
		}
	}
	return 0, errors.New("shardid: other processes kept writing the shared map first")
}

// announceFreeze tells the processes that the range's cutover (or the
// creation of its triggers) begins, so that they hold the writes of it that
// cannot be run again alone before those begin, and waits (up to
// the request's AnnounceWait) for them to have read it; the announcement
// lasts until withdrawn, or that wait and lasts at the most.
func (mv *run) announceFreeze(ctx context.Context, lasts time.Duration) error {
	wait := mv.req.AnnounceWait
	if wait <= 0 {
		wait = defaultAnnounceWait
	}
	until := time.Now().Add(wait + lasts).UnixMilli()
	version, err := editMap(ctx, mv.d, func(next *mapstore.Map) (bool, error) {
		next.Freezing = append(withoutFreezing(next.Freezing, mv.st.Logical), mapstore.Freezing{Logical: mv.st.Logical, Until: until})
		return true, nil
	})
	if err != nil {
		return err
	}
	waiting, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := waitForProcesses(waiting, mv.d.Store(), version); err != nil && ctx.Err() == nil {
		mv.d.Events().Warn("shardid: processes did not read the cutover's announcement in time; their writes of the range with Before hooks may fail with ErrShardMoved",
			"from", mv.st.Logical.From, "through", mv.st.Logical.To, "to", mv.st.To, "error", err)
	}
	return ctx.Err()
}

// endAnnouncement withdraws the announcement of a cutover that did not
// commit: the processes holding writes of the range let them go.
func (mv *run) endAnnouncement(ctx context.Context) error {
	_, err := editMap(ctx, mv.d, func(next *mapstore.Map) (bool, error) {
		kept := withoutFreezing(next.Freezing, mv.st.Logical)
		changed := len(kept) != len(next.Freezing)
		next.Freezing = kept
		return changed, nil
	})
	return err
}

// withoutFreezing returns announced without the announcement of r.
func withoutFreezing(announced []mapstore.Freezing, r Range) []mapstore.Freezing {
	return slices.DeleteFunc(announced, func(f mapstore.Freezing) bool { return f.Logical == r })
}
