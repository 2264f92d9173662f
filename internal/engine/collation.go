package engine

import (
	"context"
	"regexp"
	"strings"

	"gorm.io/gorm"

	"github.com/shardid/shardid/shardrouter"
)

// How a text column compares is its collation's business: the merge of
// values over several databases groups or orders text in Go only where the
// collation provably compares as bytes do. It is read from the database
// for each statement that needs it (a collation can change under the
// plugin), from the first part's database.

// textComparison asks the physical database behind pool how column of
// table compares.
func textComparison(ctx context.Context, pool gorm.ConnPool, dialect, table, column string) (shardrouter.TextComparison, error) {
	switch dialect {
	case shardrouter.MySQL:
		var collation *string
		err := pool.QueryRowContext(ctx, "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?", table, column).Scan(&collation)
		if err != nil || collation == nil {
			return shardrouter.TextComparison{}, err
		}
		return mysqlComparison(*collation), nil
	case shardrouter.Postgres:
		var name string
		var deterministic, bytewise bool
		err := pool.QueryRowContext(ctx, `SELECT COALESCE(CASE WHEN c.collname = 'default' THEN 'default (' || d.datcollate || ')' ELSE c.collname END, ''), COALESCE(c.collisdeterministic, true),
	COALESCE(c.collname IN ('C', 'POSIX', 'ucs_basic') OR c.collname = 'default' AND d.datcollate IN ('C', 'POSIX'), false)
FROM pg_attribute a LEFT JOIN pg_collation c ON c.oid = a.attcollation, pg_database d
WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND d.datname = current_database()`, table, column).Scan(&name, &deterministic, &bytewise)
		if err != nil {
			return shardrouter.TextComparison{}, err
		}
		// A deterministic collation calls strings equal only when their bytes are.
		return shardrouter.TextComparison{Collation: name, Equal: deterministic, Order: bytewise}, nil
	case shardrouter.SQLite:
		var ddl string
		err := pool.QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", table).Scan(&ddl)
		if err != nil {
			return shardrouter.TextComparison{}, err
		}
		return sqliteComparison(sqliteCollation(ddl, column)), nil
	}
	return shardrouter.TextComparison{Collation: dialect + " (unknown)"}, nil
}

// mysqlComparison reads a MySQL or MariaDB collation's name: binary ones
// compare as bytes (UTF-8 bytes order as code points do); the older _bin
// ones pad with spaces (trailing spaces do not count).
func mysqlComparison(collation string) shardrouter.TextComparison {
	c := shardrouter.TextComparison{Collation: collation}
	switch {
	case collation == "binary", strings.HasSuffix(collation, "_nopad_bin"), strings.HasSuffix(collation, "_0900_bin"):
		c.Equal, c.Order = true, true
	case strings.HasSuffix(collation, "_bin"):
		c.Equal, c.Order, c.PadSpace = true, true, true
	}
	return c
}

func sqliteComparison(collation string) shardrouter.TextComparison {
	c := shardrouter.TextComparison{Collation: collation}
	switch strings.ToUpper(collation) {
	case "BINARY":
		c.Equal, c.Order = true, true
	case "RTRIM":
		c.Equal, c.Order, c.PadSpace = true, true, true
	}
	return c
}

// sqliteCollate finds a COLLATE in a column's definition.
var sqliteCollate = regexp.MustCompile(`(?i)\bCOLLATE\s+["'\x60\[]?(\w+)`)

// sqliteCollation is the collation of column in a CREATE TABLE statement:
// BINARY unless its definition names another.
func sqliteCollation(ddl, column string) string {
	open, end := strings.Index(ddl, "("), strings.LastIndex(ddl, ")")
	if open < 0 || end < open {
		return "BINARY"
	}
	for _, definition := range shardrouter.SplitList(ddl[open+1 : end]) {
		fields := strings.Fields(definition)
		if len(fields) == 0 || !strings.EqualFold(strings.Trim(fields[0], "`\"[]'"), column) {
			continue
		}
		if m := sqliteCollate.FindStringSubmatch(definition); m != nil {
			return m[1]
		}
	}
	return "BINARY"
}
