package integration

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// The history checker (issue 16): clients of three processes write and read
// rows while the moving range moves back and forth between two databases,
// each move with a fault; every operation is recorded with its invocation
// and return times, and the record is checked for linearizability with
// porcupine, row by row, and against the rows the physical databases hold
// at the end.
//
// The short run is the CI's; -history.long (or SHARDID_HISTORY_LONG=1) runs
// longer, more clients and every fault several times, and prints its figures
// (run it with -v):
//
//	go test -run TestHistory -history.long -v .
var (
	historyLong   = flag.Bool("history.long", os.Getenv("SHARDID_HISTORY_LONG") != "", "run the history checker's long run")
	historyRounds = flag.Int("history.rounds", 3, "how many times the long run goes through every fault")
)

// histFault is what a round's move goes through.
type histFault struct {
	name string
	// cancel: the mover's context is cancelled at this step of this phase,
	// after so many chunks for "chunk"; the move is then run again.
	phase, step string
	abandon     bool // after the cancel, CancelMove instead of running it again
	migrate     bool // a column added (or dropped) by the plugin's migrator during the copy
	twoMovers   bool // two processes run the move at once
	slowMover   bool // the move runs from the process whose answers are held
}

// histFaults are the rounds of one pass: the mover cancelled in each phase,
// a move given up, a migration during the copy, two movers at once and a
// mover whose database answers are held. Fan-out reads and writes, held
// answers and a stale process go on through all of them.
var histFaults = []histFault{
	{name: "cancelled at prepare", phase: shardid.PhasePrepare, step: "triggers"},
	{name: "cancelled in the copy", phase: shardid.PhaseCopy, step: "chunk"},
	{name: "cancelled in the catch-up", phase: shardid.PhaseCatchUp, step: "round"},
	{name: "cancelled frozen", phase: shardid.PhaseCutover, step: "frozen"},
	{name: "cancelled verified", phase: shardid.PhaseCutover, step: "verified"},
	{name: "cancelled with the map written", phase: shardid.PhaseCutover, step: "map written"},
	{name: "given up in the copy", phase: shardid.PhaseCopy, step: "chunk", abandon: true},
	{name: "a migration during the copy", migrate: true},
	{name: "two movers at once", twoMovers: true},
	{name: "a mover whose answers are held", slowMover: true},
}

// histConfig sizes a run.
type histConfig struct {
	passes        int
	writers       int // writer clients per process
	rowsPerWriter int
	seedUsers     int
	chunk         int
	settle        time.Duration // the clients alone between moves
	hold          time.Duration // the longest hold of a proxy's answers
}

func historyConfig() histConfig {
	if *historyLong {
		return histConfig{passes: *historyRounds, writers: 2, rowsPerWriter: 60, seedUsers: 2000, chunk: 100, settle: time.Second, hold: 600 * time.Millisecond}
	}
	return histConfig{passes: 1, writers: 1, rowsPerWriter: 25, seedUsers: 300, chunk: 25, settle: 250 * time.Millisecond, hold: 300 * time.Millisecond}
}

// TestHistoryLinearizableThroughMoves records the operations of writers,
// readers and fan-out clients in three processes (one reaching the
// databases through proxies that hold their answers, one reading the shared
// map only when a write of it is refused) through moves of the moving range
// back and forth, each with a fault, and checks the history: every row is
// linearizable as a counter and a register that scans see whole, fan-out
// counts lie between the rows acknowledged before them and those begun
// before they ended, and the physical databases hold every acknowledged row
// once, where the map sends it, and no other.
func TestHistoryLinearizableThroughMoves(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		cfg := historyConfig()
		h := newHistRun(t, b, cfg)
		h.run(t)
		h.verify(t)
	})
}

// histRun is one run of the history test on one backend.
type histRun struct {
	b     backend
	cfg   histConfig
	r     *moveRig
	rec   *recorder
	procs []*histProcess // 0: the mover, direct; 1: behind hold proxies; 2: stale
	at    int            // the database serving the moving range: moveSource or moveTarget

	mu    sync.Mutex
	marks []moveMark // by move: the map version it wrote and its check's time

	stop    atomic.Bool
	clients sync.WaitGroup
	nextID  atomic.Int64

	moves, attempts, cancels, holds int
	faults                          []string
	errs                            map[string]int // errors by kind, for the figures
	stuck                           []string       // kept handles that failed twice after the moves
	errMu                           sync.Mutex
}

func newHistRun(t *testing.T, b backend, cfg histConfig) *histRun {
	dir := t.TempDir()
	for _, db := range direct(t, b, dir) {
		must(t, db.Migrator().DropTable("hist_rows"))
	}
	r := newMoveRig(t, b, dir)
	must(t, r.p.AutoMigrate(r.db, &HistRow{}))
	r.seedUsers(t, cfg.seedUsers)
	h := &histRun{b: b, cfg: cfg, r: r, rec: newRecorder(), at: moveSource, errs: map[string]int{}}
	h.procs = []*histProcess{
		{id: 0, name: "mover", db: r.db, p: r.p},
		openHistProcess(t, r, 1, "held", shardid.Config{}, true),
		openHistProcess(t, r, 2, "stale", shardid.Config{MapRefresh: time.Hour}, false),
	}
	return h
}

// run starts the clients, moves the range through every fault, and stops
// the clients.
func (h *histRun) run(t *testing.T) {
	client := 0
	for _, hp := range h.procs {
		for range h.cfg.writers {
			c := client
			client++
			fan := hp.id == 1 || *historyLong
			h.clients.Go(func() { h.writer(hp, c, fan) })
		}
		c := client
		client++
		h.clients.Go(func() { h.reader(hp, c, hp.id != 1) })
	}
	holder := make(chan struct{})
	var holding sync.WaitGroup
	holding.Go(func() { h.holdAnswers(holder) })
	defer func() {
		h.stop.Store(true)
		h.clients.Wait()
		close(holder)
		holding.Wait()
	}()

	for pass := range h.cfg.passes {
		for _, f := range histFaults {
			time.Sleep(h.cfg.settle)
			start := time.Now()
			h.round(t, f)
			t.Logf("pass %d, %s: done in %s; the range is on %s", pass, f.name, time.Since(start).Round(time.Millisecond), h.dbName(h.at))
			if t.Failed() {
				return
			}
		}
	}
	time.Sleep(h.cfg.settle)
}

// holdAnswers holds the answers of the proxied process's databases now and
// then, each for up to cfg.hold.
func (h *histRun) holdAnswers(stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(200+rand.IntN(600)) * time.Millisecond):
		}
		proxies := h.procs[1].proxies
		proxies[rand.IntN(len(proxies))].hold(time.Duration(rand.Int64N(int64(h.cfg.hold))))
		h.mu.Lock()
		h.holds++
		h.mu.Unlock()
	}
}

func (h *histRun) dbName(k int) string {
	if k == moveSource {
		return h.b.name + "-source"
	}
	return h.b.name + "-target"
}

// round moves the range to the other database through a fault, runs the
// move again until it is done, and cleans it up.
func (h *histRun) round(t *testing.T, f histFault) {
	dest := moveTarget
	if h.at == moveTarget {
		dest = moveSource
	}
	mark := &moveMark{}
	var markMu sync.Mutex
	progress := func(cancel context.CancelFunc, chunks *int) func(shardid.MoveProgress) {
		return func(p shardid.MoveProgress) {
			if p.Phase == shardid.PhaseCutover && p.Step == "verified" {
				markMu.Lock()
				mark.Verified = h.rec.now()
				markMu.Unlock()
			}
			if cancel != nil && p.Phase == f.phase && p.Step == f.step {
				if *chunks++; p.Step != "chunk" || *chunks == 3 {
					cancel()
				}
			}
		}
	}
	mover := h.procs[0]
	if f.slowMover {
		mover = h.procs[1]
	}
	req := func(progress func(shardid.MoveProgress)) shardid.Move {
		return shardid.Move{Logical: movingRange, To: h.dbName(dest), ChunkSize: h.cfg.chunk, Progress: progress}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var report *shardid.MoveReport
	var err error
	h.faults = append(h.faults, f.name)
	switch {
	case f.phase != "":
		attempt, stop := context.WithCancel(ctx)
		chunks := 0
		h.attempts++
		report, err = mover.p.Move(attempt, req(progress(stop, &chunks)))
		stop()
		if err == nil {
			t.Logf("%s: the move ended before it was cancelled (%s)", f.name, describeReport(report))
		} else {
			h.cancels++
		}
		if f.abandon && err != nil {
			if err := mover.p.CancelMove(ctx, movingRange); err != nil {
				t.Fatalf("%s: CancelMove: %v", f.name, err)
			}
			return
		}
	case f.migrate:
		migrated := false
		h.attempts++
		report, err = mover.p.Move(ctx, req(func(p shardid.MoveProgress) {
			progress(nil, nil)(p)
			if migrated || p.Step != "chunk" {
				return
			}
			migrated = true
			if h.hasExtra(t) {
				must(t, mover.p.Migrator(mover.db).DropColumn(&HistRowV2{}, "Extra"))
			} else {
				must(t, mover.p.AutoMigrate(mover.db, &HistRowV2{}))
			}
		}))
		if err != nil && !errors.Is(err, shardid.ErrMoveVerify) {
			t.Errorf("%s: the move failed with %v, not ErrMoveVerify", f.name, err)
		}
	case f.twoMovers:
		var wg sync.WaitGroup
		reports := make([]*shardid.MoveReport, 2)
		errs := make([]error, 2)
		startLine := make(chan struct{})
		for i, hp := range h.procs[:2] {
			wg.Go(func() {
				<-startLine
				reports[i], errs[i] = hp.p.Move(ctx, req(progress(nil, nil)))
			})
		}
		h.attempts += 2
		close(startLine)
		wg.Wait()
		for i := range errs {
			if errs[i] == nil {
				report = reports[i]
			} else if !errors.Is(errs[i], shardid.ErrMoveInvalid) {
				t.Errorf("%s: mover %d: %v; want success or ErrMoveInvalid", f.name, i, errs[i])
			}
		}
		if report == nil {
			err = errors.Join(errs...)
		}
		for i := range errs {
			if errs[i] == nil {
				t.Logf("%s: mover %d: map version %d, resumed %v, frozen %s", f.name, i, reports[i].MapVersion, reports[i].Resumed, reports[i].Frozen)
			} else {
				t.Logf("%s: mover %d: %v", f.name, i, errs[i])
			}
		}
	default:
		h.attempts++
		report, err = mover.p.Move(ctx, req(progress(nil, nil)))
	}
	for tries := 0; err != nil; tries++ {
		if tries == 5 {
			t.Fatalf("%s: the move still fails after %d runs: %v", f.name, tries, err)
		}
		h.attempts++
		again, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		report, err = h.procs[0].p.Move(again, req(progress(nil, nil)))
		cancel()
	}
	markMu.Lock()
	mark.Version = report.MapVersion
	h.mu.Lock()
	h.marks = append(h.marks, *mark)
	h.moves++
	h.mu.Unlock()
	markMu.Unlock()
	if mark.Verified == 0 {
		t.Errorf("%s: the move's check was not reported", f.name)
	}
	h.at = dest
	h.mu.Lock()
	h.marks[len(h.marks)-1].Cleanup = h.rec.now()
	h.mu.Unlock()
	if err := h.procs[0].p.CleanupMove(ctx, movingRange); err != nil {
		t.Fatalf("%s: CleanupMove: %v", f.name, err)
	}
}

// hasExtra reports whether hist_rows has the column a migration adds.
func (h *histRun) hasExtra(t *testing.T) bool {
	return h.r.source.Migrator().HasColumn(&HistRowV2{}, "Extra")
}

// noteErr counts an error by its first words, for the figures and the
// false refusals.
func (h *histRun) noteErr(kind hKind, err error) {
	text := err.Error()
	if len(text) > 400 {
		text = text[:400]
	}
	h.errMu.Lock()
	h.errs[kind.String()+": "+text]++
	h.errMu.Unlock()
}

// outcome of a write of one row: ErrShardMoved is a refusal, nothing
// written; any other error leaves the write unknown.
func writeOutcome(err error) hOutcome {
	switch {
	case err == nil:
		return hOK
	case errors.Is(err, shardid.ErrShardMoved):
		return hFailed
	}
	return hAmbiguous
}

// writer creates rows of its own, three in four of the moving range, and
// increments, sets and reads them, some of the writes by the model and some
// without one (Exec, Table) under a shard clause, given anew or on a handle
// kept with it from the first write on (a transaction there begins where
// the map sends the shard then); with fan set it also
// increments all of them at once with a fan-out write.
func (h *histRun) writer(hp *histProcess, client int, fan bool) {
	var own []hRowRef
	db := hp.db
	kept := map[int64]*gorm.DB{} // a handle given the row's shard clause once, used across moves
	handle := func(id int64) *gorm.DB {
		if kept[id] == nil {
			kept[id] = db.Clauses(shardid.ByID(id))
		}
		return kept[id]
	}
	for n := 0; !h.stop.Load(); n++ {
		op := &hOp{Client: client, Process: hp.id}
		dice := rand.IntN(100)
		switch {
		case len(own) == 0 || len(own) < h.cfg.rowsPerWriter && dice < 20:
			op.Kind = hCreate
			op.Tag = fmt.Sprintf("c%d-%d", client, h.nextID.Add(1))
			shard := movingRange.From + rand.IntN(movingRange.To-movingRange.From+1)
			if rand.IntN(4) == 0 {
				shard = rand.IntN(movingRange.From)
			}
			row := HistRow{Tag: op.Tag, Owner: client}
			op.Call = h.rec.now()
			err := db.Clauses(shardid.OnShard(shard)).Create(&row).Error
			op.Return = h.rec.now()
			op.Err, op.Outcome, op.ID = err, writeOutcome(err), row.ID
			if err == nil {
				own = append(own, hRowRef{Tag: op.Tag, ID: row.ID, Process: hp.id})
			}
		case fan && dice < 26:
			op.Kind = hFanInc
			tags := make([]string, len(own))
			for i, o := range own {
				tags[i] = o.Tag
			}
			op.Tags = tags
			op.Call = h.rec.now()
			res := db.Clauses(shardid.AllShards()).Model(&HistRow{}).Where("tag IN ?", tags).UpdateColumn("n", gorm.Expr("n + 1"))
			op.Return = h.rec.now()
			op.Err, op.Affected = res.Error, res.RowsAffected
			op.Outcome = hOK
			if res.Error != nil {
				op.Outcome = hAmbiguous // a part may have run
			}
		case dice < 65:
			row := own[rand.IntN(len(own))]
			op.Kind, op.Tag, op.ID = hInc, row.Tag, row.ID
			op.Call = h.rec.now()
			var res *gorm.DB
			switch { // writes without a model, under a shard clause, too: the stale process's must not find nothing and succeed
			case dice < 30:
				res = keptIncrement(handle(row.ID), row.ID)
			case dice < 35:
				res = db.Clauses(shardid.ByID(row.ID)).Exec("UPDATE hist_rows SET n = n + 1 WHERE id = ?", row.ID)
			default:
				res = db.Model(&HistRow{ID: row.ID}).UpdateColumn("n", gorm.Expr("n + 1"))
			}
			op.Return = h.rec.now()
			op.Err, op.Outcome, op.Affected = res.Error, writeOutcome(res.Error), res.RowsAffected
		case dice < 85:
			row := own[rand.IntN(len(own))]
			op.Kind, op.Tag, op.ID, op.Value = hSet, row.Tag, row.ID, fmt.Sprintf("v%d-%d", client, n)
			op.Call = h.rec.now()
			var res *gorm.DB
			switch {
			case dice < 68:
				res = handle(row.ID).Session(&gorm.Session{}).Table("hist_rows").Where("id = ?", row.ID).Update("v", op.Value)
			case dice < 70:
				res = db.Table("hist_rows").Clauses(shardid.ByID(row.ID)).Where("id = ?", row.ID).Update("v", op.Value)
			default:
				res = db.Model(&HistRow{ID: row.ID}).UpdateColumn("v", op.Value)
			}
			op.Return = h.rec.now()
			op.Err, op.Outcome, op.Affected = res.Error, writeOutcome(res.Error), res.RowsAffected
		default:
			h.read(hp, op, own[rand.IntN(len(own))])
		}
		if op.Err != nil {
			h.noteErr(op.Kind, op.Err)
		}
		h.rec.add(op)
		time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond)
	}
	// Every kept handle still writes after the moves: a first try may be
	// refused as moved (a process on the old map learns the new one from
	// the refusal), a second may not.
	for _, row := range own {
		if kept[row.ID] == nil {
			continue
		}
		var err error
		for range 2 {
			op := &hOp{Client: client, Process: hp.id, Kind: hInc, Tag: row.Tag, ID: row.ID, Call: h.rec.now()}
			res := keptIncrement(kept[row.ID], row.ID)
			op.Return = h.rec.now()
			op.Err, op.Outcome, op.Affected = res.Error, writeOutcome(res.Error), res.RowsAffected
			h.rec.add(op)
			if err = res.Error; err == nil {
				break
			}
		}
		if err != nil {
			h.errMu.Lock()
			h.stuck = append(h.stuck, fmt.Sprintf("%s's handle for %s: %v", hp.name, row.Tag, err))
			h.errMu.Unlock()
		}
	}
}

// keptIncrement increments a row in a transaction begun on a handle kept
// with the row's shard clause.
func keptIncrement(handle *gorm.DB, id int64) *gorm.DB {
	var inner *gorm.DB
	err := handle.Transaction(func(tx *gorm.DB) error {
		inner = tx.Exec("UPDATE hist_rows SET n = n + 1 WHERE id = ?", id)
		return inner.Error
	})
	res := &gorm.DB{Error: err}
	if err == nil {
		res.RowsAffected = inner.RowsAffected
	}
	return res
}

// read reads one row by its ID.
func (h *histRun) read(hp *histProcess, op *hOp, row hRowRef) {
	op.Kind, op.Tag, op.ID = hRead, row.Tag, row.ID
	var rows []HistRow
	op.MapVersion = hp.p.MapVersion()
	op.Call = h.rec.now()
	err := hp.db.Find(&rows, row.ID).Error
	op.Return = h.rec.now()
	op.Err = err
	if err != nil {
		op.Outcome = hFailed // a read changes nothing
		return
	}
	op.Seen.Copies = len(rows)
	if len(rows) > 0 {
		op.Seen.N, op.Seen.V = rows[0].N, rows[0].V
		return
	}
	// Not found: where is it?
	var onSource, onTarget int64
	_ = h.r.source.Model(&HistRow{}).Where("id = ?", row.ID).Count(&onSource).Error
	_ = h.r.target.Model(&HistRow{}).Where("id = ?", row.ID).Count(&onTarget).Error
	op.Note = fmt.Sprintf("id %d (shard %d) found none; just after, %d on the source, %d on the target; the process's map version is now %d",
		row.ID, h.r.p.Layout().Shard(row.ID), onSource, onTarget, hp.p.MapVersion())
}

// reader reads rows of every client by their IDs and, with scans set, reads
// every row at once with fan-out reads and counts.
func (h *histRun) reader(hp *histProcess, client int, scans bool) {
	for n := 0; !h.stop.Load(); n++ {
		op := &hOp{Client: client, Process: hp.id}
		switch {
		case scans && n%4 == 0:
			op.Kind = hScan
			var rows []HistRow
			op.MapVersion = hp.p.MapVersion()
			op.Call = h.rec.now()
			err := hp.db.Clauses(shardid.AllShards()).Find(&rows).Error
			op.Return = h.rec.now()
			op.Err = err
			if err != nil {
				op.Outcome = hFailed
				break
			}
			op.Scan = map[string]hSeen{}
			for _, row := range rows {
				s := op.Scan[row.Tag]
				s.Copies++
				s.N, s.V = row.N, row.V
				op.Scan[row.Tag] = s
			}
		case scans && n%4 == 2:
			op.Kind = hCount
			op.MapVersion = hp.p.MapVersion()
			op.Call = h.rec.now()
			err := hp.db.Clauses(shardid.AllShards()).Model(&HistRow{}).Count(&op.Count).Error
			op.Return = h.rec.now()
			op.Err = err
			if err != nil {
				op.Outcome = hFailed
			}
		default:
			row, ok := h.rec.pick(rand.IntN(1 << 30))
			if !ok {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			h.read(hp, op, row)
		}
		if op.Err != nil {
			h.noteErr(op.Kind, op.Err)
		}
		h.rec.add(op)
		pause := time.Duration(1+rand.IntN(3)) * time.Millisecond
		if op.Kind == hScan || op.Kind == hCount {
			pause *= 5 // each scan is an operation of every row to the checker
		}
		time.Sleep(pause)
	}
}

// verify reads the physical databases directly and checks the history.
func (h *histRun) verify(t *testing.T) {
	if t.Failed() {
		return
	}
	end := h.rec.now()
	layout := h.r.p.Layout()
	finals := map[string]hSeen{}
	var misplaced []string
	for _, k := range []int{moveSource, moveTarget} {
		db := h.r.source
		if k == moveTarget {
			db = h.r.target
		}
		var rows []HistRow
		must(t, db.Find(&rows).Error)
		for _, row := range rows {
			s := finals[row.Tag]
			s.Copies++
			s.N, s.V = row.N, row.V
			finals[row.Tag] = s
			shard := layout.Shard(row.ID)
			want := moveSource
			if shard >= movingRange.From && shard <= movingRange.To {
				want = h.at
			}
			if k != want {
				misplaced = append(misplaced, fmt.Sprintf("%s (id %d, shard %d) on %s", row.Tag, row.ID, shard, h.dbName(k)))
			}
		}
	}
	if len(misplaced) > 0 {
		t.Errorf("%d rows are on a database their shard does not map to, e.g. %v", len(misplaced), misplaced[:min(5, len(misplaced))])
	}
	// The users seeded before the moves, which only the moves touched.
	serving, other := h.r.source, h.r.target
	if h.at == moveTarget {
		serving, other = other, serving
	}
	if n, m := countIn(t, serving, "mv_users", true, layout), countIn(t, other, "mv_users", true, layout); n != int64(h.cfg.seedUsers) || m != 0 {
		t.Errorf("of the %d users seeded in the moving range, %d are on %s, which serves it, and %d on the other database", h.cfg.seedUsers, n, h.dbName(h.at), m)
	}
	ops := h.rec.snapshot()
	lost, duplicated, unsure := 0, 0, 0
	for _, op := range ops {
		if op.Kind != hCreate {
			continue
		}
		switch c := finals[op.Tag].Copies; {
		case c > 1:
			duplicated++
			t.Errorf("row %s (created by client %d at %s, %v) is on the databases %d times", op.Tag, op.Client, at(op.Call), op.Err, c)
		case c == 0 && op.Outcome == hOK:
			lost++
			t.Errorf("row %s, acknowledged as created by client %d at %s-%s, is on no database", op.Tag, op.Client, at(op.Call), at(op.Return))
		case op.Outcome == hAmbiguous:
			unsure++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	audit, err := h.r.p.Audit(ctx)
	must(t, err)
	for _, m := range audit {
		t.Errorf("audit: %d rows of %s misplaced on %s, e.g. %v", m.Rows, m.Table, m.Database, m.Keys)
	}
	h.mu.Lock()
	marks := slices.Clone(h.marks)
	h.mu.Unlock()
	timeout := 2 * time.Minute
	if *historyLong {
		timeout = 20 * time.Minute
	}
	checking := time.Now()
	v := checkHistory(ops, marks, finals, end, timeout)
	t.Logf("the history checked in %s", time.Since(checking).Round(time.Millisecond))
	for _, violation := range v.Violations {
		t.Error(violation)
	}
	for _, k := range v.Known {
		t.Errorf("a read in flight across a cleanup read wrong: %s", k)
	}
	var moved strings.Builder
	for _, hp := range h.procs {
		s := hp.p.MovedWrites()
		fmt.Fprintf(&moved, " %s: %d held, %d retried, %d failed, longest %s;", hp.name, s.Held, s.Retried, s.Failed, time.Duration(s.Longest).Round(time.Millisecond))
	}
	t.Logf("%s: %d operations (%d writes, %d reads by ID, %d fan-out reads and counts; %d of unknown outcome, %d refused or failed) of %d clients over %s; %d rows, %d created unknown; "+
		"%d moves of %d runs, %d cancelled, faults: %s; %d holds of answers; moved writes:%s %d linearizability violations (%d by reads in flight across a cleanup), %d rows lost, %d duplicated, %d misplaced (porcupine: %s over %d rows)",
		h.b.name, v.Ops, v.Writes, v.Reads, v.Scans, v.Ambiguous, v.Failed, len(h.procs)*(h.cfg.writers+1), time.Duration(end).Round(time.Millisecond),
		len(finals), unsure, h.moves, h.attempts, h.cancels, strings.Join(h.faults, ", "), h.holds, moved.String(),
		len(v.Violations), len(v.Known), lost, duplicated, len(misplaced), v.Result, v.Partitions)
	if len(h.errs) > 0 {
		var lines []string
		for text, n := range h.errs {
			lines = append(lines, fmt.Sprintf("%6d %s", n, text))
		}
		slices.Sort(lines)
		t.Logf("errors the clients saw:\n%s", strings.Join(lines, "\n"))
	}
	for _, s := range h.stuck {
		t.Errorf("a handle kept with a shard clause fails after the moves: %s", s)
	}
	for text, n := range h.errs {
		if strings.Contains(text, shardid.ErrCrossShard.Error()) { // every write names one row by its ID or its tags under AllShards
			t.Errorf("%d writes refused as cross-shard: %s", n, text)
		}
	}
}
