package shardrouter

import (
	"slices"
	"strings"

	"gorm.io/gorm/clause"
)

// GORM builds a WHERE list by joining its conditions with AND, except a
// single-condition Or (db.Or), which it joins with OR, after moving a leading
// one behind the first other condition: [Or(a), b] is `b OR a`, and a
// condition GORM or the plugin appends later (the IDs of the statement's
// rows, a part's ranges) is AND-ed to the last OR's side only.

// OrJoined reports whether the WHERE list exprs holds a single-condition Or:
// GORM joins some of it, or a condition appended to it, with OR.
func OrJoined(exprs []clause.Expression) bool {
	if len(exprs) == 1 {
		if and, ok := exprs[0].(clause.AndConditions); ok {
			exprs = and.Exprs // GORM's WHERE unwraps a lone AND group
		}
	}
	for _, e := range exprs {
		if or, ok := e.(clause.OrConditions); ok && len(or.Exprs) == 1 || LeaksOr(e) {
			return true
		}
	}
	return false
}

// LeaksOr reports whether GORM builds the condition e, beside others,
// without brackets around an OR at its top level (OR, XOR, MySQL's ||): it
// brackets a text only when the text holds " AND " or " OR " spelled so, so
// "a = 1\nOR b = 2" or "a = 1 OR(b = 2)" joins the conditions beside it with
// OR.
func LeaksOr(e clause.Expression) bool {
	switch c := e.(type) {
	case clause.Expr:
		return leaksOr(c.SQL)
	case clause.NamedExpr:
		return leaksOr(c.SQL)
	case clause.NotConditions:
		return slices.ContainsFunc(c.Exprs, LeaksOr)
	case clause.AndConditions:
		return len(c.Exprs) == 1 && LeaksOr(c.Exprs[0])
	}
	return false
}

func leaksOr(sql string) bool {
	depth := 0
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '\'' || c == '"' || c == '`':
			end := closingQuote(sql, i)
			if end < 0 {
				return true // unread: say it may
			}
			i = end
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0 && (c == '|' && i+1 < len(sql) && sql[i+1] == '|' || (c == 'o' || c == 'O' || c == 'x' || c == 'X') && (wordAt(sql, i, "or") || wordAt(sql, i, "xor"))):
			upper := strings.ToUpper(sql)
			return !strings.Contains(upper, " AND ") && !strings.Contains(upper, " OR ")
		}
	}
	return false
}

// bracketed is conditions built as GORM's WHERE builds them, in brackets
// whatever they hold.
type bracketed struct{ exprs []clause.Expression }

func (b bracketed) Build(builder clause.Builder) {
	builder.WriteByte('(')
	clause.Where{Exprs: b.exprs}.Build(builder)
	builder.WriteByte(')')
}

// Grouped is the WHERE list exprs as one condition, in brackets, built as
// GORM builds the list: a condition AND-ed beside it constrains all of it.
func Grouped(exprs []clause.Expression) clause.Expression {
	return bracketed{exprs: copyExprs(exprs)} // copied: GORM's Where.Build reorders the list it builds
}

// GroupedAnd is the WHERE list exprs as one condition, in brackets, built as
// clause.And builds it (GORM's soft delete wraps a list holding an Or so):
// its conditions in their order.
func GroupedAnd(exprs []clause.Expression) clause.Expression {
	return bracketedAnd{exprs: copyExprs(exprs)}
}

type bracketedAnd struct{ exprs []clause.Expression }

func (b bracketedAnd) Build(builder clause.Builder) {
	builder.WriteByte('(')
	clause.And(b.exprs...).Build(builder)
	builder.WriteByte(')')
}
