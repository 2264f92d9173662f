package shardrouter

import (
	"reflect"
	"testing"

	"gorm.io/gorm/clause"
)

func TestKeyConjuncts(t *testing.T) {
	isID := func(table, name string) bool { return (table == "" || table == "users") && name == "id" }
	cases := []struct {
		sql   string
		nvars int
		want  []int
	}{
		{"id IN ? AND qty > ?", 2, []int{0}},
		{"qty > ? AND id = ?", 2, []int{1}},
		{"qty > ? and `users`.`id` in (?) AND name = ?", 3, []int{1}},
		{"id IN ? AND deleted_at IS NULL", 1, []int{0}},
		{"created_at BETWEEN ? AND ? AND id = ?", 3, nil},      // BETWEEN's AND is not a conjunction
		{"qty BETWEEN 0 AND id = ?", 1, nil},                   // qty BETWEEN 0 AND (id = ?)
		{"qty > ? XOR archived AND id = ?", 2, nil},            // MySQL's XOR binds looser than AND
		{"qty > ? || archived AND id = ?", 2, nil},             // MySQL's || is OR
		{"qty > ? && id = ?", 2, nil},                          // MySQL's && is AND, but not read
		{"flags = ARRAY[qty > ? AND id = ? AND true]", 2, nil}, // brackets of an array
		{"(a = ? OR b = ?) AND id = ?", 3, []int{2}},           // an OR inside brackets is one operand
		{"(qty BETWEEN ? AND ?) AND id = ?", 3, []int{2}},
		{"(a = ? AND b = ?) AND id = ?", 3, []int{2}},
		{"name = 'x AND id = ?' AND id IN ?", 1, []int{0}},
		{"name = 'it''s' AND id = ?", 1, []int{0}},
		{"id IN ? AND qty > ? OR 1 = 1", 2, nil},                // OR outside brackets: AND binds tighter
		{"id = ? AND (qty > ? OR qty < ?)", 3, []int{0}},        // an OR inside brackets is one operand
		{"id = ? AND name = 'a\\' OR id = ?", 2, nil},           // a backslash: MySQL and PostgreSQL read it apart
		{"id = ? AND name = @name", 1, nil},                     // a named parameter
		{"id = ? -- AND id = ?", 2, nil},                        // a comment
		{"id = ? AND (qty > ?", 2, nil},                         // unbalanced
		{"id = ? AND qty > ?", 3, nil},                          // placeholders not the values given
		{"NOT id = ? AND qty > ?", 2, nil},                      // NOT: not a condition on the column
		{"id = ? + ? AND qty > ?", 3, nil},                      // an expression, not a value
		{"grandid = ? AND idx = ?", 2, nil},                     // other columns
		{"CASE WHEN qty > ? AND id = ? THEN 1 END = 1", 2, nil}, // CASE
		{"CASE WHEN qty > ? AND id = ? AND 1 = 1 THEN 1 ELSE 1 END = 1", 2, nil},
	}
	for _, c := range cases {
		if got := keyConjuncts(c.sql, c.nvars, isID); !reflect.DeepEqual(got, c.want) {
			t.Errorf("keyConjuncts(%q) = %v, want %v", c.sql, got, c.want)
		}
	}
}

// TestKeyConjunctsRouteAndRestrict: the key's values in a text with other
// conditions name the rows, and each part of a statement over several
// databases asks its own database only for its own.
func TestKeyConjunctsRouteAndRestrict(t *testing.T) {
	isID := func(table, name string) bool { return name == "id" }
	where := []clause.Expression{clause.Expr{SQL: "id IN ? AND qty > ?", Vars: []any{[]int{1, 2, 3, 4}, 8}}}
	if got, found := ColumnValues(where, isID); !found || !reflect.DeepEqual(got, []any{1, 2, 3, 4}) {
		t.Fatalf("ColumnValues: %v, %v", got, found)
	}
	out, empty := RestrictValues(where, isID, func(v any) bool { return v.(int)%2 == 0 })
	want := []clause.Expression{clause.Expr{SQL: "id IN ? AND qty > ?", Vars: []any{[]any{2, 4}, 8}}}
	if empty || !reflect.DeepEqual(out, want) {
		t.Fatalf("RestrictValues: %#v, %v", out, empty)
	}
	if !reflect.DeepEqual(where[0].(clause.Expr).Vars[0], []int{1, 2, 3, 4}) {
		t.Fatal("RestrictValues changed the caller's values")
	}
}
