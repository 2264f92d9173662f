package engine

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/sqlscan"
	"github.com/shardid/shardid/shardrouter"
)

// How a text column compares is its collation's business: the merge of
// values over several databases groups or orders text in Go only where the
// collation provably compares as bytes do. It is read from the database
// for each statement that needs it (a collation can change under the
// plugin), from the databases of the parts (merge.go, fanoutgroup.go).

// textComparison asks the physical database behind pool how column of
// the table named by parts (its schema, if named, then its name) compares.
func textComparison(ctx context.Context, pool gorm.ConnPool, dialect string, parts []string, column string) (shardrouter.TextComparison, error) {
	table := parts[len(parts)-1]
	switch dialect {
	case shardrouter.MySQL:
		var collation, charset *string
		var dataType string
		where, args := mysqlColumn(parts, column)
		err := pool.QueryRowContext(ctx, "SELECT COLLATION_NAME, CHARACTER_SET_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE "+where, args...).Scan(&collation, &charset, &dataType)
		if errors.Is(err, sql.ErrNoRows) {
			return shardrouter.TextComparison{Collation: shardrouter.NotAColumn}, nil // Distinct("name") of a joined table
		}
		if err == nil && collation == nil && slices.Contains([]string{"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}, strings.ToLower(dataType)) {
			binary := "binary" // a binary string, whose collation information_schema leaves NULL, compares its bytes
			collation, charset = &binary, &binary
		}
		if err != nil || collation == nil {
			return shardrouter.TextComparison{}, err
		}
		return mysqlComparison(*collation, deref(charset), dataType), nil
	case shardrouter.Postgres:
		// The table by its name as GORM quotes it ("Authors" of NoLowerCase, "app"."authors" of
		// TablePrefix "app."), else as PostgreSQL folds it.
		// A database default of ICU (i) or builtin (b) is named by its locale and provider.
		// libc's C.UTF-8 orders by code point (glibc 2.35 on, musl), as
		// UTF-8's bytes do; a database default of another provider is not libc's.
		var name, typeName, baseName, baseCategory string
		var deterministic, bytewise, blankPadded, collatable, enum bool
		err := pool.QueryRowContext(ctx, `SELECT COALESCE(CASE WHEN c.collname = 'default' THEN 'default (' || CASE COALESCE(to_jsonb(d)->>'datlocprovider', 'c') WHEN 'c' THEN d.datcollate
		ELSE COALESCE(to_jsonb(d)->>'datlocale', to_jsonb(d)->>'daticulocale', d.datcollate) || ' of provider ' || (to_jsonb(d)->>'datlocprovider') END || ')' ELSE c.collname END, ''), COALESCE(c.collisdeterministic, true),
	COALESCE(c.collname IN ('C', 'POSIX', 'ucs_basic', 'pg_c_utf8') OR c.collprovider = 'c' AND lower(c.collcollate) IN ('c.utf8', 'c.utf-8')
		OR c.collname = 'default' AND COALESCE(to_jsonb(d)->>'datlocprovider', 'c') = 'c' AND (d.datcollate IN ('C', 'POSIX') OR lower(d.datcollate) IN ('c.utf8', 'c.utf-8')), false), a.atttypid = 'bpchar'::regtype,
	a.attcollation <> 0, format_type(a.atttypid, NULL), b.typtype = 'e', b.typname::text, b.typcategory::text
FROM pg_attribute a LEFT JOIN pg_collation c ON c.oid = a.attcollation, pg_database d,
	LATERAL (WITH RECURSIVE domains(oid) AS (SELECT a.atttypid UNION ALL SELECT t.typbasetype FROM pg_type t JOIN domains ON t.oid = domains.oid WHERE t.typtype = 'd')
		SELECT t.* FROM domains JOIN pg_type t ON t.oid = domains.oid WHERE t.typtype <> 'd') b
WHERE a.attrelid = COALESCE(to_regclass($1), to_regclass($2)) AND a.attname = $3 AND d.datname = current_database()`, quotedName(dialect, parts), strings.Join(parts, "."), column).Scan(&name, &deterministic, &bytewise, &blankPadded, &collatable, &typeName, &enum, &baseName, &baseCategory)
		if errors.Is(err, sql.ErrNoRows) {
			return shardrouter.TextComparison{Collation: shardrouter.NotAColumn}, nil // Distinct("name") of a joined table
		}
		if err != nil {
			return shardrouter.TextComparison{}, err
		}
		if enum {
			// Equal when their labels are; ordered by the labels' positions.
			return shardrouter.TextComparison{Collation: "none (enum " + typeName + ", ordered by its labels' positions)", Equal: true}, nil
		}
		// By the type under its domains, whatever schema holds it.
		if baseName == "citext" { // lower-cased before comparing, whatever its collation
			return shardrouter.TextComparison{Collation: "none: " + typeName + " is a citext, which compares its values lower-cased"}, nil
		}
		if baseCategory == "A" { // collatable as its elements are
			return shardrouter.TextComparison{Collation: "none: " + typeName + " is an array, which compares element by element, not as its text"}, nil
		}
		if baseName == "uuid" || baseName == "bytea" {
			// Compared as their bytes (memcmp), as a uuid's lower-case hex text and a bytea's bytes order.
			return shardrouter.TextComparison{Collation: "none (" + typeName + ", ordered by its bytes)", Equal: true, Order: true}, nil
		}
		if !collatable {
			// Sent as text, compared as its type: jsonb's {"a": 1} equals {"a": 1.0}, an interval's 1 day 24 hours.
			return shardrouter.TextComparison{Collation: "none: a " + typeName + " compares as its type, not as its text"}, nil
		}
		// A deterministic collation calls strings equal only when their
		// bytes are; char(n) drops trailing spaces before comparing.
		return shardrouter.TextComparison{Collation: name, Equal: deterministic, Order: bytewise, TrimSpace: blankPadded}, nil
	case shardrouter.SQLite:
		var ddl string
		master := "sqlite_master"
		if len(parts) > 1 {
			master = sqlscan.Quote(dialect, parts[len(parts)-2]) + ".sqlite_master" // an attached database's
		}
		err := pool.QueryRowContext(ctx, "SELECT sql FROM "+master+" WHERE type = 'table' AND name = ?", table).Scan(&ddl)
		if err != nil {
			return shardrouter.TextComparison{}, err
		}
		return sqliteComparison(shardrouter.SQLiteCollation(ddl, column)), nil
	}
	return shardrouter.TextComparison{Collation: dialect + " (unknown)"}, nil
}

// quotedName quotes each part of a table's name, as GORM does.
func quotedName(dialect string, parts []string) string {
	quoted := make([]string, len(parts))
	for i, p := range parts {
		quoted[i] = sqlscan.Quote(dialect, p)
	}
	return strings.Join(quoted, ".")
}

// mysqlComparison reads a MySQL or MariaDB column's collation: a binary
// one of UTF-8 (or ASCII) text compares as the bytes the driver returns do
// (UTF-8's byte order is its code points'), the older _bin ones padding
// the shorter string with spaces. Another character set's binary collation
// tells equal strings apart as bytes do, but orders them by its own bytes;
// ENUM and SET columns order by their members' positions.
func mysqlComparison(collation, charset, dataType string) shardrouter.TextComparison {
	c := shardrouter.TextComparison{Collation: collation}
	utf8 := charset == "utf8mb4" || charset == "utf8mb3" || charset == "utf8" || charset == "ascii"
	switch {
	case collation == "binary":
		c.Equal, c.Order = true, true
	case strings.HasSuffix(collation, "_nopad_bin"), strings.HasSuffix(collation, "_0900_bin"):
		c.Equal, c.Order = true, utf8
	case strings.HasSuffix(collation, "_bin"):
		c.Equal, c.Order, c.PadSpace = true, utf8, true
	}
	if dataType == "enum" || dataType == "set" {
		c.Order = false
		c.Collation += " (" + dataType + ", ordered by its members' positions)"
	}
	if c.Equal && !c.Order && !strings.Contains(c.Collation, "(") {
		c.Collation += " (character set " + charset + ")"
	}
	return c
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func sqliteComparison(collation string) shardrouter.TextComparison {
	c := shardrouter.TextComparison{Collation: collation}
	switch strings.ToUpper(collation) {
	case "BINARY":
		c.Equal, c.Order = true, true
	case "RTRIM":
		c.Equal, c.Order, c.TrimSpace = true, true, true
	}
	return c
}

// mysqlColumn is the condition finding column of the table named by parts
// (its database, if named, then its name) in MySQL's information_schema,
// and its values: in the database that qualifies it, else the connection's.
func mysqlColumn(parts []string, column string) (string, []any) {
	if len(parts) > 1 {
		return "TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?", []any{parts[len(parts)-2], parts[len(parts)-1], column}
	}
	return "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?", []any{parts[len(parts)-1], column}
}

// mysqlSinglePrecision reports whether column of the table named by parts
// is MySQL's or MariaDB's FLOAT, whose values the server sends as text
// rounded to six digits.
func mysqlSinglePrecision(ctx context.Context, pool gorm.ConnPool, parts []string, column string) (bool, error) {
	var dataType string
	where, args := mysqlColumn(parts, column)
	err := pool.QueryRowContext(ctx, "SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE "+where, args...).Scan(&dataType)
	return strings.EqualFold(dataType, "float"), err
}

// isFloat reports whether a field holds a floating-point number.
func isFloat(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64
}
