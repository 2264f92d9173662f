package engine

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/sqlscan"
	"github.com/shardid/shardid/shardrouter"
)

// fanOut runs a statement whose rows may be on several physical databases on
// each of them, each part asking its database only for its own rows: queries
// concurrently, with the results merged; updates and deletes as one write.
// Inside a transaction, which is on one database, it fails with
// ErrCrossShard.
func (e *Engine) fanOut(db *gorm.DB, kind statementKind, m *model, physicals []int, subqueries bool) {
	stmt := db.Statement
	if db.DryRun {
		// GORM builds a subquery so, to splice its SQL into another statement:
		// the SQL stays as written, and the statement that uses it is refused.
		stmt.Settings.Store(fanOutKey{}, physicals)
		return
	}
	names := func() []string {
		names := make([]string, len(physicals))
		for i, k := range physicals {
			names[i] = e.physical[k].name
		}
		return names
	}
	if inTransaction(stmt.ConnPool) && globalOf(stmt.ConnPool) == nil {
		db.AddError(fmt.Errorf("%w: %s: the statement needs %v, a transaction is on one database (begin it with shardid.AcrossShards() to span several)", ErrCrossShard, m.schema.Name, names()))
		return
	}
	if subqueries {
		db.AddError(fmt.Errorf("%w: %s: the statement needs %v, and its subquery runs on one database", ErrCrossShard, m.schema.Name, names()))
		return
	}
	if _, built := loadSetting(stmt, joinsBuiltKey{}); built {
		db.AddError(fmt.Errorf("%w: %s: the statement needs %v, and a callback before GORM's query built its SQL, Joins and all, before the plugin could give each database its part: build it in that callback only when the statement has a shard clause, or read without Joins", ErrCrossShard, m.schema.Name, names()))
		return
	}
	plan := e.planParts(stmt, m, physicals)
	switch kind {
	case kindQuery, kindRow:
		e.fanOutQuery(db, kind, m, plan)
	case kindUpdate, kindDelete:
		e.fanOutWrite(db, kind, m, plan, physicals)
	default:
		db.AddError(fmt.Errorf("%w: %s: the statement needs %d databases", ErrCrossShard, m.schema.Name, len(physicals)))
	}
}

// planParts asks the planner what each database of a statement over
// several is asked.
func (e *Engine) planParts(stmt *gorm.Statement, m *model, physicals []int) shardrouter.Parts {
	var where []clause.Expression
	if w, ok := stmt.Clauses["WHERE"].Expression.(clause.Where); ok {
		where = w.Exprs
	}
	return shardrouter.PlanParts(where, m.keys, physicals, e.mapOf(stmt))
}

// part returns a copy of the statement pinned to the database of planned,
// as the statement instance a processor runs on (Clauses() makes it one:
// GORM keeps per-statement state, such as its own transaction, on that
// instance). Its conditions are its own: their lists of keys keep only the
// values planned gives them.
func (e *Engine) part(db *gorm.DB, m *model, planned shardrouter.Part) *gorm.DB {
	part := e.partStatement(db, m, planned)
	k := planned.Database
	pool, err := e.partPool(db.Statement, k)
	if part.AddError(err) == nil {
		part.Statement.ConnPool = pool
	} else {
		part.Statement.Settings.Store(unavailableKey{}, k) // fails, and is counted, on its database
	}
	return part
}

// partStatement is part without its connection: what a query's part is
// built from (it gets its connection as it runs).
func (e *Engine) partStatement(db *gorm.DB, m *model, planned shardrouter.Part) *gorm.DB {
	part := db.Session(&gorm.Session{Initialized: true}) // one copy of the statement, context and all
	keepInstanceSettings(db.Statement, part.Statement)
	k := planned.Database
	if c, ok := part.Statement.Clauses["WHERE"]; ok {
		if where, ok := c.Expression.(clause.Where); ok {
			exprs := where.Exprs
			for i, column := range m.evidence {
				lists, j := planned.Values[i], -1
				exprs = shardrouter.MapLists(exprs, column.matches, func(n int, single bool) ([]any, bool) {
					if j++; j >= len(lists) {
						return nil, false
					}
					return lists[j], !single && len(lists[j]) != n
				})
			}
			c.Expression = clause.Where{Exprs: exprs}
			part.Statement.Clauses["WHERE"] = c
		}
	}
	e.keepStatementTo(part.Statement, m, db.Statement.Table, planned.Keep)
	part.Statement.Settings.Store(pinKey{}, pin{schema: db.Statement.Schema, physical: k})
	if !planned.Pinned {
		part.Statement.Settings.Store(partRangesKey{part.Statement}, planned.Keep)
	}
	return part
}

// partPool is what a part on database k runs on: its branch, in a
// transaction across shards, or else its pool.
func (e *Engine) partPool(stmt *gorm.Statement, k int) (gorm.ConnPool, error) {
	if g := globalOf(stmt.ConnPool); g != nil {
		return g.branch(stmt.Context, k)
	}
	return e.pool(stmt.Context, k)
}

// keepStatementTo ANDs keepTo's condition to the statement's conditions,
// and reports whether there was one.
func (e *Engine) keepStatementTo(stmt *gorm.Statement, m *model, table string, keep []Range) bool {
	cond := e.keepTo(m, table, keep)
	if cond == nil {
		return false
	}
	if c, ok := stmt.Clauses["WHERE"]; ok {
		if where, ok := c.Expression.(clause.Where); ok && shardrouter.OrJoined(where.Exprs) {
			g := shardrouter.Grouped(where.Exprs) // the ranges AND-ed to all of it, not to its last Or
			if softDeleteWillWrap(stmt) {
				g = shardrouter.GroupedAnd(where.Exprs) // built as GORM's soft delete will wrap it, a leading Or kept in place
			}
			c.Expression = clause.Where{Exprs: []clause.Expression{g}}
			stmt.Clauses["WHERE"] = c
		}
	}
	stmt.AddClause(clause.Where{Exprs: []clause.Expression{cond}})
	return true
}

// ownWhereKey is the Settings key of a statement's WHERE clause as it was
// before routing kept the statement to its database's ranges.
type ownWhereKey struct{ stmt *gorm.Statement }

type ownWhere struct {
	where clause.Clause
	had   bool
	kept  int // the conditions once kept, the ranges' last: GORM's added after them are the statement's
}

// keepStatementToOnce is keepStatementTo on a statement that may run again:
// it is given back its own conditions as it ends (giveOwnWhereBack), so
// that its next run is kept to the ranges of the map of then.
func (e *Engine) keepStatementToOnce(stmt *gorm.Statement, m *model, table string, keep []Range) {
	where, had := stmt.Clauses["WHERE"]
	if !e.keepStatementTo(stmt, m, table, keep) {
		return
	}
	if w, ok := stmt.Clauses["WHERE"].Expression.(clause.Where); ok {
		stmt.Settings.Store(ownWhereKey{stmt}, ownWhere{where: where, had: had, kept: len(w.Exprs)})
	}
}

// giveOwnWhereBack gives the statement back its WHERE clause without the
// ranges keepStatementToOnce added, with the conditions GORM added since (a
// struct's key, as it builds First(&T{ID: id})), as on one database.
func giveOwnWhereBack(stmt *gorm.Statement) {
	v, ok := loadSetting(stmt, ownWhereKey{stmt})
	if !ok {
		return
	}
	stmt.Settings.Delete(ownWhereKey{stmt})
	own := v.(ownWhere)
	now, _ := stmt.Clauses["WHERE"].Expression.(clause.Where)
	var since []clause.Expression
	if len(now.Exprs) > own.kept {
		since = now.Exprs[own.kept:]
	}
	if !own.had && len(since) == 0 {
		delete(stmt.Clauses, "WHERE")
		return
	}
	before, _ := own.where.Expression.(clause.Where)
	own.where.Expression = clause.Where{Exprs: append(slices.Clip(before.Exprs), since...)}
	stmt.Clauses["WHERE"] = own.where
}

// keepToRanges is false only in the benchmark that prices keepTo.
var keepToRanges = true

// keepTo is the condition that keeps a part to the rows of the ranges keep
// the map gives its database (nil: every shard), on the key's shard bits:
// the database may hold a move's copy of another range. It names the
// ranges or, when fewer, those it leaves out.
func (e *Engine) keepTo(m *model, table string, keep []Range) clause.Expression {
	if keep == nil || !keepToRanges {
		return nil
	}
	t := shardedTableOf(m)
	f := e.fence()
	ranges, negate := keep, false
	if left := leftOut(keep, e.layout.ShardCount()); len(left) < len(keep) {
		ranges, negate = left, true
	}
	cond, err := f.RangesSQL(fence.Table{Name: t.Name, Key: t.Key, Kind: t.Kind}, sqlscan.Quote(f.Dialect, table), ranges)
	if err != nil {
		return clause.Expr{SQL: "1 = 0"} // fail closed: no row of another range may be read
	}
	if negate {
		return clause.Expr{SQL: "NOT (" + cond + ")"}
	}
	return clause.Expr{SQL: "(" + cond + ")"}
}

// fence reads the shard bits of the plugin's layout in its dialect.
func (e *Engine) fence() fence.Fence {
	return fence.Fence{Dialect: e.db.Dialector.Name(), ShardBits: e.layout.ShardBits, SequenceBits: e.layout.SequenceBits}
}

// leftOut is the complement of ranges (in order) within 0..shards-1.
func leftOut(ranges []Range, shards int) []Range {
	var left []Range
	next := 0
	for _, r := range ranges {
		if r.From > next {
			left = append(left, Range{From: next, To: r.From - 1})
		}
		next = r.To + 1
	}
	if next < shards {
		left = append(left, Range{From: next, To: shards - 1})
	}
	return left
}

// keptFailed returns the errors of the rows that failed to scan which the
// merge kept (kept: each part's rows kept, in order), each named by its
// database as a part's error is; the rows it left out are ones one database
// would not have sent.
func (e *Engine) keptFailed(runs []queryPart, failed [][]scanFailure, kept [][]int) error {
	var errs []error
	for i, rows := range failed {
		for _, f := range rows {
			if i >= len(kept) {
				break
			}
			if _, ok := slices.BinarySearch(kept[i], f.row); ok {
				errs = append(errs, e.partError(runs[i].k, f.err))
			}
		}
	}
	return errors.Join(errs...)
}

// partError names the physical database a part failed on.
func (e *Engine) partError(k int, err error) error {
	if named := (*onError)(nil); errors.As(err, &named) {
		return err
	}
	return &onError{name: e.physical[k].name, err: err}
}

// fanOutWrite runs an update or delete on each database, as one write
// (execute.go). Rows given as a slice (Delete(&rows), Model(&rows).Updates) are split: each part gets
// only its database's rows, so each row's hooks run once, and rows RETURNING
// gives back reach the caller's slice from every part.
func (e *Engine) fanOutWrite(db *gorm.DB, kind statementKind, m *model, plan shardrouter.Parts, physicals []int) {
	stmt := db.Statement
	if limit, ok := writeLimit(stmt); ok {
		db.AddError(fmt.Errorf("%w: %s: a write with LIMIT %d over %d physical databases: each would write its own %d rows; give it one shard, or leave LIMIT out", ErrCrossShard, m.schema.Name, limit, len(physicals), limit))
		return
	}
	rows := writeRows(stmt, kind)
	returning, replaced := returningOf(stmt)
	if returning && rows.slice != nil && rows.value().Len() == 0 {
		replaced = true // GORM appends what RETURNING gives to an empty slice, whatever its columns
	}
	if returning && rows.slice == nil {
		db.AddError(fmt.Errorf("%w: %s: RETURNING rows from %d physical databases need a slice to go in", ErrCrossShard, m.schema.Name, len(physicals)))
		return
	}
	type partRows struct {
		index []int         // the caller's rows the part got, by position
		slice reflect.Value // the part's own slice (a pointer to it)
	}
	given := make(map[int]*partRows, len(physicals)) // by database: state of the statement's databases only
	for _, k := range physicals {
		given[k] = &partRows{}
	}
	keyed := false // whether the caller's rows name their databases
	if rows.slice != nil {
		keyed = rows.split(stmt.Context, e, m, physicals[0], func(k, i int) {
			if g, ok := given[k]; ok {
				g.index = append(g.index, i)
			}
		})
	}
	byModel := kind == kindDelete && !sameValue(stmt.Model, stmt.Dest) && len(e.valueShards(stmt, m, kind, reflect.Indirect(reflect.ValueOf(stmt.Model)), nil)) > 0
	// As GORM refuses it on one database, once the Before hooks and the
	// callbacks before GORM's own have run (a hook's or a tenant scope's
	// condition counts): each part's condition to its database's ranges is
	// the plugin's, not the caller's, so each part is refused at its gate,
	// before any part writes, if it holds no condition besides those.
	guarded := !db.AllowGlobalUpdate && !keyed && !byModel && len(conditionsOf(stmt)) == 0
	// Every part is made, and an update's SET checked against each part's
	// rows, before any part runs: a part refused after another had committed
	// would leave the statement half written. Each part checks again after
	// its hooks.
	parts := make(map[int]*gorm.DB, len(physicals))
	var run []int
	now := db.NowFunc() // one statement, one time, on every database
	for _, planned := range plan.Parts {
		k := planned.Database
		if keyed && len(given[k].index) == 0 {
			continue // none of the rows is there: without them GORM would not restrict the part to them
		}
		part := e.part(db, m, planned)
		e.logPartTo(stmt, part)
		part.Config.NowFunc = func() time.Time { return now }
		if rows.slice != nil {
			given[k].slice = rows.subset(given[k].index)
			rows.give(part.Statement, given[k].slice.Interface())
		}
		if kind == kindUpdate && part.Error == nil {
			if err := e.checkPlannedUpdate(part.Statement, m); err != nil {
				db.AddError(e.partError(k, err))
				return
			}
		}
		parts[k], run = part, append(run, k)
	}
	// One value, not rows: its hooks run once, in the first part, and the
	// other parts, made to skip them, start once it is planned: with the
	// conditions its hooks added, and the SET it will write after them (a
	// hook's SetColumn, the UpdatedAt time that SkipHooks would leave out).
	writes := make([]writePart, len(run))
	for i, k := range run {
		writes[i] = writePart{k: k, db: parts[k], guarded: guarded, plugins: len(conditionsOf(parts[k].Statement))}
	}
	if rows.slice == nil && len(run) > 1 {
		first := parts[run[0]].Statement
		var planned *plannedSet
		if kind == kindUpdate {
			planned = &plannedSet{}
			first.Settings.Store(plannedSetKey{first}, planned)
		}
		before, table := len(conditionsOf(first)), first.Table
		for i := range writes[1:] {
			writes[i+1].db.Statement.SkipHooks = true
			writes[i+1].start = func(part *gorm.DB) bool {
				if first.Table != table {
					part.AddError(hookMovedTable(m, table, first.Table)) // fails at its gate: no part writes
					return true
				}
				part.Statement.Unscoped = part.Statement.Unscoped || first.Unscoped // a hook's, as of the one statement
				if added := conditionsOf(first)[before:]; len(added) > 0 {
					part.Statement.AddClause(clause.Where{Exprs: slices.Clone(added)})
				}
				if planned == nil {
					return true
				}
				if planned.made && len(planned.set) > 0 {
					part.Statement.AddClause(planned.set)
					return true
				}
				return false // the first part had nothing to write
			}
		}
	}
	var agree func([]*turn) error
	if rows.slice != nil && len(run) > 1 {
		agree = hooksAgree(m, writes)
	}
	e.fannedOut(db, run)
	e.runParts(db, kind, writes, agree)
	if rows.slice == nil {
		return
	}
	// The caller's slice gets back what the parts did to their rows: the
	// rows RETURNING gave, or its own rows, as the hooks and RETURNING
	// columns left them.
	target := rows.value()
	for _, k := range run { // a hook may have asked for RETURNING since
		if returned, all := returningOf(parts[k].Statement); returned && all || given[k].slice.IsValid() && given[k].slice.Elem().Len() != len(given[k].index) {
			replaced = true
		}
	}
	if replaced {
		merged := reflect.MakeSlice(reflect.SliceOf(target.Type().Elem()), 0, 0)
		for _, k := range physicals {
			if given[k].slice.IsValid() {
				merged = reflect.AppendSlice(merged, given[k].slice.Elem())
			}
		}
		if target.Kind() == reflect.Slice {
			target.Set(merged)
		} else {
			reflect.Copy(target, merged)
		}
		return
	}
	for _, k := range physicals {
		if given[k].slice.IsValid() {
			for j, i := range given[k].index {
				target.Index(i).Set(given[k].slice.Elem().Index(j))
			}
		}
	}
}

// hooksAgree refuses a write of rows split over databases whose parts' Before
// hooks added different conditions, or left different SETs (a SetColumn of a
// row's own value, an Omit of a guarded row): on one database GORM runs every
// row's hooks on the one statement, so each row's conditions bind every row,
// and its SET writes every row; no part may hold fewer or write otherwise.
// What every part's hooks did alike (a "not locked", Unscoped) keeps its
// meaning.
func hooksAgree(m *model, writes []writePart) func([]*turn) error {
	before := make([]int, len(writes))
	for i, w := range writes {
		before[i] = len(conditionsOf(w.db.Statement))
	}
	table := writes[0].db.Statement.Table
	return func(turns []*turn) error { // nil: a part not started
		var first *turn
		var firstAdded []clause.Expression
		for i, t := range turns {
			if t == nil || t.stmt == nil {
				continue // not started: nothing of its own to write
			}
			if t.stmt.Table != table {
				return hookMovedTable(m, table, t.stmt.Table)
			}
			added := t.hooked[min(before[i], len(t.hooked)):]
			if first == nil {
				first, firstAdded = t, added
				continue
			}
			if !sameConditions(firstAdded, added) {
				return fmt.Errorf("%w: %s: the rows' Before hooks added conditions that differ between their databases (%v, %v); on one database every row's conditions bind every row: write the rows apart, or add conditions that do not depend on the row",
					ErrCrossShard, m.schema.Name, firstAdded, added)
			}
			if first.stmt.Unscoped != t.stmt.Unscoped {
				return fmt.Errorf("%w: %s: the rows' Before hooks made the write unscoped on one database and not on another; on one database a hook's Unscoped makes the whole statement so: write the rows apart, or set Unscoped on the statement",
					ErrCrossShard, m.schema.Name)
			}
			if !sameSet(first.set, t.set) {
				return fmt.Errorf("%w: %s: the rows' Before hooks left SETs that differ between their databases (%v, %v); on one database one SET writes every row: write the rows apart, or set values that do not depend on the row",
					ErrCrossShard, m.schema.Name, assignedColumns(first.set), assignedColumns(t.set))
			}
		}
		return nil
	}
}

// hookMovedTable refuses a write over several databases whose Before hook
// set another table: each part's ranges are kept on the table it was planned
// on, and the parts without the hooks would write that one.
func hookMovedTable(m *model, planned, set string) error {
	return fmt.Errorf("%w: %s: a Before hook set the table %s in place of %s in a write over several databases; set it before the statement (db.Table), or write each database's rows apart",
		ErrCrossShard, m.schema.Name, set, planned)
}

// sameSet reports whether two parts' SETs write the same columns with the
// same values, each as it binds: a serializer's, or another Valuer's, by
// what it sends (each part's serializer carries its own context).
func sameSet(a, b clause.Set) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Column != b[i].Column || !reflect.DeepEqual(boundAs(a[i].Value), boundAs(b[i].Value)) {
			return false
		}
	}
	return true
}

// boundAs is what a SET value sends: a Valuer's Value, or the value.
func boundAs(v any) any {
	if valuer, ok := v.(driver.Valuer); ok {
		bound, err := boundValue(valuer)
		if err != nil {
			return errs.Text(err)
		}
		return bound
	}
	return v
}

// assignedColumns names the columns a SET writes.
func assignedColumns(set clause.Set) []string {
	names := make([]string, len(set))
	for i, a := range set {
		names[i] = a.Column.Name
	}
	return names
}

// sameConditions reports whether a and b hold the same conditions, however
// often each.
func sameConditions(a, b []clause.Expression) bool {
	in := func(x clause.Expression, list []clause.Expression) bool {
		return slices.ContainsFunc(list, func(y clause.Expression) bool { return reflect.DeepEqual(x, y) })
	}
	for _, x := range a {
		if !in(x, b) {
			return false
		}
	}
	for _, y := range b {
		if !in(y, a) {
			return false
		}
	}
	return true
}

// conditionsOf returns the conditions of the statement's WHERE clause.
func conditionsOf(stmt *gorm.Statement) []clause.Expression {
	if where, ok := stmt.Clauses["WHERE"].Expression.(clause.Where); ok {
		return where.Exprs
	}
	return nil
}

// rowSlice is the caller's slice (or array) of rows a write names: the
// Model of an update, the value of a delete.
type rowSlice struct {
	slice     any  // the pointer to it; nil when the rows are not a slice
	bothSides bool // the statement's Model and Dest are the same pointer
	isModel   bool // the rows are the Model (an update), not the Dest
}

func writeRows(stmt *gorm.Statement, kind statementKind) rowSlice {
	rows := stmt.Dest
	isModel := kind == kindUpdate
	if isModel {
		rows = stmt.Model
	}
	rv := reflect.ValueOf(rows)
	if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		// Given by value (Delete(rows)), as GORM takes them: split a pointer to a copy, whose slice shares the rows
		ptr := reflect.New(rv.Type())
		ptr.Elem().Set(rv)
		return rowSlice{slice: ptr.Interface(), bothSides: sameValue(stmt.Model, stmt.Dest), isModel: isModel}
	}
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Slice && rv.Elem().Kind() != reflect.Array {
		return rowSlice{}
	}
	return rowSlice{slice: rows, bothSides: sameValue(stmt.Model, stmt.Dest), isModel: isModel}
}

func (r rowSlice) value() reflect.Value { return reflect.ValueOf(r.slice).Elem() }

// split tells add which database each row belongs on, by its key; rows
// without one go first, with the first keyed row's, or firstPart. It reports
// whether GORM restricts the write to the rows' keys.
func (r rowSlice) split(ctx context.Context, p *Engine, m *model, firstPart int, add func(k, i int)) bool {
	rows := r.value()
	if r.isModel && !lastRowKeyed(ctx, m.schema, rows) {
		for i := range rows.Len() {
			add(firstPart, i) // no key condition: each part writes by the others alone
		}
		return false
	}
	pk := m.pk().field
	type keyedRow struct{ k, i int }
	var keyed []keyedRow
	var unkeyed []int
	for i := range rows.Len() {
		row := reflect.Indirect(rows.Index(i))
		if row.Kind() != reflect.Struct || row.Type() != m.schema.ModelType {
			unkeyed = append(unkeyed, i)
			continue
		}
		shard, zero, err := p.fieldShard(pk.ReflectValueOf(ctx, row))
		if err != nil || zero {
			unkeyed = append(unkeyed, i)
			continue
		}
		keyed = append(keyed, keyedRow{p.physicalOf(shard), i})
	}
	first := firstPart
	if len(keyed) > 0 {
		first = keyed[0].k
	}
	// First, so that no part ends with a row without a key: GORM would
	// then leave the part's update without its key condition.
	for _, i := range unkeyed {
		add(first, i)
	}
	for _, row := range keyed {
		add(row.k, row.i)
	}
	return len(keyed) > 0
}

// lastRowKeyed reports whether GORM restricts an update of rows to their
// keys: it reads the key of the last row alone
// (callbacks.ConvertToAssignments), and leaves the condition out when it is
// zero, whatever the other rows hold.
func lastRowKeyed(ctx context.Context, s *schema.Schema, rows reflect.Value) bool {
	if rows.Len() == 0 {
		return false
	}
	last := rows.Index(rows.Len() - 1)
	for _, field := range s.PrimaryFields {
		if _, zero := field.ValueOf(ctx, last); !zero {
			return true
		}
	}
	return false
}

// subset returns a pointer to a new slice of the rows at index: a backing
// array of its own, which GORM may reuse when RETURNING replaces the rows.
func (r rowSlice) subset(index []int) reflect.Value {
	rows := r.value()
	subset := reflect.MakeSlice(reflect.SliceOf(rows.Type().Elem()), 0, len(index))
	for _, i := range index {
		subset = reflect.Append(subset, rows.Index(i))
	}
	ptr := reflect.New(subset.Type())
	ptr.Elem().Set(subset)
	return ptr
}

// give makes rows (a pointer to a slice) the part's rows.
func (r rowSlice) give(stmt *gorm.Statement, rows any) {
	switch {
	case r.bothSides:
		stmt.Model, stmt.Dest = rows, rows
	case r.isModel:
		stmt.Model = rows
	default:
		stmt.Dest = rows
	}
}

// writeLimit returns the LIMIT an update or delete is sent with (MySQL's
// UPDATE ... LIMIT), if any.
func writeLimit(stmt *gorm.Statement) (int, bool) {
	l, ok := stmt.Clauses["LIMIT"].Expression.(clause.Limit)
	if !ok || l.Limit == nil || *l.Limit < 0 || !slices.Contains(stmt.BuildClauses, "LIMIT") {
		return 0, false
	}
	return *l.Limit, true
}

// returningOf reports whether the write returns rows (a RETURNING clause the
// dialect writes), and whether they replace the rows given (RETURNING *)
// rather than fill their columns.
func returningOf(stmt *gorm.Statement) (returning, replaced bool) {
	c, ok := stmt.Clauses["RETURNING"]
	if !ok || !slices.Contains(stmt.BuildClauses, "RETURNING") {
		return false, false
	}
	r, _ := c.Expression.(clause.Returning)
	return true, len(r.Columns) == 0 || len(r.Columns) == 1 && r.Columns[0].Name == "*"
}

// builtClauses are the statement's clauses its SQL is built of: a clause
// kept for another kind of statement (gorm.io/hints' index hint sets one on
// UPDATE too) is not in a query's SQL, so it is nothing to merge.
func builtClauses(stmt *gorm.Statement) map[string]clause.Clause {
	if len(stmt.BuildClauses) == 0 {
		return stmt.Clauses
	}
	built := make(map[string]clause.Clause, len(stmt.Clauses))
	for name, c := range stmt.Clauses {
		if slices.Contains(stmt.BuildClauses, name) {
			built[name] = c
		}
	}
	return built
}

// joined reports whether the statement joins other tables: by Joins, or by
// a FROM clause of its own.
func joined(stmt *gorm.Statement) bool {
	from, _ := stmt.Clauses["FROM"].Expression.(clause.From)
	return len(stmt.Joins) > 0 || len(from.Joins) > 0 || len(from.Tables) > 1
}

// fanOutQuery runs the query on every physical database that may hold its
// rows at once, and merges the rows into the statement's destination: a sum
// for a count, a k-way merge of the parts when ordered, else the parts one
// after another. Preloads and AfterFind hooks run once, on the merged rows.
func (e *Engine) fanOutQuery(db *gorm.DB, kind statementKind, m *model, plan shardrouter.Parts) {
	stmt := db.Statement
	query := shardrouter.Query{Schema: stmt.Schema, Key: m.pk().field, Clauses: builtClauses(stmt), Distinct: stmt.Distinct,
		Selects: stmt.Selects, Omits: stmt.Omits, TableExpr: stmt.TableExpr, Table: stmt.Table, Rows: kind == kindRow,
		Quote: func(name string) string { return stmt.Quote(name) }, Dialect: e.dialectOf(stmt, plan), Joined: joined(stmt)}
	dest := reflect.ValueOf(stmt.Dest)
	if dest.Kind() == reflect.Map && !dest.IsNil() { // GORM's Scan fills a map given by value: merge into it through a pointer
		ptr := reflect.New(dest.Type())
		ptr.Elem().Set(dest)
		dest = ptr
	}
	for dest.Kind() == reflect.Pointer && !dest.IsNil() && dest.Elem().Kind() == reflect.Pointer && !dest.Elem().IsNil() {
		dest = dest.Elem() // a pointer to a pointer, GORM's processor allocated: fill what it points to, as GORM does
	}
	if dest.Kind() == reflect.Pointer && !dest.IsNil() {
		query.Dest = dest.Type().Elem()
	}
	merge := shardrouter.PlanMerge(query)
	if merge.Refused != "" {
		db.AddError(fmt.Errorf("%w: %s: %s", ErrCrossShard, m.schema.Name, merge.Refused))
		return
	}
	if merge.Aggregate != nil {
		e.fanOutAggregate(db, kind, m, plan, merge.Aggregate, query.Dialect)
		return
	}
	target := dest.Elem()
	partType, order, counting := merge.PartType, merge.Order, merge.Count
	limit, offset, limited := merge.Limit, merge.Offset, merge.Limited
	prepare := func(ps *gorm.Statement) {
		ps.RaiseErrorOnNotFound = false
		ps.SkipHooks = true // AfterFind and preloads run once, on the rows the merge keeps
		ps.Preloads = nil
		if limited {
			all := limit + offset
			ps.Clauses["LIMIT"] = clause.Clause{Expression: clause.Limit{Limit: &all}} // a LIMIT clause has no name: Limit writes its own keyword
		} else if offset > 0 {
			ps.Clauses["LIMIT"] = clause.Clause{Expression: clause.Limit{}}
		}
		if order != nil {
			ps.Clauses["ORDER BY"] = order.PartClause(ps.Clauses["ORDER BY"])
		}
		rows := reflect.New(partType)
		ps.Dest, ps.ReflectValue = rows.Interface(), rows.Elem()
		ps.BuildClauses = stmt.BuildClauses // the dialect's, as the processor gave them
	}
	runs, err := e.queryParts(db, m, plan, prepare)
	if err != nil {
		db.Error = err
		return
	}
	if order != nil {
		if len(order.Columns) > 64 {
			db.AddError(fmt.Errorf("%w: %s: ORDER BY more than 64 columns over several physical databases", ErrCrossShard, m.schema.Name))
			return
		}
		var ordered []string
		for _, c := range order.Columns {
			ordered = append(ordered, c.Field.DBName)
		}
		for i := range runs {
			runs[i].nullsOf = ordered
			runs[i].foldNames = query.Dialect != shardrouter.Postgres
			if order.TieKey {
				runs[i].keyColumn = order.Key.DBName
			}
		}
	}
	on := make([]int, len(runs))
	for i, r := range runs {
		on[i] = r.k
	}
	e.fannedOut(db, on)
	e.runQueryParts(db, kind, runs)
	var errs []error
	parts := make([]reflect.Value, len(runs))
	var nulls [][]uint64       // of ordered rows only
	var failed [][]scanFailure // of ordered rows only
	if order != nil {
		nulls = make([][]uint64, len(runs))
		failed = make([][]scanFailure, len(runs))
	}
	for i, r := range runs {
		errs = append(errs, r.err)
		parts[i] = r.rows.Elem()
		if nulls != nil {
			nulls[i] = r.nulls
			failed[i] = r.failed
		}
	}
	if err := errors.Join(errs...); err != nil {
		db.Error = err
		return
	}
	if counting {
		// One database answers a count with one row, which its LIMIT and
		// OFFSET keep or drop; GORM's Count reads no row as 0.
		db.RowsAffected = 0 // no row, which Count reads as 0, whatever the statement's last run left
		if offset == 0 && (!limited || limit > 0) {
			sumInto(target, parts)
			db.RowsAffected = 1 // Count reads the sum, not the number of rows
		}
		db.Error = errRouted
		return
	}
	var merged reflect.Value
	if order != nil {
		var how mergeOrder
		var err error
		if len(runs) > 0 {
			if how, err = e.mergeOrderOfAll(db, m, order, runs); err != nil {
				db.Error = err
				return
			}
		}
		track := slices.ContainsFunc(failed, func(f []scanFailure) bool { return len(f) > 0 })
		var kept [][]int
		if merged, kept, err = mergeOrdered(stmt, order, how, partType, parts, nulls, limit, offset, limited, track); err != nil {
			db.Error = err
			return
		}
		if err = e.keptFailed(runs, failed, kept); err != nil {
			db.Error = err
			return
		}
	} else {
		total := 0
		for _, part := range parts {
			total += part.Len()
		}
		merged = reflect.MakeSlice(partType, 0, total)
		for _, part := range parts {
			merged = reflect.AppendSlice(merged, part)
		}
		merged = window(merged, limit, offset, limited)
	}
	db.RowsAffected = int64(merged.Len())
	if target.Kind() != reflect.Slice && target.Kind() != reflect.Array {
		db.RowsAffected = min(db.RowsAffected, 1) // GORM reads one row into a struct
	}
	if _, appends := stmt.Dest.(*[]map[string]any); appends {
		target.Set(reflect.AppendSlice(target, merged)) // GORM's Scan appends to a slice of maps, where it replaces other slices
	} else if target.Kind() == reflect.Slice {
		target.Set(merged)
	} else if target.Kind() == reflect.Array { // GORM's Scan zeroes an array and fills it with the first rows
		target.Set(reflect.Zero(target.Type()))
		reflect.Copy(target, merged)
	} else if merged.Len() > 0 && target.Kind() == reflect.Map {
		if target.IsNil() {
			target.Set(reflect.MakeMap(target.Type()))
		}
		for it := merged.Index(0).MapRange(); it.Next(); { // GORM scans a row into the map's keys
			target.SetMapIndex(it.Key(), it.Value())
		}
	} else if merged.Len() > 0 {
		setScanned(target, merged.Index(0), runs[0].columns, stmt)
	}
	if merged.Len() == 0 && stmt.RaiseErrorOnNotFound { // First, or a Find told to, as gorm.Scan does
		db.Error = gorm.ErrRecordNotFound
		return
	}
	e.afterMerge(db, m)
	if db.Error == nil {
		db.Error = errRouted
	}
}

// dialectOf is the dialect of the databases a plan's parts run on: the
// first one's, or the plugin's own when it cannot be opened (its part
// fails, naming it).
func (e *Engine) dialectOf(stmt *gorm.Statement, plan shardrouter.Parts) string {
	if len(plan.Parts) > 0 {
		if ph, err := e.physical[plan.Parts[0].Database].open(stmt.Context); err == nil {
			return ph.db.Dialector.Name()
		}
	}
	return stmt.Dialector.Name()
}

// afterMerge runs GORM's preloads and the AfterFind hooks on the merged rows
// in the statement's destination, as gorm:preload and gorm:after_query would
// have on the rows of one database.
func (e *Engine) afterMerge(db *gorm.DB, m *model) {
	stmt := db.Statement
	if db.RowsAffected == 0 {
		return
	}
	if len(stmt.Preloads) > 0 {
		e.preloadEach(db, m)
		if db.Error != nil {
			return
		}
	}
	if stmt.Schema == nil || !stmt.Schema.AfterFind || stmt.SkipHooks {
		return
	}
	tx := db.Session(&gorm.Session{NewDB: true})
	call := func(row reflect.Value) {
		if row.CanAddr() {
			if hook, ok := row.Addr().Interface().(callbacks.AfterFindInterface); ok {
				db.AddError(hook.AfterFind(tx))
			}
		}
	}
	switch rows := stmt.ReflectValue; rows.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range rows.Len() {
			call(reflect.Indirect(rows.Index(i)))
		}
	case reflect.Struct:
		call(rows)
	}
}

// window applies OFFSET and LIMIT to the merged rows.
func window(rows reflect.Value, limit, offset int, limited bool) reflect.Value {
	offset = min(offset, rows.Len())
	end := rows.Len()
	if limited {
		end = min(end, offset+limit)
	}
	return rows.Slice(offset, end)
}

func sumInto(target reflect.Value, parts []reflect.Value) {
	switch {
	case target.CanInt():
		var sum int64
		for _, part := range parts {
			sum += part.Int()
		}
		target.SetInt(sum)
	case target.CanUint():
		var sum uint64
		for _, part := range parts {
			sum += part.Uint()
		}
		target.SetUint(sum)
	default:
		var sum float64
		for _, part := range parts {
			sum += part.Float()
		}
		target.SetFloat(sum)
	}
}

// preloadEach runs GORM's preloads on the merged rows. A preload of a
// many2many reads its join rows beside their owners, so it runs one physical
// database's rows at a time, from that database, each carrying that
// database's keys only. Every other preload is one statement over all the
// rows, as on one database, which routing sends where its rows are: a
// colocated child's over every database its owners are on, merged in the
// preload's own order and limit; an unsharded model's once, on the plugin's
// database.
func (e *Engine) preloadEach(db *gorm.DB, m *model) {
	stmt := db.Statement
	all := stmt.Preloads
	defer func() { stmt.Preloads = all }()
	rows := reflect.Indirect(stmt.ReflectValue)
	if rows.Kind() == reflect.Struct && rows.CanAddr() { // one row: First, Last
		rows = reflect.Append(reflect.MakeSlice(reflect.SliceOf(rows.Addr().Type()), 0, 1), rows.Addr())
	}
	if rows.Kind() != reflect.Slice && rows.Kind() != reflect.Array {
		callbacks.Preload(db)
		return
	}
	joined, once := splitPreloads(stmt.Schema, all)
	if len(once) > 0 {
		stmt.Preloads = once
		if !e.preloadFrom(stmt.Context, db, -1, rows) || len(joined) == 0 {
			return
		}
	}
	stmt.Preloads = joined
	var order []int
	groups := map[int]reflect.Value{}
	for i := range rows.Len() {
		row := reflect.Indirect(rows.Index(i))
		shard, zero, err := e.fieldShard(m.pk().field.ReflectValueOf(stmt.Context, row))
		if err != nil || zero || !row.CanAddr() {
			callbacks.Preload(db) // rows without a key, as selected: GORM's own preload, from where the statement is
			return
		}
		k := e.mapOf(stmt).Physical(shard)
		group, seen := groups[k]
		if !seen {
			order = append(order, k)
			group = reflect.MakeSlice(reflect.SliceOf(row.Addr().Type()), 0, rows.Len())
		}
		groups[k] = reflect.Append(group, row.Addr())
	}
	if len(order) > 1 {
		stmt.Preloads = unlimitedPreloads(joined, m.schema.Name, len(order))
	}
	for _, k := range order {
		var failed bool
		e.traced(stmt.Context, k, "preload", stmt.Table, func(ctx context.Context) (string, error) {
			failed = !e.preloadFrom(ctx, db, k, groups[k])
			return "", db.Error
		})
		if failed {
			return
		}
	}
}

// unlimitedPreloads gives each preload a last scope that refuses, as its
// query runs, a LIMIT or OFFSET, however given (Limit, Offset, Scopes,
// Clauses): read per database, it would hold per database.
func unlimitedPreloads(preloads map[string][]any, model string, databases int) map[string][]any {
	out := make(map[string][]any, len(preloads))
	for name, args := range preloads {
		var refuse func(tx *gorm.DB) *gorm.DB
		refuse = func(tx *gorm.DB) *gorm.DB {
			if pendingScopes(tx) {
				return tx.Scopes(refuse) // after the scopes the preload's scopes added
			}
			if _, limited := tx.Statement.Clauses["LIMIT"]; limited {
				tx.AddError(fmt.Errorf("%w: %s: Preload(%q) with a LIMIT or OFFSET of its own over rows on %d physical databases: its join rows are read on each, and the limit would hold per database; preload without it, or read the rows of one database at a time",
					ErrCrossShard, model, name, databases))
			}
			return tx
		}
		out[name] = append(slices.Clip(args), func(tx *gorm.DB) *gorm.DB { return tx.Scopes(refuse) })
	}
	return out
}

// pendingScopes reports whether GORM has scopes of tx's statement still to
// run (a field GORM does not export).
func pendingScopes(tx *gorm.DB) bool {
	f := reflect.ValueOf(tx.Statement).Elem().FieldByName("scopes")
	return f.IsValid() && f.Len() > 0
}

// splitPreloads splits a statement's preloads into those of its many2many
// relations (with the preloads nested under them) and the others.
func splitPreloads(s *schema.Schema, preloads map[string][]any) (joined, others map[string][]any) {
	add := func(name string, args []any) {
		root, _, _ := strings.Cut(name, ".")
		to := &others
		if rel, ok := s.Relationships.Relations[root]; ok && rel.Type == schema.Many2Many {
			to = &joined
		}
		if *to == nil {
			*to = map[string][]any{}
		}
		(*to)[name] = args
	}
	for name, args := range preloads {
		first, nested, _ := strings.Cut(name, ".")
		if first != clause.Associations {
			add(name, args)
			continue
		}
		// Preload(clause.Associations), expanded as GORM does: the schema's own
		// relations (not those another model's has-many adds to it), and the
		// relations inside its embedded structs.
		for relation, rel := range s.Relationships.Relations {
			if _, named := preloads[relation]; !named && rel.Schema == s {
				add(strings.TrimSuffix(relation+"."+nested, "."), args)
			}
		}
		for embedded, relations := range s.Relationships.EmbeddedRelations {
			for _, inside := range embeddedRelationNames(relations) {
				add(embedded+"."+inside, args)
			}
		}
	}
	return joined, others
}

// embeddedRelationNames names the relations inside an embedded struct, as
// GORM's clause.Associations preloads them.
func embeddedRelationNames(relations *schema.Relationships) []string {
	var names []string
	for _, rel := range relations.Relations {
		names = append(names, strings.Join(rel.Field.EmbeddedBindNames[1:], "."))
	}
	for _, inner := range relations.EmbeddedRelations {
		names = append(names, embeddedRelationNames(inner)...)
	}
	return names
}

// preloadFrom runs the statement's preloads of rows, in a statement of its
// own whose lines join the statement's: from physical database k, where the
// rows all are, or, with k -1, from where the statement is, its preloads then
// routed on their own. It reports false when they failed.
func (e *Engine) preloadFrom(ctx context.Context, db *gorm.DB, k int, rows reflect.Value) bool {
	stmt := db.Statement
	part := db.Session(&gorm.Session{Context: ctx}).Clauses() // a statement of its own
	if k >= 0 {
		pool, err := e.poolOf(ctx, k, stmt.ConnPool)
		if db.AddError(err) != nil {
			return false
		}
		part.Statement.ConnPool = pool
	}
	rowsOf := reflect.New(rows.Type())
	rowsOf.Elem().Set(rows)
	part.Statement.Dest, part.Statement.ReflectValue = rowsOf.Interface(), rowsOf.Elem()
	e.logPartTo(stmt, part)
	callbacks.Preload(part)
	if part.Error == nil {
		return true
	}
	if k >= 0 {
		db.AddError(e.partError(k, part.Error))
	} else {
		db.AddError(part.Error)
	}
	return false
}

// setScanned gives a struct the fields of row GORM scanned from columns, and
// keeps its others, as GORM's scan into the struct keeps them; the whole row
// when a column is not one of its fields (a joined relation's).
func setScanned(target, row reflect.Value, columns []string, stmt *gorm.Statement) {
	if stmt.Schema == nil || target.Type() != stmt.Schema.ModelType {
		target.Set(row)
		return
	}
	fields := make([]*schema.Field, 0, len(columns))
	for _, column := range columns {
		field := stmt.Schema.LookUpField(column)
		if field == nil || field.FieldType == nil || !field.Readable {
			target.Set(row)
			return
		}
		fields = append(fields, field)
	}
	for _, field := range fields {
		field.ReflectValueOf(stmt.Context, target).Set(field.ReflectValueOf(stmt.Context, row))
	}
}

// softDeleteWillWrap reports whether a soft delete's clause will still run
// on stmt and wrap its WHERE list holding an Or in clause.And, which builds
// the list without moving a leading Or behind the next condition. Each of the
// model's query clauses is tried on a copy of the list, so a soft-delete type
// of its own (gorm.io/plugin/soft_delete's) is read as it will build.
func softDeleteWillWrap(stmt *gorm.Statement) bool {
	if stmt.Unscoped || stmt.Schema == nil {
		return false
	}
	if _, done := stmt.Clauses["soft_delete_enabled"]; done {
		return false
	}
	where, ok := stmt.Clauses["WHERE"]
	if !ok {
		return false
	}
	return slices.ContainsFunc(stmt.Schema.QueryClauses, func(c clause.Interface) bool {
		return wrapsWhere(stmt, c, where)
	})
}

// wrapsWhere reports whether the query clause c, run on a statement holding
// only the WHERE clause where, leaves that list as one clause.And.
func wrapsWhere(stmt *gorm.Statement, c clause.Interface, where clause.Clause) (wraps bool) {
	modifier, ok := c.(gorm.StatementModifier)
	if !ok || stmt.DB == nil {
		return false
	}
	list, ok := where.Expression.(clause.Where)
	if !ok {
		return false
	}
	where.Expression = clause.Where{Exprs: slices.Clone(list.Exprs)}
	probe := &gorm.Statement{Schema: stmt.Schema, Context: stmt.Context, Table: stmt.Table,
		Clauses: map[string]clause.Clause{"WHERE": where}}
	probe.DB = &gorm.DB{Config: stmt.DB.Config, Statement: probe}
	defer func() {
		if recover() != nil { // a clause that needs more of a statement than its WHERE wraps nothing here
			wraps = false
		}
	}()
	modifier.ModifyStatement(probe)
	got, _ := probe.Clauses["WHERE"].Expression.(clause.Where)
	if len(got.Exprs) == 0 {
		return false
	}
	and, ok := got.Exprs[0].(clause.AndConditions)
	return ok && reflect.DeepEqual(and.Exprs, list.Exprs)
}
