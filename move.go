package shardid

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/sqlscan"
	"github.com/shardid/shardid/shardrouter"
	"github.com/shardid/shardid/strategies"
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
	Models []any
	// ChunkSize is how many rows the copy reads and writes at a time.
	// Default: 1000.
	ChunkSize int
	// Throttle is a pause after each chunk, to spare a busy source. Default: none.
	Throttle time.Duration
	// CatchUpBelow is the backlog of changes below which the range is frozen
	// for the cutover. Default: 200. A backlog that stops shrinking is frozen
	// once it is no more than one round of the replay (1000 changes).
	CatchUpBelow int
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
}

var (
	// ErrMoveInvalid is returned for a move that cannot be made as asked.
	ErrMoveInvalid = errors.New("shardid: invalid move")
	// ErrMoveVerify is returned when the copy of a table differs from the
	// source at the cutover; the range is thawed and stays on the source, and
	// running the move again replays and checks again.
	ErrMoveVerify = errors.New("shardid: the copy differs from the source")
)

// mover is one run of a move.
type mover struct {
	p              *Plugin
	req            Move
	st             *mapstore.MoveState
	from, to       int
	source, target *sql.DB
	fence          fence.Fence
	tables         []*movedTable
	fr             fence.Range
	resumed        bool // the move was recorded before this run
	live           *liveMove
}

// Move moves a range of logical shards to another physical database while
// the application keeps reading and writing (see the package documentation
// and DESIGN: prepare, copy, catch-up, cutover). Its state is kept in the
// plugin's database: running the same move again after a failure or a
// crash resumes it. Afterwards the source keeps a frozen copy until
// CleanupMove.
func (p *Plugin) Move(ctx context.Context, req Move) (*MoveReport, error) {
	if p.maps == nil {
		return nil, fmt.Errorf("%w: no Config.Shards: every logical shard is on the plugin's database", ErrMoveInvalid)
	}
	unlock, err := p.lockMove(ctx, req.Logical)
	if err != nil {
		return nil, err
	}
	defer unlock()
	mv, err := p.newMover(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.DryRun {
		return mv.plan(ctx)
	}
	defer mv.track()()
	resumed := mv.resumed
	if !resumed { // recorded before any change, so that a run that dies is resumed
		if err := p.maps.SaveMove(ctx, mv.st); err != nil {
			return nil, err
		}
	}
	steps := []struct {
		phase string
		run   func(context.Context) error
	}{
		{PhasePrepare, mv.prepare},
		{PhaseCopy, mv.copyAll},
		{PhaseCatchUp, mv.catchUp},
		{PhaseCutover, mv.cutover},
	}
	for i, step := range steps {
		if phaseIndex(mv.st.Phase) > phaseIndex(step.phase) {
			continue
		}
		p.config.Log.Info("shardid: move phase", "from", req.Logical.From, "through", req.Logical.To, "to", req.To, "phase", step.phase)
		if err := step.run(ctx); err != nil {
			p.config.Log.Warn("shardid: move phase failed", "from", req.Logical.From, "through", req.Logical.To, "to", req.To, "phase", step.phase, "error", err)
			return mv.report(resumed), fmt.Errorf("shardid: move of %d-%d to %s, %s: %w", req.Logical.From, req.Logical.To, req.To, step.phase, err)
		}
		next := PhaseServing
		if i+1 < len(steps) {
			next = steps[i+1].phase
		}
		mv.st.Phase = next
		if err := p.maps.SaveMove(ctx, mv.st); err != nil {
			return mv.report(resumed), err
		}
	}
	p.config.Log.Info("shardid: move phase", "from", req.Logical.From, "through", req.Logical.To, "to", req.To, "phase", PhaseServing, "map_version", mv.st.MapVersion)
	return mv.report(resumed), nil
}

// lockMove takes the lock of the move of r, which one run at a time holds,
// be it a mover, a cancel or a cleanup; it fails at once if another has it.
func (p *Plugin) lockMove(ctx context.Context, r Range) (func(), error) {
	unlock, err := p.maps.LockMove(ctx, r)
	if errors.Is(err, mapstore.ErrLocked) {
		return nil, fmt.Errorf("%w: another run holds the move of %d-%d (a mover, a cancel or a cleanup); wait for it to end", ErrMoveInvalid, r.From, r.To)
	}
	return unlock, err
}

func phaseIndex(phase string) int {
	return slices.Index([]string{PhasePrepare, PhaseCopy, PhaseCatchUp, PhaseCutover, PhaseServing, PhaseCleaned}, phase)
}

func (mv *mover) report(resumed bool) *MoveReport {
	st := mv.st
	return &MoveReport{Logical: st.Logical, From: st.From, To: st.To, Phase: st.Phase, Tables: st.Tables, Rows: st.Copied,
		Changes: st.Changes, Frozen: st.Frozen, MapVersion: st.MapVersion, Resumed: resumed}
}

// newMover checks the request against the current map and loads or starts
// the move's state.
func (p *Plugin) newMover(ctx context.Context, req Move) (*mover, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrMoveInvalid}, args...)...)
	}
	if p.maps == nil {
		return nil, bad("no Config.Shards: every logical shard is on the plugin's database")
	}
	if err := p.maps.PrepareMoves(ctx); err != nil {
		return nil, err
	}
	if _, err := p.refreshMap(ctx); err != nil {
		return nil, fmt.Errorf("shardid: reading the shared map: %w", err)
	}
	r := req.Logical
	if r.From < 0 || r.From > r.To || r.To >= p.layout.ShardCount() {
		return nil, bad("logical shards %d-%d are not within 0-%d", r.From, r.To, p.layout.ShardCount()-1)
	}
	to := slices.IndexFunc(p.physical, func(ph *physical) bool { return ph.name == req.To })
	if to < 0 {
		return nil, bad("%q is not a physical database of Config.Shards", req.To)
	}
	st, err := p.maps.LoadMove(ctx, r)
	if err != nil {
		return nil, err
	}
	if st != nil && (st.Phase == PhaseCancelled || st.Phase == PhaseCleaned) {
		st = nil // ended: the range may move again
	}
	if st != nil && st.To != req.To {
		return nil, bad("logical shards %d-%d are moving to %s; cancel that move first (CancelMove)", r.From, r.To, st.To)
	}
	shardMap := p.router.Map()
	from := shardMap.Physical(r.From)
	if st != nil {
		from = slices.IndexFunc(p.physical, func(ph *physical) bool { return ph.name == st.From })
	} else {
		for s := r.From; s <= r.To; s++ {
			if k := shardMap.Physical(s); k != from {
				return nil, bad("logical shards %d-%d are on more than one database (%d on %s, %d on %s); move each part on its own",
					r.From, r.To, r.From, p.physical[from].name, s, p.physical[k].name)
			}
		}
		if from == to {
			return nil, bad("logical shards %d-%d are on %s already", r.From, r.To, req.To)
		}
		if err := p.oneMoveAt(ctx, p.physical[from].name); err != nil {
			return nil, err
		}
	}
	if from < 0 {
		return nil, bad("the move's source %s is not in Config.Shards", st.From)
	}
	mv := &mover{p: p, req: req, from: from, to: to, fr: fence.Range{From: r.From, To: r.To},
		fence: fence.Fence{Dialect: p.db.Dialector.Name(), ShardBits: p.layout.ShardBits, SequenceBits: p.layout.SequenceBits}}
	for k, db := range map[int]**sql.DB{from: &mv.source, to: &mv.target} {
		opened, err := p.opened(ctx, k)
		if err != nil {
			return nil, err
		}
		*db = opened.sqlDB
	}
	if mv.tables, err = p.movedTables(ctx, req.Models, st, mv.source); err != nil {
		return nil, err
	}
	mv.resumed = st != nil
	if st == nil {
		st = &mapstore.MoveState{Logical: r, From: p.physical[from].name, To: req.To, Phase: PhasePrepare, Started: time.Now().UTC(),
			Cursors: map[string]any{}, Copied: map[string]int64{}, Done: map[string]bool{}, MaxKeys: map[string]int64{}}
		for _, t := range mv.tables {
			st.Tables = append(st.Tables, t.name)
		}
	}
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
	mv.st = st
	return mv, nil
}

// oneMoveAt refuses a second move off the same source while one runs: the
// source's change log is the move's.
func (p *Plugin) oneMoveAt(ctx context.Context, source string) error {
	list, err := p.maps.Moves(ctx)
	if err != nil {
		return err
	}
	for _, st := range list {
		if st.From == source && phaseIndex(st.Phase) >= 0 && phaseIndex(st.Phase) < phaseIndex(PhaseCleaned) {
			return fmt.Errorf("%w: logical shards %d-%d are moving off %s (phase %s); finish or cancel that move first",
				ErrMoveInvalid, st.Logical.From, st.Logical.To, source, st.Phase)
		}
	}
	return nil
}

// movedTables resolves the models of a move, or else the sharded tables the
// plugin has migrated, to the tables and columns to copy; a resumed move
// must carry the tables it began with.
func (p *Plugin) movedTables(ctx context.Context, models []any, st *mapstore.MoveState, source *sql.DB) ([]*movedTable, error) {
	var list []shardedTable
	types := map[string]reflect.Type{}
	for _, value := range models {
		stmt := &gorm.Statement{DB: p.db}
		if err := stmt.Parse(value); err != nil {
			return nil, fmt.Errorf("%w: model %T: %w", ErrMoveInvalid, value, err)
		}
		m, err := p.model(stmt.Schema)
		if err != nil {
			return nil, err
		}
		if m == nil || !m.sharded() {
			return nil, fmt.Errorf("%w: %s is not a sharded model", ErrMoveInvalid, stmt.Schema.Name)
		}
		for _, rel := range m.schema.Relationships.Many2Many {
			if rel.JoinTable != nil {
				list = append(list, shardedTable{Name: rel.JoinTable.Table, Strategy: joinRows})
			}
		}
		if key := m.pk().field; key.FieldType.Kind() == reflect.Array && !key.FieldType.Implements(valuerType) {
			return nil, fmt.Errorf("%w: %s.%s keeps its UUID as bytes; a move reads the shard of text UUIDs", ErrMoveInvalid, m.schema.Name, key.Name)
		}
		list = append(list, shardedTableOf(m))
		types[m.schema.Table] = m.schema.ModelType
	}
	if len(models) == 0 {
		var err error
		if list, err = p.registeredTables(ctx); err != nil {
			return nil, err
		}
	}
	var tables []*movedTable
	for _, t := range list {
		if t.Strategy == joinRows {
			return nil, fmt.Errorf("%w: the many2many join table %s beside a sharded model: a move does not carry its rows yet", ErrMoveInvalid, t.Name)
		}
		if slices.ContainsFunc(tables, func(m *movedTable) bool { return m.name == t.Name }) {
			continue
		}
		mt, err := p.movedTable(ctx, t, source)
		if err != nil {
			return nil, err
		}
		mt.modelType = types[t.Name]
		tables = append(tables, mt)
	}
	if st != nil {
		for _, name := range st.Tables {
			if !slices.ContainsFunc(tables, func(m *movedTable) bool { return m.name == name }) {
				return nil, fmt.Errorf("%w: the move began with table %s; give its model again", ErrMoveInvalid, name)
			}
		}
		// A table the move did not begin with has no triggers and no copy.
		for _, t := range tables {
			if !slices.Contains(st.Tables, t.name) {
				return nil, fmt.Errorf("%w: the move of %d-%d began with the tables %v; %s cannot join it midway: finish or cancel it, then move again",
					ErrMoveInvalid, st.Logical.From, st.Logical.To, st.Tables, t.name)
			}
		}
	}
	if len(tables) == 0 {
		return nil, fmt.Errorf("%w: no sharded tables to move", ErrMoveInvalid)
	}
	sort.Slice(tables, func(i, j int) bool { return tables[i].name < tables[j].name })
	return tables, nil
}

// movedTable describes one sharded table for the copy: its columns are the
// source's, every one of them.
func (p *Plugin) movedTable(ctx context.Context, t shardedTable, source *sql.DB) (*movedTable, error) {
	mt := &movedTable{name: t.Name, key: t.Key, strategy: t.Strategy, dialect: p.db.Dialector.Name(),
		fenced: fence.Table{Name: t.Name, Key: t.Key, Kind: t.Kind}}
	columns, err := columnsOf(ctx, source, mt.dialect, t.Name)
	if err != nil {
		return nil, fmt.Errorf("shardid: reading the columns of %s: %w", t.Name, err)
	}
	if !slices.Contains(columns, t.Key) {
		return nil, fmt.Errorf("%w: table %s has no column %s", ErrMoveInvalid, t.Name, t.Key)
	}
	mt.columns = columns
	f := fence.Fence{Dialect: mt.dialect, ShardBits: p.layout.ShardBits, SequenceBits: p.layout.SequenceBits}
	shard, err := f.ShardSQL(mt.fenced, "")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMoveInvalid, t.Name, err)
	}
	mt.shard = shard
	mt.inRange = shard + " BETWEEN " + placeholders(mt.dialect, 0, 1) + " AND " + placeholders(mt.dialect, 1, 1)
	return mt, nil
}

// columnsOf returns a table's columns on db.
func columnsOf(ctx context.Context, db *sql.DB, dialect, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT * FROM "+sqlscan.Quote(dialect, table)+" WHERE 1 = 0")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return rows.Columns()
}

var valuerType = reflect.TypeFor[driver.Valuer]()

// plan reports what the move would copy.
func (mv *mover) plan(ctx context.Context) (*MoveReport, error) {
	report := mv.report(false)
	report.Rows = map[string]int64{}
	for _, t := range mv.tables {
		n, err := t.count(ctx, mv.source, mv.st.Logical)
		if err != nil {
			return nil, fmt.Errorf("shardid: counting %s on %s: %w", t.name, mv.st.From, err)
		}
		report.Rows[t.name] = n
	}
	return report, nil
}

// prepare makes the target's tables, the source's triggers and fence, and
// advances the target's ID sources.
func (mv *mover) prepare(ctx context.Context) error {
	p := mv.p
	var models []any
	for _, t := range mv.tables {
		if t.modelType != nil {
			models = append(models, reflect.New(t.modelType).Interface())
		}
	}
	if len(models) > 0 {
		if err := p.Migrator(p.db.WithContext(ctx)).AutoMigrate(models...); err != nil {
			return err
		}
	}
	for _, t := range mv.tables {
		columns, err := columnsOf(ctx, mv.target, t.dialect, t.name)
		if err != nil {
			return fmt.Errorf("table %s on %s: %w (migrate the models with %s in Config.Shards)", t.name, mv.st.To, err, mv.st.To)
		}
		for _, c := range t.columns {
			if !slices.Contains(columns, c) {
				return fmt.Errorf("%w: table %s on %s has no column %s, which the source has: migrate it first", ErrMoveInvalid, t.name, mv.st.To, c)
			}
		}
	}
	if err := mv.fence.Prepare(ctx, mv.source); err != nil {
		return err
	}
	// The fence row first: creating a trigger waits for every transaction
	// that wrote the table before (MySQL's metadata lock, PostgreSQL's SHARE
	// ROW EXCLUSIVE), and each write after it reads the row, so none of the
	// range goes unlogged once the copy starts.
	if err := mv.fence.Open(ctx, mv.source, mv.fr, mv.st.To); err != nil {
		return err
	}
	for _, t := range mv.tables {
		if err := mv.fence.Install(ctx, mv.source, t.fenced); err != nil {
			return fmt.Errorf("triggers on %s.%s: %w", mv.st.From, t.name, err)
		}
		mv.progress(MoveProgress{Phase: PhasePrepare, Step: "triggers", Table: t.name})
	}
	return mv.advance(ctx)
}

// copyAll copies each table's rows of the range, in key order, from where a
// run before stopped.
func (mv *mover) copyAll(ctx context.Context) error {
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

func (mv *mover) chunkSize(t *movedTable) int {
	n := mv.req.ChunkSize
	if n <= 0 {
		n = 1000
	}
	return min(n, max(1, maxParameters/len(t.columns)))
}

func (mv *mover) copyTable(ctx context.Context, t *movedTable) error {
	var total int64
	if mv.req.Progress != nil {
		var err error
		if total, err = t.count(ctx, mv.source, mv.st.Logical); err != nil {
			return err
		}
	}
	limit, keyAt := mv.chunkSize(t), t.keyIndex()
	for {
		args := []any{mv.st.Logical.From, mv.st.Logical.To}
		cursor, started := mv.st.Cursors[t.name]
		if started {
			args = append(args, jsonKey(cursor))
		}
		rows, err := readRows(ctx, mv.source, len(t.columns), t.chunkQuery(started, limit), args...)
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			if err := t.upsert(ctx, mv.target, rows); err != nil {
				return err
			}
			last := normalizeKey(rows[len(rows)-1][keyAt])
			mv.st.Cursors[t.name] = last
			mv.st.Copied[t.name] += int64(len(rows))
			mv.noteKey(t, last)
		}
		if len(rows) < limit {
			mv.st.Done[t.name] = true
		}
		if err := mv.p.maps.SaveMove(ctx, mv.st); err != nil {
			return err
		}
		mv.progress(MoveProgress{Phase: PhaseCopy, Step: "chunk", Table: t.name, Copied: mv.st.Copied[t.name], Total: total})
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

func (mv *mover) progress(pr MoveProgress) {
	mv.live.note(pr)
	if mv.req.Progress != nil {
		mv.req.Progress(pr)
	}
}

// jsonKey turns a key read back from the state's JSON into the key's type.
func jsonKey(k any) any {
	switch v := k.(type) {
	case json.Number: // decodeMove reads numbers so, exactly
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
func (mv *mover) noteKey(t *movedTable, key any) {
	if n, ok := jsonKey(key).(int64); ok && n > mv.st.MaxKeys[t.name] {
		mv.st.MaxKeys[t.name] = n
	}
}

// catchUp replays the change log until its backlog is small.
func (mv *mover) catchUp(ctx context.Context) error {
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
		mv.progress(MoveProgress{Phase: PhaseCatchUp, Step: "round", Backlog: backlog})
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
func (mv *mover) replay(ctx context.Context) (int, error) {
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

// cutover freezes the range on the source, drains the log, compares the two
// sides, advances the target's ID sources and writes the map that sends the
// range to the target. A difference thaws the range and fails the move.
func (mv *mover) cutover(ctx context.Context) error {
	p := mv.p
	if mv.servedByTarget() {
		mv.st.MapVersion = p.MapVersion() // written by a run that stopped before saving its state
		return nil
	}
	frozenAt := time.Now()
	if err := mv.fence.Freeze(ctx, mv.source, mv.fr); err != nil {
		return err
	}
	mv.st.FrozenAt = frozenAt.UTC()
	mv.progress(MoveProgress{Phase: PhaseCutover, Step: "frozen"})
	for {
		n, err := mv.replay(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	for _, t := range mv.tables {
		src, dst, err := mv.summarizeBoth(ctx, t)
		if err != nil {
			return err
		}
		if src != dst {
			return errors.Join(fmt.Errorf("%w: %s: %d rows (checksum %s) on %s, %d (checksum %s) on %s",
				ErrMoveVerify, t.name, src.Rows, src.Sum, mv.st.From, dst.Rows, dst.Sum, mv.st.To), mv.fence.Thaw(ctx, mv.source, mv.fr))
		}
	}
	mv.progress(MoveProgress{Phase: PhaseCutover, Step: "verified"})
	if err := mv.advance(ctx); err != nil {
		return errors.Join(err, mv.fence.Thaw(ctx, mv.source, mv.fr))
	}
	version, err := mv.writeMap(ctx)
	if err != nil {
		return errors.Join(err, mv.fence.Thaw(ctx, mv.source, mv.fr))
	}
	mv.progress(MoveProgress{Phase: PhaseCutover, Step: "map written"})
	mv.st.Frozen = time.Since(frozenAt)
	mv.st.MapVersion = version
	mv.st.CutoverAt = time.Now().UTC()
	if _, err := p.refreshMap(ctx); err != nil {
		p.db.Logger.Warn(ctx, "shardid: reading the map the move wrote: %v", err)
	}
	return nil
}

// summarizeBoth summarizes a table's rows of the range on both sides at
// once: the range is frozen meanwhile.
func (mv *mover) summarizeBoth(ctx context.Context, t *movedTable) (src, dst summary, err error) {
	var wg sync.WaitGroup
	var dstErr error
	wg.Go(func() { dst, dstErr = t.summarize(ctx, mv.target, mv.st.Logical) })
	src, err = t.summarize(ctx, mv.source, mv.st.Logical)
	wg.Wait()
	return src, dst, errors.Join(err, dstErr)
}

// servedByTarget reports whether the shared map already sends the range to
// the target.
func (mv *mover) servedByTarget() bool {
	m := mv.p.router.Map()
	for s := mv.st.Logical.From; s <= mv.st.Logical.To; s++ {
		if m.Physical(s) != mv.to {
			return false
		}
	}
	return true
}

// writeMap writes the next map version, with the range on the target and
// the snowflake floor of the moved shards.
func (mv *mover) writeMap(ctx context.Context) (int64, error) {
	s := mv.p.maps
	for range 8 { // each round loses only to another writer of the map
		latest, err := s.Latest(ctx)
		if err != nil {
			return 0, err
		}
		if latest == nil {
			return 0, errors.New("the shared map table is empty")
		}
		current, err := mv.p.mapOfStored(latest)
		if err != nil {
			return 0, err
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
		next, err := shardrouter.NewMap(current.ShardCount(), physical)
		if err != nil {
			return 0, err
		}
		stored := mapstore.MapOf(next, latest.Version+1)
		if tick := mv.snowflakeFloor(); tick > 0 {
			stored.Floors = []mapstore.Floor{{Logical: mv.st.Logical, Tick: tick}}
		}
		stored.Copies = append(slices.Clone(latest.Copies), mapstore.Physical{Name: mv.st.From, Logical: []Range{mv.st.Logical}})
		if err := s.Write(ctx, stored); err == nil {
			return stored.Version, nil
		} else if !mapstore.DuplicateKey(err) {
			return 0, err
		}
	}
	return 0, errors.New("other processes kept writing the shared map first")
}

// snowflakeFloor is the time tick the snowflake IDs of the moved shards must
// pass on the target: the highest of the range the move saw, and the freeze.
func (mv *mover) snowflakeFloor() int64 {
	var tick int64
	for _, t := range mv.tables {
		if t.strategy != strategies.NameSnowflake {
			continue
		}
		// The freeze's own time too: IDs of rows deleted before the move.
		tick = max(tick, mv.p.layout.Ticks(mv.st.FrozenAt))
		if mv.st.MaxKeys[t.name] > 0 {
			tick = max(tick, mv.p.layout.Decode(mv.st.MaxKeys[t.name]).Ticks)
		}
	}
	return tick
}

// advance makes the target's ID sources issue, for the moved shards, only IDs
// above those the source issued: the instagram clock-sequence and the
// segment counters of each table move past the source's and past the
// highest key seen.
func (mv *mover) advance(ctx context.Context) error {
	p := mv.p
	for _, t := range mv.tables {
		if err := mv.highestKey(ctx, t); err != nil {
			return err
		}
		atLeast := mv.st.MaxKeys[t.name]
		source, err := p.target(p.db.WithContext(ctx), nil, mv.from)
		if err != nil {
			return err
		}
		target, err := p.target(p.db.WithContext(ctx), nil, mv.to)
		if err != nil {
			return err
		}
		source.Table, target.Table = t.name, t.name
		switch g := p.generators[t.strategy].(type) {
		case *strategies.Instagram:
			err = g.Advance(ctx, source, target, atLeast)
		case *strategies.Segment:
			err = g.Advance(ctx, source, target, atLeast)
		}
		if err != nil {
			return fmt.Errorf("advancing the IDs of %s on %s: %w", t.name, mv.st.To, err)
		}
	}
	return nil
}

// highestKey notes the highest int64 key of the range on the source.
func (mv *mover) highestKey(ctx context.Context, t *movedTable) error {
	if t.fenced.Kind != fence.KeyInt64 {
		return nil
	}
	var highest sql.NullInt64
	q := "SELECT MAX(" + sqlscan.Quote(t.dialect, t.key) + ") FROM " + sqlscan.Quote(t.dialect, t.name) + " WHERE " + t.inRange
	if err := mv.source.QueryRowContext(ctx, q, mv.st.Logical.From, mv.st.Logical.To).Scan(&highest); err != nil {
		return err
	}
	if highest.Valid {
		mv.noteKey(t, highest.Int64)
	}
	return nil
}
