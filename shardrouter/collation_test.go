package shardrouter

import "testing"

// TestSQLiteCollationReadsTheColumnsOwnDefinition: the collation is read
// past a type's parentheses, from the definition of the column named and no
// other, quoted or not.
func TestSQLiteCollationReadsTheColumnsOwnDefinition(t *testing.T) {
	for _, c := range []struct{ ddl, column, want string }{
		{"CREATE TABLE t (id integer, email varchar(255) COLLATE NOCASE)", "email", "NOCASE"},
		{"CREATE TABLE t (`id` integer, `backup_email` text, `email` text COLLATE NOCASE)", "email", "NOCASE"},
		{"CREATE TABLE t (`id` integer, `backup_email` text, `email` text COLLATE NOCASE)", "backup_email", "BINARY"},
		{`CREATE TABLE t ("email" varchar(50) COLLATE "NOCASE", n decimal(10,2))`, "email", "NOCASE"},
		{"CREATE TABLE t (email text, CONSTRAINT u UNIQUE (email COLLATE NOCASE))", "email", "BINARY"},
		{"CREATE TABLE t (email text COLLATE RTRIM)", "Email", "RTRIM"},
		{"CREATE TABLE t (email text)", "email", "BINARY"},
		{"CREATE TABLE t (code text DEFAULT 'x COLLATE BINARY' COLLATE NOCASE)", "code", "NOCASE"},
		{`CREATE TABLE t (code text DEFAULT 'it''s COLLATE BINARY' COLLATE "NOCASE")`, "code", "NOCASE"},
		{"CREATE TABLE t (code text /* COLLATE BINARY */ COLLATE NOCASE)", "code", "NOCASE"},
		{"CREATE TABLE t (code text -- COLLATE BINARY\n COLLATE NOCASE, n int)", "code", "NOCASE"},
		{"CREATE TABLE t (code text CHECK (code COLLATE BINARY <> 'x') COLLATE NOCASE)", "code", "NOCASE"},
		{"CREATE TABLE t (code text GENERATED ALWAYS AS (lower(n) COLLATE BINARY) COLLATE NOCASE, n text)", "code", "NOCASE"},
		{"CREATE TABLE t (code varchar(20) COLLATE RTRIM)", "code", "RTRIM"},
		{"not a table", "email", "BINARY"},
		{"CREATE TABLE t (email text)", "word", "unknown (not a column of the table: of a joined table, or an expression)"},
		// Names quoted with spaces or quotes in them are read whole: x is not `x y`.
		{"CREATE TABLE t (`x y` text COLLATE BINARY, x text COLLATE NOCASE)", "x", "NOCASE"},
		{"CREATE TABLE t (`x y` text COLLATE BINARY, x text COLLATE NOCASE)", "x y", "BINARY"},
		{"CREATE TABLE t (`first name` text COLLATE NOCASE)", "first name", "NOCASE"},
		{`CREATE TABLE t ("it""s" text COLLATE RTRIM, "it" text)`, `it"s`, "RTRIM"},
		{"CREATE TABLE t ([a b] text COLLATE NOCASE, a text)", "a", "BINARY"},
	} {
		if got := SQLiteCollation(c.ddl, c.column); got != c.want {
			t.Errorf("SQLiteCollation(%q, %q) = %q, want %q", c.ddl, c.column, got, c.want)
		}
	}
}
