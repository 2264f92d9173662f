package mover

import "testing"

// TestATargetTypeHoldsTheSourcesOnlyWhenAsWide: a target column takes the
// source's values when its type is the same, or of the same kind with a
// greater length or a wider integer range; not a shorter length, a
// narrower or unsigned integer, a bounded length for an unbounded one,
// another character set, precision or type. A display width bounds nothing.
func TestATargetTypeHoldsTheSourcesOnlyWhenAsWide(t *testing.T) {
	for _, c := range []struct {
		dialect, target, source string
		holds                   bool
	}{
		{"mysql", "varchar(255) character set utf8mb4", "varchar(10) character set utf8mb4", true},
		{"mysql", "varchar(10) character set utf8mb4", "varchar(255) character set utf8mb4", false},
		{"mysql", "varchar(255) character set latin1", "varchar(255) character set utf8mb4", false},
		{"mysql", "bigint(20)", "int(11)", true},
		{"mysql", "int", "int(11)", true},
		{"mysql", "tinyint(4)", "tinyint(1)", true},
		{"mysql", "int(11)", "bigint(20)", false},
		{"mysql", "bigint(20)", "int(10) unsigned", true},
		{"mysql", "int(11)", "int(10) unsigned", false},
		{"mysql", "int(10) unsigned", "int(11)", false},
		{"mysql", "int(10) unsigned zerofill", "int(10) unsigned", false},
		{"mysql", "decimal(12,4)", "decimal(10,2)", false},
		{"mysql", "datetime(3)", "datetime(3)", true},
		{"mysql", "datetime", "datetime(3)", false},
		{"mysql", "text character set utf8mb4", "varchar(10) character set utf8mb4", false},
		{"postgres", "character varying", "character varying(10)", true},
		{"postgres", "character varying(10)", "character varying", false},
		{"postgres", "character varying(10)[]", "character varying(10)[]", true},
		{"postgres", "character varying(20)[]", "character varying(10)[]", false},
		{"postgres", "bigint", "integer", true},
		{"postgres", "smallint", "integer", false},
		{"postgres", "numeric(10,2)", "numeric(10,2)", true},
		{"postgres", "timestamp(3) with time zone", "timestamp with time zone", false},
		{"sqlite", "varchar(10)", "text", true},
		{"sqlite", "integer", "text", false},
		{"sqlite", "bigint", "integer", true},
	} {
		var target, source column
		target.kind, target.bounds = typeBounds(c.dialect, c.target)
		source.kind, source.bounds = typeBounds(c.dialect, c.source)
		if got := target.holds(source); got != c.holds {
			t.Errorf("%s: %s holds every value of %s: %v, want %v", c.dialect, c.target, c.source, got, c.holds)
		}
	}
}
