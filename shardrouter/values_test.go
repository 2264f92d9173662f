package shardrouter

import (
	"database/sql"
	"math"
	"strings"
	"testing"
)

// An integer and a real of one numeric column compare as numbers, as SQLite
// compares the integer and the real it stores in a NUMERIC column.
func TestCompareValuesOfAnIntegerAndAReal(t *testing.T) {
	c := Column{Name: "amount"}
	for _, tc := range []struct {
		a, b any
		want int
	}{
		{int64(3), 2.5, 1}, {2.5, int64(3), -1}, {int64(3), 3.0, 0}, {3.0, int64(3), 0},
		{int64(math.MaxInt64), math.MaxFloat64, -1}, {int64(1), math.NaN(), -1}, {math.NaN(), int64(1), 1},
	} {
		got, err := compareValues(tc.a, tc.b, c)
		if err != nil || got != tc.want {
			t.Errorf("compare(%v, %v) = %d, %v; want %d", tc.a, tc.b, got, err, tc.want)
		}
	}
}

// A HAVING value behind a pointer or a driver.Valuer compares as the value
// database/sql sends; a NULL one is refused.
func TestCompareParameterBehindAPointerOrAValuer(t *testing.T) {
	c := Column{Name: "n"}
	two := int64(2)
	for _, p := range []any{&two, sql.NullInt64{Int64: 2, Valid: true}, int64(2)} {
		if got, err := compareParameter(int64(3), p, c); err != nil || got != 1 {
			t.Errorf("3 against %#v: %d, %v; want 1", p, got, err)
		}
	}
	for _, p := range []any{sql.NullInt64{}, (*int64)(nil)} {
		if _, err := compareParameter(int64(3), p, c); err == nil {
			t.Errorf("3 against %#v: no error, want a refusal", p)
		}
	}
}

// Only numeric types read as exact numbers: INTERVAL, POINT, PostgreSQL's
// ranges and arrays, which hold "INT" in their names, are values compared as
// their type, refused as text of an unknown comparison, not as malformed
// numbers.
func TestOnlyNumericTypesReadAsExactNumbers(t *testing.T) {
	for _, tc := range []struct {
		databaseType string
		want         valueKind
	}{
		{"INT", kindDecimal}, {"BIGINT", kindDecimal}, {"UNSIGNED INT", kindDecimal}, {"INT8", kindDecimal},
		{"INTEGER", kindDecimal}, {"NUMERIC", kindDecimal}, {"DECIMAL", kindDecimal},
		{"INTERVAL", kindText}, {"POINT", kindText}, {"MULTIPOINT", kindText}, {"TEXT", kindText},
		{"INT4RANGE", kindText}, {"INT8MULTIRANGE", kindText}, {"_INT4", kindText},
	} {
		if got := kindOf("1", Column{DatabaseType: tc.databaseType}); got != tc.want {
			t.Errorf("kind of text in a %s column: %d, want %d", tc.databaseType, got, tc.want)
		}
	}
	_, err := compareValues("1 day", "02:00:00", Column{Name: "took", DatabaseType: "INTERVAL"})
	if err == nil || strings.Contains(err.Error(), "not an exact number") {
		t.Errorf("comparing two intervals: %v, want a refusal that does not call them malformed numbers", err)
	}
}
