package shardrouter

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"gorm.io/gorm/clause"
)

// Sixteen logical shards on four databases, four each: the shard of an ID
// below is the ID itself (its shard bits, in the plugin), the shard of a hash
// key its length.
func planMap(t *testing.T) *Map {
	t.Helper()
	m, err := NewMap(16, []Physical{
		{Name: "a", Logical: []Range{{From: 0, To: 3}}},
		{Name: "b", Logical: []Range{{From: 4, To: 7}}},
		{Name: "c", Logical: []Range{{From: 8, To: 11}}},
		{Name: "d", Logical: []Range{{From: 12, To: 15}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var errBadKey = errors.New("not a key")

func idShard(v any) (int, error) {
	switch n := v.(type) {
	case nil:
		return 0, ErrNull
	case int:
		return n, nil
	}
	return 0, errBadKey
}

// ownerShard is idShard for a colocate column, whose 0 (an orphaned child's)
// may be on any database.
func ownerShard(v any) (int, error) {
	if v == 0 {
		return 0, ErrAnyShard
	}
	return idShard(v)
}

func column(names ...string) func(table, name string) bool {
	return func(table, name string) bool {
		return (table == "" || table == clause.CurrentTable || table == "photos") && slices.Contains(names, name)
	}
}

// The photos model: keyed by id, colocated by user_id, hashed by email.
var photoKeys = []KeyColumn{
	{Matches: column(clause.PrimaryKey, "id", "ID"), ShardOf: idShard},
	{Matches: column("user_id", "UserID"), ShardOf: ownerShard},
	{Matches: column("email"), ShardOf: func(v any) (int, error) { return len(v.(string)) % 16, nil }},
}

func eq(col string, v any) clause.Expression {
	return clause.Eq{Column: clause.Column{Name: col}, Value: v}
}
func in(col string, vs ...any) clause.Expression {
	return clause.IN{Column: clause.Column{Name: col}, Values: vs}
}

// TestPlanRoute has a row per routing rule of docs/routing.md that reads a
// statement's conditions, shard clause and rows.
func TestPlanRoute(t *testing.T) {
	m := planMap(t)
	for name, c := range map[string]struct {
		stmt    Statement
		want    []int // the databases; nil: refused
		refusal Refusal
	}{
		"by ID: First(&x, id)": {
			stmt: Statement{Where: []clause.Expression{clause.IN{Column: clause.Column{Table: clause.CurrentTable, Name: clause.PrimaryKey}, Values: []any{5}}}},
			want: []int{1},
		},
		"by ID: Where(&T{ID: id})":                                    {stmt: Statement{Where: []clause.Expression{eq("id", 9)}}, want: []int{2}},
		"by ID: Where(\"id = ?\", id)":                                {stmt: Statement{Where: []clause.Expression{clause.Expr{SQL: "id = ?", Vars: []any{13}}}}, want: []int{3}},
		"by ID: an IN list on one database":                           {stmt: Statement{Where: []clause.Expression{in("id", 4, 5, 7)}}, want: []int{1}},
		"by ID: an IN list over databases":                            {stmt: Statement{Where: []clause.Expression{in("id", 1, 14, 2)}}, want: []int{0, 3}},
		"by ID: a struct with its ID set":                             {stmt: Statement{Rows: []int{10}}, want: []int{2}},
		"by ID: a slice of structs":                                   {stmt: Statement{Rows: []int{10, 0, 11}}, want: []int{0, 2}},
		"by ID: conditions and rows both hold":                        {stmt: Statement{Where: []clause.Expression{in("id", 1, 14)}, Rows: []int{14}}, want: []int{3}},
		"by ID: IDs joined by Or, each side's databases":              {stmt: Statement{Where: []clause.Expression{eq("id", 1), clause.OrConditions{Exprs: []clause.Expression{eq("id", 14)}}}}, want: []int{0, 3}},
		"by ID: Or with a side naming no shard says nothing":          {stmt: Statement{Where: []clause.Expression{eq("id", 1), clause.OrConditions{Exprs: []clause.Expression{eq("name", "a")}}}}, refusal: NoShard},
		"by ID: Not says nothing":                                     {stmt: Statement{Where: []clause.Expression{clause.NotConditions{Exprs: []clause.Expression{eq("id", 1)}}}}, refusal: NoShard},
		"by ID: another table's column":                               {stmt: Statement{Where: []clause.Expression{clause.Eq{Column: clause.Column{Table: "users", Name: "id"}, Value: 1}}}, refusal: NoShard},
		"by ID: nested AND groups":                                    {stmt: Statement{Where: []clause.Expression{clause.AndConditions{Exprs: []clause.Expression{eq("id", 6)}}}}, want: []int{1}},
		"by the colocate column":                                      {stmt: Statement{Where: []clause.Expression{eq("user_id", 3)}}, want: []int{0}},
		"by the hash column":                                          {stmt: Statement{Where: []clause.Expression{eq("email", "ab@cd.ef")}}, want: []int{2}},
		"the fewest values of the key columns":                        {stmt: Statement{Where: []clause.Expression{in("id", 1, 5, 9), eq("user_id", 9)}}, want: []int{2}},
		"shard clause: its database":                                  {stmt: Statement{Clause: Only(2)}, want: []int{2}},
		"shard clause: conditions within it":                          {stmt: Statement{Clause: Only(2), Where: []clause.Expression{eq("id", 8)}}, want: []int{2}},
		"shard clause: conditions outside it":                         {stmt: Statement{Clause: Only(2), Where: []clause.Expression{eq("id", 1)}}, refusal: OutsideClause},
		"every shard: AllShards":                                      {stmt: Statement{Clause: Every(4)}, want: []int{0, 1, 2, 3}},
		"every shard: narrowed by conditions":                         {stmt: Statement{Clause: Every(4), Where: []clause.Expression{in("id", 0, 15)}}, want: []int{0, 3}},
		"conditions no row satisfies: one answers":                    {stmt: Statement{Where: []clause.Expression{eq("id", 1), eq("user_id", 15)}}, want: []int{0}},
		"conditions no row satisfies: the statement's row's database": {stmt: Statement{Where: []clause.Expression{eq("id", 1)}, Rows: []int{9}}, want: []int{2}},
		"conditions no row satisfies, under a clause: its database":   {stmt: Statement{Clause: Only(2), Where: []clause.Expression{eq("id", 8), eq("user_id", 15)}}, want: []int{2}},
		"no row: IN ()":                                               {stmt: Statement{Where: []clause.Expression{in("id")}}, want: []int{0}},
		"no row: only NULLs":                                          {stmt: Statement{Where: []clause.Expression{in("id", nil)}}, want: []int{0}},
		"a NULL beside an ID":                                         {stmt: Statement{Where: []clause.Expression{in("id", nil, 12)}}, want: []int{3}},
		"no shard: a condition on another column":                     {stmt: Statement{Where: []clause.Expression{eq("name", "ada")}}, refusal: NoShard},
		"no shard: nothing at all":                                    {stmt: Statement{}, refusal: NoShard},
	} {
		t.Run(name, func(t *testing.T) {
			c.stmt.Keys = photoKeys
			route := PlanRoute(c.stmt, m)
			if route.Err != nil {
				t.Fatalf("error %v", route.Err)
			}
			if route.Refusal != c.refusal {
				t.Fatalf("refusal %d, want %d", route.Refusal, c.refusal)
			}
			if c.want != nil && !slices.Equal(route.Databases.List(), c.want) {
				t.Fatalf("databases %v, want %v", route.Databases.List(), c.want)
			}
			if c.want == nil && !route.Databases.Empty() {
				t.Fatalf("refused with databases %v", route.Databases.List())
			}
		})
	}
}

func TestPlanRouteOnOneDatabaseNeedsNoShard(t *testing.T) {
	m, err := NewMap(16, []Physical{{Name: "only", Logical: []Range{{From: 0, To: 15}}}})
	if err != nil {
		t.Fatal(err)
	}
	route := PlanRoute(Statement{Keys: photoKeys, Where: []clause.Expression{eq("name", "ada")}}, m)
	if k, one := route.Databases.Single(); route.Refusal != Routed || !one || k != 0 {
		t.Fatalf("route %+v", route)
	}
}

// TestPlanRouteReadsAValueOfAnyShardAsNoCondition: a colocate column's 0
// narrows nothing: with a clause the clause's databases, with another key
// condition that one's, alone no shard.
func TestPlanRouteReadsAValueOfAnyShardAsNoCondition(t *testing.T) {
	m := planMap(t)
	for name, c := range map[string]struct {
		s    Statement
		want string
	}{
		"with AllShards":           {s: Statement{Clause: m.Serving(), Where: []clause.Expression{eq("user_id", 0)}}, want: "[0 1 2 3] 0"},
		"in a list with AllShards": {s: Statement{Clause: m.Serving(), Where: []clause.Expression{in("user_id", 0, 5)}}, want: "[0 1 2 3] 0"},
		"beside an ID":             {s: Statement{Where: []clause.Expression{eq("user_id", 0), eq("id", 9)}}, want: "[2] 0"},
		"alone":                    {s: Statement{Where: []clause.Expression{eq("user_id", 0)}}, want: "[] 2"},
	} {
		t.Run(name, func(t *testing.T) {
			c.s.Keys = photoKeys
			route := PlanRoute(c.s, m)
			if got := fmt.Sprint(route.Databases.List(), " ", route.Refusal); got != c.want || route.Err != nil {
				t.Fatalf("route %s, %v; want %s", got, route.Err, c.want)
			}
		})
	}
}

func TestPlanRouteRefusesAValueThatNamesNoShard(t *testing.T) {
	route := PlanRoute(Statement{Keys: photoKeys, Where: []clause.Expression{eq("id", "x")}}, planMap(t))
	if !errors.Is(route.Err, errBadKey) || !route.Databases.Empty() {
		t.Fatalf("route %+v", route)
	}
}

func TestPlanRowsSplitsByDatabaseInFirstSeenOrder(t *testing.T) {
	parts := PlanRows([]int{9, 1, 10, 2, 15, 8}, planMap(t))
	var got []string
	for _, part := range parts {
		got = append(got, fmt.Sprintf("%d:%v", part.Database, part.Rows))
	}
	if want := "2:[0 2 5] 0:[1 3] 3:[4]"; strings.Join(got, " ") != want {
		t.Fatalf("parts %s, want %s", strings.Join(got, " "), want)
	}
}

func TestPlanRowsOverManyDatabases(t *testing.T) {
	names := make([]Physical, 100)
	for k := range names {
		names[k] = Physical{Name: fmt.Sprint("p", k), Logical: []Range{{From: k, To: k}}}
	}
	m, err := NewMap(100, names)
	if err != nil {
		t.Fatal(err)
	}
	var shards []int
	for i := range 300 {
		shards = append(shards, (i*37)%100)
	}
	parts := PlanRows(shards, m)
	if len(parts) != 100 {
		t.Fatalf("%d parts, want 100", len(parts))
	}
	seen := 0
	for _, part := range parts {
		for _, i := range part.Rows {
			if m.Physical(shards[i]) != part.Database {
				t.Fatalf("row %d (shard %d) in the part of database %d", i, shards[i], part.Database)
			}
			seen++
		}
	}
	if seen != len(shards) {
		t.Fatalf("%d rows in parts, want %d", seen, len(shards))
	}
}

func TestOneDatabase(t *testing.T) {
	m := planMap(t)
	for _, c := range []struct {
		shards []int
		want   int
		one    bool
	}{{[]int{4, 7, 5}, 1, true}, {[]int{4, 8}, 0, false}, {nil, 0, false}, {[]int{15}, 3, true}} {
		if k, one := OneDatabase(c.shards, m); k != c.want || one != c.one {
			t.Errorf("OneDatabase(%v) = %d, %v; want %d, %v", c.shards, k, one, c.want, c.one)
		}
	}
}

// A database the map gives no range (new, or emptied by moves) serves
// nothing: AllShards leaves it out, and so does a statement naming no row.
func TestPlanRouteLeavesOutADatabaseServingNothing(t *testing.T) {
	m, err := NewMap(16, []Physical{{Name: "empty"}, {Name: "a", Logical: []Range{{From: 0, To: 7}}}, {Name: "b", Logical: []Range{{From: 8, To: 15}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Serving().List(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("serving %v", got)
	}
	route := PlanRoute(Statement{Keys: photoKeys, Clause: m.Serving()}, m)
	if got := route.Databases.List(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("AllShards: %v", got)
	}
	route = PlanRoute(Statement{Keys: photoKeys, Where: []clause.Expression{in("id")}}, m)
	if got := route.Databases.List(); !slices.Equal(got, []int{1}) {
		t.Fatalf("IN (): %v", got)
	}
}

func TestRouteSaysWhenItNamesSeveralShards(t *testing.T) {
	key := KeyColumn{
		Matches: func(_, name string) bool { return name == "id" },
		ShardOf: func(v any) (int, error) { return int(v.(int64) % 10), nil },
	}
	m, err := NewMap(10, []Physical{{Name: "a", Logical: []Range{{From: 0, To: 9}}}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		s    Statement
		want bool
	}{
		{"one key", Statement{Keys: []KeyColumn{key}, Where: []clause.Expression{clause.Eq{Column: "id", Value: int64(13)}}}, false},
		{"two keys of one shard", Statement{Keys: []KeyColumn{key}, Where: []clause.Expression{clause.IN{Column: "id", Values: []any{int64(13), int64(23)}}}}, false},
		{"two keys of two shards", Statement{Keys: []KeyColumn{key}, Where: []clause.Expression{clause.IN{Column: "id", Values: []any{int64(13), int64(14)}}}}, true},
		{"rows of two shards", Statement{Keys: []KeyColumn{key}, Rows: []int{3, 3, 4}}, true},
		{"rows of one shard", Statement{Keys: []KeyColumn{key}, Rows: []int{3, 3}}, false},
	}
	for _, c := range cases {
		if got := PlanRoute(c.s, m); got.Several != c.want || got.Databases.Empty() {
			t.Errorf("%s: %+v, want Several %v on database a", c.name, got, c.want)
		}
	}
}
