package shardid

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// What a query over several physical databases may merge is an allowlist:
// plain columns, a plain Count, ORDER BY columns of the model whose values
// the plugin compares as the databases do, LIMIT and OFFSET. Anything else
// is computed by each database over its own rows only, and is refused.

// mergeableClauses are the clauses whose rows each database computes alone
// exactly as one database would.
var mergeableClauses = map[string]bool{"SELECT": true, "FROM": true, "WHERE": true, "ORDER BY": true, "LIMIT": true, "FOR": true,
	"soft_delete_enabled": true} // GORM's mark that the soft-delete condition is in WHERE

// plainColumn is one item of a select list that names a column: `col`,
// `t.col`, `*`, `t.*`, quoted or not, with an optional `AS alias`.
var plainColumn = regexp.MustCompile("(?i)^\\s*(?:[`\"]?\\w+[`\"]?\\s*\\.\\s*)?(?:[`\"]?\\w+[`\"]?|\\*)(?:\\s+as\\s+[`\"]?\\w+[`\"]?)?\\s*$")

// selectWord finds a subquery written in a condition's SQL text.
var selectWord = regexp.MustCompile(`(?i)\bselect\b`)

// unmergeable names what in a query over several databases cannot be
// merged, or returns "" when all of it can.
func unmergeable(stmt *gorm.Statement, counting, windowed bool) string {
	for name := range stmt.Clauses {
		if !mergeableClauses[name] {
			return name
		}
	}
	if stmt.Distinct {
		return "DISTINCT"
	}
	if counting {
		switch {
		case windowed:
			return "LIMIT or OFFSET on a count"
		case !plainCount(stmt):
			return "a number other than a plain Count"
		}
		return ""
	}
	for _, s := range stmt.Selects {
		if !plainColumns(s) {
			return fmt.Sprintf("Select(%q)", s)
		}
	}
	switch sel := stmt.Clauses["SELECT"].Expression.(type) {
	case nil:
	case clause.Select:
		if sel.Distinct {
			return "DISTINCT"
		}
		if sel.Expression != nil {
			return "a select expression"
		}
		for _, c := range sel.Columns {
			if c.Raw && !plainColumns(c.Name) {
				return fmt.Sprintf("the column %q", c.Name)
			}
		}
	default:
		return "a select expression"
	}
	if where, ok := stmt.Clauses["WHERE"].Expression.(clause.Where); ok && selectsInSQL(where.Exprs) {
		return "a subquery in a condition's SQL"
	}
	if stmt.TableExpr != nil && strings.Contains(stmt.TableExpr.SQL, "(") {
		return "a table expression"
	}
	return ""
}

// plainColumns reports whether every item of a select list is a plain column.
func plainColumns(list string) bool {
	for item := range strings.SplitSeq(list, ",") {
		if !plainColumn.MatchString(item) {
			return false
		}
	}
	return true
}

func selectsInSQL(exprs []clause.Expression) bool {
	for _, e := range exprs {
		switch c := e.(type) {
		case clause.Expr:
			if selectWord.MatchString(c.SQL) {
				return true
			}
		case clause.NamedExpr:
			if selectWord.MatchString(c.SQL) {
				return true
			}
		case clause.AndConditions:
			if selectsInSQL(c.Exprs) {
				return true
			}
		case clause.OrConditions:
			if selectsInSQL(c.Exprs) {
				return true
			}
		case clause.NotConditions:
			if selectsInSQL(c.Exprs) {
				return true
			}
		case clause.Where:
			if selectsInSQL(c.Exprs) {
				return true
			}
		}
	}
	return false
}

// plainCount reports whether a query with a number for destination is a
// Count that the databases' answers add up to: count(*) or count(column).
func plainCount(stmt *gorm.Statement) bool {
	sel, ok := stmt.Clauses["SELECT"].Expression.(clause.Expr)
	if !ok {
		return false
	}
	if strings.EqualFold(sel.SQL, "count(*)") && len(sel.Vars) == 0 {
		return true
	}
	if strings.EqualFold(sel.SQL, "count(?)") && len(sel.Vars) == 1 {
		_, column := sel.Vars[0].(clause.Column)
		return column
	}
	return false
}

// orderItem is one ORDER BY item written as text: `col`, `t.col`, quoted or
// not, with ASC or DESC.
var orderItem = regexp.MustCompile("(?i)^\\s*(?:[`\"]?(\\w+)[`\"]?\\s*\\.\\s*)?[`\"]?(\\w+)[`\"]?(?:\\s+(asc|desc))?\\s*$")

// mergeOrder is the ORDER BY of a query over several databases, as the
// plugin compares rows: its columns, then the primary key to break ties
// (which each part is asked to order by too).
type mergeOrder struct {
	columns []orderColumn
	key     *schema.Field
	tieKey  bool // the key is not among the query's own columns: each part orders by it last
}

type orderColumn struct {
	field *schema.Field
	desc  bool
}

// orderOf reads the query's ORDER BY; nil when it has none. An order the
// plugin cannot compare as the databases do fails with ErrCrossShard: a
// column of another table, an expression, text (compared by the database's
// collation), a column that may be NULL (its place differs per database).
func orderOf(stmt *gorm.Statement, m *model, rowType reflect.Type) (*mergeOrder, error) {
	order, ok := stmt.Clauses["ORDER BY"].Expression.(clause.OrderBy)
	if !ok || len(order.Columns) == 0 && order.Expression == nil {
		return nil, nil
	}
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: ORDER BY %s over several physical databases cannot be merged right", ErrCrossShard, m.schema.Name, fmt.Sprintf(format, args...))
	}
	if order.Expression != nil {
		return nil, refuse("an expression")
	}
	key := m.pk().field
	o := &mergeOrder{key: key, tieKey: true}
	add := func(table, name string, desc bool) error {
		if table != "" && table != clause.CurrentTable && !strings.EqualFold(table, m.schema.Table) {
			return refuse("%s.%s: a column of another table", table, name)
		}
		field := key
		if name != clause.PrimaryKey {
			if field = m.schema.LookUpField(name); field == nil {
				return refuse("%s: not a column of %s", name, m.schema.Table)
			}
		}
		for _, c := range o.columns {
			if c.field == field {
				return nil // named again (First after Order): the first one orders
			}
		}
		if field != key && !comparable(field) {
			return refuse("%s: only the key, and integer or time columns that are NOT NULL, compare in Go as in every database (text follows the database's collation)", name)
		}
		o.columns = append(o.columns, orderColumn{field: field, desc: desc})
		o.tieKey = o.tieKey && field != key
		return nil
	}
	for _, c := range order.Columns {
		if !c.Column.Raw {
			if err := add(c.Column.Table, c.Column.Name, c.Desc); err != nil {
				return nil, err
			}
			continue
		}
		for item := range strings.SplitSeq(c.Column.Name, ",") { // Order("id desc, created_at")
			parts := orderItem.FindStringSubmatch(item)
			if parts == nil {
				return nil, refuse("%q", strings.TrimSpace(item))
			}
			if err := add(parts[1], parts[2], strings.EqualFold(parts[3], "desc")); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range o.columns {
		if !selected(stmt, c.field) {
			return nil, refuse("%s: the column is not selected, so the merge cannot read it", c.field.DBName)
		}
	}
	if o.tieKey && !selected(stmt, key) {
		return nil, refuse("%s: the key breaks ties and is not selected", key.DBName)
	}
	if rowType.Kind() == reflect.Pointer {
		rowType = rowType.Elem()
	}
	if rowType != m.schema.ModelType && !(rowType.Kind() == reflect.Map && rowType.Key().Kind() == reflect.String) {
		return nil, refuse("into rows of %s (query into the model or maps)", rowType)
	}
	return o, nil
}

// selectItem reads the column (or alias) a plain select item gives.
var selectItem = regexp.MustCompile("(?i)(?:^|\\.|\\s)[`\"]?(\\w+|\\*)[`\"]?\\s*$")

// selected reports whether the query's rows carry column f: no select list
// (every column), `*`, or an item naming it; and f not omitted.
func selected(stmt *gorm.Statement, f *schema.Field) bool {
	for _, omitted := range stmt.Omits {
		if strings.EqualFold(omitted, f.DBName) || omitted == f.Name || omitted == "*" {
			return false
		}
	}
	var items []string
	for _, s := range stmt.Selects {
		items = append(items, strings.Split(s, ",")...)
	}
	if sel, ok := stmt.Clauses["SELECT"].Expression.(clause.Select); ok {
		for _, c := range sel.Columns {
			items = append(items, strings.Split(c.Name, ",")...)
		}
	}
	if len(items) == 0 {
		return true
	}
	for _, item := range items {
		if m := selectItem.FindStringSubmatch(item); m != nil && (m[1] == "*" || strings.EqualFold(m[1], f.DBName) || m[1] == f.Name) {
			return true
		}
	}
	return false
}

var timeType = reflect.TypeOf(time.Time{})

// comparable reports whether a column's values compare in Go as in every
// database: integers and times, never NULL.
func comparable(f *schema.Field) bool {
	if !f.NotNull && !f.PrimaryKey {
		return false
	}
	t := f.FieldType
	return t == timeType || t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64 && t.Kind() != reflect.Uintptr
}

// partClause is the ORDER BY a part runs with: the query's, with the key
// last to break ties, so that every part is in the order the merge reads.
func (o *mergeOrder) partClause(c clause.Clause) clause.Clause {
	if !o.tieKey {
		return c
	}
	order, _ := c.Expression.(clause.OrderBy)
	columns := append(order.Columns[:len(order.Columns):len(order.Columns)], clause.OrderByColumn{Column: clause.Column{Table: clause.CurrentTable, Name: o.key.DBName}})
	c.Expression = clause.OrderBy{Columns: columns}
	return c
}

// orderValue is a column's value as the merge compares it.
type orderValue struct {
	hi int64
	lo uint64
}

func (a orderValue) compare(b orderValue) int {
	switch {
	case a.hi != b.hi:
		if a.hi < b.hi {
			return -1
		}
		return 1
	case a.lo != b.lo:
		if a.lo < b.lo {
			return -1
		}
		return 1
	}
	return 0
}

// merge merges parts, each already in the query's order, k-way into one
// slice of rowsType, skipping offset rows and stopping after limit: its work
// is linear in the rows the parts fetched. A part out of the order the merge
// reads fails it rather than being merged wrong.
func (o *mergeOrder) merge(stmt *gorm.Statement, rowsType reflect.Type, parts []reflect.Value, limit, offset int, limited bool) (reflect.Value, error) {
	columns := o.columns
	if o.tieKey {
		columns = append(columns[:len(columns):len(columns)], orderColumn{field: o.key})
	}
	width := len(columns)
	keys := make([][]orderValue, len(parts))
	total := 0
	for i, part := range parts {
		keys[i] = make([]orderValue, part.Len()*width)
		for r := range part.Len() {
			row := keys[i][r*width : (r+1)*width]
			for c, column := range columns {
				v, err := o.valueOf(stmt, part.Index(r), column.field)
				if err != nil {
					return reflect.Value{}, err
				}
				row[c] = v
			}
			if r > 0 && compareRows(keys[i][(r-1)*width:r*width], row, columns) > 0 {
				return reflect.Value{}, fmt.Errorf("%w: %s: a database returned its rows in an order the plugin does not read the same way", ErrCrossShard, stmt.Schema.Name)
			}
		}
		total += part.Len()
	}
	end := total
	if limited {
		end = min(total, offset+limit)
	}
	merged := reflect.MakeSlice(rowsType, 0, max(end-offset, 0))
	next := make([]int, len(parts)) // each part's next row
	for n := range end {
		best := -1
		for i, part := range parts {
			if next[i] == part.Len() {
				continue
			}
			if best < 0 || compareRows(keys[i][next[i]*width:(next[i]+1)*width], keys[best][next[best]*width:(next[best]+1)*width], columns) < 0 {
				best = i
			}
		}
		if n >= offset {
			merged = reflect.Append(merged, parts[best].Index(next[best]))
		}
		next[best]++
	}
	return merged, nil
}

func compareRows(a, b []orderValue, columns []orderColumn) int {
	for c, column := range columns {
		if d := a[c].compare(b[c]); d != 0 {
			if column.desc {
				return -d
			}
			return d
		}
	}
	return 0
}

// valueOf reads a row's value of column f (a struct of the model, or a map by
// column name) as the merge compares it.
func (o *mergeOrder) valueOf(stmt *gorm.Statement, row reflect.Value, f *schema.Field) (orderValue, error) {
	row = reflect.Indirect(row)
	var v reflect.Value
	if row.Kind() == reflect.Map {
		if v = row.MapIndex(reflect.ValueOf(f.DBName)); !v.IsValid() {
			return orderValue{}, fmt.Errorf("%w: %s: rows merged by %s must select it", ErrCrossShard, stmt.Schema.Name, f.DBName)
		}
		v = reflect.ValueOf(v.Interface()) // the map's element is an interface
	} else {
		v = f.ReflectValueOf(stmt.Context, row)
	}
	value, err := orderValueOf(v, f == o.key && isUUIDType(f.FieldType))
	if err != nil {
		return orderValue{}, fmt.Errorf("shardid: %s: a row's %s cannot be ordered: %w", stmt.Schema.Name, f.DBName, err)
	}
	return value, nil
}

// orderValueOf maps an integer, a time or a UUID key to an orderValue that
// compares as the value does.
func orderValueOf(v reflect.Value, isUUID bool) (orderValue, error) {
	const signBit = 1 << 63
	if !v.IsValid() {
		return orderValue{}, fmt.Errorf("NULL")
	}
	if isUUID {
		u, err := uuidOf(v.Interface())
		if err != nil {
			return orderValue{}, err
		}
		return orderValue{hi: int64(binary.BigEndian.Uint64(u[:8]) ^ signBit), lo: binary.BigEndian.Uint64(u[8:])}, nil
	}
	switch {
	case v.CanInt():
		return orderValue{hi: v.Int()}, nil
	case v.CanUint():
		return orderValue{hi: int64(v.Uint() ^ signBit)}, nil
	case v.Type() == timeType:
		t := v.Interface().(time.Time)
		return orderValue{hi: t.Unix(), lo: uint64(t.Nanosecond())}, nil
	}
	n, err := int64Of(v.Interface()) // an ID of a named type with a Valuer, or as text
	return orderValue{hi: n}, err
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
