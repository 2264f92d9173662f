package integration

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// The differential test of issue 8: random but valid GORM programs
// (difftest_gen_test.go, over the models of difftest_models_test.go) run on
// three physical databases with the plugin and on one database without it.
// Each statement runs with the plugin first; the IDs it assigned are preset
// in the reference run, where shardid clauses do nothing. After every
// statement its outcome (error or not, RowsAffected, the values returned, the
// model hooks run) and the rows of every table, read directly from the
// databases, must equal the reference's, and every row must be on the
// database its shard names; or the plugin must have refused it with
// ErrNoShard/ErrCrossShard and changed nothing, in which case the reference
// does not run it. A mismatch prints the program since the databases were
// last emptied, the difference and the seed; the databases are then emptied
// and a new program starts.
//
// CI runs a fixed seed and a budget of a few thousand statements; by hand:
//
//	go test ./integration_test -run 'TestDifferential$' -v -difftest.seed=7 -difftest.statements=20000
//
// (-difftest.skip='Upsert,Association(Photos).Replace' leaves known classes out,
// -difftest.report=N prints more mismatches in full.) IDs come from the clock,
// so a seed replays the same kinds of statements, not the same IDs.
//
// A mismatch fails the test; a refusal that changed nothing never is one.
var (
	difftestSeed       = flag.Uint64("difftest.seed", 1, "seed of the differential test's programs")
	difftestStatements = flag.Int("difftest.statements", 4000, "statements the differential test runs per backend")
	difftestSkip       = flag.String("difftest.skip", "", "comma-separated prefixes of statement kinds the differential test leaves out (to look past a known class)")
	difftestReport     = flag.Int("difftest.report", 25, "mismatches the differential test prints in full per backend")
	difftestTally      = flag.Bool("difftest.tally", false, "log how many statements of each kind the differential test ran, refused and mismatched")
)

const (
	dtPhysical      = 3   // physical databases of the plugin's run
	dtProgramLength = 100 // statements before the databases are emptied and a new program starts
)

// dtRig is one backend's databases: the plugin's run on main and three
// physical databases, the reference on a database of its own.
type dtRig struct {
	b       backend
	db      *gorm.DB // with the plugin
	p       *shardid.Plugin
	sides   []*gorm.DB // direct: [0] the plugin's own database, [1..] the physical ones
	ref     *gorm.DB   // the reference, without the plugin
	ranges  []shardid.Range
	present [][]bool      // present[side][table]: the table exists there
	reading time.Duration // spent reading the tables' rows, for the report
}

func newRig(t *testing.T, b backend) *dtRig {
	t.Helper()
	dir := t.TempDir()
	openDirect := func(d gorm.Dialector) *gorm.DB {
		db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard}) // a config each: gorm.Open keeps the pool in it
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		sqlDB, err := db.DB()
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		sqlDB.SetMaxIdleConns(dtReaders) // readTables' connections stay open between statements
		t.Cleanup(func() { _ = sqlDB.Close() })
		return db
	}
	r := &dtRig{b: b}
	r.sides = append(r.sides, openDirect(b.dialector(t, dir)))
	count := shardid.Layout{}.ShardCount()
	var list []shardid.Shard
	for i := range dtPhysical {
		r.ranges = append(r.ranges, shardid.Range{From: i * count / dtPhysical, To: (i+1)*count/dtPhysical - 1})
		list = append(list, shardid.Shard{Name: fmt.Sprintf("%s-%d", b.name, i), Dialector: b.physical(t, dir, i), Logical: r.ranges[i : i+1]})
		r.sides = append(r.sides, openDirect(b.physical(t, dir, i)))
	}
	r.ref = openDirect(b.physical(t, dir, dtPhysical))
	// Start clean: drop what an earlier run left, everywhere.
	tables := []any{"dt_user_labels", "dt_user_tags"}
	tables = append(tables, dtModels...)
	for _, db := range append(slices.Clone(r.sides), r.ref) {
		if err := db.Migrator().DropTable(tables...); err != nil {
			t.Fatalf("drop: %v", err)
		}
	}
	r.p = shardid.New(shardid.Config{Shards: list, Atomic: b.atomicity()})
	r.db = openDirect(b.dialector(t, dir))
	firstStart(t, r.db)
	if err := r.db.Use(r.p); err != nil {
		t.Fatalf("db.Use: %v", err)
	}
	t.Cleanup(func() { _ = r.p.Close() })
	// The plugin's migration, as issue 8 will have it (Plugin.AutoMigrate) or as main has it.
	var err error
	if m, ok := any(r.p).(interface{ AutoMigrate(*gorm.DB, ...any) error }); ok {
		err = m.AutoMigrate(r.db, dtModels...)
	} else {
		err = r.db.AutoMigrate(dtModels...)
	}
	if err != nil {
		t.Fatalf("plugin migrate: %v", err)
	}
	// The reference has no foreign keys either: the plugin's shards cannot have them.
	noFK := r.ref.Session(&gorm.Session{})
	noFK.Config.DisableForeignKeyConstraintWhenMigrating = true
	if err := noFK.AutoMigrate(dtModels...); err != nil {
		t.Fatalf("reference migrate: %v", err)
	}
	if b.name == "mariadb" { // the hash key's column compares as the plugin made it: byte for byte
		var columnType, collation string
		if err := r.sides[1].Raw("SELECT COLUMN_TYPE, COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'dt_accounts' AND COLUMN_NAME = 'email'").Row().Scan(&columnType, &collation); err != nil {
			t.Fatalf("reading the plugin's hash column: %v", err)
		}
		if err := r.ref.Exec("ALTER TABLE dt_accounts MODIFY email " + columnType + " COLLATE " + collation).Error; err != nil {
			t.Fatalf("reference collation: %v", err)
		}
	}
	for _, db := range r.sides {
		row := make([]bool, len(dtTables))
		for i, table := range dtTables {
			row[i] = db.Migrator().HasTable(table.name)
		}
		r.present = append(r.present, row)
	}
	for i, table := range dtTables {
		if !r.ref.Migrator().HasTable(table.name) {
			t.Fatalf("the reference has no table %s", table.name)
		}
		if !slices.ContainsFunc(r.present, func(row []bool) bool { return row[i] }) {
			t.Fatalf("the plugin's migration made no table %s", table.name)
		}
	}
	return r
}

// snapshot is the rows of every table on every database of the plugin's run.
type snapshot [][]tableRows // [side][table]

func (r *dtRig) snapshot() (snapshot, error) {
	defer func(start time.Time) { r.reading += time.Since(start) }(time.Now())
	// The plugin's process reads what it wrote: a statement of it waits for
	// the branches of a Create that committed with a transaction on the
	// plugin's database (CreateInBatches); the sides are read without it.
	if err := r.db.Exec("SELECT 1").Error; err != nil {
		return nil, err
	}
	s := make(snapshot, len(r.sides))
	var reads []dtRead
	for i, db := range r.sides {
		s[i] = make([]tableRows, len(dtTables))
		for j, table := range dtTables {
			if r.present[i][j] {
				reads = append(reads, dtRead{db: db, table: table, into: &s[i][j], where: fmt.Sprintf("side %d", i)})
			}
		}
	}
	return s, readTables(reads)
}

func (r *dtRig) reference() ([]tableRows, error) {
	defer func(start time.Time) { r.reading += time.Since(start) }(time.Now())
	out := make([]tableRows, len(dtTables))
	reads := make([]dtRead, len(dtTables))
	for j, table := range dtTables {
		reads[j] = dtRead{db: r.ref, table: table, into: &out[j], where: "the reference"}
	}
	return out, readTables(reads)
}

// dtReaders is how many tables the differential test reads at once, and the
// idle connections each of its direct pools keeps for them: read one after
// another, the fifty tables it reads after each statement were most of its
// time, waiting on round trips.
const dtReaders = 8

// dtRead is one table to read on one database.
type dtRead struct {
	db    *gorm.DB
	table dtTable
	into  *tableRows
	where string
}

// readTables reads the tables of reads, dtReaders at a time, and returns the
// first error.
func readTables(reads []dtRead) error {
	errs := make([]error, len(reads))
	next := make(chan int, len(reads))
	for k := range reads {
		next <- k
	}
	close(next)
	var wg sync.WaitGroup
	for range min(dtReaders, len(reads)) {
		wg.Go(func() {
			for k := range next {
				rows, err := readTable(reads[k].db, reads[k].table)
				if err != nil {
					errs[k] = fmt.Errorf("read %s on %s: %w", reads[k].table.name, reads[k].where, err)
					continue
				}
				*reads[k].into = rows
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// union is a table's rows over every database of the plugin's run, sorted.
func (s snapshot) union(j int) []string {
	var all []string
	for i := range s {
		all = append(all, s[i][j].rows...)
	}
	slices.Sort(all)
	return all
}

func (s snapshot) equal(o snapshot) bool {
	for i := range s {
		for j := range s[i] {
			if !slices.Equal(s[i][j].rows, o[i][j].rows) {
				return false
			}
		}
	}
	return true
}

// misplaced lists rows of the plugin's run that are on a database they do
// not belong on: a sharded row off its shard's database, an unsharded row off
// the plugin's, a UUID-keyed row on two.
func (r *dtRig) misplaced(s snapshot) string {
	var b strings.Builder
	for j, table := range dtTables {
		seen := map[string]int{}
		for i := range s {
			for n, row := range s[i][j].rows {
				want := 0
				switch {
				case table.shardColumn == "":
				case table.uuid:
					id := s[i][j].placed[n]
					if prev, dup := seen[id]; dup && prev != i {
						fmt.Fprintf(&b, "    %s on sides %d and %d: %s\n", table.name, prev, i, row)
					}
					seen[id] = i
					continue
				default:
					want = r.sideOf(s[i][j].placed[n])
				}
				if want != i {
					fmt.Fprintf(&b, "    %s on side %d, belongs on side %d: %s\n", table.name, i, want, row)
				}
				if why := r.disagrees(table, row); why != "" {
					fmt.Fprintf(&b, "    %s: %s: %s\n", table.name, why, row)
				}
			}
		}
	}
	return b.String()
}

// disagrees says how a row's ID disagrees with its colocate or hash column,
// or "": such a row can never be found by that column.
func (r *dtRig) disagrees(table dtTable, row string) string {
	id := mustInt(field(row, table.shardColumn))
	if id <= 0 {
		return ""
	}
	shard := r.p.Layout().Shard(id)
	if table.colocate != "" {
		if owner := mustInt(field(row, table.colocate)); owner > 0 && r.p.Layout().Shard(owner) != shard {
			return fmt.Sprintf("shard %d, but %s %d is on shard %d", shard, table.colocate, owner, r.p.Layout().Shard(owner))
		}
	}
	if table.hash != "" {
		key := field(row, table.hash)
		if h, err := shardid.HashKey(key); err == nil && int(h%uint64(r.p.Layout().ShardCount())) != shard {
			return fmt.Sprintf("shard %d, but %s %q hashes to shard %d", shard, table.hash, key, h%uint64(r.p.Layout().ShardCount()))
		}
	}
	return ""
}

// sideOf is the side (1..dtPhysical) whose physical database holds the shard
// of the decimal ID; -1 for no shard.
func (r *dtRig) sideOf(id string) int {
	var n int64
	if _, err := fmt.Sscan(id, &n); err != nil || n <= 0 {
		return -1
	}
	shard := r.p.Layout().Shard(n)
	for k, rg := range r.ranges {
		if rg.From <= shard && shard <= rg.To {
			return k + 1
		}
	}
	return -1
}

// empty deletes every row of the test's tables everywhere.
func (r *dtRig) empty() error {
	for i, db := range r.sides {
		for j, table := range dtTables {
			if r.present[i][j] {
				if err := db.Exec("DELETE FROM " + table.name).Error; err != nil {
					return err
				}
			}
		}
	}
	for _, table := range dtTables {
		if err := r.ref.Exec("DELETE FROM " + table.name).Error; err != nil {
			return err
		}
	}
	return nil
}

// env is one run of a statement: the database and the IDs the plugin's run
// assigned, which the reference run presets in the same order.
type env struct {
	db  *gorm.DB
	ref bool
	ids *[]any
	pos int
}

// pre presets, in the reference run, the IDs the plugin's run assigned to v.
func (e *env) pre(v any) {
	if !e.ref {
		return
	}
	walkIDs(reflect.ValueOf(v), func(f reflect.Value) {
		if e.pos >= len(*e.ids) {
			return
		}
		x := (*e.ids)[e.pos]
		e.pos++
		if f.IsZero() {
			f.Set(reflect.ValueOf(x))
		}
	})
}

// post records, in the plugin's run, the IDs of v after a write.
func (e *env) post(v any) {
	if e.ref {
		return
	}
	walkIDs(reflect.ValueOf(v), func(f reflect.Value) { *e.ids = append(*e.ids, f.Interface()) })
}

// write runs a write of v, with its IDs carried over, and returns its outcome.
func (e *env) write(v any, do func(db *gorm.DB) *gorm.DB) outcome {
	e.pre(v)
	tx := do(e.db)
	e.post(v)
	return res(tx, v, true)
}

// walkIDs calls f on the ID field of every model struct in v, depth first,
// in field order.
func walkIDs(v reflect.Value, f func(reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkIDs(v.Elem(), f)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkIDs(v.Index(i), f)
		}
	case reflect.Struct:
		if !dtModelTypes[v.Type()] {
			return
		}
		f(v.FieldByName("ID"))
		for i := range v.NumField() {
			if k := v.Field(i).Kind(); k == reflect.Slice || k == reflect.Pointer {
				walkIDs(v.Field(i), f)
			}
		}
	}
}

// res is a statement's outcome with dest as what it returned.
func res(tx *gorm.DB, dest any, ordered bool) outcome {
	return outcome{err: tx.Error, rows: tx.RowsAffected, out: canon(dest, ordered)}
}

// refusal names the refusal an error is, or "".
func refusal(err error) string {
	switch {
	case errors.Is(err, shardid.ErrNoShard):
		return "ErrNoShard"
	case errors.Is(err, shardid.ErrCrossShard):
		return "ErrCrossShard"
	case errors.Is(err, shardid.ErrNotAtomic):
		return "ErrNotAtomic" // SQLite: a transaction across shards is refused before it begins
	}
	return ""
}

// runSafe runs a statement, turning a panic into an error outcome.
// The hooks the statement ran are part of its outcome.
func runSafe(s dtStmt, e *env) (o outcome) {
	dtHooks.take()
	defer func() {
		if p := recover(); p != nil {
			o = outcome{err: fmt.Errorf("panic: %v", p), out: "panic"}
		}
		if hooks := dtHooks.take(); hooks != "" {
			o.out += " hooks{" + hooks + "}"
		}
	}()
	return s.run(e)
}

// dtMismatch is one statement whose runs disagree.
type dtMismatch struct {
	op, kind, detail string
	program          []string
}

func TestDifferential(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		seed := *difftestSeed
		t.Logf("seed %d (replay: -difftest.seed=%d -difftest.statements=%d)", seed, seed, *difftestStatements)
		run := newRun(t, newRig(t, b))
		g := newGen(rand.New(rand.NewPCG(seed, 0x5eed)), b.name, *difftestSkip)
		for run.ran < *difftestStatements {
			if len(run.program) >= dtProgramLength {
				run.restart()
			}
			g.learn(run.before)
			run.step(g.next())
		}
		run.report(fmt.Sprintf("seed %d", seed))
	})
}

// dtRun runs statements on a rig and keeps the tally.
type dtRun struct {
	t          *testing.T
	r          *dtRig
	before     snapshot // the plugin's run before the next statement
	program    []string // the statements since the databases were last emptied
	mismatches []dtMismatch
	refused    map[string]int    // by error kind
	refusedBy  map[string]int    // by statement kind and error kind
	example    map[string]string // a refused statement and its error, by statement kind and error kind
	byOp       map[string]int    // mismatches by statement kind and mismatch kind
	ranBy      map[string][4]int // statements by kind: run, refused, mismatched, failed on both sides alike
	ran        int
	start      time.Time
}

func newRun(t *testing.T, r *dtRig) *dtRun {
	run := &dtRun{t: t, r: r, refused: map[string]int{}, refusedBy: map[string]int{}, example: map[string]string{}, byOp: map[string]int{}, ranBy: map[string][4]int{}, start: time.Now()}
	var err error
	if run.before, err = r.snapshot(); err != nil {
		t.Fatal(err)
	}
	return run
}

// restart empties the databases; the next statement begins a new program.
func (run *dtRun) restart() {
	if err := run.r.empty(); err != nil {
		run.t.Fatal(err)
	}
	run.program = nil
	var err error
	if run.before, err = run.r.snapshot(); err != nil {
		run.t.Fatal(err)
	}
}

// step runs s with the plugin, then, unless the plugin refused it, on the
// reference, and compares. It reports whether the runs agree.
func (run *dtRun) step(s dtStmt) bool {
	t, r := run.t, run.r
	run.ran++
	tally := run.ranBy[s.op]
	tally[0]++
	defer func() { run.ranBy[s.op] = tally }()
	var ids []any
	got := runSafe(s, &env{db: r.db, ids: &ids})
	after, err := r.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	run.program = append(run.program, fmt.Sprintf("%3d  %s\n       // plugin: %s", len(run.program)+1, s.text, short(got.String())))
	fail := func(kind, detail string) bool {
		run.mismatches = append(run.mismatches, dtMismatch{op: s.op, kind: kind, detail: detail, program: slices.Clone(run.program)})
		run.byOp[s.op+": "+kind]++
		tally[2]++
		run.restart()
		return false
	}
	if kind := refusal(got.err); kind != "" {
		tally[1]++
		run.refused[kind]++
		run.refusedBy[s.op+": "+kind]++
		if _, seen := run.example[s.op+": "+kind]; !seen {
			run.example[s.op+": "+kind] = s.text + "\n          → " + got.err.Error()
		}
		if !run.before.equal(after) {
			var d strings.Builder
			for j, table := range dtTables {
				if diff := diffRows(after.union(j), run.before.union(j)); diff != "" {
					d.WriteString("  " + table.name + " (+ after, - before):\n" + diff)
				}
			}
			if d.Len() == 0 {
				d.WriteString("  rows moved between databases\n")
			}
			return fail("refused but changed", d.String())
		}
		run.before = after
		return true
	}
	want := runSafe(s, &env{db: r.ref, ref: true, ids: &ids})
	refRows, err := r.reference()
	if err != nil {
		t.Fatal(err)
	}
	var d strings.Builder
	if !got.same(want) {
		fmt.Fprintf(&d, "  result:\n    plugin:    %s\n    reference: %s\n", got, want)
	}
	for j, table := range dtTables {
		if diff := diffRows(after.union(j), refRows[j].rows); diff != "" {
			d.WriteString("  " + table.name + ":\n" + diff)
		}
	}
	if m := r.misplaced(after); m != "" {
		d.WriteString("  misplaced rows:\n" + m)
	}
	if d.Len() == 0 && got.err != nil {
		tally[3]++
	}
	if d.Len() > 0 {
		kind := "rows differ"
		switch {
		case got.err != nil && want.err == nil:
			kind = "plugin error"
		case !got.same(want):
			kind = "result differs"
		case strings.Contains(d.String(), "misplaced"):
			kind = "misplaced"
		}
		return fail(kind, d.String())
	}
	run.before = after
	return true
}

// report fails the test with the mismatches, and logs the tally.
func (run *dtRun) report(replay string) {
	t := run.t
	for i, m := range run.mismatches {
		if i >= *difftestReport {
			t.Errorf("... and %d more mismatches", len(run.mismatches)-i)
			break
		}
		t.Errorf("MISMATCH %d (%s, %s), %s, program:\n%s\n%s", i+1, m.op, m.kind, replay, strings.Join(m.program, "\n"), m.detail)
	}
	classes := make([]string, 0, len(run.byOp))
	for k, n := range run.byOp {
		classes = append(classes, fmt.Sprintf("%4d  %s", n, k))
	}
	slices.Sort(classes)
	refusals := make([]string, 0, len(run.refusedBy))
	for k, n := range run.refusedBy {
		refusals = append(refusals, fmt.Sprintf("%4d  %s\n        e.g. %s", n, k, run.example[k]))
	}
	slices.Sort(refusals)
	t.Logf("%s: %d statements in %v (reading the databases' rows %v), refused %v, %d mismatches\nmismatches by kind:\n%s\nrefusals by kind:\n%s",
		run.r.b.name, run.ran, time.Since(run.start).Round(time.Millisecond), run.r.reading.Round(time.Millisecond), run.refused, len(run.mismatches),
		strings.Join(classes, "\n"), strings.Join(refusals, "\n"))
	if *difftestTally {
		kinds := make([]string, 0, len(run.ranBy))
		for k, n := range run.ranBy {
			kinds = append(kinds, fmt.Sprintf("%5d %5d %5d %5d  %s", n[0], n[1], n[2], n[3], k))
		}
		slices.Sort(kinds)
		t.Logf("%s: statements by kind (run, refused, mismatched, failed alike):\n%s", run.r.b.name, strings.Join(kinds, "\n"))
	}
}

// short cuts a long line for the program listing.
func short(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
