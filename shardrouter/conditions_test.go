package shardrouter

import (
	"reflect"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

func TestColumnValues(t *testing.T) {
	isID := func(table, name string) bool {
		return (table == "" || table == clause.CurrentTable || table == "users") && (name == clause.PrimaryKey || strings.EqualFold(name, "id"))
	}
	cases := []struct {
		name  string
		exprs []clause.Expression
		want  []any
		found bool
	}{
		{"First(&x, 42)", []clause.Expression{clause.IN{Column: clause.PrimaryColumn, Values: []any{42}}}, []any{42}, true},
		{"Where(&T{ID: 7})", []clause.Expression{clause.Eq{Column: clause.Column{Table: "users", Name: "id"}, Value: int64(7)}}, []any{int64(7)}, true},
		{"Where(\"id = ?\")", []clause.Expression{clause.Expr{SQL: "id = ?", Vars: []any{int64(9)}}}, []any{int64(9)}, true},
		{"quoted, qualified", []clause.Expression{clause.Expr{SQL: "`users`.`id`=?", Vars: []any{1}}}, []any{1}, true},
		{"IN ?", []clause.Expression{clause.Expr{SQL: "id IN ?", Vars: []any{[]int64{1, 2, 3}}}}, []any{int64(1), int64(2), int64(3)}, true},
		{"in (?)", []clause.Expression{clause.Expr{SQL: "\"id\" in (?)", Vars: []any{[]int{4, 5}}}}, []any{4, 5}, true},
		{"Find(&xs, ids)", []clause.Expression{clause.IN{Column: clause.PrimaryColumn, Values: []any{[]int64{8, 9}}}}, []any{int64(8), int64(9)}, true},
		{"fewest wins", []clause.Expression{
			clause.Expr{SQL: "id IN ?", Vars: []any{[]int{1, 2, 3}}},
			clause.Eq{Column: "id", Value: 2},
		}, []any{2}, true},
		{"other column", []clause.Expression{clause.Eq{Column: "name", Value: "x"}}, nil, false},
		{"a lone Or is its condition", []clause.Expression{clause.OrConditions{Exprs: []clause.Expression{clause.Eq{Column: "id", Value: 1}}}}, []any{1}, true},
		{"Where(a).Or(b): the union", []clause.Expression{
			clause.Eq{Column: "id", Value: 1},
			clause.OrConditions{Exprs: []clause.Expression{clause.Eq{Column: "id", Value: 2}}},
		}, []any{1, 2}, true},
		{"Where(a).Or(other column) says nothing", []clause.Expression{
			clause.Eq{Column: "id", Value: 1},
			clause.OrConditions{Exprs: []clause.Expression{clause.Eq{Column: "name", Value: "a"}}},
		}, nil, false},
		{"Or(a), b is b OR a", []clause.Expression{
			clause.OrConditions{Exprs: []clause.Expression{clause.Eq{Column: "id", Value: 1}}},
			clause.Eq{Column: "id", Value: 2},
		}, []any{2, 1}, true},
		{"Or(a), other column: b OR a says nothing", []clause.Expression{
			clause.OrConditions{Exprs: []clause.Expression{clause.Eq{Column: "id", Value: 1}}},
			clause.Eq{Column: "name", Value: "b"},
		}, nil, false},
		{"a condition after an Or is AND-ed to its side", []clause.Expression{
			clause.Eq{Column: "name", Value: "a"},
			clause.OrConditions{Exprs: []clause.Expression{clause.Eq{Column: "name", Value: "b"}}},
			clause.Eq{Column: "id", Value: 2},
		}, nil, false},
		{"each side AND-ed with its run", []clause.Expression{
			clause.Expr{SQL: "id IN ?", Vars: []any{[]int{1, 2}}},
			clause.OrConditions{Exprs: []clause.Expression{clause.Eq{Column: "name", Value: "b"}}},
			clause.Eq{Column: "id", Value: 3},
		}, []any{1, 2, 3}, true},
		{"clause.Or of two: the union", []clause.Expression{clause.OrConditions{Exprs: []clause.Expression{
			clause.Eq{Column: "id", Value: 1}, clause.Expr{SQL: "id IN ?", Vars: []any{[]int{2, 3}}},
		}}}, []any{1, 2, 3}, true},
		{"clause.Or of two AND-ed: the fewest", []clause.Expression{
			clause.Expr{SQL: "id IN ?", Vars: []any{[]int{1, 2, 3}}},
			clause.OrConditions{Exprs: []clause.Expression{clause.Eq{Column: "id", Value: 1}, clause.Eq{Column: "id", Value: 2}}},
		}, []any{1, 2}, true},
		{"clause.Or with a side on another column says nothing", []clause.Expression{clause.OrConditions{Exprs: []clause.Expression{
			clause.Eq{Column: "id", Value: 1}, clause.Eq{Column: "name", Value: "a"},
		}}}, nil, false},
		{"a leading Or in an AND group is AND-ed", []clause.Expression{clause.Eq{Column: "name", Value: "a"}, clause.AndConditions{Exprs: []clause.Expression{
			clause.OrConditions{Exprs: []clause.Expression{clause.Eq{Column: "id", Value: 1}}},
			clause.Eq{Column: "name", Value: "b"},
		}}}, []any{1}, true},
		{"an OR inside a text says nothing", []clause.Expression{clause.Expr{SQL: "id = ? OR id = ?", Vars: []any{1, 2}}}, nil, false},
		{"a grouped OR says nothing", []clause.Expression{clause.AndConditions{Exprs: []clause.Expression{
			clause.Eq{Column: "id", Value: 1},
			clause.OrConditions{Exprs: []clause.Expression{clause.Eq{Column: "name", Value: "a"}}},
		}}}, nil, false},
		{"another table's id", []clause.Expression{clause.Expr{SQL: "settings.id = ?", Vars: []any{5}}}, nil, false},
		{"another table's column", []clause.Expression{clause.Eq{Column: clause.Column{Table: "settings", Name: "id"}, Value: 5}}, nil, false},
		{"this table's id", []clause.Expression{clause.Eq{Column: "users.id", Value: 5}}, []any{5}, true},
		{"NOT says nothing", []clause.Expression{clause.NotConditions{Exprs: []clause.Expression{clause.Eq{Column: "id", Value: 1}}}}, nil, false},
		{"range says nothing", []clause.Expression{clause.Expr{SQL: "id > ?", Vars: []any{1}}}, nil, false},
		{"two placeholders", []clause.Expression{clause.Expr{SQL: "id = ? OR id = ?", Vars: []any{1, 2}}}, nil, false},
		{"AND group", []clause.Expression{clause.AndConditions{Exprs: []clause.Expression{clause.Eq{Column: "id", Value: 3}}}}, []any{3}, true},
		{"bytes are one value", []clause.Expression{clause.Eq{Column: "id", Value: []byte("ab")}}, []any{[]byte("ab")}, true},
	}
	for _, c := range cases {
		got, found := ColumnValues(c.exprs, isID)
		if found != c.found || !reflect.DeepEqual(got, c.want) && c.found {
			t.Errorf("%s: got %v, %v; want %v, %v", c.name, got, found, c.want, c.found)
		}
	}
}

func TestColumnValuesSkipsWhatIsNoValue(t *testing.T) {
	isID := func(table, name string) bool { return name == "id" }
	var nilPointer *int64
	for name, exprs := range map[string][]clause.Expression{
		"IS NULL":              {clause.Eq{Column: "id", Value: nil}},
		"IS NULL by a pointer": {clause.Eq{Column: "id", Value: nilPointer}},
		"a subquery":           {clause.Expr{SQL: "id IN (?)", Vars: []any{&gorm.DB{}}}},
		"an expression":        {clause.Eq{Column: "id", Value: clause.Expr{SQL: "other_id"}}},
		"a column":             {clause.IN{Column: "id", Values: []any{clause.Column{Name: "x"}}}},
	} {
		if values, found := ColumnValues(exprs, isID); found {
			t.Errorf("%s: read %v as the column's values", name, values)
		}
	}
}

func TestRestrictValues(t *testing.T) {
	isID := func(table, name string) bool { return name == "id" }
	even := func(v any) bool { return v.(int)%2 == 0 }
	where := []clause.Expression{
		clause.Expr{SQL: "id IN ?", Vars: []any{[]int{1, 2, 3, 4}}},
		clause.IN{Column: "id", Values: []any{2, 3, 4}},
		clause.Eq{Column: "id", Value: []int{4, 5}},
		clause.Eq{Column: "name", Value: "x"},
		clause.OrConditions{Exprs: []clause.Expression{clause.Eq{Column: "id", Value: 7}}},
	}
	// A level with an OR is left as it is, but still copied.
	out, empty := RestrictValues(where, isID, even)
	if empty || !reflect.DeepEqual(out, where) {
		t.Fatalf("a level with OR: %v, %v", out, empty)
	}
	out[0] = nil
	if where[0] == nil {
		t.Fatal("the copy shares the caller's slice")
	}
	and := where[:4]
	out, empty = RestrictValues(and, isID, even)
	want := []clause.Expression{
		clause.Expr{SQL: "id IN ?", Vars: []any{[]any{2, 4}}},
		clause.IN{Column: "id", Values: []any{2, 4}},
		clause.Eq{Column: "id", Value: []any{4}},
		clause.Eq{Column: "name", Value: "x"},
	}
	if empty || !reflect.DeepEqual(out, want) {
		t.Fatalf("restricted: %#v, %v", out, empty)
	}
	if _, empty = RestrictValues([]clause.Expression{clause.Eq{Column: "id", Value: 3}}, isID, even); !empty {
		t.Fatal("a single value the database does not hold leaves it no row")
	}
	if _, empty = RestrictValues([]clause.Expression{clause.AndConditions{Exprs: []clause.Expression{clause.IN{Column: "id", Values: []any{1, 3}}}}}, isID, even); !empty {
		t.Fatal("a list in an AND group that keeps no value leaves no row")
	}
	lists, singles := ValueLists(append(and, clause.Expr{SQL: "id = ?", Vars: []any{6}}), isID)
	if !reflect.DeepEqual(lists, [][]any{{1, 2, 3, 4}, {2, 3, 4}, {4, 5}, {6}}) || !reflect.DeepEqual(singles, []bool{false, false, false, true}) {
		t.Fatalf("ValueLists: %v %v", lists, singles)
	}
}

func TestIsSimpleCondition(t *testing.T) {
	isID := func(table, name string) bool { return (table == "" || table == "users") && name == "id" }
	for sql, want := range map[string]bool{
		"id = ?": true, "id=?": true, " id  IN  ? ": true, "id in (?)": true, "id IN ( ? )": true,
		"`id` = ?": true, `"id" = ?`: true, "users.id = ?": true, "`users`.`id` IN (?)": true,
		"\tid\n=\n?":      true,
		"id = ? OR 1 = 1": false, "id > ?": false, "id = 5": false, "other = ?": false, "photos.id = ?": false,
		"idin ?": false, "`id = ?": false, "id` = ?": false, "id IN ((?))": false, "id IN (?": false,
		"lower(id) = ?": false, "": false, "= ?": false, "users. = ?": false, "id = ??": false,
		"(id = ?)": true, "((users.id IN (?)))": true, "(id = ?": false, "id = ?)": false, "id IN (?, ?)": false,
	} {
		if got := isSimpleCondition(sql, isID); got != want {
			t.Errorf("isSimpleCondition(%q) = %v, want %v", sql, got, want)
		}
	}
}

// TestPlaceholderLists: `id IN (?, ?, …)` names its rows by all its values,
// and a part keeps its own in a list of its own.
func TestPlaceholderLists(t *testing.T) {
	isID := func(table, name string) bool { return (table == "" || table == "users") && name == "id" }
	for sql, want := range map[string]int{
		"id IN (?, ?)": 2, "id in (?,?,?)": 3, "(users.id IN ( ? , ? ))": 2, "id IN (?)": 1,
		"id = (?, ?)": 0, "id IN (?, 5)": 0, "id IN (?, ?": 0, "id IN (?, ?) OR 1 = 1": 0, "id IN (?,, ?)": 0,
	} {
		if got, _, _ := simpleCondition(sql, isID); got != want {
			t.Errorf("simpleCondition(%q) = %d, want %d", sql, got, want)
		}
	}
	list := []clause.Expression{clause.Expr{SQL: "users.id IN (?, ?, ?)", Vars: []any{1, 2, 4}}}
	if values, ok := ColumnValues(list, isID); !ok || !reflect.DeepEqual(values, []any{1, 2, 4}) {
		t.Fatalf("ColumnValues: %v %v", values, ok)
	}
	out, empty := RestrictValues(list, isID, func(v any) bool { return v.(int)%2 == 0 })
	want := []clause.Expression{clause.IN{Column: clause.Column{Table: "users", Name: "id"}, Values: []any{2, 4}}}
	if empty || !reflect.DeepEqual(out, want) {
		t.Fatalf("restricted: %#v, %v", out, empty)
	}
	if values, ok := ColumnValues([]clause.Expression{clause.Expr{SQL: "id IN (?, ?)", Vars: []any{1, []int{2, 3}}}}, isID); ok {
		t.Fatalf("a list among several placeholders read as %v", values)
	}
}

// TestColumnValuesOfAColumnQualifiedByItsSchema: a condition may name the
// key as schema.table.column (a table of GORM's TablePrefix "app."), quoted
// or not, in SQL or as a clause's column; isColumn gets the table with its
// schema.
func TestColumnValuesOfAColumnQualifiedByItsSchema(t *testing.T) {
	isID := func(table, name string) bool {
		return (table == "" || table == "users" || table == "app.users") && name == "id"
	}
	for _, c := range []struct {
		name  string
		exprs []clause.Expression
		found bool
	}{
		{"Where(\"app.users.id = ?\")", []clause.Expression{clause.Expr{SQL: "app.users.id = ?", Vars: []any{7}}}, true},
		{"quoted", []clause.Expression{clause.Expr{SQL: `"app"."users"."id" IN (?)`, Vars: []any{7}}}, true},
		{"beside another condition", []clause.Expression{clause.Expr{SQL: "app.users.id = ? AND name = ?", Vars: []any{7, "a"}}}, true},
		{"a column string", []clause.Expression{clause.Eq{Column: `"app"."users"."id"`, Value: 7}}, true},
		{"another schema's table", []clause.Expression{clause.Expr{SQL: "other.users.id = ?", Vars: []any{7}}}, false},
		{"four parts", []clause.Expression{clause.Expr{SQL: "db.app.users.id = ?", Vars: []any{7}}}, false},
	} {
		got, found := ColumnValues(c.exprs, isID)
		if found != c.found || c.found && !reflect.DeepEqual(got, []any{7}) {
			t.Errorf("%s: got %v, %v; want found %v", c.name, got, found, c.found)
		}
	}
}

// TestColumnValuesOfAMapKeyQualifiedByItsTable: Where(map[string]any{"users.id":
// 5}) is a clause column named "users.id" (GORM quotes it part by part),
// with its schema too.
func TestColumnValuesOfAMapKeyQualifiedByItsTable(t *testing.T) {
	isID := func(table, name string) bool {
		return (table == "" || table == "users" || table == "app.users") && name == "id"
	}
	for name, found := range map[string]bool{"users.id": true, "app.users.id": true, "settings.id": false, "id": true} {
		got, ok := ColumnValues([]clause.Expression{clause.Eq{Column: clause.Column{Name: name}, Value: 5}}, isID)
		if ok != found || found && !reflect.DeepEqual(got, []any{5}) {
			t.Errorf("a map's key %q: %v %v, want found %v", name, got, ok, found)
		}
	}
}
