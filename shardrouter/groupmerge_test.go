package shardrouter

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestMergeGroups: the parts' values merged as one database computes them,
// in the types the drivers gave.
func TestMergeGroups(t *testing.T) {
	grouped := func(items ...Item) *Aggregation {
		return &Aggregation{Items: items, Visible: len(items), Keys: []int{0}, Grouped: true}
	}
	column := func(names ...string) []Column { // name:DATABASE TYPE
		var columns []Column
		for _, n := range names {
			name, typ, _ := strings.Cut(n, ":")
			columns = append(columns, Column{Name: name, DatabaseType: typ})
		}
		return columns
	}
	binary := Column{Name: "code", DatabaseType: "VARCHAR", Text: TextComparison{Collation: "utf8mb4_bin", Equal: true, Order: true}}
	caseless := Column{Name: "region", DatabaseType: "VARCHAR", Text: TextComparison{Collation: "utf8mb4_general_ci"}}
	t1, t2 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	for name, c := range map[string]struct {
		a       *Aggregation
		dialect string
		columns []Column
		parts   [][][]any
		want    [][]any
		refused string
	}{
		"counts and integer sums per group, ordered by the group": {
			a: grouped(Item{Arg: "account"}, Item{Func: "count", Arg: "*"}, Item{Func: "sum", Arg: "units"}), dialect: SQLite,
			columns: column("account:INTEGER", "n:", "s:"),
			parts:   [][][]any{{{int64(2), int64(1), int64(5)}, {int64(1), int64(2), int64(-3)}}, {{int64(2), int64(3), nil}}},
			want:    [][]any{{int64(1), int64(2), int64(-3)}, {int64(2), int64(4), int64(5)}}},
		"a DECIMAL sum stays decimal text of its scale": {
			a: &Aggregation{Items: []Item{{Func: "sum", Arg: "amount"}}, Visible: 1}, dialect: MySQL,
			columns: column("s:DECIMAL"),
			parts:   [][][]any{{{[]byte("10.50")}}, {{[]byte("-0.25")}}, {{nil}}},
			want:    [][]any{{[]byte("10.25")}}},
		"MySQL's AVG: the scale a part wrote, rounded half away from zero": {
			a: &Aggregation{Items: []Item{{Func: "avg", Arg: "units", Sum: 1, Count: 2}, {Func: "sum", Arg: "units"}, {Func: "count", Arg: "units"}}, Visible: 1}, dialect: MySQL,
			columns: column("a:DECIMAL", "s:DECIMAL", "n:BIGINT"),
			parts:   [][][]any{{{[]byte("1.0000"), []byte("1"), int64(1)}}, {{[]byte("0.5000"), []byte("1"), int64(2)}}},
			want:    [][]any{{[]byte("0.6667")}}},
		"PostgreSQL's avg: at least 16 significant digits": {
			a: &Aggregation{Items: []Item{{Func: "avg", Arg: "units", Sum: 1, Count: 2}, {Func: "sum", Arg: "units"}, {Func: "count", Arg: "units"}}, Visible: 1}, dialect: Postgres,
			columns: column("avg:NUMERIC", "sum:INT8", "count:INT8"),
			parts:   [][][]any{{{"1.0000000000000000", int64(1), int64(1)}}, {{"1.00000000000000000000", int64(2), int64(6)}}},
			want:    [][]any{{"0.42857142857142857143"}}},
		"SQLite's avg: the integer sum divided as a double": {
			a: &Aggregation{Items: []Item{{Func: "avg", Arg: "units", Sum: 1, Count: 2}, {Func: "sum", Arg: "units"}, {Func: "count", Arg: "units"}}, Visible: 1}, dialect: SQLite,
			columns: column("a:", "s:", "n:"),
			parts:   [][][]any{{{1.5, int64(3), int64(2)}}, {{4.0, int64(4), int64(1)}}},
			want:    [][]any{{7.0 / 3}}},
		"MIN and MAX of times and of binary text": {
			a: &Aggregation{Items: []Item{{Func: "min", Arg: "at"}, {Func: "max", Arg: "code"}}, Visible: 2}, dialect: MySQL,
			columns: []Column{{Name: "at", DatabaseType: "DATETIME"}, binary},
			parts:   [][][]any{{{t2, []byte("Beta")}}, {{t1, []byte("alpha")}}, {{nil, nil}}},
			want:    [][]any{{t1, []byte("alpha")}}},
		"HAVING, ORDER BY an aggregate, NULL first on MySQL, LIMIT and OFFSET": {
			a: &Aggregation{Items: []Item{{Arg: "rating"}, {Func: "count", Arg: "*"}}, Visible: 2, Keys: []int{0}, Grouped: true,
				Having: []Condition{{Item: 1, Op: ">=", Value: 2}}, Order: []SortItem{{Item: 0}}, Limit: 2, Offset: 1, Limited: true}, dialect: MySQL,
			columns: column("rating:INT", "n:BIGINT"),
			parts:   [][][]any{{{nil, int64(1)}, {int64(3), int64(1)}, {int64(5), int64(9)}}, {{nil, int64(1)}, {int64(3), int64(1)}, {int64(4), int64(1)}}},
			want:    [][]any{{int64(3), int64(2)}, {int64(5), int64(9)}}},
		"NULL last in ascending order on PostgreSQL": {
			a: &Aggregation{Items: []Item{{Arg: "rating"}}, Visible: 1, Keys: []int{0}, Grouped: true, Order: []SortItem{{Item: 0}}}, dialect: Postgres,
			columns: column("rating:INT8"),
			parts:   [][][]any{{{nil}, {int64(2)}}, {{int64(1)}, {nil}}},
			want:    [][]any{{int64(1)}, {int64(2)}, {nil}}},
		"COUNT(DISTINCT) is the number of merged values": {
			a: &Aggregation{Items: []Item{{Arg: "account"}}, Visible: 1, Keys: []int{0}, Grouped: true, CountGroups: true}, dialect: MySQL,
			columns: column("account:BIGINT"),
			parts:   [][][]any{{{int64(1)}, {int64(2)}, {nil}}, {{int64(2)}, {int64(3)}, {nil}}},
			want:    [][]any{{int64(3)}}}, // NULL is not counted
		"exact numbers group by value, whatever their trailing zeros": {
			a: grouped(Item{Arg: "amount"}, Item{Func: "count", Arg: "*"}), dialect: Postgres,
			columns: column("amount:NUMERIC", "count:INT8"),
			parts:   [][][]any{{{"1.50", int64(1)}}, {{"1.5", int64(2)}}},
			want:    [][]any{{"1.50", int64(3)}}},
		"a floating-point sum is refused": {
			a: &Aggregation{Items: []Item{{Func: "sum", Arg: "score"}}, Visible: 1}, dialect: MySQL,
			columns: column("s:DOUBLE"), parts: [][][]any{{{0.1}}, {{0.2}}},
			refused: "depends on the order the rows are added in"},
		"text of a case-insensitive collation does not group in Go": {
			a: grouped(Item{Arg: "region"}), dialect: MySQL,
			columns: []Column{caseless}, parts: [][][]any{{{[]byte("North")}}, {{[]byte("north")}}},
			refused: "utf8mb4_general_ci"},
		"a sum that overflows": {
			a: &Aggregation{Items: []Item{{Func: "sum", Arg: "units"}}, Visible: 1}, dialect: SQLite,
			columns: column("s:"), parts: [][][]any{{{int64(1 << 62)}}, {{int64(1 << 62)}}},
			refused: "overflows"},
		"HAVING a fractional value against an exact number": {
			a: &Aggregation{Items: []Item{{Func: "sum", Arg: "amount"}}, Visible: 1, Having: []Condition{{Item: 0, Op: ">", Value: 0.5}}}, dialect: MySQL,
			columns: column("s:DECIMAL"), parts: [][][]any{{{[]byte("1.00")}}},
			refused: "fractional"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := MergeGroups(c.a, c.dialect, c.columns, c.parts)
			if c.refused != "" {
				if !errors.Is(err, ErrMerge) || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("error %v, want ErrMerge saying %q", err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("merged %#v, want %#v", got, c.want)
			}
		})
	}
}

// TestPostgresDivScale: the scale of PostgreSQL's numeric quotients.
func TestPostgresDivScale(t *testing.T) {
	for _, c := range []struct {
		sum   string
		count int64
		want  string
	}{
		{"7", 3, "2.3333333333333333"},
		{"10", 4, "2.5000000000000000"},
		{"3", 7, "0.42857142857142857143"},
		{"123456789", 2, "61728394.500000000000"},
		{"10.25", 2, "5.1250000000000000"},
		{"-7", 2, "-3.5000000000000000"},
	} {
		a := &Aggregation{Items: []Item{{Func: "avg", Sum: 1, Count: 2}, {Func: "sum"}, {Func: "count"}}, Visible: 1}
		got, err := MergeGroups(a, Postgres, []Column{{DatabaseType: "NUMERIC"}, {DatabaseType: "NUMERIC"}, {DatabaseType: "INT8"}},
			[][][]any{{{"0", c.sum, c.count}}})
		if err != nil {
			t.Fatal(err)
		}
		if got[0][0] != c.want {
			t.Errorf("avg of sum %s over %d: %v, want %s", c.sum, c.count, got[0][0], c.want)
		}
	}
}

// TestCompareText: trailing spaces as each collation reads them.
func TestCompareText(t *testing.T) {
	pad, trim, bytewise := TextComparison{PadSpace: true}, TextComparison{TrimSpace: true}, TextComparison{}
	for _, c := range []struct {
		x, y string
		how  TextComparison
		want int
	}{
		{"a\t", "a", pad, -1}, // "a" padded is "a ", and a tab is below a space
		{"a ", "a", pad, 0},
		{"ab", "a", pad, 1},
		{"b\x01c", "b", pad, -1},
		{"a\t", "a", trim, 1},
		{"a  ", "a", trim, 0},
		{"a\t", "a", bytewise, 1},
		{"a ", "a", bytewise, 1},
	} {
		if got := CompareText(c.x, c.y, c.how); got != c.want {
			t.Errorf("CompareText(%q, %q, %+v) = %d, want %d", c.x, c.y, c.how, got, c.want)
		}
		if got := CompareText(c.y, c.x, c.how); got != -c.want {
			t.Errorf("CompareText(%q, %q, %+v) = %d, want %d", c.y, c.x, c.how, got, -c.want)
		}
	}
}

// TestNaNOrdersAboveEveryNumber, as PostgreSQL orders it, and NaNs are one
// group.
func TestNaNOrdersAboveEveryNumber(t *testing.T) {
	a := &Aggregation{Items: []Item{{Arg: "f"}, {Func: "count", Arg: "*"}}, Visible: 2, Keys: []int{0}, Grouped: true, Order: []SortItem{{Item: 0, Desc: true}}}
	got, err := MergeGroups(a, Postgres, []Column{{Name: "f", DatabaseType: "FLOAT8"}, {Name: "n", DatabaseType: "INT8"}},
		[][][]any{{{math.NaN(), int64(1)}, {math.Inf(1), int64(1)}}, {{-math.NaN(), int64(2)}, {1.5, int64(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !math.IsNaN(got[0][0].(float64)) || got[0][1] != int64(3) || got[1][0] != math.Inf(1) {
		t.Errorf("merged %v, want NaN (3), +Inf, 1.5", got)
	}
}
