// Package sqlscan reads raw SQL the way its database will: it splits the
// text into tokens per dialect ("mysql", also MariaDB, "postgres", "sqlite":
// the names GORM's dialectors give) and finds the tables each statement
// names, so that a table hidden behind a comment, a quote or a schema is seen
// and a name inside a string or a comment is not.
//
// It fails closed. SQL it cannot read for certain (a statement kind or a
// construct it does not know, an unterminated string or comment) comes back
// with an error wrapping [ErrUnsure], and with every word of the text that
// could name a table, for the caller to refuse on:
//
//	scan, err := sqlscan.Read("postgres", `SELECT * FROM "public"."users" -- FROM orders`)
//	// scan.Tables: [{Qualifier: "public", Name: "users", Quoted: true}], err == nil
//
// [Quote] writes a name as an identifier of a dialect, for SQL the library
// builds itself.
//
// What it does not follow: views, functions, procedures, triggers and
// prepared statements that the SQL runs but does not spell out.
package sqlscan
