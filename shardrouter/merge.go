package shardrouter

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// Query is what the planner reads of a query over several databases to
// decide how their results merge: its clauses as GORM holds them, its model
// and its destination.
type Query struct {
	Schema    *schema.Schema
	Key       *schema.Field // the model's primary key
	Clauses   map[string]clause.Clause
	Distinct  bool
	Selects   []string
	Omits     []string
	TableExpr *clause.Expr
	// Table is the name the query's FROM gives its table: the alias of Table("t AS u").
	Table string
	// Dest is the type the destination points to; nil when it is no pointer.
	Dest reflect.Type
	// Rows: the query is Row, Rows or Scan, read through *sql.Rows.
	Rows bool
	// Quote quotes a column's name for the SQL of the parts.
	Quote func(string) string
	// Dialect is the databases': MySQL, Postgres or SQLite.
	Dialect string
	// Joined: the query joins other tables, whose columns a `*` reads too.
	Joined bool
}

// Merge is how the results of a query's parts become the query's.
type Merge struct {
	// PartType is what each part scans into: a slice, or a number.
	PartType reflect.Type
	// Count: the parts' numbers are summed.
	Count bool
	// Order: the parts' rows are merged k-way in it; nil: one part after another.
	Order *Order
	// Limit and Offset apply to the merged rows; each part fetches Offset+Limit.
	Limit, Offset int
	Limited       bool
	// Aggregate: the parts' values are merged group by group.
	Aggregate *Aggregation
	// Refused says why the results cannot be merged right; "" when they can.
	Refused string
}

// PlanMerge decides how the parts of q merge, or why they cannot: what may
// be merged is an allowlist.
func PlanMerge(q Query) Merge {
	q = distinctWritten(q)
	if aggregating(q) {
		a, why := planAggregation(q)
		if why != "" {
			return Merge{Refused: why + " over several physical databases cannot be merged exactly"}
		}
		return Merge{Aggregate: a}
	}
	if q.Rows {
		return Merge{Refused: "Row, Rows and Scan of rows (not of aggregates or groups) read one database"}
	}
	if q.Dest == nil {
		return Merge{Refused: "a query on several physical databases needs a pointer destination"}
	}
	merge := Merge{PartType: q.Dest} // a slice, or a number (counts)
	switch {
	case q.Dest.Kind() == reflect.Struct, q.Dest.Kind() == reflect.Map && q.Dest.Key().Kind() == reflect.String:
		merge.PartType = reflect.SliceOf(q.Dest) // one row of the merged ones goes into it
	case q.Dest.Kind() == reflect.Array:
		merge.PartType = reflect.SliceOf(q.Dest.Elem()) // the first merged rows go into it
	case q.Dest.Kind() != reflect.Slice && !IsNumber(q.Dest.Kind()):
		return Merge{Refused: fmt.Sprintf("results from several physical databases cannot be merged into a %s", q.Dest)}
	}
	merge.Limit, merge.Offset, merge.Limited = limitOf(q)
	if merge.Offset > 0 && !merge.Limited && q.Dialect == MySQL {
		return Merge{Refused: "OFFSET without LIMIT, which MySQL does not accept, over several physical databases"}
	}
	merge.Count = IsNumber(q.Dest.Kind())
	if why := unmergeable(q, merge.Count); why != "" {
		return Merge{Refused: why + " over several physical databases cannot be merged right"}
	}
	if !merge.Count {
		merge.Order, merge.Refused = orderOf(q, merge.PartType.Elem())
	}
	return merge
}

// distinctWritten reads a DISTINCT written at the head of a select list
// given as text (Select("DISTINCT grp"), Pluck("DISTINCT grp")) as GORM's
// Distinct, which it is to the database: the query's rows are its distinct
// rows, over every part as on one database. A DISTINCT ON (PostgreSQL's) is
// left as written.
func distinctWritten(q Query) Query {
	switch sel := q.Clauses["SELECT"].Expression.(type) {
	case nil: // GORM builds the list of Selects
		if len(q.Selects) == 0 || q.Distinct { // DISTINCT DISTINCT: the database's error, not a merge
			return q
		}
		if rest, ok := cutDistinct(q.Selects[0]); ok {
			q.Selects = append([]string{rest}, q.Selects[1:]...)
			q.Distinct = true
		}
	case clause.Select:
		if sel.Expression != nil || sel.Distinct || len(sel.Columns) == 0 || !sel.Columns[0].Raw {
			return q
		}
		if rest, ok := cutDistinct(sel.Columns[0].Name); ok {
			sel.Columns = append([]clause.Column{{Name: rest, Raw: true, Alias: sel.Columns[0].Alias}}, sel.Columns[1:]...)
			sel.Distinct = true
			clauses := make(map[string]clause.Clause, len(q.Clauses))
			for name, c := range q.Clauses {
				clauses[name] = c
			}
			c := clauses["SELECT"]
			c.Expression = sel
			clauses["SELECT"] = c
			q.Clauses = clauses
		}
	}
	return q
}

// distinctWord is a DISTINCT keyword at the head of a select list, and what
// follows it; not DISTINCTROW, nor DISTINCT ON.
var distinctWord = regexp.MustCompile(`(?is)^\s*distinct\s+(.*)$`)

// cutDistinct returns the select list after a DISTINCT at its head.
func cutDistinct(list string) (string, bool) {
	m := distinctWord.FindStringSubmatch(list)
	if m == nil {
		return list, false
	}
	rest := strings.TrimSpace(m[1])
	if on, _ := cutPrefixFold(rest, "on"); on != rest && (on == "" || on[0] == '(' || on[0] == ' ' || on[0] == '\t' || on[0] == '\n') {
		return list, false // DISTINCT ON (…): PostgreSQL's first row of each, not distinct rows
	}
	return rest, rest != ""
}

// IsNumber reports whether a destination of kind k is a number (a Count's).
func IsNumber(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uint64 || k == reflect.Float32 || k == reflect.Float64
}

// What a query over several physical databases may merge is an allowlist:
// plain columns, a plain Count, ORDER BY columns of the model whose values
// the plugin compares as the databases do, LIMIT and OFFSET. Anything else
// is computed by each database over its own rows only, and is refused.

// mergeableClauses are the clauses whose rows each database computes alone
// exactly as one database would.
var mergeableClauses = map[string]bool{"SELECT": true, "FROM": true, "WHERE": true, "ORDER BY": true, "LIMIT": true, "FOR": true,
	"soft_delete_enabled": true, // GORM's mark that the soft-delete condition is in WHERE
	CountedClause:         true}

// CountedClause is the key, among a statement's clauses, of the plugin's
// mark of the map version the statement counts in: no SQL is built of it.
const CountedClause = "shardid:counted"

// plainColumn is one item of a select list that names a column: `col`,
// `t.col`, `*`, `t.*`, quoted or not, with an optional `AS alias`.
var plainColumn = regexp.MustCompile("(?i)^\\s*(?:" + tableName + "\\s*\\.\\s*)?(?:" + ident + "|\\*)(?:\\s+as\\s+" + ident + ")?\\s*$")

// selectWord finds a subquery written in a condition's SQL text.
var selectWord = regexp.MustCompile(`(?i)\bselect\b`)

// unmergeable names what in a query over several databases cannot be
// merged, or returns "" when all of it can.
func unmergeable(q Query, counting bool) string {
	for name := range q.Clauses {
		if !mergeableClauses[name] {
			return name
		}
	}
	if q.Distinct && !keySelected(q) {
		return "DISTINCT"
	}
	if counting {
		if !plainCount(q) { // a window over its one row is the executor's
			return "a number other than a plain Count"
		}
		return ""
	}
	for _, s := range q.Selects {
		if !plainColumns(s) {
			return fmt.Sprintf("Select(%q)", s)
		}
	}
	switch sel := q.Clauses["SELECT"].Expression.(type) {
	case nil:
	case clause.Select:
		if sel.Distinct && !keySelected(q) {
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
	if where, ok := q.Clauses["WHERE"].Expression.(clause.Where); ok && selectsInSQL(where.Exprs) {
		return "a subquery in a condition's SQL"
	}
	if q.TableExpr != nil && strings.Contains(q.TableExpr.SQL, "(") {
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
func plainCount(q Query) bool {
	sel, ok := q.Clauses["SELECT"].Expression.(clause.Expr)
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
var orderItem = regexp.MustCompile("(?i)^\\s*(?:(" + tableName + ")\\s*\\.\\s*)?(" + ident + ")(?:\\s+(asc|desc))?\\s*$")

// Order is the ORDER BY of a query over several databases, as the merge
// compares rows: its columns, then the primary key to break ties (which
// each part is asked to order by too).
type Order struct {
	Columns []OrderColumn
	Key     *schema.Field
	TieKey  bool // the key is not among the query's own columns: each part orders by it last
}

// OrderColumn is one column of an [Order].
type OrderColumn struct {
	Field *schema.Field
	Desc  bool
	Text  bool // ordered by its collation: the merge must read which
}

// orderOf reads the query's ORDER BY; nil when it has none. An order the
// merge cannot compare as the databases do is refused: a column of another
// table, an expression, a value the merge does not know how to order.
func orderOf(q Query, rowType reflect.Type) (*Order, string) {
	order, ok := q.Clauses["ORDER BY"].Expression.(clause.OrderBy)
	if !ok || len(order.Columns) == 0 && order.Expression == nil {
		return nil, ""
	}
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("ORDER BY over several physical databases cannot be merged right: %s", fmt.Sprintf(format, args...))
	}
	if order.Expression != nil {
		return nil, refuse("an expression").Error()
	}
	key := q.Key
	o := &Order{Key: key, TieKey: true}
	var byTable []*schema.Field // ordered by the table's column, not by an output column of its name
	add := func(table, name string, desc bool) error {
		if table != "" && table != clause.CurrentTable && !namesTable(table, q.Schema.Table) && !namesTable(table, q.Table) {
			return refuse("%s.%s: a column of another table", table, name)
		}
		field := key
		if name != clause.PrimaryKey {
			if field = q.Schema.LookUpField(name); field == nil && strings.Trim(name, "0123456789") == "" {
				return refuse("%s: a position in the select list (order by the column's name)", name)
			} else if field == nil {
				return refuse("%s: not a column of %s", name, q.Schema.Table)
			}
		}
		for _, c := range o.Columns {
			if c.Field == field {
				return nil // named again (First after Order): the first one orders
			}
		}
		if table != "" {
			byTable = append(byTable, field)
		}
		ok, text := orderable(field)
		if text && q.Dialect == SQLite && !sqliteKeepsText(field) {
			ok = false // SQLite stores a numeric-looking text of such a column as a number, and orders it so
		}
		if !readsBackAsSent(elemType(field.FieldType)) {
			ok = false // the merge would order the values its Scan made (into maps too, which GORM scans through the field), not the stored ones
		}
		if field != key && !ok {
			return refuse("%s: the merge orders numbers, booleans, times and text (by a collation that compares bytes) read into a Go type that orders them as the column does, not a %s from a column of type %s", name, field.FieldType, field.DataType)
		}
		o.Columns = append(o.Columns, OrderColumn{Field: field, Desc: desc, Text: text && field != key})
		o.TieKey = o.TieKey && field != key
		return nil
	}
	for _, c := range order.Columns {
		if !c.Column.Raw {
			if err := add(c.Column.Table, c.Column.Name, c.Desc); err != nil {
				return nil, err.Error()
			}
			continue
		}
		items := strings.Split(c.Column.Name, ",") // Order("id desc, created_at")
		for i, item := range items {
			parts := orderItem.FindStringSubmatch(item)
			if parts == nil {
				return nil, refuse("%q", strings.TrimSpace(item)).Error()
			}
			desc := strings.EqualFold(parts[3], "desc")
			if c.Desc && i == len(items)-1 { // GORM writes DESC after the raw text: it orders the last item
				if parts[3] != "" {
					return nil, refuse("%q DESC", strings.TrimSpace(item)).Error()
				}
				desc = true
			}
			if err := add(unquoteQualified(parts[1]), unquote(parts[2]), desc); err != nil {
				return nil, err.Error()
			}
		}
	}
	for _, c := range o.Columns {
		if !selected(q, c.Field) {
			return nil, refuse("%s: the column is not selected, so the merge cannot read it", c.Field.DBName).Error()
		}
	}
	for _, f := range byTable {
		if !selectedAsItself(q, f) {
			return nil, refuse("%s.%s: the database orders by the table's column, and the select list gives its name to another value, which the merge would read", q.Schema.Table, f.DBName).Error()
		}
	}
	for _, c := range o.Columns {
		if !readsAlike(q, c.Field) {
			return nil, refuse("%s: the select list gives the column's name to another value, which the merge would read as the column's type", c.Field.DBName).Error()
		}
	}
	if o.TieKey && (!selected(q, key) || !selectedAsItself(q, key)) {
		o.TieKey = false // ties come in the parts' order, one a database may give them in too
	}
	if rowType.Kind() == reflect.Pointer {
		rowType = rowType.Elem()
	}
	rows := rowType == q.Schema.ModelType || rowType.Kind() == reflect.Map && rowType.Key().Kind() == reflect.String
	if !rows && !plucksOrderColumn(q, o, rowType) {
		return nil, refuse("into rows of %s (query into the model or maps, or Pluck the column it orders by into a type of its kind)", rowType).Error()
	}
	return o, ""
}

// plucksOrderColumn reports whether q selects one column, by which alone it
// is ordered, into values of type value that compare as the column's do:
// the merge orders a Pluck by the values it holds (9 orders before 10, "9"
// after "10").
func plucksOrderColumn(q Query, o *Order, value reflect.Type) bool {
	sel, ok := q.Clauses["SELECT"].Expression.(clause.Select)
	if !ok || len(sel.Columns) != 1 || len(q.Selects) > 1 || o.TieKey || len(o.Columns) == 0 {
		return false
	}
	if !ordersAlike(value, o.Columns[0].Field.FieldType) || !readsBackAsSent(unwrapped(value)) {
		return false // the merge orders the values the destination's Scan made
	}
	m := selectItem.FindStringSubmatch(sel.Columns[0].Name)
	if !plainColumn.MatchString(sel.Columns[0].Name) || m == nil {
		return false
	}
	for _, c := range o.Columns {
		if !named(c.Field, unquote(m[1])) {
			return false
		}
	}
	return true
}

// ordersAlike reports whether values of type a, scanned from a column of
// field type b, are ordered by the merge as the database orders the column:
// the same type, or both numbers of one kind, texts, booleans or times,
// maybe behind a pointer or in a database/sql Null wrapper.
func ordersAlike(a, b reflect.Type) bool {
	a, b = unwrapped(a), unwrapped(b)
	if a == b {
		return true
	}
	class := func(t reflect.Type) string {
		switch k := t.Kind(); {
		case t == timeType:
			return "time"
		case k >= reflect.Int && k <= reflect.Uint64 && k != reflect.Uintptr:
			return "integer" // one destination type holds them all: signed or not, they compare as numbers
		case k == reflect.Float32 || k == reflect.Float64:
			return "float"
		case k == reflect.String, k == reflect.Bool:
			return k.String()
		}
		return ""
	}
	return class(a) != "" && class(a) == class(b)
}

// unwrapped is the type of the value a field or destination of type t holds:
// t behind its pointer, out of a database/sql Null wrapper (sql.NullInt64,
// sql.Null[T], gorm.DeletedAt as sql.NullTime).
func unwrapped(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.ConvertibleTo(nullTimeType) {
		return timeType
	}
	if IsSQLNull(t) {
		return t.Field(0).Type
	}
	return t
}

// IsSQLNull reports whether t is one of database/sql's Null types: a value
// and its Valid flag.
func IsSQLNull(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t.PkgPath() == "database/sql" && strings.HasPrefix(t.Name(), "Null") &&
		t.NumField() == 2 && t.Field(1).Name == "Valid"
}

// selectItem reads the column (or alias) a plain select item gives.
var selectItem = regexp.MustCompile("(?i)(?:^|\\.|\\s)(" + ident + "|\\*)\\s*$")

// selectParts is the query's select list, item by item: its Select
// arguments and SELECT clause, each split at its commas.
func selectParts(q Query) []string {
	var items []string
	for _, s := range q.Selects {
		items = append(items, strings.Split(s, ",")...)
	}
	if sel, ok := q.Clauses["SELECT"].Expression.(clause.Select); ok {
		for _, c := range sel.Columns {
			name := c.Name
			if !c.Raw && c.Table != "" && c.Table != clause.CurrentTable {
				name = c.Table + "." + name // clause.Column{Table: "books", Name: "id"} is books' id
			}
			parts := strings.Split(name, ",")
			if c.Alias != "" { // the column's value goes by the alias, not by its name
				parts[len(parts)-1] += " AS " + quotedColumn(q, c.Alias)
			}
			items = append(items, parts...)
		}
	}
	return items
}

// named reports whether name is f's column or field name.
func named(f *schema.Field, name string) bool {
	return strings.EqualFold(name, f.DBName) || name == f.Name
}

// selected reports whether the query's rows carry column f: no select list
// (every column), `*`, or an item naming it; and f not omitted.
func selected(q Query, f *schema.Field) bool {
	for _, omitted := range q.Omits {
		if named(f, omitted) || omitted == "*" {
			return false
		}
	}
	items := selectParts(q)
	if len(items) == 0 {
		return true
	}
	for _, item := range items {
		if m := selectItem.FindStringSubmatch(item); m != nil && (m[1] == "*" || named(f, unquote(m[1]))) {
			return true
		}
	}
	return false
}

// keySelected reports whether the rows carry the key as itself, which makes
// each row distinct; another value aliased as the key does not.
// The key must be read from the model's own table: another table's column
// of its name (a joined table's id, NULL on every unmatched row) does not.
func keySelected(q Query) bool {
	if !selected(q, q.Key) || !selectedAsItself(q, q.Key) {
		return false
	}
	items := selectParts(q)
	for _, item := range items {
		if m := aliasedColumn.FindStringSubmatch(item); m != nil && (m[1] == "*" || named(q.Key, unquote(m[1]))) && !ofOtherTable(q, item) {
			return true
		}
	}
	return len(items) == 0
}

// qualifier reads the table that qualifies a select item's column.
var qualifier = regexp.MustCompile("^\\s*(" + tableName + ")\\s*\\.\\s*(?:" + ident + "|\\*)")

// ofOtherTable reports whether a select item reads a column qualified by
// another table than the query's own (its name or its alias).
func ofOtherTable(q Query, item string) bool {
	m := qualifier.FindStringSubmatch(item)
	if m == nil {
		return false
	}
	for _, own := range []string{q.Schema.Table, q.Table} {
		if namesTable(m[1], own) {
			return false // its name, also without the schema a TableName gives it (main.widgets is widgets)
		}
	}
	return true
}

// sourcesNamed returns, for each select item that gives the rows a value
// under f's name, the column of the query's own table it reads: "*", a
// column's name, or "" for an expression or another table's column.
func sourcesNamed(q Query, f *schema.Field) []string {
	var sources []string
	for _, part := range selectParts(q) {
		if m := selectItem.FindStringSubmatch(part); m != nil && m[1] == "*" && (ofOtherTable(q, part) || q.Joined && qualifier.FindString(part) == "") {
			sources = append(sources, "") // a joined table's columns, one of which may go by f's name (and be the one read)
			continue
		}
		if m := selectItem.FindStringSubmatch(part); m == nil || !named(f, unquote(m[1])) {
			continue // another column (or not read: selected decides)
		}
		source := ""
		if m := aliasedColumn.FindStringSubmatch(part); m != nil && !ofOtherTable(q, part) {
			source = unquote(m[1]) // a joined table's column (q_owners.n, maybe aliased) is another value, of its own type and collation
		}
		sources = append(sources, source)
	}
	return sources
}

// selectedAsItself reports whether the rows carry column f under its own
// name with its own value: no select list, `*`, or the column itself, maybe
// qualified, unaliased or aliased to its own name; not another value
// aliased as f.
func selectedAsItself(q Query, f *schema.Field) bool {
	for _, source := range sourcesNamed(q, f) {
		if source != "*" && !named(f, source) {
			return false // f's name on an expression or another column
		}
	}
	return true
}

// readsAlike reports whether the value the rows carry under f's name
// orders as f's: f itself, or another column of a type that orders alike
// aliased as f ("rank AS id"), not an expression.
func readsAlike(q Query, f *schema.Field) bool {
	for _, source := range sourcesNamed(q, f) {
		if source == "*" || named(f, source) {
			continue
		}
		other := q.Schema.LookUpField(source)
		if other == nil || !ordersAlike(other.FieldType, f.FieldType) {
			return false
		}
		if ok, _ := orderable(other); !ok {
			return false
		}
	}
	return true
}

// aliasedColumn reads a select item that is a column, maybe qualified and
// aliased: its column's name.
var aliasedColumn = regexp.MustCompile("(?i)^\\s*(?:" + tableName + "\\s*\\.\\s*)?(" + ident + "|\\*)(?:\\s+as\\s+" + ident + ")?\\s*$")

var timeType = reflect.TypeOf(time.Time{})

// nullTimeType is sql.NullTime, which gorm.DeletedAt is too.
var nullTimeType = reflect.TypeOf(sql.NullTime{})

// orderable reports whether the merge may order by f, comparing the values
// scanned into its Go type as the database compares the column's: the Go
// type must hold them exactly and order them alike, which a column of
// another type given with `type:` may not (a decimal read into a float64
// rounds; digits in a varchar read into an int64 order otherwise).
func orderable(f *schema.Field) (ok, text bool) {
	t := f.FieldType
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	sqlType := strings.ToLower(string(f.DataType))
	declared := !slices.Contains([]schema.DataType{schema.Bool, schema.Int, schema.Uint, schema.Float, schema.String, schema.Time}, f.DataType)
	is := func(words ...string) bool {
		return !declared || slices.ContainsFunc(words, func(w string) bool { return strings.Contains(sqlType, w) })
	}
	switch {
	case f.Serializer != nil:
		return false, false // stored as its serializer's encoding (JSON text, say), ordered so
	case t == timeType, t.ConvertibleTo(nullTimeType):
		return is("time", "date"), false
	case !sendsItself(t):
		return false, false // stored as what its Value makes of it (an enum's name, an encoding), ordered so
	case t.Kind() == reflect.Bool:
		return is("bool", "bit", "tinyint"), false
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64 && t.Kind() != reflect.Uintptr:
		return is("int", "serial", "decimal", "numeric", "bit", "year"), false
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return is("float", "double", "real"), false
	case t.Kind() == reflect.String:
		return !declared || !slices.ContainsFunc([]string{"decimal", "numeric", "int", "float", "double", "real", "serial", "money", "date", "time", "bool", "bit"},
			func(w string) bool { return strings.Contains(sqlType, w) }), true
	}
	return false, false
}

var (
	valuerType        = reflect.TypeFor[driver.Valuer]()
	scannerType       = reflect.TypeFor[sql.Scanner]()
	sendsItselfByType sync.Map // reflect.Type: bool
	readsBackByType   sync.Map // reflect.Type: bool
)

// sendsItself reports whether the values a field of type t is read back as
// order as the column's: a type without both a Value and a Scan is read
// back as what is stored; one with both must send the value it holds, tried
// on a few values (those its Value refuses, or panics on, say nothing).
func sendsItself(t reflect.Type) bool {
	if !converts(t, valuerType) || !converts(t, scannerType) {
		return true
	}
	if known, ok := sendsItselfByType.Load(t); ok {
		return known.(bool)
	}
	probes := probesOf(t.Kind())
	sends := len(probes) > 0
	for _, probe := range probes {
		if sent, ok := valueOf(t, probe); ok && !sameValue(sent, probe) {
			sends = false
		}
	}
	sendsItselfByType.Store(t, sends)
	return sends
}

// readsBackAsSent reports whether a field of type t holds, once scanned,
// the value it sent (through its Value, or as the value of its kind): a
// Scan that changes it (lower-cases text, say) gives values that order
// otherwise than the stored ones, tried on a few values (those its Value
// or Scan refuses, or panics on, say nothing).
func readsBackAsSent(t reflect.Type) bool {
	if !converts(t, scannerType) {
		return true
	}
	if known, ok := readsBackByType.Load(t); ok {
		return known.(bool)
	}
	reads := true
	for _, probe := range probesOf(t.Kind()) {
		sent, ok := probe, true // without a Value, the driver is sent the value of its kind
		if converts(t, valuerType) {
			sent, ok = valueOf(t, probe)
		}
		if !ok {
			continue
		}
		if read, ok := scanOf(t, sent); ok && !reflect.DeepEqual(read, reflect.ValueOf(probe).Convert(t).Interface()) {
			reads = false
		}
	}
	readsBackByType.Store(t, reads)
	return reads
}

// converts reports whether t, or a pointer to it, implements i.
func converts(t, i reflect.Type) bool { return t.Implements(i) || reflect.PointerTo(t).Implements(i) }

// probesOf is a few values of kind k to try a type's Value and Scan on.
func probesOf(k reflect.Kind) []any {
	switch {
	case k >= reflect.Int && k <= reflect.Int64:
		return []any{int64(-3), int64(0), int64(1), int64(7)}
	case k >= reflect.Uint && k <= reflect.Uint64:
		return []any{uint64(0), uint64(1), uint64(7)}
	case k == reflect.Float32 || k == reflect.Float64:
		return []any{-0.5, 0.0, 2.0}
	case k == reflect.String:
		return []any{"", "a", "b", "ab", "open", "Open", " a", "a "} // spaces: a Scan that trims them reads " b" before "a" back after it
	case k == reflect.Bool:
		return []any{false, true}
	}
	return nil
}

// valueOf is what t's Value sends for probe, unless it refuses it.
func valueOf(t reflect.Type, probe any) (sent any, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	v := reflect.New(t)
	v.Elem().Set(reflect.ValueOf(probe).Convert(t))
	sent, err := v.Interface().(driver.Valuer).Value()
	return sent, err == nil
}

// scanOf is what t's Scan reads from the driver value sent, unless it
// refuses it.
func scanOf(t reflect.Type, sent any) (read any, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	v := reflect.New(t)
	scanner, isScanner := v.Interface().(sql.Scanner)
	if !isScanner || sent == nil {
		return nil, false
	}
	if err := scanner.Scan(sent); err != nil {
		return nil, false
	}
	return v.Elem().Interface(), true
}

// sameValue reports whether a driver value is the probe: a number of any
// width, text as a string or bytes.
func sameValue(sent, probe any) bool {
	switch p := probe.(type) {
	case string:
		b, isBytes := sent.([]byte)
		return sent == p || isBytes && string(b) == p
	case bool:
		return sent == p
	}
	sv, pv := reflect.ValueOf(sent), reflect.ValueOf(probe)
	switch {
	case !sv.IsValid():
		return false
	case sv.CanInt() && pv.CanInt():
		return sv.Int() == pv.Int()
	case sv.CanUint() && pv.CanUint():
		return sv.Uint() == pv.Uint()
	case sv.CanInt() && pv.CanUint():
		return sv.Int() >= 0 && uint64(sv.Int()) == pv.Uint()
	case sv.CanFloat() && pv.CanFloat():
		return sv.Float() == pv.Float()
	}
	return false
}

// sqliteKeepsText reports whether SQLite stores text sent to f's column as
// text, by the affinity its declared type gives it: TEXT (CHAR, CLOB, TEXT)
// or BLOB (none); INTEGER, REAL and NUMERIC turn "9" into the number 9.
func sqliteKeepsText(f *schema.Field) bool {
	if slices.Contains([]schema.DataType{schema.String, ""}, f.DataType) {
		return true // GORM declares it text
	}
	t := strings.ToLower(string(f.DataType))
	switch {
	case strings.Contains(t, "int"):
		return false
	case strings.Contains(t, "char"), strings.Contains(t, "clob"), strings.Contains(t, "text"), strings.Contains(t, "blob"):
		return true
	}
	return false // REAL, or NUMERIC: json, decimal, anything else
}

// PartClause is the ORDER BY a part runs with: the query's, with the key
// last to break ties, so that every part is in the order the merge reads.
func (o *Order) PartClause(c clause.Clause) clause.Clause {
	if !o.TieKey {
		return c
	}
	order, _ := c.Expression.(clause.OrderBy)
	columns := append(order.Columns[:len(order.Columns):len(order.Columns)], clause.OrderByColumn{Column: clause.Column{Table: clause.CurrentTable, Name: o.Key.DBName}})
	c.Expression = clause.OrderBy{Columns: columns}
	return c
}

// limitOf reads the query's LIMIT and OFFSET.
func limitOf(q Query) (limit, offset int, limited bool) {
	l, ok := q.Clauses["LIMIT"].Expression.(clause.Limit)
	if !ok {
		return 0, 0, false
	}
	offset = max(l.Offset, 0)
	if l.Limit != nil && *l.Limit >= 0 { // Limit(-1) cancels a limit
		// Parts fetch OFFSET+LIMIT rows: capped so that the sum cannot overflow (Limit(math.MaxInt) means all).
		return min(*l.Limit, math.MaxInt-offset), offset, true
	}
	return 0, offset, false
}

// elemType is t, or what t points to.
func elemType(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}
