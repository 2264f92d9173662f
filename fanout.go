package shardid

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"
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
// per-statement state, such as its own transaction, on that instance). Its
// conditions are its own: GORM reorders them in place while writing SQL.
func (p *Plugin) part(db *gorm.DB, k int) *gorm.DB {
	part := db.Session(&gorm.Session{Context: db.Statement.Context}).Clauses()
	if c, ok := part.Statement.Clauses["WHERE"]; ok {
		if where, ok := c.Expression.(clause.Where); ok {
			c.Expression = clause.Where{Exprs: copyExprs(where.Exprs)}
			part.Statement.Clauses["WHERE"] = c
		}
	}
	pool, err := p.pool(db.Statement.Context, k)
	if part.AddError(err) == nil {
		part.Statement.ConnPool = pool
	}
	part.Statement.Settings.Store(pinKey{}, pin{schema: db.Statement.Schema, physical: k})
	return part
}

// copyExprs copies conditions down through their AND, OR and NOT groups.
func copyExprs(exprs []clause.Expression) []clause.Expression {
	out := make([]clause.Expression, len(exprs))
	for i, e := range exprs {
		switch g := e.(type) {
		case clause.AndConditions:
			out[i] = clause.AndConditions{Exprs: copyExprs(g.Exprs)}
		case clause.OrConditions:
			out[i] = clause.OrConditions{Exprs: copyExprs(g.Exprs)}
		case clause.NotConditions:
			out[i] = clause.NotConditions{Exprs: copyExprs(g.Exprs)}
		case clause.Where:
			out[i] = clause.Where{Exprs: copyExprs(g.Exprs)}
		default:
			out[i] = e
		}
	}
	return out
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
	switch {
	case target.Kind() == reflect.Struct:
		partType = reflect.SliceOf(target.Type())
	case target.Kind() != reflect.Slice && !isNumber(target.Kind()):
		db.AddError(fmt.Errorf("%w: %s: results from several physical databases cannot be merged into a %s", ErrCrossShard, m.schema.Name, target.Type()))
		return
	}
	limit, offset, limited := limitOf(stmt)
	desc, byKey, ordered := orderOf(stmt, m)
	counting := isNumber(target.Kind())
	refuse := func(why string) {
		db.AddError(fmt.Errorf("%w: %s: %s over several physical databases cannot be merged right", ErrCrossShard, m.schema.Name, why))
	}
	switch {
	case counting && (!plainCount(stmt) || limited || offset > 0):
		refuse("a number other than a plain Count")
		return
	case !counting && aggregated(stmt):
		refuse("GROUP BY, DISTINCT or an aggregate")
		return
	case ordered && !byKey:
		refuse("an order other than the primary key's")
		return
	case byKey && !counting && !p.keyed(m, partType.Elem()):
		refuse(fmt.Sprintf("rows of %s in primary-key order (query into the model)", partType.Elem()))
		return
	}
	parts := make([]reflect.Value, len(physicals))
	errs := make([]error, len(physicals))
	panics := make([]any, len(physicals))
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
			defer func() { panics[i] = recover() }() // raised again in the caller's goroutine
			if err := db.Callback().Query().Execute(part).Error; err != nil {
				errs[i] = p.partError(k, err)
			}
		})
	}
	wg.Wait()
	for _, v := range panics {
		if v != nil {
			panic(v)
		}
	}
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
	}
	merged := reflect.MakeSlice(partType, 0, 0)
	for _, part := range parts {
		merged = reflect.AppendSlice(merged, part.Elem())
	}
	if byKey {
		if err := p.sortByKey(db, m, merged, desc); err != nil {
			db.Error = err
			return
		}
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
	offset = max(l.Offset, 0)
	if l.Limit != nil && *l.Limit >= 0 { // Limit(-1) cancels a limit
		return *l.Limit, offset, true
	}
	return 0, offset, false
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

// orderOf reads the query's ORDER BY: whether it has one, whether it is the
// primary key alone (Order("id"), Order("id desc"), First and Last, or the key
// named twice, as First after Order("id") does), and whether descending.
func orderOf(stmt *gorm.Statement, m *model) (desc, byKey, ordered bool) {
	order, found := stmt.Clauses["ORDER BY"].Expression.(clause.OrderBy)
	if !found || len(order.Columns) == 0 && order.Expression == nil {
		return false, false, false
	}
	if order.Expression != nil {
		return false, false, true
	}
	for i, c := range order.Columns {
		columnDesc, isKey := keyColumn(c, m)
		if !isKey || i > 0 && columnDesc != desc {
			return false, false, true
		}
		desc = columnDesc
	}
	return desc, true, true
}

// keyColumn reads one ORDER BY column: whether it is the primary key, and
// whether descending.
func keyColumn(c clause.OrderByColumn, m *model) (desc, isKey bool) {
	name, desc := c.Column.Name, c.Desc
	if c.Column.Raw { // Order("id desc") keeps its text
		words := strings.Fields(name)
		if len(words) == 0 || len(words) > 2 || len(words) == 2 && !strings.EqualFold(words[1], "desc") && !strings.EqualFold(words[1], "asc") {
			return false, false
		}
		name = words[0]
		desc = len(words) == 2 && strings.EqualFold(words[1], "desc")
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			name = name[i+1:]
		}
		name = strings.Trim(name, "`\"")
	}
	return desc, name == clause.PrimaryKey || strings.EqualFold(name, m.pk().field.DBName)
}

// aggregate finds an aggregate function in a select list.
var aggregate = regexp.MustCompile(`(?i)\b(count|sum|avg|min|max|group_concat|string_agg|array_agg|json_agg)\s*\(`)

// aggregated reports whether a query groups, deduplicates or aggregates: rows
// that each database computes over its own part only.
func aggregated(stmt *gorm.Statement) bool {
	if _, grouped := stmt.Clauses["GROUP BY"]; grouped || stmt.Distinct {
		return true
	}
	switch sel := stmt.Clauses["SELECT"].Expression.(type) {
	case clause.Expr:
		if aggregate.MatchString(sel.SQL) || strings.Contains(strings.ToLower(sel.SQL), "distinct") {
			return true
		}
	case clause.Select: // Pluck("max(id)") names its column here
		if sel.Distinct || slices.ContainsFunc(sel.Columns, func(c clause.Column) bool { return aggregate.MatchString(c.Name) }) {
			return true
		}
	}
	return slices.ContainsFunc(stmt.Selects, func(s string) bool {
		return aggregate.MatchString(s) || strings.Contains(strings.ToLower(s), "distinct")
	})
}

// plainCount reports whether a query with a number for destination is a
// Count that the databases' answers add up to: no GROUP BY, no DISTINCT.
func plainCount(stmt *gorm.Statement) bool {
	if _, grouped := stmt.Clauses["GROUP BY"]; grouped || stmt.Distinct {
		return false
	}
	sel, ok := stmt.Clauses["SELECT"].Expression.(clause.Expr)
	return ok && strings.HasPrefix(strings.ToLower(sel.SQL), "count(") && !strings.Contains(strings.ToLower(sel.SQL), "distinct")
}

// keyed reports whether the primary key can be read from rows of type t: the
// model itself (or a pointer to it), or a map by column name.
func (p *Plugin) keyed(m *model, t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t == m.schema.ModelType || t.Kind() == reflect.Map && t.Key().Kind() == reflect.String
}

func (p *Plugin) sortByKey(db *gorm.DB, m *model, rows reflect.Value, desc bool) error {
	pk := m.pk().field
	keys := make([]sortKey, rows.Len())
	for i := range keys {
		row := reflect.Indirect(rows.Index(i))
		if row.Kind() == reflect.Map {
			key := row.MapIndex(reflect.ValueOf(pk.DBName))
			if !key.IsValid() {
				return fmt.Errorf("%w: %s: rows merged in primary-key order must select %s", ErrCrossShard, m.schema.Name, pk.DBName)
			}
			var err error
			if keys[i], err = sortKeyOf(key.Interface(), pk.FieldType); err != nil {
				return fmt.Errorf("shardid: %s: a row's %s cannot be ordered: %w", m.schema.Name, pk.DBName, err)
			}
			continue
		}
		var err error
		if keys[i], err = sortKeyOf(pk.ReflectValueOf(db.Statement.Context, row).Interface(), pk.FieldType); err != nil {
			return fmt.Errorf("shardid: %s: a row's %s cannot be ordered: %w", m.schema.Name, pk.DBName, err)
		}
	}
	order := make([]int, rows.Len())
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if desc {
			a, b = b, a
		}
		return keys[a].compare(keys[b])
	})
	sorted := reflect.MakeSlice(rows.Type(), rows.Len(), rows.Len())
	for i, j := range order {
		sorted.Index(i).Set(rows.Index(j))
	}
	reflect.Copy(rows, sorted)
	return nil
}

// sortKey is a primary key as the databases order it: an int64 ID by value,
// a UUID by its bytes (its text, lower-case hex, sorts the same).
type sortKey struct {
	id   int64
	uuid uuid.UUID
}

func sortKeyOf(v any, t reflect.Type) (sortKey, error) {
	if isUUIDType(t) {
		u, err := uuidOf(v)
		return sortKey{uuid: u}, err
	}
	id, err := int64Of(v)
	return sortKey{id: id}, err
}

func (k sortKey) compare(o sortKey) int {
	if c := cmp.Compare(k.id, o.id); c != 0 {
		return c
	}
	return bytes.Compare(k.uuid[:], o.uuid[:])
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
