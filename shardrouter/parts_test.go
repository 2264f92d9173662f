package shardrouter

import (
	"fmt"
	"runtime"
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
		want      string // each part: database, its values by key and list, the ranges it keeps to
	}{
		"each database only its values of an IN list": {
			where: []clause.Expression{in("id", 1, 14, 2, 13)}, databases: []int{0, 3},
			want: "0 [[[1 2]] [] []] [] | 3 [[[14 13]] [] []] []",
		},
		"a database with no value of a list gets no part": {
			where: []clause.Expression{in("id", 1, 14), in("user_id", 2, 3)}, databases: []int{0, 3},
			want: "0 [[[1]] [[2 3]] []] []",
		},
		"AllShards without conditions: every database, each keeping to its own ranges": {
			databases: []int{0, 1, 2, 3},
			want:      "0 [[] [] []] [{0 3}] | 1 [[] [] []] [{4 7}] | 2 [[] [] []] [{8 11}] | 3 [[] [] []] [{12 15}]",
		},
		"a NULL in a list goes to no database": {
			where: []clause.Expression{in("id", nil, 4, 9)}, databases: []int{1, 2},
			want: "1 [[[4]] [] []] [] | 2 [[[9]] [] []] []",
		},
		"a value of any shard in a list: every database the whole list, each keeping to its ranges": {
			where: []clause.Expression{in("user_id", 0, 5)}, databases: []int{1, 2},
			want: "1 [[] [[0 5]] []] [{4 7}] | 2 [[] [[0 5]] []] [{8 11}]",
		},
		"conditions on other columns pin nothing: each part keeps to its ranges": {
			where: []clause.Expression{eq("name", "x")}, databases: []int{1, 2},
			want: "1 [[] [] []] [{4 7}] | 2 [[] [] []] [{8 11}]",
		},
	} {
		t.Run(name, func(t *testing.T) {
			plan := PlanParts(c.where, photoKeys, c.databases, m)
			got := ""
			for n, part := range plan.Parts {
				if n > 0 {
					got += " | "
				}
				got += fmt.Sprintf("%d %v %v", part.Database, part.Values, part.Keep)
			}
			if got != c.want {
				t.Fatalf("parts\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

func TestPlanPartsTellsSingleValuesFromLists(t *testing.T) {
	plan := PlanParts([]clause.Expression{eq("id", 5), in("user_id", 4, 6)}, photoKeys, []int{1}, planMap(t))
	if fmt.Sprint(plan.Singles) != "[[true] [false] []]" {
		t.Fatalf("singles %v", plan.Singles)
	}
}

// TestPlanPartsKeepsAMovedRangeOffItsOldDatabase: after a move a database
// holds ranges apart, or none; a database holding every shard needs no
// restriction.
func TestPlanPartsKeepsAMovedRangeOffItsOldDatabase(t *testing.T) {
	m, err := NewMap(16, []Physical{
		{Name: "a", Logical: []Range{{From: 0, To: 3}, {From: 8, To: 15}}},
		{Name: "b", Logical: []Range{{From: 4, To: 7}}},
		{Name: "c"},
	})
	if err != nil {
		t.Fatal(err)
	}
	plan := PlanParts(nil, photoKeys, []int{0, 1, 2}, m)
	got := fmt.Sprint(plan.Parts[0].Keep, plan.Parts[1].Keep, plan.Parts[2].Keep, plan.Parts[2].Keep == nil)
	if want := "[{0 3} {8 15}] [{4 7}] [] false"; got != want {
		t.Fatalf("kept ranges %s, want %s", got, want)
	}
	whole, err := NewMap(16, []Physical{{Name: "a", Logical: []Range{{From: 0, To: 15}}}, {Name: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if keep := PlanParts(nil, photoKeys, []int{0}, whole).Parts[0].Keep; keep != nil {
		t.Fatalf("a database holding every shard keeps to %v", keep)
	}
}

// TestPlanPartsOfALongListOverManyDatabasesCostsTheListOnce: a list of
// 100,000 keys over 1,024 databases is split in memory about the list's
// size, not the list's size for every database.
func TestPlanPartsOfALongListOverManyDatabasesCostsTheListOnce(t *testing.T) {
	const shards, databases, keys = 8192, 1024, 100_000
	physical := make([]Physical, databases)
	all := make([]int, databases)
	for k := range physical {
		per := shards / databases
		physical[k] = Physical{Name: fmt.Sprint(k), Logical: []Range{{From: k * per, To: k*per + per - 1}}}
		all[k] = k
	}
	m, err := NewMap(shards, physical)
	if err != nil {
		t.Fatal(err)
	}
	values := make([]any, keys)
	for i := range values {
		values[i] = i % shards
	}
	where := []clause.Expression{clause.IN{Column: clause.Column{Name: "id"}, Values: values}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	plan := PlanParts(where, photoKeys, all, m)
	runtime.ReadMemStats(&after)
	if len(plan.Parts) != databases {
		t.Fatalf("%d parts, want %d", len(plan.Parts), databases)
	}
	n := 0
	for _, p := range plan.Parts {
		n += len(p.Values[0][0])
	}
	if n != keys {
		t.Fatalf("the parts hold %d keys, want %d", n, keys)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 20*keys*16 {
		t.Fatalf("planning %d keys over %d databases allocated %d MB", keys, databases, grown>>20)
	}
}
