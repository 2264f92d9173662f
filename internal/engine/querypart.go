package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid/shardrouter"
)

// The parts of a query over several databases differ only in their lists of
// key values, so its SQL is built once, by GORM, with a marker for each value
// of those lists (each list as long as the longest part needs, a shorter
// part repeating its last value: `IN (a, b, b)` asks for a and b); each part
// runs that SQL with its own values. Building a statement is most of what
// GORM spends on one, so the parts cost little more than one statement.

// queryPart is the part of a query that runs on physical database k.
type queryPart struct {
	k    int
	sql  string
	vars []any
	rows reflect.Value // a pointer to the part's own slice of rows
	// columns are the columns its rows came with, which GORM scanned into
	// their fields.
	columns []string
	// values, when set, takes the part's values as they come instead.
	values *partValues
	// nullsOf are the columns whose NULLs the merge orders; nulls holds, per
	// row scanned, a bit per column of them that was NULL: a field that
	// cannot hold one reads it as its zero value.
	nullsOf []string
	nulls   []uint64
	// keyColumn is the key's column, which breaks the merge's ties; failed
	// are the rows that failed to scan, each failing the merge if it keeps
	// the row (nullNoting).
	keyColumn string
	// foldNames: the dialect names columns without case (MySQL, SQLite),
	// so that Select("id, SCORE") returns score's column as SCORE.
	foldNames bool
	failed    []scanFailure
	err       error
	pan       any
}

// keyMarker stands, in the SQL built for every part, for the index-th value of
// the list-th list of key values.
type keyMarker struct {
	list, index int
	seen        bool // found in the built statement's values
}

// queryParts builds the parts of a query the planner planned, each with its
// database's values only. prepare makes a copy of the statement one to run.
func (e *Engine) queryParts(db *gorm.DB, m *model, plan shardrouter.Parts, prepare func(*gorm.Statement)) ([]queryPart, error) {
	var exprs []clause.Expression
	if where, ok := db.Statement.Clauses["WHERE"].Expression.(clause.Where); ok {
		exprs = where.Exprs
	}
	if len(plan.Parts) == 0 {
		return nil, nil
	}
	parts := make([]queryPart, len(plan.Parts))
	for n, planned := range plan.Parts {
		parts[n].k = planned.Database
	}
	if slices.ContainsFunc(plan.Parts, func(planned shardrouter.Part) bool { return planned.Keep != nil }) {
		return e.buildEachPart(db, m, plan, parts, prepare) // each part keeps to its own ranges
	}
	if padsTooMuch(plan) {
		return e.buildEachPart(db, m, plan, parts, prepare) // a list mostly of one database: the others send their own
	}
	// The SQL, built once with markers for the lists' values.
	template := db.Session(&gorm.Session{Initialized: true})
	marked := exprs
	markers := 0
	keys := len(m.evidence)
	for i, column := range m.evidence {
		j := -1
		marked = shardrouter.MapLists(marked, column.matches, func(int, bool) ([]any, bool) {
			if j++; j >= len(plan.Singles[i]) || plan.Singles[i][j] {
				return nil, false
			}
			width := 0
			for _, planned := range plan.Parts {
				width = max(width, len(planned.Values[i][j]))
			}
			values := make([]any, width)
			slab := make([]keyMarker, width) // one allocation for the list's markers
			for n := range values {
				slab[n] = keyMarker{list: keys*j + i, index: n}
				values[n] = &slab[n]
			}
			markers += width
			return values, true
		})
	}
	if c, ok := template.Statement.Clauses["WHERE"]; ok {
		c.Expression = clause.Where{Exprs: marked}
		template.Statement.Clauses["WHERE"] = c
	}
	prepare(template.Statement)
	callbacks.BuildQuerySQL(template)
	if template.Error != nil {
		return nil, template.Error
	}
	sql, vars := template.Statement.SQL.String(), template.Statement.Vars
	if err := e.checkSent(template.Statement, sql, parts[0].k, true); err != nil {
		return nil, err
	}
	found := 0
	for _, v := range vars {
		if mk, ok := v.(*keyMarker); ok && !mk.seen {
			mk.seen = true
			found++
		}
	}
	if found != markers { // GORM left a value out of its SQL: build each part apart
		return e.buildEachPart(db, m, plan, parts, prepare)
	}
	for n := range parts {
		parts[n].sql, parts[n].vars = sql, slices.Clone(vars)
		for at, v := range parts[n].vars {
			if mk, ok := v.(*keyMarker); ok {
				own := plan.Parts[n].Values[mk.list%keys][mk.list/keys]
				parts[n].vars[at] = own[min(mk.index, len(own)-1)]
			}
		}
		parts[n].rows = reflect.New(reflect.TypeOf(template.Statement.Dest).Elem())
	}
	return parts, nil
}

// padsTooMuch reports whether sharing one SQL, each part's lists padded to
// the longest part's, would send more than twice the lists' values (and 1,000
// more): a list skewed to one database would be sent whole to every other.
func padsTooMuch(plan shardrouter.Parts) bool {
	padded, own := 0, 0
	for i, singles := range plan.Singles {
		for j, single := range singles {
			if single {
				continue
			}
			width := 0
			for _, planned := range plan.Parts {
				width = max(width, len(planned.Values[i][j]))
				own += len(planned.Values[i][j])
			}
			padded += width * len(plan.Parts)
		}
	}
	return padded > 2*own+1000
}

// buildEachPart builds the SQL of each part on its own copy of the statement.
func (e *Engine) buildEachPart(db *gorm.DB, m *model, plan shardrouter.Parts, parts []queryPart, prepare func(*gorm.Statement)) ([]queryPart, error) {
	for n := range parts {
		part := e.partStatement(db, m, plan.Parts[n])
		prepare(part.Statement)
		callbacks.BuildQuerySQL(part)
		if part.Error != nil {
			return nil, part.Error
		}
		if err := e.checkSent(part.Statement, part.Statement.SQL.String(), parts[n].k, true); err != nil {
			return nil, err
		}
		parts[n].sql, parts[n].vars = part.Statement.SQL.String(), part.Statement.Vars
		parts[n].rows = reflect.New(reflect.TypeOf(part.Statement.Dest).Elem())
	}
	return parts, nil
}

// runQueryPart runs one part on its database in ctx.
func (e *Engine) runQueryPart(ctx context.Context, db *gorm.DB, kind statementKind, part *queryPart, log *fanLog) error {
	stmt := db.Statement
	begin := time.Now()
	pool, err := e.partPool(stmt, part.k) // in a transaction across shards, its branch: the reads see its writes
	if err != nil {
		e.countPart(part.k, kind, begin, err) // failed on its database, as a statement bound there is counted
		return err                            // names the database already
	}
	scan := &gorm.DB{Config: db.Config}
	scan.Statement = &gorm.Statement{
		DB: scan, ConnPool: pool, Context: ctx, Schema: stmt.Schema, Table: stmt.Table,
		Model: stmt.Model, Dest: part.rows.Interface(), ReflectValue: part.rows.Elem(), Joins: stmt.Joins,
		ColumnMapping: stmt.ColumnMapping,
	}
	rows, err := pool.QueryContext(ctx, part.sql, part.vars...)
	if err == nil {
		if part.values != nil {
			scan.AddError(readValues(rows, part.values))
		} else {
			part.columns, _ = rows.Columns()
			gorm.Scan(part.notingNulls(rows), scan, 0)
		}
		scan.AddError(rows.Close())
	} else {
		scan.AddError(err)
	}
	log.addQuery(e.physical[part.k].name, part.sql, part.vars)
	e.physical[part.k].parts.note(time.Since(begin))
	e.countPart(part.k, kind, begin, scan.Error)
	if scan.Error != nil {
		return e.partError(part.k, scan.Error)
	}
	return nil
}

// runQueryParts runs the parts at once, at most Config.PartsAtOnce of them,
// each on its database, scanning the rows as GORM does into the part's own
// slice, its line kept for the statement's (logs.go).
func (e *Engine) runQueryParts(db *gorm.DB, kind statementKind, parts []queryPart) {
	stmt := db.Statement
	e.countFanOut(db, kind, len(parts))
	log := fanLogOf(stmt)
	tracer := e.partTracer()
	run := func(part *queryPart) {
		defer func() { part.pan = recover() }() // raised again in the caller's goroutine
		if tracer == nil {
			part.err = e.runQueryPart(stmt.Context, db, kind, part, log)
			return
		}
		ctx, end := tracer(stmt.Context, TracedPart{Physical: e.physical[part.k].name, Operation: operations[kind], Table: stmt.Table})
		part.err = e.runQueryPart(ctx, db, kind, part, log)
		end(part.sql, part.err)
	}
	lanes := e.config.partsAtOnce()
	switch inTurn := e.partsInTurn(parts); {
	case len(parts) > lanes && inTurn:
		partsInLanes(stmt.Context, parts, run, 1)
	case len(parts) > lanes:
		partsInLanes(stmt.Context, parts, run, lanes)
	case inTurn:
		for i := range parts {
			run(&parts[i])
		}
	default:
		partsAtOnce(parts, run)
	}
	for _, part := range parts {
		if part.pan != nil {
			panic(part.pan)
		}
	}
}

// partsInTurn reports whether the parts run sooner one after another than at
// once, by how long their databases took lately.
func (e *Engine) partsInTurn(parts []queryPart) bool {
	var onStack [8]time.Duration
	times := onStack[:0]
	for _, part := range parts {
		times = append(times, time.Duration(e.physical[part.k].parts.nanos.Load()))
	}
	return inTurn(times, e.handOff)
}

// defaultPartsAtOnce is Config.PartsAtOnce's default, as recovery's
// recoveryOpens: each part takes a connection of its database.
const defaultPartsAtOnce = 16

// partsAtOnce is how many parts of one statement run at once.
func (c Config) partsAtOnce() int {
	if c.PartsAtOnce <= 0 {
		return defaultPartsAtOnce
	}
	return c.PartsAtOnce
}

// partsAtOnce runs each part on a worker of its own, the first in this
// goroutine.
func partsAtOnce(parts []queryPart, run func(*queryPart)) {
	var wg sync.WaitGroup
	for i := range parts[min(1, len(parts)):] { // the first part runs in this goroutine
		wg.Add(1)
		goPart(func() { defer wg.Done(); run(&parts[i+1]) })
	}
	if len(parts) > 0 {
		run(&parts[0])
	}
	wg.Wait()
}

// partsInLanes runs the parts of a statement over more databases than
// Config.PartsAtOnce in that many lanes, or in one, this goroutine's,
// where they run in turn: each lane runs the next part not begun, until a
// part fails or ctx ends; the parts then not begun do not run, and the
// first of them fails for them all. The bound is per statement: with slots
// shared by statements, parts holding them all could wait on the locks of a
// transaction whose commit waits for a statement that needs a slot.
func partsInLanes(ctx context.Context, parts []queryPart, run func(*queryPart), lanes int) {
	var next atomic.Int64 // the next part no lane has taken
	next.Store(int64(lanes))
	var stop atomic.Bool
	lane := func(i int) {
		for ; i < len(parts); i = int(next.Add(1) - 1) {
			if stop.Load() || ctx.Err() != nil {
				parts[i].err = errNotRun
				continue
			}
			run(&parts[i])
			if parts[i].err != nil || parts[i].pan != nil {
				stop.Store(true) // the statement fails: its other parts would be read for nothing
			}
		}
	}
	var wg sync.WaitGroup
	for i := 1; i < lanes; i++ {
		wg.Add(1)
		goPart(func() { defer wg.Done(); lane(i) })
	}
	lane(0) // the first part runs in this goroutine
	wg.Wait()
	notRun(ctx, parts)
}

// notRun gives the first part not run an error that counts them, and the
// others none, so that the statement fails: their rows would be missing.
func notRun(ctx context.Context, parts []queryPart) {
	first, n := -1, 0
	for i := range parts {
		if parts[i].err == errNotRun {
			if n == 0 {
				first = i
			}
			parts[i].err = nil
			n++
		}
	}
	if n == 0 {
		return
	}
	cause := errPartFailed
	if err := ctx.Err(); err != nil {
		cause = err
	}
	parts[first].err = fmt.Errorf("shardid: %d of the statement's %d parts not run: %w", n, len(parts), cause)
}

// errNotRun marks a part not run until notRun counts them.
var errNotRun = errors.New("not run")

// errPartFailed is why the parts of a statement not begun when another
// failed do not run.
var errPartFailed = errors.New("another part failed")
