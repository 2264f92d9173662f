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
var simpleCondition = regexp.MustCompile("(?i)^\\s*(?:[`\"]?\\w+[`\"]?\\.)?[`\"]?(\\w+)[`\"]?\\s*(=|in)\\s*(?:\\(\\s*\\?\\s*\\)|\\?)\\s*$")

// ColumnValues returns the values that the AND-ed conditions exprs allow for
// the column isColumn accepts, and whether any condition constrains it. Of
// several such conditions it returns the one with the fewest values: the rows
// that match all of them are among those. It reads clause.Eq, clause.IN,
// clause.Expr text of the form `col = ?` or `col IN ?`, and clause.AndConditions;
// anything under OR or NOT says nothing.
func ColumnValues(exprs []clause.Expression, isColumn func(name string) bool) ([]any, bool) {
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
			if isColumn(columnName(c.Column)) {
				consider(flatten([]any{c.Value}))
			}
		case clause.IN:
			if isColumn(columnName(c.Column)) {
				consider(flatten(c.Values))
			}
		case clause.Expr:
			if m := simpleCondition.FindStringSubmatch(c.SQL); m != nil && len(c.Vars) == 1 && isColumn(m[1]) {
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

// columnName returns the bare column name of a clause column or a string
// such as "users.id" or "`id`".
func columnName(column any) string {
	switch c := column.(type) {
	case clause.Column:
		return c.Name
	case string:
		if i := strings.LastIndexByte(c, '.'); i >= 0 {
			c = c[i+1:]
		}
		return strings.Trim(c, "`\" ")
	}
	return ""
}

// flatten expands slices and arrays (but not []byte) into their elements;
// values without any are returned as they are.
func flatten(values []any) []any {
	if !slices.ContainsFunc(values, isList) {
		return values
	}
	out := make([]any, 0, len(values))
	for _, v := range values {
		rv := reflect.ValueOf(v)
		if isList(v) {
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
