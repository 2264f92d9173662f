// Package strategies_test runs the ID strategies on SQLite, MariaDB and
// PostgreSQL; it lives in the integration module, which has the drivers, not
// the library. The dot import keeps the tests reading as they would inside
// the package.
package strategies_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"

	_ "github.com/glebarez/go-sqlite"
	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/shardid/shardid/integration_test/internal/testdb"
	. "github.com/shardid/shardid/strategies"
)

// The test databases' variables (testdb's), as the tests here name them.
const (
	mysqlDSNVar    = testdb.MySQLVar
	postgresDSNVar = testdb.PostgresVar
)

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

// mysqlDSN is the MariaDB/MySQL test database, or with i >= 0 its i-th extra
// database (<database>_i).
func mysqlDSN(t testing.TB, i int) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(testdb.Require(t, mysqlDSNVar))
	if err != nil {
		t.Fatal(err)
	}
	if i >= 0 {
		cfg.DBName = fmt.Sprintf("%s_%d", cfg.DBName, i)
	}
	return cfg.FormatDSN()
}

// postgresDSN is the PostgreSQL test database, or with i >= 0 its i-th extra
// database.
func postgresDSN(t testing.TB, i int) string {
	t.Helper()
	u, err := url.Parse(testdb.Require(t, postgresDSNVar))
	if err != nil {
		t.Fatal(err)
	}
	if i >= 0 {
		u.Path = fmt.Sprintf("%s_%d", u.Path, i)
	}
	return u.String()
}

// openTarget opens dsn with driver ("mysql" or "pgx") as a Target named name.
func openTarget(t testing.TB, name, dialect, driver, dsn string) Target {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return Target{Name: name, Dialect: dialect, Conn: db, DB: db}
}

func mysqlTarget(t testing.TB, i int) Target {
	return openTarget(t, fmt.Sprintf("mysql-%d", i), "mysql", "mysql", mysqlDSN(t, i))
}

func postgresTarget(t testing.TB, i int) Target {
	return openTarget(t, fmt.Sprintf("postgres-%d", i), "postgres", "pgx", postgresDSN(t, i))
}

// allTargets is one target of each database kind: SQLite always, MariaDB and
// PostgreSQL where their variables are set (in CI, always: a missing one fails).
func allTargets(t testing.TB) []Target {
	t.Helper()
	targets := []Target{sqliteTarget(t)}
	if testdb.Set(t, mysqlDSNVar) {
		targets = append(targets, mysqlTarget(t, -1))
	}
	if testdb.Set(t, postgresDSNVar) {
		targets = append(targets, postgresTarget(t, -1))
	}
	return targets
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
