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
	} {
		if got := SQLiteCollation(c.ddl, c.column); got != c.want {
			t.Errorf("SQLiteCollation(%q, %q) = %q, want %q", c.ddl, c.column, got, c.want)
		}
	}
}
