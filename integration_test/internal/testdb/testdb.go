// Package testdb reads the test databases of the integration module's
// packages from the environment: a test whose database is not named there
// skips, or under CI (CI set), where the databases are required, fails.
package testdb

import (
	"os"
	"testing"
)

// The variables naming the MariaDB/MySQL and PostgreSQL test databases;
// .ci/run sets them and creates <database>_0 .. _3 beside each.
const (
	MySQLVar    = "SHARDID_TEST_MYSQL_DSN"
	PostgresVar = "SHARDID_TEST_POSTGRES_DSN"
)

// Require returns the DSN in variable, skipping the test without it.
func Require(t testing.TB, variable string) string {
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

// Set reports whether variable names a database, for a test that runs on
// the databases it has; it logs the one it goes without.
func Set(t testing.TB, variable string) bool {
	t.Helper()
	if os.Getenv(variable) != "" {
		return true
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not set; CI requires the database tests", variable)
	}
	t.Logf("set %s to run this test against a real database too", variable)
	return false
}
