package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// Environment variables naming the test databases.
const (
	mysqlDSNVar    = "SHARDID_TEST_MYSQL_DSN"
	postgresDSNVar = "SHARDID_TEST_POSTGRES_DSN"
)

// backend is one kind of database the suite runs against.
type backend struct {
	name string
	// dialector opens the backend; dir is a per-test folder for SQLite files.
	dialector func(t testing.TB, dir string) gorm.Dialector
}

var backends = []backend{
	{name: "sqlite", dialector: func(_ testing.TB, dir string) gorm.Dialector {
		return sqlite.Open(sqliteDSN(filepath.Join(dir, "shard.db")))
	}},
	{name: "mariadb", dialector: func(t testing.TB, _ string) gorm.Dialector { return mysql.Open(requireDSN(t, mysqlDSNVar)) }},
	{name: "postgres", dialector: func(t testing.TB, _ string) gorm.Dialector { return postgres.Open(requireDSN(t, postgresDSNVar)) }},
}

// sqliteDSN waits on a busy database instead of failing, as several
// goroutines and processes write to one file.
func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)"
}

// requireDSN returns the DSN in the variable, skipping the test without it
// (failing it under CI, where the databases are required).
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

// open connects to the backend with the plugin registered.
func open(t testing.TB, b backend, dir string, cfg shardid.Config) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("open %s: %v", b.name, err)
	}
	if err := db.Use(shardid.New(cfg)); err != nil {
		t.Fatalf("db.Use: %v", err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db
}

// forEachBackend runs test once per backend, as a subtest.
func forEachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

// fresh drops and re-creates the tables of models.
func fresh(t testing.TB, db *gorm.DB, models ...any) {
	t.Helper()
	if err := db.Migrator().DropTable(models...); err != nil {
		t.Fatalf("drop: %v", err)
	}
	if err := db.AutoMigrate(models...); err != nil {
		t.Fatalf("migrate: %v", err)
	}
}
