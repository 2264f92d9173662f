package shardrouter

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"gorm.io/gorm/clause"
)

// quoted quotes as GORM's Statement.Quote does: each part of a dotted name.
func quoted(name string) string { return "`" + strings.ReplaceAll(name, ".", "`.`") + "`" }

func photoColumns(name string) (string, bool) {
	for _, column := range []string{"id", "likes", "views", "taken", "caption", "owner", "UserID"} {
		if strings.EqualFold(column, name) {
			return column, true
		}
	}
	return "", false
}

// TestPlanAggregation has a row per aggregate rule of "Every shard at once"
// in docs/routing.md: the items each part selects, the groups, HAVING and
// ORDER BY over the merged groups, and what is refused.
func TestPlanAggregation(t *testing.T) {
	gt := func(sql string, vars ...any) []clause.Expression {
		return []clause.Expression{clause.Expr{SQL: sql, Vars: vars}}
	}
	for name, c := range map[string]struct {
		q       AggregationQuery
		parts   string // the parts' select list
		keys    []int
		having  string // item op value, ...
		order   string // item[ desc], ...
		refused string
	}{
		"aggregates without groups: one row": {q: AggregationQuery{Select: []string{"count(*)", "sum(likes) AS s", "min(views)", "max(taken)"}},
			parts: "count(*), sum(likes) AS s, min(views), max(taken)"},
		"count of a literal counts every row, as count(*)": {q: AggregationQuery{Select: []string{"owner", "count(1) AS n"}, GroupBy: []string{"owner"}, OrderBy: []string{"count(1) desc"}},
			parts: "owner, count(1) AS n", keys: []int{0}, order: "1 desc"},
		"COUNT(DISTINCT) of a qualified column: qualified as written": {q: AggregationQuery{Select: []string{"count(distinct photos.owner)"}},
			parts: "`photos`.`owner`", keys: []int{0}},
		"count of DISTINCT a literal": {q: AggregationQuery{Select: []string{"count(distinct 1)"}}, refused: "1 is not a column"},
		"avg is summed and counted per part": {q: AggregationQuery{Select: []string{"avg(likes) AS mean"}},
			parts: "avg(likes) AS mean, SUM(`likes`), COUNT(`likes`)"},
		"GROUP BY the selected column": {q: AggregationQuery{Select: []string{"owner", "count(*) AS n"}, GroupBy: []string{"owner"}},
			parts: "owner, count(*) AS n", keys: []int{0}},
		"GROUP BY a column not selected: selected hidden": {q: AggregationQuery{Select: []string{"count(*) AS n"}, GroupBy: []string{"photos.owner"}},
			parts: "count(*) AS n, `photos`.`owner`", keys: []int{1}}, // qualified as written: a join may need it
		"HAVING an alias and an aggregate not selected": {q: AggregationQuery{Select: []string{"owner", "count(*) AS n"}, GroupBy: []string{"owner"},
			Having: gt("n > ? AND max(likes) <= 10", 2)},
			parts: "owner, count(*) AS n, MAX(`likes`)", keys: []int{0}, having: "1 > 2, 2 <= 10"},
		"ORDER BY an alias, an aggregate and the group": {q: AggregationQuery{Select: []string{"owner", "sum(likes) AS total"}, GroupBy: []string{"owner"},
			OrderBy: []string{"total desc, count(*)", "owner"}},
			parts: "owner, sum(likes) AS total, COUNT(*)", keys: []int{0}, order: "1 desc, 2, 0"},
		"DISTINCT values group by every item": {q: AggregationQuery{Select: []string{"owner", "views"}, Distinct: true, OrderBy: []string{"views DESC"}},
			parts: "owner, views", keys: []int{0, 1}, order: "1 desc"},
		"COUNT(DISTINCT) counts the merged values": {q: AggregationQuery{Select: []string{"COUNT(DISTINCT(`owner`))"}},
			parts: "`owner`", keys: []int{0}},
		"a column neither grouped nor aggregated": {q: AggregationQuery{Select: []string{"owner", "likes"}, GroupBy: []string{"owner"}},
			refused: "\"likes\" is neither grouped nor aggregated"},
		"an aggregate beside a plain column without GROUP BY": {q: AggregationQuery{Select: []string{"owner", "count(*)"}},
			refused: "\"owner\" is neither grouped nor aggregated"},
		"an expression over aggregates": {q: AggregationQuery{Select: []string{"sum(likes) * 2"}}, refused: `"sum(likes) * 2"`},
		"a function the merge does not know": {q: AggregationQuery{Select: []string{"owner", "group_concat(caption)"}, GroupBy: []string{"owner"}},
			refused: `"group_concat(caption)"`},
		"sum of DISTINCT values":                 {q: AggregationQuery{Select: []string{"sum(distinct likes)"}}, refused: `"sum(distinct likes)"`},
		"an aggregate of another table's column": {q: AggregationQuery{Select: []string{"max(users.age)"}}, refused: `"max(users.age)"`},
		"GROUP BY an expression": {q: AggregationQuery{Select: []string{"count(*)"}, GroupBy: []string{"likes / 10"}},
			refused: `GROUP BY "likes / 10"`},
		"HAVING with BETWEEN": {q: AggregationQuery{Select: []string{"owner"}, GroupBy: []string{"owner"}, Having: gt("count(*) BETWEEN 1 AND 3")},
			refused: "HAVING"},
		"HAVING with a value short": {q: AggregationQuery{Select: []string{"owner"}, GroupBy: []string{"owner"}, Having: gt("count(*) > ? AND sum(likes) > ?", 1)},
			refused: "a ? without a value"},
		"ORDER BY a column neither grouped nor selected": {q: AggregationQuery{Select: []string{"owner", "count(*)"}, GroupBy: []string{"owner"}, OrderBy: []string{"likes"}},
			refused: `ORDER BY "likes"`},
		"HAVING a name that is an alias and a grouped column: the column": {q: AggregationQuery{Select: []string{"count(*) AS owner"}, GroupBy: []string{"owner"},
			Having: gt("owner > ?", 2), OrderBy: []string{"owner"}},
			parts: "count(*) AS owner, `owner`", keys: []int{1}, having: "1 > 2", order: "0"},
		"HAVING an alias on PostgreSQL, which does not see it": {q: AggregationQuery{Select: []string{"owner", "count(*) AS n"}, GroupBy: []string{"owner"},
			Having: gt("n > ?", 2), Dialect: Postgres}, refused: "does not see the select list's aliases"},
		"HAVING an alias that is an ungrouped column on SQLite, which reads the column": {q: AggregationQuery{Select: []string{"owner", "sum(likes) AS likes"}, GroupBy: []string{"owner"},
			Having: gt("likes > ?", 2), Dialect: SQLite}, refused: "SQLite's HAVING reads likes as the table's column"},
		"HAVING an alias that is an ungrouped column on MySQL: the alias": {q: AggregationQuery{Select: []string{"owner", "sum(likes) AS likes"}, GroupBy: []string{"owner"},
			Having: gt("likes > ?", 2), Dialect: MySQL},
			parts: "owner, sum(likes) AS likes", keys: []int{0}, having: "1 > 2"},
		"HAVING a qualified column is never an alias": {q: AggregationQuery{Select: []string{"owner", "sum(likes) AS likes"}, GroupBy: []string{"owner"},
			Having: gt("photos.likes > ?", 2), Dialect: MySQL}, refused: "neither an alias nor a grouped column"},
		"a column named in another case: selected as written (its text names the result), merged as the model's column": {q: AggregationQuery{Select: []string{"userid", "count(*)"}, GroupBy: []string{"USERID"}, OrderBy: []string{"max(UserId)"}},
			parts: "userid, count(*), MAX(`UserID`)", keys: []int{0}, order: "2"},
		"DISTINCT of aggregates alone: their one row, merged": {q: AggregationQuery{Select: []string{"count(*)", "sum(likes)"}, Distinct: true},
			parts: "count(*), sum(likes)"},
		"DISTINCT with aggregates of groups": {q: AggregationQuery{Select: []string{"owner", "count(*)"}, GroupBy: []string{"owner"}, Distinct: true}, refused: "DISTINCT with aggregates"},
		"no select list":                     {q: AggregationQuery{GroupBy: []string{"owner"}}, refused: "without a select list"},
	} {
		t.Run(name, func(t *testing.T) {
			c.q.Table, c.q.Quote, c.q.ModelColumn = "photos", quoted, photoColumns
			a, why := PlanAggregation(c.q)
			if c.refused != "" {
				if !strings.Contains(why, c.refused) {
					t.Fatalf("refused %q, want it to say %q", why, c.refused)
				}
				return
			}
			if why != "" {
				t.Fatalf("refused: %s", why)
			}
			if got := a.SelectList(); got != c.parts {
				t.Errorf("parts select %q, want %q", got, c.parts)
			}
			if !reflect.DeepEqual(a.Keys, c.keys) {
				t.Errorf("keys %v, want %v", a.Keys, c.keys)
			}
			var having, order []string
			for _, h := range a.Having {
				having = append(having, fmt.Sprint(h.Item, " ", h.Op, " ", h.Value))
			}
			for _, s := range a.Order {
				item := fmt.Sprint(s.Item)
				if s.Desc {
					item += " desc"
				}
				order = append(order, item)
			}
			if got := strings.Join(having, ", "); got != c.having {
				t.Errorf("having %q, want %q", got, c.having)
			}
			if got := strings.Join(order, ", "); got != c.order {
				t.Errorf("order %q, want %q", got, c.order)
			}
		})
	}
}
