package shardrouter

import "gorm.io/gorm/clause"

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
		if or, ok := e.(clause.OrConditions); ok && len(or.Exprs) == 1 {
			return true
		}
	}
	return false
}

// Grouped is the WHERE list exprs as one condition, in parentheses, built as
// GORM builds the list: a condition AND-ed beside it constrains all of it.
func Grouped(exprs []clause.Expression) clause.Expression {
	exprs = copyExprs(exprs)
	if len(exprs) == 1 {
		if and, ok := exprs[0].(clause.AndConditions); ok {
			exprs = and.Exprs
		}
	}
	for i, e := range exprs { // GORM's Where.Build: the first condition not a single Or goes first
		if or, ok := e.(clause.OrConditions); !ok || len(or.Exprs) > 1 {
			exprs[0], exprs[i] = exprs[i], exprs[0]
			break
		}
	}
	return clause.AndConditions{Exprs: exprs}
}
