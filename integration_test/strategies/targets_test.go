// Package strategies_test runs the ID strategies on SQLite, MariaDB and
// PostgreSQL; it lives in the integration module, which has the drivers, not
// the library. The dot import keeps the tests reading as they would inside
// the package.
package strategies_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/glebarez/go-sqlite"
	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	. "github.com/shardid/shardid/strategies"
)

// Environment variables naming the test databases; .ci/run sets them and
// creates <database>_0 .. _3 beside each.
const (
	mysqlDSNVar    = "SHARDID_TEST_MYSQL_DSN"
	postgresDSNVar = "SHARDID_TEST_POSTGRES_DSN"
)

// requireDSN returns the DSN in variable; without it the test skips, or in
// CI fails.
func requireDSN(t testing.TB, variable string) string {
	t.Helper()
	dsn := os.Getenv(variable)
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set; CI requires the database tests", variable)
		}
		t.Skipf("set %s to run this test against a real database", variable)
	}
	return dsn
}

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
	cfg, err := mysql.ParseDSN(requireDSN(t, mysqlDSNVar))
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
	u, err := url.Parse(requireDSN(t, postgresDSNVar))
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
	for _, v := range []string{mysqlDSNVar, postgresDSNVar} {
		switch {
		case os.Getenv(v) == "" && os.Getenv("CI") != "":
			t.Fatalf("%s is not set; CI requires the database tests", v)
		case os.Getenv(v) == "":
			t.Logf("set %s to run this test against a real database too", v)
		case v == mysqlDSNVar:
			targets = append(targets, mysqlTarget(t, -1))
		default:
			targets = append(targets, postgresTarget(t, -1))
		}
	}
	return targets
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
