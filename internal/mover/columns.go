package mover

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/shardid/shardid/internal/sqlscan"
)

// column is a table's column on one database as a move must know it to
// tell whether the target's can take every row of the source's.
type column struct {
	name     string
	declared string // its type as the database names it
	// kind is its type but for the bounds a wider type of the same kind
	// raises: two columns of different kinds hold different values.
	kind string
	// bounds are those: a length, or an integer's magnitude bits and
	// whether it takes negatives; none for an unbounded length or a type
	// without such bounds.
	bounds    []int
	nullable  bool
	filled    bool // the database fills it in a row written without it: a default, an identity, AUTO_INCREMENT, a generated column
	generated bool
}

// describeColumns reads every column of a table on db, generated ones too.
func describeColumns(ctx context.Context, db *sql.DB, dialect, table string) ([]column, error) {
	var q string
	switch dialect {
	case "postgres":
		q = `SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '', a.attgenerated <> ''
	FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`
		table = sqlscan.Quote(dialect, table)
	case "mysql":
		generated := "EXTRA IN ('VIRTUAL GENERATED', 'STORED GENERATED', 'VIRTUAL', 'PERSISTENT', 'STORED')"
		q = "SELECT COLUMN_NAME, CONCAT(COLUMN_TYPE, COALESCE(CONCAT(' character set ', CHARACTER_SET_NAME), '')), IS_NULLABLE = 'YES', " +
			"COLUMN_DEFAULT IS NOT NULL OR EXTRA LIKE '%auto_increment%' OR " + generated + ", " + generated +
			" FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION"
	default: // SQLite: an INTEGER PRIMARY KEY alone is the rowid, which it fills
		q = `SELECT name, type, "notnull" = 0, dflt_value IS NOT NULL OR hidden IN (2, 3) OR (pk = 1 AND upper(type) = 'INTEGER' AND (SELECT count(*) FROM pragma_table_info(?1) WHERE pk > 0) = 1), hidden IN (2, 3)
	FROM pragma_table_xinfo(?1) ORDER BY cid`
	}
	rows, err := readRows(ctx, db, 5, q, table)
	if err != nil {
		return nil, err
	}
	columns := make([]column, len(rows))
	for i, row := range rows {
		columns[i] = column{name: asText(row[0]), declared: asText(row[1]), nullable: asBool(row[2]), filled: asBool(row[3]), generated: asBool(row[4])}
		columns[i].kind, columns[i].bounds = typeBounds(dialect, asText(row[1]))
	}
	return columns, nil
}

// asBool is a boolean as a driver reads it back: a bool, a number, or
// MySQL's text.
func asBool(v any) bool {
	switch b := v.(type) {
	case bool:
		return b
	case int64:
		return b != 0
	}
	n, _ := strconv.Atoi(asText(v))
	return n != 0
}

var (
	integerType = regexp.MustCompile(`^(tinyint|smallint|mediumint|int|integer|bigint)(\(\d+\))?( unsigned)?( zerofill)?$`)
	varyingType = regexp.MustCompile(`^(varchar|varbinary|character varying|bit varying)(?:\((\d+)\))?( .*)?$`)
	integerBits = map[string]int{"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "integer": 32, "bigint": 64}
)

// typeBounds splits a declared type into its kind and its bounds. SQLite
// keeps any value in any column but converts it to the column's affinity,
// its kind; it bounds no length.
func typeBounds(dialect, declared string) (string, []int) {
	t := strings.ToLower(strings.TrimSpace(declared))
	if dialect == "sqlite" {
		return sqliteAffinity(t), nil
	}
	if m := integerType.FindStringSubmatch(t); m != nil { // a display width bounds nothing
		if m[3] != "" {
			return "integer" + m[4], []int{integerBits[m[1]], 0}
		}
		return "integer" + m[4], []int{integerBits[m[1]] - 1, 1}
	}
	if m := varyingType.FindStringSubmatch(t); m != nil {
		if m[2] == "" {
			return m[1] + m[3], nil
		}
		n, _ := strconv.Atoi(m[2])
		return m[1] + m[3], []int{n}
	}
	return t, nil
}

// sqliteAffinity is the affinity SQLite gives a column of a declared type.
func sqliteAffinity(t string) string {
	switch {
	case strings.Contains(t, "int"):
		return "integer"
	case strings.Contains(t, "char"), strings.Contains(t, "clob"), strings.Contains(t, "text"):
		return "text"
	case t == "", strings.Contains(t, "blob"):
		return "blob"
	case strings.Contains(t, "real"), strings.Contains(t, "floa"), strings.Contains(t, "doub"):
		return "real"
	}
	return "numeric"
}

// holds tells whether a column of the target can keep every value of the
// source's unchanged: the same kind, within bounds as wide or wider.
func (target column) holds(source column) bool {
	if target.kind != source.kind {
		return false
	}
	if len(target.bounds) == 0 {
		return true
	}
	if len(source.bounds) != len(target.bounds) {
		return false
	}
	for i, b := range source.bounds {
		if target.bounds[i] < b {
			return false
		}
	}
	return true
}

// misfit is why the target's columns of a table cannot take every row of
// the source's as it is, or "": a column there that the copy leaves out
// (one the source lacks, or generates) must be nullable or filled; one it
// writes must hold the source's values, NULL among them; a generated one
// computes its own, so the source's values of it must be generated too.
func misfit(source, target []column, from, to string) string {
	for _, tc := range target {
		i := slices.IndexFunc(source, func(sc column) bool { return sc.name == tc.name })
		switch {
		case i < 0 && !tc.nullable && !tc.filled && !tc.generated:
			return fmt.Sprintf("the column %s is NOT NULL without a default on %s, and %s has no such column, so the copy cannot write its rows: migrate %s too (ids.AutoMigrate), or give the column a default on %s",
				tc.name, to, from, from, to)
		case i < 0:
		case source[i].generated != tc.generated:
			return fmt.Sprintf("the column %s is %s on %s and %s on %s: the copy carries no generated column's values, and a generated column takes none, so its values would be lost: make it the same on both (migrate %s too)",
				tc.name, generatedOrNot(tc.generated), to, generatedOrNot(source[i].generated), from, from)
		case tc.generated: // each side computes its own
		case source[i].nullable && !tc.nullable:
			return fmt.Sprintf("the column %s is NOT NULL on %s and nullable on %s, so a NULL the copy carries would be refused or changed: make it the same on both (migrate %s too, or drop the NOT NULL on %s)",
				tc.name, to, from, from, to)
		case !tc.holds(source[i]):
			return fmt.Sprintf("the column %s is of type %s on %s, which cannot keep every value of its type %s on %s (it would refuse, convert or truncate them): make the types the same (migrate %s too, or alter the column on %s)",
				tc.name, tc.declared, to, source[i].declared, from, from, to)
		}
	}
	return ""
}

func generatedOrNot(generated bool) string {
	if generated {
		return "generated"
	}
	return "not generated"
}
