package shardid

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// fanOut runs a statement whose rows may be on several physical databases on
// each of them: queries concurrently, with the results merged; updates and
// deletes one database after another. Inside a transaction, which is on one
// database, it fails with ErrCrossShard.
func (p *Plugin) fanOut(db *gorm.DB, kind statementKind, m *model, physicals []int) {
	if inTransaction(db.Statement.ConnPool) {
		names := make([]string, len(physicals))
		for i, k := range physicals {
			names[i] = p.physical[k].name
		}
		db.AddError(fmt.Errorf("%w: %s: the statement needs %v, a transaction is on one database", ErrCrossShard, m.schema.Name, names))
		return
	}
	switch kind {
	case kindQuery:
		p.fanOutQuery(db, m, physicals)
	case kindUpdate, kindDelete:
		p.fanOutWrite(db, kind, physicals)
	default:
		db.AddError(fmt.Errorf("%w: %s: Row, Rows and Scan read one database; this statement needs %d (use Find)", ErrCrossShard, m.schema.Name, len(physicals)))
	}
}

// part returns a copy of the statement pinned to physical database k, as the
// statement instance a processor runs on (Clauses() makes it one: GORM keeps
// per-statement state, such as its own transaction, on that instance).
func (p *Plugin) part(db *gorm.DB, k int) *gorm.DB {
	part := db.Session(&gorm.Session{Context: db.Statement.Context}).Clauses()
	part.Statement.ConnPool = p.physical[k].pool
	part.Statement.Settings.Store(pinKey{}, pin{schema: db.Statement.Schema, physical: k})
	return part
}

// partError names the physical database a part failed on.
func (p *Plugin) partError(k int, err error) error {
	return fmt.Errorf("shardid: on %s: %w", p.physical[k].name, err)
}

func (p *Plugin) fanOutWrite(db *gorm.DB, kind statementKind, physicals []int) {
	processor := db.Callback().Update()
	if kind == kindDelete {
		processor = db.Callback().Delete()
	}
	p.runParts(db, physicals, func(k int) *gorm.DB { return processor.Execute(p.part(db, k)) })
}

// runParts runs one part of a statement per physical database, in turn, and
// makes the statement's outcome theirs: the rows they affected, and the
// errors of the parts that failed, each naming its database, without undoing
// the parts that succeeded.
func (p *Plugin) runParts(db *gorm.DB, physicals []int, run func(k int) *gorm.DB) {
	var errs []error
	for _, k := range physicals {
		part := run(k)
		db.RowsAffected += part.RowsAffected
		if part.Error != nil {
			errs = append(errs, p.partError(k, part.Error))
		}
	}
	db.Error = errors.Join(errs...)
	if db.Error == nil {
		db.Error = errRouted
	}
}

// fanOutQuery runs the query on every physical database at once and merges
// the rows into the statement's destination.
func (p *Plugin) fanOutQuery(db *gorm.DB, m *model, physicals []int) {
	stmt := db.Statement
	dest := reflect.ValueOf(stmt.Dest)
	if dest.Kind() != reflect.Pointer || dest.IsNil() {
		db.AddError(fmt.Errorf("%w: %s: a query on several physical databases needs a pointer destination", ErrCrossShard, m.schema.Name))
		return
	}
	target := dest.Elem()
	partType := target.Type() // a slice, or a number (counts)
	if target.Kind() == reflect.Struct {
		partType = reflect.SliceOf(target.Type())
	}
	limit, offset, limited := limitOf(stmt)
	parts := make([]reflect.Value, len(physicals))
	errs := make([]error, len(physicals))
	var wg sync.WaitGroup
	for i, k := range physicals {
		part := p.part(db, k)
		part.Statement.RaiseErrorOnNotFound = false
		if limited {
			all := limit + offset
			part.Statement.Clauses["LIMIT"] = clause.Clause{Expression: clause.Limit{Limit: &all}} // a LIMIT clause has no name: Limit writes its own keyword
		} else if offset > 0 {
			part.Statement.Clauses["LIMIT"] = clause.Clause{Expression: clause.Limit{}}
		}
		parts[i] = reflect.New(partType)
		part.Statement.Dest = parts[i].Interface()
		wg.Go(func() {
			if err := db.Callback().Query().Execute(part).Error; err != nil {
				errs[i] = p.partError(k, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		db.Error = err
		return
	}
	db.Error = errRouted
	switch {
	case isNumber(target.Kind()):
		sumInto(target, parts)
		db.RowsAffected = 1 // Count reads the sum, not the number of rows
		return
	case target.Kind() != reflect.Slice && target.Kind() != reflect.Struct:
		db.Error = fmt.Errorf("%w: %s: cannot merge results into a %s", ErrCrossShard, m.schema.Name, target.Type())
		return
	}
	merged := reflect.MakeSlice(partType, 0, 0)
	for _, part := range parts {
		merged = reflect.AppendSlice(merged, part.Elem())
	}
	if desc, ok := orderedByKey(stmt, m); ok {
		p.sortByKey(db, m, merged, desc)
	}
	merged = window(merged, limit, offset, limited)
	db.RowsAffected = int64(merged.Len())
	if target.Kind() == reflect.Slice {
		target.Set(merged)
		return
	}
	if merged.Len() == 0 {
		if stmt.RaiseErrorOnNotFound {
			db.Error = gorm.ErrRecordNotFound
		}
		return
	}
	target.Set(merged.Index(0))
}

// limitOf reads the statement's LIMIT and OFFSET.
func limitOf(stmt *gorm.Statement) (limit, offset int, limited bool) {
	l, ok := stmt.Clauses["LIMIT"].Expression.(clause.Limit)
	if !ok {
		return 0, 0, false
	}
	if l.Limit != nil {
		return *l.Limit, l.Offset, true
	}
	return 0, l.Offset, false
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

// orderedByKey reports whether the query is ordered by the primary key alone,
// and whether descending.
func orderedByKey(stmt *gorm.Statement, m *model) (desc bool, ok bool) {
	order, found := stmt.Clauses["ORDER BY"].Expression.(clause.OrderBy)
	if !found || len(order.Columns) != 1 {
		return false, false
	}
	c := order.Columns[0]
	return c.Desc, m.pk().field.DBName == c.Column.Name || c.Column.Name == clause.PrimaryKey
}

func (p *Plugin) sortByKey(db *gorm.DB, m *model, rows reflect.Value, desc bool) {
	if rows.Type().Elem().Kind() != reflect.Struct && rows.Type().Elem().Kind() != reflect.Pointer {
		return
	}
	pk := m.pk().field
	keys := make([]int64, rows.Len())
	for i := range keys {
		keys[i], _ = readID(pk.ReflectValueOf(db.Statement.Context, reflect.Indirect(rows.Index(i))))
	}
	order := make([]int, rows.Len())
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if desc {
			a, b = b, a
		}
		switch {
		case keys[a] < keys[b]:
			return -1
		case keys[a] > keys[b]:
			return 1
		}
		return 0
	})
	sorted := reflect.MakeSlice(rows.Type(), rows.Len(), rows.Len())
	for i, j := range order {
		sorted.Index(i).Set(rows.Index(j))
	}
	reflect.Copy(rows, sorted)
}

func isNumber(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uint64 || k == reflect.Float32 || k == reflect.Float64
}

func sumInto(target reflect.Value, parts []reflect.Value) {
	switch {
	case target.CanInt():
		var sum int64
		for _, part := range parts {
			sum += part.Elem().Int()
		}
		target.SetInt(sum)
	case target.CanUint():
		var sum uint64
		for _, part := range parts {
			sum += part.Elem().Uint()
		}
		target.SetUint(sum)
	default:
		var sum float64
		for _, part := range parts {
			sum += part.Elem().Float()
		}
		target.SetFloat(sum)
	}
}
