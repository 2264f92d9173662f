package sqlscan

// SQL each server runs (PostgreSQL 15 and MariaDB 10.11; SQLite checked
// here through github.com/glebarez/go-sqlite) where a word the reader knows
// as a keyword names a column, an alias or a table.

import (
	"database/sql"
	"testing"

	_ "github.com/glebarez/go-sqlite"
)

// sqliteRuns runs stmt on a fresh in-memory SQLite with the tables used here.
func sqliteRuns(t *testing.T, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, ddl := range []string{
		"CREATE TABLE a(id int, x int)", "CREATE TABLE b(id int, x int)", "CREATE TABLE books(id int, x int)",
		"CREATE TABLE t(id int, x int, lock int)", "CREATE TABLE only(id int, x int)", "CREATE TABLE lateral(id int, x int)",
		"CREATE TABLE quick(id int, x int)", "CREATE TABLE ignore(id int, x int)",
	} {
		if _, err := db.Exec(ddl); err != nil {
			t.Fatal(ddl, err)
		}
	}
	if _, err := db.Exec(stmt); err != nil {
		t.Errorf("sqlite rejects %q: %v", stmt, err)
	}
}

// "lock IN" is MySQL's LOCK IN SHARE MODE; PostgreSQL (LOCK unreserved) and
// SQLite (no keyword) read a column lock.
func TestLockInIsAColumnOutsideMySQL(t *testing.T) {
	const q = "SELECT count(*) FROM a JOIN t ON lock IN (1, 2), books"
	sqliteRuns(t, q)
	readsTable(t, "sqlite", q, "books")
	readsTable(t, "postgres", q, "books")
	readsTable(t, "postgres", "UPDATE a SET x = 1 FROM b JOIN t ON lock IN (1), books WHERE a.id = b.id", "books")
}

// PostgreSQL's VALUES is a col_name_keyword: a bare column or alias.
func TestValuesAsAColumnOrAliasEndsNoTableList(t *testing.T) {
	readsTable(t, "postgres", `SELECT count(*) FROM a JOIN t ON values IS NULL, books`, "books")
	readsTable(t, "postgres", "SELECT count(*) FROM a values(q, r), books", "books")
	readsTable(t, "postgres", "SELECT count(*) FROM a JOIN t values ON true, books", "books")
}

// upsertClause: "ON conflict ON" is a nested join's second ON on a column
// named conflict (a JOIN b JOIN c ON x ON y), not ON CONFLICT ON CONSTRAINT.
func TestAConflictColumnInANestedJoinIsNoUpsert(t *testing.T) {
	const q = "SELECT count(*) FROM a JOIN b JOIN c ON conflict ON true, books"
	readsTable(t, "postgres", q, "books")
	readsTable(t, "mysql", q, "books")
}

// A table named quick/ignore/delayed/low_priority is no modifier.
func TestATableNamedLikeAModifierIsRead(t *testing.T) {
	sqliteRuns(t, "UPDATE quick SET x = 1")
	sqliteRuns(t, "UPDATE ignore SET x = 1")
	readsTable(t, "sqlite", "UPDATE quick SET x = 1", "quick")
	readsTable(t, "sqlite", "UPDATE ignore SET x = 1", "ignore")
	readsTable(t, "postgres", "UPDATE quick SET x = 1", "quick")
	readsTable(t, "postgres", "UPDATE delayed SET x = 1", "delayed")
	readsTable(t, "mysql", "UPDATE quick SET x = 1", "quick")
	readsTable(t, "mysql", "INSERT quick VALUES (1, 2)", "quick")
}

// A table named only or lateral (unreserved in SQLite and MariaDB) is read.
func TestATableNamedOnlyOrLateralIsRead(t *testing.T) {
	for _, q := range []string{
		"SELECT count(*) FROM only JOIN books ON 1",
		"SELECT count(*) FROM lateral JOIN books ON 1",
	} {
		sqliteRuns(t, q)
		readsTable(t, "sqlite", q, "books")
		readsTable(t, "mysql", q, "books")
	}
	sqliteRuns(t, "INSERT INTO only VALUES (1, 2)")
	sqliteRuns(t, "DELETE FROM only WHERE id = 1")
	readsTable(t, "sqlite", "INSERT INTO only VALUES (1, 2)", "only")
	readsTable(t, "sqlite", "DELETE FROM only WHERE id = 1", "only")
	readsTable(t, "mysql", "UPDATE only SET id = 1", "only")
}
