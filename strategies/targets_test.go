package strategies

import (
	"database/sql"
	"path/filepath"
	"testing"

	_ "github.com/glebarez/go-sqlite"
)

// The tests on MariaDB and PostgreSQL are in the integration module's
// strategies package, which has their drivers.

func sqliteTarget(t testing.TB) Target {
	t.Helper()
	return sqliteTargetAt(t, filepath.Join(t.TempDir(), "ids.db"))
}

// sqliteTargetAt opens the SQLite file path, as another process would.
func sqliteTargetAt(t testing.TB, path string) Target {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return Target{Name: "test", Dialect: "sqlite", Conn: db, DB: db}
}
