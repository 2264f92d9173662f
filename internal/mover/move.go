package mover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/shardrouter"
)

// Range is an inclusive range of logical shards.
type Range = shardrouter.Range

var (
	// ErrInvalid is returned for a move that cannot be made as asked.
	ErrInvalid = errors.New("shardid: invalid move")
	// ErrVerify is returned when the copy of a table differs from the source
	// at the cutover; the range is thawed and stays on the source, and
	// running the move again replays and checks again.
	ErrVerify = errors.New("shardid: the copy differs from the source")
)

// Phases of a move, in order.
const (
	PhasePrepare   = "prepare"   // target tables, triggers on the source, ID sources advanced
	PhaseCopy      = "copy"      // rows of the range copied in key order
	PhaseCatchUp   = "catch-up"  // the change log replayed
	PhaseCutover   = "cutover"   // frozen on the source, log drained, verified, new map written
	PhaseServing   = "serving"   // the target serves the range; the source keeps a frozen copy
	PhaseCancelled = "cancelled" // cancelled before cutover
	PhaseCleaned   = "cleaned"   // the source's copies deleted, its triggers dropped
)

// Request asks for a range of logical shards to move, online, to another
// physical database. Its fields are those of the plugin's Move, documented
// there; it is plain data, safe for concurrent reads.
type Request struct {
	Logical      Range
	To           string
	Models       []any
	ChunkSize    int
	Throttle     time.Duration
	CatchUpBelow int
	FreezeLease  time.Duration
	AnnounceWait time.Duration
	Progress     func(Progress)
	DryRun       bool
	ending       bool // a cancel's or cleanup's run: it ends what the move began with
}

// Progress is where a move is. It is plain data, safe for concurrent reads.
type Progress struct {
	Phase   string
	Step    string // within the phase: "triggers", "chunk", "round", "frozen", "verified", "map written"
	Table   string
	Copied  int64 // rows of the table copied so far
	Total   int64 // rows of the table in the range when the copy began
	Backlog int64 // changes not yet replayed
}

// Report is what a move did. It is plain data, safe for concurrent reads.
type Report struct {
	Logical    Range
	From, To   string
	Phase      string
	Tables     []string
	Rows       map[string]int64 // rows copied per table (for a dry run: to copy)
	Changes    int64            // changes replayed from the source's log
	Frozen     time.Duration    // how long writes of the range were refused
	MapVersion int64            // the map version that sends the range to To
	Resumed    bool             // the move had begun before
	Served     bool             // the target served the range already when this run took the move: it changed nothing
}

// Mover runs the moves of one plugin and keeps the live stats of those it
// runs. Its zero value is ready to use; it is safe for concurrent use.
type Mover struct {
	live sync.Map // *run → *liveMove, the moves this process runs
}

// run is one run of a move, or of its cancel or cleanup. It is not safe for
// concurrent use.
type run struct {
	d              Driver
	req            Request
	st             *mapstore.MoveState
	from, to       int
	source, target *sql.DB
	fence          fence.Fence
	tables         []*movedTable
	fr             fence.Range
	resumed        bool                        // the move was recorded before this run
	held           func(context.Context) error // whether the run holds its move's lock still
	live           *liveMove
	// anyOrder has the replay write each read's rows in any order that
	// lets them through a unique index (see replay), as it does for a
	// table referencing itself through its foreign key.
	anyOrder bool
}

// Move moves a range of logical shards to another physical database while
// the application keeps reading and writing: prepare, copy, catch-up,
// cutover. Its state is kept in the store: running the same move again
// after a failure or a crash resumes it.
func (m *Mover) Move(ctx context.Context, d Driver, req Request) (*Report, error) {
	if err := checkTuning(req); err != nil {
		return nil, err
	}
	if err := withinLayout(d, req.Logical); err != nil {
		return nil, err
	}
	unlock, held, err := lockMove(ctx, d.Store(), req.Logical)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := cleanUpToMoveBack(ctx, d, req); err != nil {
		return nil, err
	}
	mv, err := startRun(ctx, d, req)
	if err != nil {
		return nil, err
	}
	mv.held = held
	if req.DryRun {
		return mv.plan(ctx)
	}
	if err := mv.stillFenced(ctx); err != nil {
		return nil, err
	}
	defer m.track(mv)()
	resumed, served := mv.resumed, mv.st.Phase == PhaseServing
	steps := []struct {
		phase string
		run   func(context.Context) error
	}{
		{PhasePrepare, mv.prepare},
		{PhaseCopy, mv.copyAll},
		{PhaseCatchUp, mv.catchUp},
		{PhaseCutover, mv.cutover},
	}
	log := d.Events()
	for i, step := range steps {
		if phaseIndex(mv.st.Phase) > phaseIndex(step.phase) {
			continue
		}
		log.Info("shardid: move phase", "from", req.Logical.From, "through", req.Logical.To, "to", req.To, "phase", step.phase)
		if err := step.run(ctx); err != nil {
			err = mv.referencesAcrossTheEdgeUnder(ctx, mv.columnsChangedUnder(ctx, err))
			log.Warn("shardid: move phase failed", "from", req.Logical.From, "through", req.Logical.To, "to", req.To, "phase", step.phase, "error", err)
			return mv.report(resumed), errs.Wrap(err, "move of %d-%d to %s, %s", req.Logical.From, req.Logical.To, req.To, step.phase)
		}
		next := PhaseServing
		if i+1 < len(steps) {
			next = steps[i+1].phase
		}
		mv.st.Phase = next
		if err := d.Store().SaveMove(ctx, mv.st); err != nil {
			return mv.report(resumed), err
		}
	}
	if served {
		report := mv.report(resumed)
		report.Served = true
		return report, nil
	}
	log.Info("shardid: move phase", "from", req.Logical.From, "through", req.Logical.To, "to", req.To, "phase", PhaseServing, "map_version", mv.st.MapVersion)
	return mv.report(resumed), nil
}

// cleanUpToMoveBack cleans up the move of the range that serves it on its
// target when the request moves it back to that move's source: the frozen
// copy there is older than the rows the target took since, and a range has
// one move on record.
func cleanUpToMoveBack(ctx context.Context, d Driver, req Request) error {
	if req.DryRun {
		return nil
	}
	if err := d.Store().PrepareMoves(ctx); err != nil {
		return err
	}
	st, err := d.Store().LoadMove(ctx, req.Logical)
	if err != nil || st == nil || st.Phase != PhaseServing || st.From != req.To {
		return err
	}
	mv, err := loadEnding(ctx, d, req.Logical, req.Models)
	if err == nil {
		err = mv.cleanup(ctx)
	}
	if err != nil {
		return errs.Wrap(err, "cleaning up the move of %d-%d to %s before moving them back", req.Logical.From, req.Logical.To, st.To)
	}
	return nil
}

// minFreezeLease is the shortest FreezeLease: the fence's deadline counts
// milliseconds, and the mover renews it every third of the lease.
const minFreezeLease = 30 * time.Millisecond

// checkTuning refuses a request's negative sizes and durations, whose zero
// is the default, and a FreezeLease too short to be renewed (an untyped 3
// meant as seconds would freeze the range for 3ns, and its renewer's ticker
// of lease/3 would panic).
func checkTuning(req Request) error {
	for name, n := range map[string]any{"ChunkSize": req.ChunkSize, "CatchUpBelow": req.CatchUpBelow, "Throttle": req.Throttle, "FreezeLease": req.FreezeLease, "AnnounceWait": req.AnnounceWait} {
		if reflect.ValueOf(n).Int() < 0 {
			return fmt.Errorf("%w: %s %v is negative (zero is the default)", ErrInvalid, name, n)
		}
	}
	if req.FreezeLease > 0 && req.FreezeLease < minFreezeLease {
		return fmt.Errorf("%w: FreezeLease %v is under %v: a time.Duration counts nanoseconds (write 3 * time.Second)", ErrInvalid, req.FreezeLease, minFreezeLease)
	}
	return nil
}

// startRun checks the request and records a new move, under the store's
// start lock and its migrations' lock: the check that no other move is under
// way off the source, the tables it carries, and the record are one step,
// which a move or a migration started at the same time waits for.
// A new move is recorded before any change, so that a run that dies is
// resumed.
func startRun(ctx context.Context, d Driver, req Request) (*run, error) {
	unlock, err := d.Store().LockMoveStart(ctx, migrationWait)
	if errors.Is(err, mapstore.ErrLocked) {
		return nil, fmt.Errorf("%w: another move is starting, or a migration of the plugin's database has run for over %v; run this one again once it ends", ErrInvalid, migrationWait)
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	mv, err := newRun(ctx, d, req)
	if err != nil || req.DryRun || mv.resumed {
		return mv, err
	}
	return mv, d.Store().SaveMove(ctx, mv.st)
}

// migrationWait is how long a move's start waits for a migration under way.
const migrationWait = time.Minute

// lockMove takes the lock of the move of r, which one run at a time holds,
// be it a mover, a cancel or a cleanup; it fails at once if another has it.
// held checks the lock is held still.
func lockMove(ctx context.Context, s *mapstore.Store, r Range) (unlock func(), held func(context.Context) error, err error) {
	unlock, held, err = s.LockMoveHeld(ctx, r)
	if errors.Is(err, mapstore.ErrLocked) {
		return nil, nil, fmt.Errorf("%w: another run holds the move of %d-%d (a mover, a cancel or a cleanup); wait for it to end", ErrInvalid, r.From, r.To)
	}
	return unlock, held, err
}

// stillHolds fails a run whose move's lock was lost with its session, before
// it writes again: another run (a cancel, the move run again) may hold it.
func (mv *run) stillHolds(ctx context.Context) error {
	if mv.held == nil {
		return nil
	}
	if err := mv.held(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: this run of the move of %d-%d lost its lock (%w); it stops, as another run may hold the lock now: run the move again, or cancel it",
			ErrInvalid, mv.st.Logical.From, mv.st.Logical.To, err)
	}
	return nil
}

// stillFenced refuses to resume a move past its prepare whose source no
// longer fences the range: a cancel of it began, and the writes since went
// unlogged, so only the cancel run again can end it.
func (mv *run) stillFenced(ctx context.Context) error {
	i := phaseIndex(mv.st.Phase)
	if !mv.resumed || i <= phaseIndex(PhasePrepare) || i >= phaseIndex(PhaseServing) || mv.servedByTarget() {
		return nil
	}
	open, err := mv.fence.IsOpen(ctx, mv.source, mv.fr)
	if err != nil || open {
		return err
	}
	return fmt.Errorf("%w: the move of %d-%d to %s was being cancelled: %s no longer fences the range, and its writes since are not logged; run the cancel again to end it (CancelMove, or shardid move cancel), then move the range anew",
		ErrInvalid, mv.st.Logical.From, mv.st.Logical.To, mv.st.To, mv.st.From)
}

// cancelBegun is the error of a move, run again, whose cancel began and has
// not ended: it cannot resume (its cutover would not be written), and only
// the cancel run again ends it.
func cancelBegun(st *mapstore.MoveState) error {
	return fmt.Errorf("%w: a cancel of the move of %d-%d to %s began and has not ended (it stopped midway, or runs now): the move cannot resume; run the cancel again to end it (CancelMove, or shardid move cancel), then move the range anew",
		ErrInvalid, st.Logical.From, st.Logical.To, st.To)
}

func phaseIndex(phase string) int {
	return slices.Index([]string{PhasePrepare, PhaseCopy, PhaseCatchUp, PhaseCutover, PhaseServing, PhaseCleaned}, phase)
}

func (mv *run) report(resumed bool) *Report {
	st := mv.st
	return &Report{Logical: st.Logical, From: st.From, To: st.To, Phase: st.Phase, Tables: st.Tables, Rows: st.Copied,
		Changes: st.Changes, Frozen: st.Frozen, MapVersion: st.MapVersion, Resumed: resumed}
}

func (mv *run) progress(pr Progress) {
	mv.live.note(pr)
	if mv.req.Progress != nil {
		mv.req.Progress(pr)
	}
}
