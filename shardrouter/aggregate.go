package shardrouter

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// A query over several databases that computes per group (aggregates,
// GROUP BY with HAVING, DISTINCT) is merged on the values its parts return:
// each part selects the query's own items and the hidden ones the merge
// needs (an AVG's SUM and COUNT, a group column, an aggregate HAVING or
// ORDER BY names), grouped as the query, without HAVING, ORDER BY, LIMIT or
// OFFSET; the merge combines the parts' rows group by group, then filters,
// orders and windows them (MergeGroups). What the plan does not know is
// refused: the list grows, it never turns into a denylist.

// Aggregation is the plan of such a query.
type Aggregation struct {
	// Items is the select list every part runs: the query's items, then
	// the hidden ones.
	Items []Item
	// Visible is how many of Items the query's rows carry.
	Visible int
	// Keys are the items whose values make a group.
	Keys []int
	// Grouped: a row per group (GROUP BY or DISTINCT); else one row.
	Grouped bool
	// CountGroups: the query's one row is the number of groups: a COUNT
	// of DISTINCT values, written as CountText, named CountAlias.
	CountGroups           bool
	CountText, CountAlias string
	Having                []Condition
	Order                 []SortItem
	Limit                 int
	Offset                int
	Limited               bool
}

// Item is one item of a part's select list.
type Item struct {
	SQL  string // as the part selects it
	Func string // "" (a column), "count", "sum", "min", "max" or "avg"
	Arg  string // the column it reads, "*" for count(*)
	// For an avg, the hidden items of its SUM and COUNT.
	Sum, Count int
	Alias      string // as the query named it
}

// Condition is one comparison of HAVING, applied to the merged groups.
type Condition struct {
	Item  int
	Op    string // =, <>, <, <=, >, >=
	Value any
}

// SortItem is one ORDER BY item over the merged groups.
type SortItem struct {
	Item int
	Desc bool
}

// SelectList is the select list the parts run.
func (a *Aggregation) SelectList() string {
	list := make([]string, len(a.Items))
	for i, item := range a.Items {
		list[i] = item.SQL
	}
	return strings.Join(list, ", ")
}

// AggregationQuery is what PlanAggregation reads: the select list as text
// items, the GROUP BY columns, HAVING, ORDER BY and the window.
type AggregationQuery struct {
	Table         string // the model's table: qualified names must be of it
	Select        []string
	Distinct      bool
	GroupBy       []string
	Having        []clause.Expression
	OrderBy       []string // items as written: `n desc`, `count(*)`
	Quote         func(string) string
	Limit, Offset int
	Limited       bool
	ModelColumn   func(name string) (string, bool) // the name of a column of the model, as it is named
	Dialect       string                           // MySQL, Postgres or SQLite
}

// PlanAggregation plans a query that aggregates, groups or selects DISTINCT
// values, or says why it cannot be merged exactly.
func PlanAggregation(q AggregationQuery) (*Aggregation, string) {
	a := &Aggregation{Limit: q.Limit, Offset: q.Offset, Limited: q.Limited, Grouped: len(q.GroupBy) > 0 || q.Distinct}
	if len(q.Select) == 0 {
		return nil, "DISTINCT or GROUP BY without a select list"
	}
	if q.Quote == nil {
		q.Quote = func(name string) string { return name }
	}
	aggregated := false
	for _, text := range q.Select {
		o, ok := parseOperand(text, q.Table)
		if !ok || o.arg == "*" && o.fn == "" {
			return nil, fmt.Sprintf("the select item %q (the merge knows columns and count, sum, min, max, avg of one column)", strings.TrimSpace(text))
		}
		sql := strings.TrimSpace(text)
		if column, ok := q.ModelColumn(o.arg); ok {
			o.arg = column // the item's SQL stays as the query wrote it: its text names its result ("QTY" on MySQL)
		} else if o.fn != "" && o.arg != "*" {
			return nil, fmt.Sprintf("the select item %q: %s is not a column of %s", strings.TrimSpace(text), o.arg, q.Table)
		}
		aggregated = aggregated || o.fn != ""
		a.Items = append(a.Items, Item{SQL: sql, Func: o.fn, Arg: o.arg, Alias: o.alias})
		if o.distinct {
			if len(q.Select) > 1 || len(q.GroupBy) > 0 {
				return nil, "COUNT(DISTINCT …) beside other items or groups"
			}
			// The distinct values of the parts, merged: their number is the count.
			a.Items[0] = Item{SQL: quoteColumn(q.Quote, q.Table, o.arg, o.qualified), Arg: o.arg}
			a.Keys, a.Grouped, a.CountGroups = []int{0}, true, true
			a.CountText, a.CountAlias = strings.TrimSpace(text), o.alias
			a.Visible = 1
			return a, ""
		}
	}
	a.Visible = len(a.Items)
	if q.Distinct && len(q.GroupBy) == 0 && !slices.ContainsFunc(a.Items, func(i Item) bool { return i.Func == "" }) {
		q.Distinct, a.Grouped = false, false // aggregates alone make one row, which DISTINCT keeps as it is (GORM's Distinct(a, b).Count)
	}
	if q.Distinct && aggregated {
		return nil, "DISTINCT with aggregates"
	}
	if q.Distinct && len(q.GroupBy) == 0 {
		for i := range a.Items {
			a.Keys = append(a.Keys, i)
		}
	}
	for _, g := range q.GroupBy {
		name, ok := itemColumn(g, q.Table)
		if ok && name != "*" {
			name, ok = q.ModelColumn(name)
		}
		if !ok || name == "*" {
			return nil, fmt.Sprintf("GROUP BY %q (the merge groups by columns of %s)", strings.TrimSpace(g), q.Table)
		}
		a.Keys = append(a.Keys, a.column(name, quoteColumn(q.Quote, q.Table, name, isQualified(g))))
	}
	if len(q.GroupBy) > 0 {
		for i, item := range a.Items[:a.Visible] {
			if item.Func == "" && !slices.Contains(a.Keys, i) && !a.groupedBy(item.Arg) {
				return nil, fmt.Sprintf("the select item %q is neither grouped nor aggregated", item.SQL)
			}
		}
	} else if !q.Distinct && !aggregated {
		return nil, "a select list without aggregates"
	} else if !q.Distinct {
		for _, item := range a.Items[:a.Visible] {
			if item.Func == "" {
				return nil, fmt.Sprintf("the select item %q is neither grouped nor aggregated", item.SQL)
			}
		}
	}
	for i := range a.Visible {
		if a.Items[i].Func == "avg" {
			a.Items[i].Sum = a.hidden("sum", a.Items[i].Arg, q.Quote)
			a.Items[i].Count = a.hidden("count", a.Items[i].Arg, q.Quote)
		}
	}
	for _, h := range q.Having {
		conditions, why := a.having(h, q)
		if why != "" {
			return nil, "HAVING " + why
		}
		a.Having = append(a.Having, conditions...)
	}
	for _, text := range q.OrderBy {
		for _, part := range splitTopLevel(text, ',') {
			s, why := a.sortItem(part, q)
			if why != "" {
				return nil, "ORDER BY " + why
			}
			a.Order = append(a.Order, s)
		}
	}
	return a, ""
}

// groupedBy reports whether column name is one of the group keys.
func (a *Aggregation) groupedBy(name string) bool {
	for _, k := range a.Keys {
		if a.Items[k].Func == "" && strings.EqualFold(a.Items[k].Arg, name) {
			return true
		}
	}
	return false
}

// column finds the item of column name, selecting it hidden if it is not.
func (a *Aggregation) column(name, sql string) int {
	for i, item := range a.Items {
		if item.Func == "" && strings.EqualFold(item.Arg, name) {
			return i
		}
	}
	a.Items = append(a.Items, Item{SQL: sql, Arg: name})
	return len(a.Items) - 1
}

// hidden finds the item of fn(arg), selecting it hidden if it is not.
func (a *Aggregation) hidden(fn, arg string, quote func(string) string) int {
	for i, item := range a.Items {
		if item.Func == fn && strings.EqualFold(item.Arg, arg) {
			return i
		}
	}
	operand := "*"
	if arg != "*" {
		operand = quote(arg)
	}
	a.Items = append(a.Items, Item{SQL: fmt.Sprintf("%s(%s)", strings.ToUpper(fn), operand), Func: fn, Arg: arg})
	i := len(a.Items) - 1
	if fn == "avg" {
		a.Items[i].Sum = a.hidden("sum", arg, quote)
		a.Items[i].Count = a.hidden("count", arg, quote)
	}
	return i
}

// resolve finds the item an operand of HAVING or ORDER BY names: an alias,
// a selected or grouped column, or an aggregate (selected hidden if need be).
//
// A name that is both an alias and a grouped column is the alias in ORDER
// BY and the column in HAVING, as in SQL; PostgreSQL's HAVING sees no alias.
func (a *Aggregation) resolve(text string, q AggregationQuery, having bool) (int, string) {
	o, ok := parseOperand(text, q.Table)
	if !ok || o.alias != "" || o.arg == "*" && o.fn == "" || o.distinct {
		return 0, fmt.Sprintf("%q (the merge knows aliases, grouped columns and count, sum, min, max, avg of one column)", strings.TrimSpace(text))
	}
	if o.fn == "" {
		if having && a.groupedBy(o.arg) {
			return a.column(o.arg, quoteColumn(q.Quote, q.Table, o.arg, o.qualified)), ""
		}
		for i, item := range a.Items[:a.Visible] {
			if o.qualified {
				break // a column of the table, never an alias
			}
			if item.Alias != "" && strings.EqualFold(item.Alias, o.arg) {
				if having && q.Dialect == Postgres {
					return 0, fmt.Sprintf("%q: PostgreSQL's HAVING does not see the select list's aliases", strings.TrimSpace(text))
				}
				if _, column := q.ModelColumn(o.arg); having && column && q.Dialect == SQLite {
					return 0, fmt.Sprintf("%q: SQLite's HAVING reads %s as the table's column, not grouped, of any row of the group", strings.TrimSpace(text), o.arg)
				}
				return i, ""
			}
		}
		if a.groupedBy(o.arg) {
			return a.column(o.arg, quoteColumn(q.Quote, q.Table, o.arg, o.qualified)), ""
		}
		for i, item := range a.Items[:a.Visible] {
			if item.Func == "" && strings.EqualFold(item.Arg, o.arg) {
				return i, ""
			}
		}
		return 0, fmt.Sprintf("%q: neither an alias nor a grouped column", strings.TrimSpace(text))
	}
	if column, ok := q.ModelColumn(o.arg); ok {
		o.arg = column
	} else if o.arg != "*" {
		return 0, fmt.Sprintf("%q: %s is not a column of %s", strings.TrimSpace(text), o.arg, q.Table)
	}
	if o.fn != "count" && o.arg == "*" {
		return 0, fmt.Sprintf("%q", strings.TrimSpace(text))
	}
	if q.Distinct && len(a.Keys) == a.Visible && !a.aggregated() {
		return 0, fmt.Sprintf("%q: an aggregate of a DISTINCT list", strings.TrimSpace(text))
	}
	return a.hidden(o.fn, o.arg, q.Quote), ""
}

func (a *Aggregation) aggregated() bool {
	for _, item := range a.Items[:a.Visible] {
		if item.Func != "" {
			return true
		}
	}
	return false
}

// havingTerm is one comparison of HAVING: an item, an operator, a ? or an
// integer.
var havingTerm = regexp.MustCompile(`(?is)^\s*(.+?)\s*(<>|!=|<=|>=|=|<|>)\s*(\?|-?\d+)\s*$`)

// andWord joins HAVING's comparisons.
var andWord = regexp.MustCompile(`(?i)\s+and\s+`)

// having reads HAVING's conditions: comparisons of an item with a value,
// joined by AND.
func (a *Aggregation) having(e clause.Expression, q AggregationQuery) ([]Condition, string) {
	expr, ok := e.(clause.Expr)
	if !ok {
		return nil, fmt.Sprintf("%T (the merge knows comparisons written as text, joined by AND)", e)
	}
	vars := expr.Vars
	var conditions []Condition
	for _, term := range andWord.Split(expr.SQL, -1) {
		m := havingTerm.FindStringSubmatch(term)
		if m == nil {
			return nil, fmt.Sprintf("%q (the merge knows comparisons of an item with a value, joined by AND)", strings.TrimSpace(term))
		}
		item, why := a.resolve(m[1], q, true)
		if why != "" {
			return nil, why
		}
		c := Condition{Item: item, Op: m[2]}
		if c.Op == "!=" {
			c.Op = "<>"
		}
		if m[3] == "?" {
			if len(vars) == 0 {
				return nil, fmt.Sprintf("%q: a ? without a value", strings.TrimSpace(term))
			}
			c.Value, vars = vars[0], vars[1:]
		} else {
			n, err := strconv.ParseInt(m[3], 10, 64)
			if err != nil {
				return nil, fmt.Sprintf("%q: %v", strings.TrimSpace(term), err)
			}
			c.Value = n
		}
		conditions = append(conditions, c)
	}
	if len(vars) > 0 {
		return nil, fmt.Sprintf("%q: more values than ?", expr.SQL)
	}
	return conditions, ""
}

// orderDirection is an ORDER BY item's direction, written after it.
var orderDirection = regexp.MustCompile(`(?i)\s+(asc|desc)\s*$`)

func (a *Aggregation) sortItem(text string, q AggregationQuery) (SortItem, string) {
	var s SortItem
	if m := orderDirection.FindStringSubmatchIndex(text); m != nil {
		s.Desc = strings.EqualFold(text[m[2]:m[3]], "desc")
		text = text[:m[0]]
	}
	var why string
	s.Item, why = a.resolve(text, q, false)
	return s, why
}

// aggregating reports whether q's rows are computed per group: GROUP BY,
// DISTINCT rows that may repeat across databases (the key not among them),
// or aggregates in the select list other than a plain Count's.
func aggregating(q Query) bool {
	if _, grouped := q.Clauses["GROUP BY"]; grouped {
		return true
	}
	sel, _ := q.Clauses["SELECT"].Expression.(clause.Select)
	if (q.Distinct || sel.Distinct) && !keySelected(q) {
		return true
	}
	if q.Dest != nil && IsNumber(q.Dest.Kind()) && plainCount(q) && !q.Rows {
		return false // summed as it is
	}
	items, distinct, _ := selectItems(q)
	if distinct && !keySelected(q) {
		return true
	}
	for _, item := range items {
		if o, ok := parseOperand(item, q.Schema.Table); ok && o.fn != "" {
			return true
		}
		if strings.Contains(item, "(") {
			return true // a function the plan refuses, naming it
		}
	}
	return false
}

// columnOf is the name of the model's column name, by its name or its
// field's, in any case (MySQL's names are; a quoted PostgreSQL name that
// differs fails there as on one database).
func columnOf(s *schema.Schema, name string) (string, bool) {
	if f := s.LookUpField(name); f != nil && f.DBName != "" {
		return f.DBName, true
	}
	for _, column := range s.DBNames {
		if strings.EqualFold(column, name) {
			return column, true
		}
	}
	return "", false
}

// planAggregation reads q for PlanAggregation.
func planAggregation(q Query) (*Aggregation, string) {
	for name := range q.Clauses {
		if !mergeableClauses[name] && name != "GROUP BY" {
			return nil, name
		}
	}
	if where, ok := q.Clauses["WHERE"].Expression.(clause.Where); ok && selectsInSQL(where.Exprs) {
		return nil, "a subquery in a condition's SQL"
	}
	if q.TableExpr != nil && strings.Contains(q.TableExpr.SQL, "(") {
		return nil, "a table expression"
	}
	items, distinct, why := selectItems(q)
	if why != "" {
		return nil, why
	}
	aq := AggregationQuery{Table: q.Schema.Table, Select: items, Distinct: q.Distinct || distinct, Quote: q.Quote, Dialect: q.Dialect,
		ModelColumn: func(name string) (string, bool) { return columnOf(q.Schema, name) }}
	if c, ok := q.Clauses["GROUP BY"]; ok {
		g, _ := c.Expression.(clause.GroupBy)
		for _, column := range g.Columns {
			name := column.Name
			if column.Table != "" && column.Table != clause.CurrentTable {
				name = column.Table + "." + name
			}
			if column.Raw {
				aq.GroupBy = append(aq.GroupBy, splitTopLevel(name, ',')...)
			} else {
				aq.GroupBy = append(aq.GroupBy, name)
			}
		}
		if len(aq.GroupBy) == 0 {
			return nil, "HAVING without GROUP BY"
		}
		aq.Having = g.Having
	}
	if c, ok := q.Clauses["ORDER BY"]; ok {
		order, _ := c.Expression.(clause.OrderBy)
		if order.Expression != nil {
			return nil, "ORDER BY an expression"
		}
		for _, column := range order.Columns {
			text := column.Column.Name
			if text == clause.PrimaryKey && q.Key != nil { // First, Last: the model's key
				text = q.Key.DBName
			}
			if column.Desc {
				text += " DESC"
			}
			aq.OrderBy = append(aq.OrderBy, text)
		}
	}
	aq.Limit, aq.Offset, aq.Limited = limitOf(q)
	if aq.Offset > 0 && !aq.Limited && q.Dialect == MySQL {
		return nil, "OFFSET without LIMIT, which MySQL does not accept,"
	}
	return PlanAggregation(aq)
}
