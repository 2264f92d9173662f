package shardrouter

import (
	"database/sql/driver"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ColumnValues returns the values that the conditions exprs, a WHERE list,
// allow for the column isColumn accepts (given the table the condition
// names, "" when none, and the column's name), and whether they constrain
// it. Of several AND-ed conditions on it, it returns the one with the fewest
// values: the rows that match all of them are among those; of conditions
// joined by OR (GORM's Or, clause.Or), the union of each side's, when every
// side constrains it. It reads clause.Eq, clause.IN, clause.Expr text of the
// form `col = ?` or `col IN ?` (alone, or AND-ed with other conditions in one
// text: keyConjuncts), and nested groups, joined as GORM's Where.Build joins
// them. Nothing under NOT, nor an OR inside a text, constrains it.
func ColumnValues(exprs []clause.Expression, isColumn func(table, name string) bool) ([]any, bool) {
	if !slices.ContainsFunc(exprs, isOr) {
		return conjunctValues(exprs, isColumn)
	}
	return listValues(whereOrder(exprs), isColumn)
}

func isOr(e clause.Expression) bool { _, or := e.(clause.OrConditions); return or }

func isSingleOr(e clause.Expression) bool {
	or, ok := e.(clause.OrConditions)
	return ok && len(or.Exprs) == 1
}

// whereOrder is a WHERE list in the order GORM's Where.Build joins it: a
// lone AND group unwrapped, the first condition not a single Or first.
func whereOrder(exprs []clause.Expression) []clause.Expression {
	if len(exprs) == 1 {
		if and, ok := exprs[0].(clause.AndConditions); ok {
			exprs = and.Exprs
		}
	}
	exprs = slices.Clone(exprs)
	if i := slices.IndexFunc(exprs, func(e clause.Expression) bool { return !isSingleOr(e) }); i > 0 {
		exprs[0], exprs[i] = exprs[i], exprs[0]
	}
	return exprs
}

// listValues reads a list as GORM's buildExprs joins it: a single Or after
// the first condition joins with OR, and starts a run of AND-ed conditions
// (SQL's AND binds tighter); each run constrains the column, or the list
// does not.
func listValues(exprs []clause.Expression, isColumn func(table, name string) bool) ([]any, bool) {
	var union []any
	start := 0
	for i := 1; i <= len(exprs); i++ {
		if i < len(exprs) && !isSingleOr(exprs[i]) {
			continue
		}
		values, ok := conjunctValues(exprs[start:i], isColumn)
		if !ok {
			return nil, false
		}
		if start == 0 && i == len(exprs) {
			return values, true
		}
		union, start = append(union, values...), i
	}
	return union, true
}

// conjunctValues reads AND-ed conditions; a single Or among them is its
// condition (listValues split the list at the others).
func conjunctValues(exprs []clause.Expression, isColumn func(table, name string) bool) ([]any, bool) {
	if slices.ContainsFunc(exprs, LeaksOr) {
		return nil, false // its OR joins the others: they are not AND-ed
	}
	var best []any
	found := false
	consider := func(values []any) {
		if !found || len(values) < len(best) {
			best, found = values, true
		}
	}
	for _, e := range exprs {
		switch c := e.(type) {
		case clause.Eq:
			if table, name := columnName(c.Column); isColumn(table, name) && !isNull(c.Value) && known(c.Value) {
				consider(flatten([]any{c.Value}))
			}
		case clause.IN:
			if table, name := columnName(c.Column); isColumn(table, name) && known(c.Values...) {
				consider(flatten(c.Values))
			}
		case clause.Expr:
			if n := placeholderList(c, isColumn); n > 0 {
				consider(flatten(c.Vars))
			} else if len(c.Vars) > 0 && mayConjoin(c.SQL) {
				for _, i := range keyConjuncts(c.SQL, len(c.Vars), isColumn) {
					if known(c.Vars[i]) {
						consider(flatten(c.Vars[i : i+1]))
					}
				}
			}
		case clause.AndConditions:
			if values, ok := listValues(c.Exprs, isColumn); ok {
				consider(values)
			}
		case clause.Where:
			if values, ok := ColumnValues(c.Exprs, isColumn); ok {
				consider(values)
			}
		case clause.OrConditions:
			if values, ok := orValues(c.Exprs, isColumn); ok {
				consider(values)
			}
		}
	}
	return best, found
}

// orValues reads the conditions of an Or, each a side of it.
func orValues(exprs []clause.Expression, isColumn func(table, name string) bool) ([]any, bool) {
	var union []any
	for _, e := range exprs {
		values, ok := conjunctValues([]clause.Expression{e}, isColumn)
		if !ok {
			return nil, false
		}
		union = append(union, values...)
	}
	return union, len(exprs) > 0
}

// placeholderList returns the number of placeholders of c when it is a
// condition on one column that isColumn accepts, as simpleCondition reads
// it, with as many values, none of them SQL and, for several, none a list.
func placeholderList(c clause.Expr, isColumn func(table, name string) bool) int {
	n, _, _ := simpleCondition(c.SQL, isColumn)
	if n == 0 || n != len(c.Vars) || !known(c.Vars...) || n > 1 && slices.ContainsFunc(c.Vars, isList) {
		return 0
	}
	return n
}

// isSimpleCondition reports whether sql is the text of a condition on one
// column with one placeholder: `col = ?`, `col IN ?` or `col IN (?)`.
func isSimpleCondition(sql string, isColumn func(table, name string) bool) bool {
	n, _, _ := simpleCondition(sql, isColumn)
	return n == 1
}

// simpleCondition reads sql as the text of a condition on one column
// isColumn accepts, the column optionally quoted and qualified by its
// table (and the table by its schema), the whole optionally in brackets: `col = ?`, `col IN ?`, `col IN
// (?)`, or `col IN (?, ?, …)`. It returns the number of placeholders (0 for
// another text) and the column. Read by hand, not by a regular expression:
// it runs for every condition of every statement.
func simpleCondition(sql string, isColumn func(table, name string) bool) (placeholders int, table, name string) {
	s := conditionText{sql: sql}
	s.spaces()
	brackets := 0
	for s.eat("(") {
		brackets++
		s.spaces()
	}
	table, name = "", s.identifier()
	if s.eat(".") {
		table, name = name, s.identifier()
	}
	if name != "" && s.eat(".") { // schema.table.column: the table with its schema, as a model's TableName may give it
		table, name = table+"."+name, s.identifier()
	}
	if name == "" {
		return 0, "", ""
	}
	s.spaces()
	list := false
	switch {
	case s.eat("="):
	case s.eatFold("in"):
		list = true
	default:
		return 0, "", ""
	}
	s.spaces()
	switch {
	case s.eat("?"):
		placeholders = 1
	case s.eat("("):
		for {
			s.spaces()
			if !s.eat("?") {
				return 0, "", ""
			}
			placeholders++
			s.spaces()
			if s.eat(")") {
				break
			}
			if !list || !s.eat(",") {
				return 0, "", ""
			}
		}
	default:
		return 0, "", ""
	}
	for s.spaces(); brackets > 0 && s.eat(")"); s.spaces() {
		brackets--
	}
	if brackets > 0 || s.at != len(sql) || !isColumn(table, name) {
		return 0, "", ""
	}
	return placeholders, table, name
}

// conditionText reads a condition's SQL text from left to right.
type conditionText struct {
	sql string
	at  int
}

func (s *conditionText) spaces() {
	for s.at < len(s.sql) && strings.IndexByte(" \t\n\r\f\v", s.sql[s.at]) >= 0 {
		s.at++
	}
}

func (s *conditionText) eat(token string) bool {
	if strings.HasPrefix(s.sql[s.at:], token) {
		s.at += len(token)
		return true
	}
	return false
}

func (s *conditionText) eatFold(word string) bool {
	if end := s.at + len(word); end <= len(s.sql) && strings.EqualFold(s.sql[s.at:end], word) {
		s.at = end
		return true
	}
	return false
}

// identifier reads a word of letters, digits and underscores, in backquotes
// or double quotes or bare, and returns it unquoted ("" when there is none).
func (s *conditionText) identifier() string {
	quote := s.at < len(s.sql) && (s.sql[s.at] == '`' || s.sql[s.at] == '"')
	if quote {
		s.at++
	}
	start := s.at
	for s.at < len(s.sql) && isWordByte(s.sql[s.at]) {
		s.at++
	}
	word := s.sql[start:s.at]
	if quote && !s.eat(s.sql[start-1:start]) {
		return ""
	}
	return word
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// known reports whether values are values, not SQL that the database
// computes: a subquery (*gorm.DB) or an expression, which say nothing of a
// column's values.
func known(values ...any) bool {
	for _, v := range values {
		switch v.(type) {
		case *gorm.DB, clause.Expression, clause.Column:
			return false
		}
	}
	return true
}

// isNull reports whether clause.Eq writes `IS NULL` for v: nil, a nil
// pointer, or a driver.Valuer whose value is nil.
func isNull(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && rv.IsNil() {
		return true
	}
	if valuer, ok := v.(driver.Valuer); ok {
		value, err := valuer.Value()
		return err == nil && value == nil
	}
	return false
}

// RestrictValues returns a copy of the AND-ed conditions exprs (copied down
// through their groups, which GORM reorders in place while writing SQL) in
// which every list of values for the column isColumn accepts, where
// ColumnValues reads one, keeps only the values keep accepts: the part of a
// statement sent to one database asks that database only for its own rows.
// It reports empty when such a condition keeps no value: no row there matches.
func RestrictValues(exprs []clause.Expression, isColumn func(table, name string) bool, keep func(v any) bool) (out []clause.Expression, empty bool) {
	out = MapValues(exprs, isColumn, func(values []any, single bool) ([]any, bool) {
		kept := make([]any, 0, len(values))
		for _, v := range values {
			if keep(v) {
				kept = append(kept, v)
			}
		}
		empty = empty || len(kept) == 0
		return kept, !single && len(kept) != len(values)
	})
	return out, empty
}

// ValueLists returns, in the order MapValues visits them, the values of each
// condition on the column isColumn accepts that ColumnValues reads (lists
// flattened), and whether each is a single value rather than a list.
func ValueLists(exprs []clause.Expression, isColumn func(table, name string) bool) (lists [][]any, singles []bool) {
	MapValues(exprs, isColumn, func(values []any, single bool) ([]any, bool) {
		lists, singles = append(lists, values), append(singles, single)
		return nil, false
	})
	return lists, singles
}

// MapValues returns a copy of exprs, as RestrictValues does, in which visit
// may replace the values of each condition on the column isColumn accepts
// that ColumnValues reads: it gets them flattened, and whether the condition
// compares one value (col = ?) rather than a list, and returns the new values
// and whether to use them. A single value is replaced only by one value.
func MapValues(exprs []clause.Expression, isColumn func(table, name string) bool, visit func(values []any, single bool) ([]any, bool)) []clause.Expression {
	return mapValues(exprs, isColumn, func(given []any, single bool) ([]any, bool) { return visit(flatten(given), single) })
}

// MapLists is MapValues whose visit is told only how many values a
// condition has, which it counts without copying them: a statement's part
// on each of many databases does not copy a long list for each.
func MapLists(exprs []clause.Expression, isColumn func(table, name string) bool, visit func(n int, single bool) ([]any, bool)) []clause.Expression {
	return mapValues(exprs, isColumn, func(given []any, single bool) ([]any, bool) { return visit(flatLen(given), single) })
}

// flatLen is len(flatten(values)).
func flatLen(values []any) int {
	n := 0
	for _, v := range values {
		if isList(v) {
			n += reflect.ValueOf(v).Len()
		} else {
			n++
		}
	}
	return n
}

// mapValues is MapValues whose visit gets the values as given, lists not
// flattened.
func mapValues(exprs []clause.Expression, isColumn func(table, name string) bool, visit func(given []any, single bool) ([]any, bool)) []clause.Expression {
	restrict := !slices.ContainsFunc(exprs, func(e clause.Expression) bool { return isOr(e) || LeaksOr(e) })
	group := func(exprs []clause.Expression) []clause.Expression {
		if !restrict {
			return copyExprs(exprs)
		}
		return mapValues(exprs, isColumn, visit)
	}
	out := make([]clause.Expression, len(exprs))
	for i, e := range exprs {
		out[i] = e
		switch c := e.(type) {
		case clause.AndConditions:
			c.Exprs = group(c.Exprs)
			out[i] = c
		case clause.Where:
			c.Exprs = group(c.Exprs)
			out[i] = c
		case clause.OrConditions:
			c.Exprs = copyExprs(c.Exprs)
			out[i] = c
		case clause.NotConditions:
			c.Exprs = copyExprs(c.Exprs)
			out[i] = c
		case clause.Eq:
			if table, name := columnName(c.Column); restrict && isColumn(table, name) && !isNull(c.Value) && known(c.Value) {
				single := !isList(c.Value)
				if values, replace := visit([]any{c.Value}, single); replace && (!single || len(values) == 1) {
					if single {
						c.Value = values[0]
					} else {
						c.Value = values
					}
					out[i] = c
				}
			}
		case clause.IN:
			if table, name := columnName(c.Column); restrict && isColumn(table, name) && known(c.Values...) {
				if values, replace := visit(c.Values, false); replace {
					c.Values = values
					out[i] = c
				}
			}
		case clause.Expr:
			if !restrict {
				break
			}
			var at []int
			if n := placeholderList(c, isColumn); n > 1 {
				// `id IN (?, ?)`: one list, whose new values another number of placeholders may hold.
				if values, replace := visit(c.Vars, false); replace {
					_, table, name := simpleCondition(c.SQL, isColumn)
					out[i] = clause.IN{Column: clause.Column{Table: table, Name: name}, Values: values}
				}
				break
			} else if n == 1 {
				at = []int{0}
			} else if len(c.Vars) > 0 && mayConjoin(c.SQL) {
				at = keyConjuncts(c.SQL, len(c.Vars), isColumn)
			}
			for _, j := range at {
				if !known(c.Vars[j]) {
					continue
				}
				single := !isList(c.Vars[j])
				if values, replace := visit(c.Vars[j:j+1], single); replace && (!single || len(values) == 1) {
					c.Vars = slices.Clone(c.Vars) // the caller's stay as they are
					if single {
						c.Vars[j] = values[0]
					} else {
						c.Vars[j] = values
					}
					out[i] = c
				}
			}
		}
	}
	return out
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

// columnName returns the table ("" when none is named) and the bare column
// name of a clause column or a string such as "users.id" or "`id`" (a
// clause column named "app.users.id", as GORM builds a map's condition, too).
func columnName(column any) (table, name string) {
	switch c := column.(type) {
	case clause.Column:
		if c.Table != "" || c.Raw || !strings.Contains(c.Name, ".") {
			return c.Table, c.Name
		}
		return columnName(c.Name) // a map's key "users.id": GORM names the column so, and quotes it part by part
	case string:
		if i := strings.LastIndexByte(c, '.'); i >= 0 {
			table, c = strings.Trim(c[:i], "`\" "), c[i+1:]
			table = quotedDots.Replace(table) // "app"."users": app.users
		}
		return table, strings.Trim(c, "`\" ")
	}
	return "", ""
}

// quotedDots joins the quoted parts of a qualified name: "app"."users" is app.users.
var quotedDots = strings.NewReplacer("`.`", ".", "\".\"", ".")

// flatten expands slices and arrays (but not []byte) into their elements;
// values without any are returned as they are.
func flatten(values []any) []any {
	if !slices.ContainsFunc(values, isList) {
		return values
	}
	out := make([]any, 0, len(values))
	for _, v := range values {
		if isList(v) {
			rv := reflect.ValueOf(v)
			for i := range rv.Len() {
				out = append(out, rv.Index(i).Interface())
			}
			continue
		}
		out = append(out, v)
	}
	return out
}

func isList(v any) bool {
	switch v.(type) {
	case nil, string, []byte, int64, int, uint64:
		return false
	}
	rv := reflect.ValueOf(v)
	return (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array) && rv.Type().Elem().Kind() != reflect.Uint8
}
