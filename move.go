package shardid

import (
	"context"
	"time"

	"github.com/shardid/shardid/internal/engine"
	"github.com/shardid/shardid/internal/mover"
)

// Move asks for a range of logical shards to move, online, to another
// physical database.
type Move struct {
	// Logical is the range of logical shards to move; they must all be on one
	// physical database now.
	Logical Range
	// To names the physical database of Config.Shards that receives them.
	To string
	// Models are the sharded models whose rows move. Default: every sharded
	// table the plugin has migrated, in any process (the table shardid_tables).
	// Given, they must cover every one of those tables: a table left out
	// keeps its rows of the range on the source, which the new map no longer
	// reads, so the move is refused (ErrMoveInvalid, naming it).
	Models []any
	// ChunkSize is how many rows the copy reads and writes at a time.
	// Default: 1000.
	ChunkSize int
	// Throttle is a pause after each chunk, to spare a busy source. Default: none.
	Throttle time.Duration
	// CatchUpBelow is the backlog of changes below which the range is frozen
	// for the cutover. Default: 200. A backlog that stops shrinking is frozen
	// once it is no more than 1,000 changes (a round of the replay reads up
	// to 20,000).
	CatchUpBelow int
	// FreezeLease bounds the freeze at the cutover should the mover die or
	// be cancelled: the source's triggers take writes of the range again
	// once it has passed (by the source's clock) unless the mover renewed it
	// (every third of it) or the cutover committed. Default: 3 s; at least
	// 30 ms.
	FreezeLease time.Duration
	// AnnounceWait bounds how long the creation of the triggers and the
	// cutover each wait for the live processes to read their announcement
	// (so that they hold the writes with Before hooks that would race it).
	// A process that has not read it by then is not waited for: such writes
	// of the range may fail with ErrShardMoved. Default: 2 s. A negative
	// ChunkSize, Throttle, CatchUpBelow, FreezeLease or AnnounceWait is
	// refused (ErrMoveInvalid).
	AnnounceWait time.Duration
	// Progress, if set, is called after each chunk and each round of the
	// catch-up.
	Progress func(MoveProgress)
	// DryRun returns the plan (the report's Tables and Rows to copy) and
	// changes nothing.
	DryRun bool
}

// MoveProgress is where a move is.
type MoveProgress struct {
	Phase   string
	Step    string // within the phase: "triggers", "chunk", "round", "frozen", "verified", "map written"
	Table   string
	Copied  int64 // rows of the table copied so far
	Total   int64 // rows of the table in the range when the copy began
	Backlog int64 // changes not yet replayed
}

// MoveReport is what a move did.
type MoveReport struct {
	Logical    Range
	From, To   string
	Phase      string
	Tables     []string
	Rows       map[string]int64 // rows copied per table (for a dry run: to copy)
	Changes    int64            // changes replayed from the source's log
	Frozen     time.Duration    // how long writes of the range were refused
	MapVersion int64            // the map version that sends the range to To
	Resumed    bool             // the move had begun before
	// Served says the target served the range already when this run took
	// the move's lock (another run, or an earlier one, cut it over): the
	// run changed nothing, and the report is that move's.
	Served bool
}

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
	// Running: a run (a mover, a cancel or a cleanup) holds the move now, as
	// the database's lock says. A move under way (prepare to cutover) that no
	// run holds stopped, or its mover was killed: run it again to resume it,
	// or cancel it.
	Running bool
	// Cancelling: a cancel of the move began and has not ended; Phase is the
	// move's when it began. One that no run holds stopped midway: the move
	// cannot resume, and only CancelMove run again ends it.
	Cancelling bool
}

// Process is a process of the shared map, as the plugin's database records
// it: each notes itself there with the map version it routes by, every
// MapRefresh; a move's cleanup waits for the live ones to follow its map.
type Process struct {
	Owner      string    // host:pid:random
	MapVersion int64     // the version it last said it routes by
	Seen       time.Time // when it last said so
	Live       bool      // seen within three of its heartbeats and a margin for clocks
	Self       bool      // the process that asked
}

// MoveStats is where a move that this process runs is, for exporters.
type MoveStats struct {
	Logical  Range
	From, To string
	Phase    string
	Copied   map[string]int64 // rows copied so far, by table
	Backlog  int64            // changes logged on the source and not yet replayed
	Frozen   time.Duration    // how long writes of the range have been refused
}

// Move moves a range of logical shards to another physical database while
// the application keeps reading and writing (see the package documentation
// and DESIGN: prepare, copy, catch-up, cutover). Its state is kept in the
// plugin's database: running the same move again after a failure or a
// crash resumes it. Afterwards the source keeps a frozen copy until
// CleanupMove. A target that holds rows of the range already, which no move
// copied there, is refused (ErrMoveInvalid, naming their keys).
func (p *Plugin) Move(ctx context.Context, req Move) (*MoveReport, error) {
	var progress func(mover.Progress)
	if req.Progress != nil {
		progress = func(pr mover.Progress) { req.Progress(MoveProgress(pr)) }
	}
	report, err := p.engine().Move(ctx, mover.Request{Logical: req.Logical, To: req.To, Models: req.Models, ChunkSize: req.ChunkSize,
		Throttle: req.Throttle, CatchUpBelow: req.CatchUpBelow, FreezeLease: req.FreezeLease, AnnounceWait: req.AnnounceWait, Progress: progress, DryRun: req.DryRun})
	return (*MoveReport)(report), err
}

// CancelMove stops the move of r before its cutover: the source serves the
// range as before, without triggers, and the target's copies are deleted.
// After the cutover it fails: the target serves the range (move it back, or
// CleanupMove). models are the move's, as given to Move (nil: as there).
func (p *Plugin) CancelMove(ctx context.Context, r Range, models ...any) error {
	return p.engine().CancelMove(ctx, r, models)
}

// CleanupMove ends a move after its cutover: once every live process routes
// by the new map (a process counts as live if it noted itself within three
// of its own refresh periods and a few seconds), it deletes the source's copies of the range in chunks
// and drops the source's triggers. It waits for lagging processes until ctx
// ends, and then fails naming them.
func (p *Plugin) CleanupMove(ctx context.Context, r Range, models ...any) error {
	return p.engine().CleanupMove(ctx, r, models)
}

// Moves lists the moves the plugin's database records, ended ones too.
func (p *Plugin) Moves(ctx context.Context) ([]MoveStatus, error) {
	list, err := p.engine().Moves(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]MoveStatus, len(list))
	for i, st := range list {
		out[i] = MoveStatus(st)
	}
	return out, nil
}

// Processes lists the processes of the shared map, live ones first, and the
// map version each routes by; none without Config.Shards.
func (p *Plugin) Processes(ctx context.Context) ([]Process, error) {
	list, err := p.engine().Processes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Process, len(list))
	for i, pr := range list {
		out[i] = Process(pr)
	}
	return out, nil
}

// MoveStats returns the moves this process is running.
func (p *Plugin) MoveStats() []MoveStats {
	var all []MoveStats
	for _, s := range p.engine().MoveStats() {
		all = append(all, MoveStats(s))
	}
	return all
}

// Misplaced is a count of rows of one table on one physical database whose
// logical shards the map sends elsewhere: the Table, the Database, the
// Rows, up to ten of their Keys, and LeftByMove when the rows are a move's
// copy: the target's while the move runs (its cutover serves it), or the
// frozen copy on the source after the cutover (CleanupMove deletes it).
// Rows of a database that are neither its own nor a move's are reported
// apart, by their own keys.
type Misplaced = engine.Misplaced

// UnreadDatabaseError is a physical database Audit could not read: its
// Database and the Err that stopped it. Audit joins one for each such
// database (errors.Join), beside what it found on the others.
type UnreadDatabaseError = engine.UnreadDatabaseError

// Audit reads every physical database and reports the rows of the sharded
// tables the plugin has migrated that sit on a database their logical shard
// does not map to. Nothing is misplaced after a move is cleaned up. A
// database it cannot read does not hide the others: what it found on those
// is returned with an [UnreadDatabaseError] for each database it could not
// read, joined.
func (p *Plugin) Audit(ctx context.Context) ([]Misplaced, error) { return p.engine().Audit(ctx) }

// MapVersion returns the version of the shared map this process routes by;
// 0 while it routes by Config.Shards (no shards configured, or the table not
// read yet).
func (p *Plugin) MapVersion() int64 { return p.engine().MapVersion() }

// RefreshMap reads the shared map now and routes by it if it is newer; it
// returns the version followed.
func (p *Plugin) RefreshMap(ctx context.Context) (int64, error) { return p.engine().RefreshMap(ctx) }
