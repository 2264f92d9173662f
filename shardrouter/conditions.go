package shardrouter

import (
	"reflect"
	"regexp"
	"slices"
	"strings"

	"gorm.io/gorm/clause"
)

// simpleCondition matches the SQL text of a condition on one column:
// `col = ?`, `col IN ?`, `col IN (?)`, the column optionally quoted and
// qualified by its table.
var simpleCondition = regexp.MustCompile("(?i)^\\s*(?:[`\"]?(\\w+)[`\"]?\\.)?[`\"]?(\\w+)[`\"]?\\s*(=|in)\\s*(?:\\(\\s*\\?\\s*\\)|\\?)\\s*$")

// ColumnValues returns the values that the AND-ed conditions exprs allow for
// the column isColumn accepts (given the table the condition names, "" when
// none, and the column's name), and whether any condition constrains it. Of
// several such conditions it returns the one with the fewest values: the rows
// that match all of them are among those. It reads clause.Eq, clause.IN,
// clause.Expr text of the form `col = ?` or `col IN ?`, and nested AND
// groups. A level that holds an OR (GORM's Or) says nothing, nor does anything
// under NOT.
func ColumnValues(exprs []clause.Expression, isColumn func(table, name string) bool) ([]any, bool) {
	if slices.ContainsFunc(exprs, func(e clause.Expression) bool { _, or := e.(clause.OrConditions); return or }) {
		return nil, false
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
			if table, name := columnName(c.Column); isColumn(table, name) {
				consider(flatten([]any{c.Value}))
			}
		case clause.IN:
			if table, name := columnName(c.Column); isColumn(table, name) {
				consider(flatten(c.Values))
			}
		case clause.Expr:
			if m := simpleCondition.FindStringSubmatch(c.SQL); m != nil && len(c.Vars) == 1 && isColumn(m[1], m[2]) {
				consider(flatten(c.Vars))
			}
		case clause.AndConditions:
			if values, ok := ColumnValues(c.Exprs, isColumn); ok {
				consider(values)
			}
		case clause.Where:
			if values, ok := ColumnValues(c.Exprs, isColumn); ok {
				consider(values)
			}
		}
	}
	return best, found
}

// columnName returns the table ("" when none is named) and the bare column
// name of a clause column or a string such as "users.id" or "`id`".
func columnName(column any) (table, name string) {
	switch c := column.(type) {
	case clause.Column:
		return c.Table, c.Name
	case string:
		if i := strings.LastIndexByte(c, '.'); i >= 0 {
			table, c = strings.Trim(c[:i], "`\" "), c[i+1:]
		}
		return table, strings.Trim(c, "`\" ")
	}
	return "", ""
}

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
