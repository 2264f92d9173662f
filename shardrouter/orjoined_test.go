package shardrouter

import (
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/utils/tests"
)

// A WHERE list to which GORM would join a condition with OR is read as such, and grouped into one
// condition that builds as GORM builds the list.
func TestGroupedBuildsAsGORMsWhere(t *testing.T) {
	a, b, c := clause.Expr{SQL: "a = 1"}, clause.Expr{SQL: "b = 2"}, clause.Expr{SQL: "c = 3"}
	or := func(e clause.Expression) clause.Expression { return clause.OrConditions{Exprs: []clause.Expression{e}} }
	db, err := gorm.Open(tests.DummyDialector{}, &gorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	build := func(e clause.Expression) string {
		stmt := &gorm.Statement{DB: db, Clauses: map[string]clause.Clause{}}
		e.Build(stmt)
		return stmt.SQL.String()
	}
	for _, tc := range []struct {
		exprs  []clause.Expression
		joined bool // a condition appended is not AND-ed to all of it
	}{
		{[]clause.Expression{or(a), b}, true},
		{[]clause.Expression{a, or(b), c}, true},
		{[]clause.Expression{or(a), or(b), c}, true},
		{[]clause.Expression{clause.AndConditions{Exprs: []clause.Expression{or(a), b}}}, true},
		{[]clause.Expression{a, b}, false},
		{[]clause.Expression{clause.OrConditions{Exprs: []clause.Expression{a, b}}, c}, false},
		{[]clause.Expression{or(a)}, true},
		{[]clause.Expression{a, clause.Expr{SQL: "b = 2\nOR c = 3"}}, true},
		{[]clause.Expression{clause.Expr{SQL: "b = 2 OR(c = 3)"}}, true},
		{[]clause.Expression{a, clause.Expr{SQL: "b = 2 OR c = 3"}}, false}, // GORM brackets it
		{[]clause.Expression{a, clause.Expr{SQL: "b IN (SELECT x FROM t WHERE y = 1\nOR z = 2)"}}, false},
		{[]clause.Expression{a, clause.Expr{SQL: "name = 'x\nOR y'"}}, false},
		{[]clause.Expression{a, clause.NotConditions{Exprs: []clause.Expression{clause.Expr{SQL: "b = 2\tOR c = 3"}}}}, true},
	} {
		exprs := tc.exprs
		want := build(clause.Where{Exprs: copyExprs(exprs)})
		got := build(Grouped(exprs))
		if got != want && got != "("+want+")" {
			t.Errorf("%v: grouped %q, GORM's WHERE %q", exprs, got, want)
		}
		if OrJoined(exprs) != tc.joined {
			t.Errorf("%v: OrJoined %v, want %v", exprs, !tc.joined, tc.joined)
		}
	}
}

// A condition text GORM leaves unbracketed with an OR at its top level
// joins the ID condition beside it with OR: the list names no shard.
func TestColumnValuesBesideALeakingOrSayNothing(t *testing.T) {
	isID := func(table, name string) bool { return name == "id" }
	id := clause.Eq{Column: "id", Value: 1}
	for _, text := range []string{"a = 1\nOR b = 2", "a = 1 OR(b = 2)", "a = 1 ||b = 2", "a = 1\tXOR b = 2"} {
		if values, ok := ColumnValues([]clause.Expression{id, clause.Expr{SQL: text}}, isID); ok {
			t.Errorf("id = 1 beside %q: %v, want nothing", text, values)
		}
	}
	if values, ok := ColumnValues([]clause.Expression{id, clause.Expr{SQL: "a = 1 OR b = 2"}}, isID); !ok || len(values) != 1 {
		t.Errorf("id = 1 beside a text GORM brackets: %v, %v; want [1]", values, ok)
	}
}
