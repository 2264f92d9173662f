package shardrouter

import (
	"fmt"
	"testing"

	"gorm.io/gorm/clause"
)

// TestPlanParts has a row per rule of "Every shard at once" in
// docs/routing.md that decides what each database is asked.
func TestPlanParts(t *testing.T) {
	m := planMap(t)
	for name, c := range map[string]struct {
		where     []clause.Expression
		databases []int
		copies    map[int][]Range
		want      string // each part: database, its values by key and list, its foreign ranges
	}{
		"each database only its values of an IN list": {
			where: []clause.Expression{in("id", 1, 14, 2, 13)}, databases: []int{0, 3},
			want: "0 [[[1 2]] [] []] [] | 3 [[[14 13]] [] []] []",
		},
		"a database with no value of a list gets no part": {
			where: []clause.Expression{in("id", 1, 14), in("user_id", 2, 3)}, databases: []int{0, 3},
			want: "0 [[[1]] [[2 3]] []] []",
		},
		"AllShards without conditions: every database, nothing to restrict": {
			databases: []int{0, 1, 2, 3},
			want:      "0 [[] [] []] [] | 1 [[] [] []] [] | 2 [[] [] []] [] | 3 [[] [] []] []",
		},
		"a NULL in a list goes to no database": {
			where: []clause.Expression{in("id", nil, 4, 9)}, databases: []int{1, 2},
			want: "1 [[[4]] [] []] [] | 2 [[[9]] [] []] []",
		},
		"a move's frozen copy the map sends elsewhere is skipped": {
			databases: []int{0, 1}, copies: map[int][]Range{1: {{From: 0, To: 1}, {From: 4, To: 5}}},
			want: "0 [[] [] []] [] | 1 [[] [] []] [{0 1}]",
		},
	} {
		t.Run(name, func(t *testing.T) {
			plan := PlanParts(c.where, photoKeys, c.databases, m, c.copies)
			got := ""
			for n, part := range plan.Parts {
				if n > 0 {
					got += " | "
				}
				got += fmt.Sprintf("%d %v %v", part.Database, part.Values, part.Foreign)
			}
			if got != c.want {
				t.Fatalf("parts\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

func TestPlanPartsTellsSingleValuesFromLists(t *testing.T) {
	plan := PlanParts([]clause.Expression{eq("id", 5), in("user_id", 4, 6)}, photoKeys, []int{1}, planMap(t), nil)
	if fmt.Sprint(plan.Singles) != "[[true] [false] []]" {
		t.Fatalf("singles %v", plan.Singles)
	}
}
