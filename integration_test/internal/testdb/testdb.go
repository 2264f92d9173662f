// Package testdb reads the test databases of the integration module's
// packages from the environment: a test whose database is not named there
// skips, or under CI (CI set), where the databases are required, fails.
//
// go test runs packages in parallel, so each package's tests run on
// databases of their own, named after the variable's: a package that calls
// [Package]("fence") in its TestMain gets <database>_fence and
// <database>_fence_0 .. _3 beside it, created if missing.
package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
)

// The variables naming the MariaDB/MySQL and PostgreSQL test databases;
// .ci/run sets them.
const (
	MySQLVar    = "SHARDID_TEST_MYSQL_DSN"
	PostgresVar = "SHARDID_TEST_POSTGRES_DSN"
)

// Extra is how many databases beside its own a package gets, <own>_0 ..
// _3: the routing tests' physical shards, the ticket servers.
const Extra = 4

// packageName is the test package's, set by Package before its tests run.
var packageName string

// made holds, by variable, the package's DSN and whether creating its
// databases failed: they are made once per process.
var made struct {
	sync.Mutex // protects the fields below
	dsn        map[string]string
	err        map[string]error
}

// plainName is what a package name may be; plainDatabase what a database's
// name may be, so that it is safe in SQL.
var (
	plainName     = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	plainDatabase = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
)

// Package names the test package whose tests run in this process, for the
// names of its databases; call it from TestMain, before m.Run. Child
// processes re-running the test binary derive the same names; a part of a
// run cut in parts (RunInParts) takes names of its own.
func Package(name string) { packageName = partName(name) }

// Require returns this package's DSN on the server in variable, skipping the
// test without it; its databases are created if missing.
func Require(t testing.TB, variable string) string {
	t.Helper()
	dsn := os.Getenv(variable)
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set; CI requires the database tests", variable)
		}
		t.Skipf("set %s to run this test against a real database", variable)
	}
	own, err := ownDatabases(variable, dsn)
	if err != nil {
		t.Fatalf("%s: this package's databases: %v", variable, err)
	}
	return own
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

// ownDatabases returns the package's DSN derived from dsn, creating the
// package's databases on the first call for variable.
func ownDatabases(variable, dsn string) (string, error) {
	made.Lock()
	defer made.Unlock()
	if own, ok := made.dsn[variable]; ok {
		return own, made.err[variable]
	}
	own, err := create(variable, dsn)
	if made.dsn == nil {
		made.dsn, made.err = map[string]string{}, map[string]error{}
	}
	made.dsn[variable], made.err[variable] = own, err
	return own, err
}

// create makes the package's databases on the server of dsn and returns the
// DSN of the first.
func create(variable, dsn string) (string, error) {
	if !plainName.MatchString(packageName) {
		return "", fmt.Errorf("testdb.Package(%q) was not called with a plain lower-case name in TestMain", packageName)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	switch variable {
	case MySQLVar:
		return createMySQL(ctx, dsn)
	case PostgresVar:
		return createPostgres(ctx, dsn)
	}
	return "", fmt.Errorf("unknown variable %s", variable)
}

// names returns the package's databases beside base: its own, then Extra more.
func names(base string) ([]string, error) {
	if !plainDatabase.MatchString(base) {
		return nil, fmt.Errorf("the database %q: want letters, digits and underscores only", base)
	}
	own := base + "_" + packageName
	list := []string{own}
	for i := range Extra {
		list = append(list, fmt.Sprintf("%s_%d", own, i))
	}
	return list, nil
}

func createMySQL(ctx context.Context, dsn string) (string, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", err
	}
	list, err := names(cfg.DBName)
	if err != nil {
		return "", err
	}
	server := cfg.Clone()
	server.DBName = ""
	db, err := sql.Open("mysql", server.FormatDSN())
	if err != nil {
		return "", err
	}
	defer db.Close()
	for _, name := range list {
		if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+name+"`"); err != nil {
			return "", fmt.Errorf("creating %s: %w", name, err)
		}
	}
	cfg.DBName = list[0]
	return cfg.FormatDSN(), nil
}

// createPostgres creates the databases from the variable's own database,
// under an advisory lock, as two processes may create them at once.
func createPostgres(ctx context.Context, dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	list, err := names(strings.TrimPrefix(u.Path, "/"))
	if err != nil {
		return "", err
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	conn, err := db.Conn(ctx) // the lock is the session's
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(hashtext('shardid testdb'))"); err != nil {
		return "", err
	}
	defer func() {
		_, _ = conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(hashtext('shardid testdb'))")
	}()
	for _, name := range list {
		var exists bool
		if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
			return "", err
		}
		if exists {
			continue
		}
		_, err := conn.ExecContext(ctx, `CREATE DATABASE "`+name+`"`)
		var pgErr *pgconn.PgError
		if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42P04") { // duplicate_database: made meanwhile
			return "", fmt.Errorf("creating %s: %w", name, err)
		}
	}
	u.Path = "/" + list[0]
	return u.String(), nil
}
