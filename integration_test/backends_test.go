package integration

import (
	"fmt"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/integration_test/internal/testdb"
)

// Environment variables naming the test databases.
const (
	mysqlDSNVar    = testdb.MySQLVar
	postgresDSNVar = testdb.PostgresVar
)

// backend is one kind of database the suite runs against.
type backend struct {
	name string
	// dialector opens the backend's main database; dir is a per-test folder
	// for SQLite files.
	dialector func(t testing.TB, dir string) gorm.Dialector
	// physical opens the backend's i-th extra database, a physical shard.
	physical func(t testing.TB, dir string, i int) gorm.Dialector
}

// atomicity is the Config.Atomic the suite gives b: SQLite has no two-phase
// commit, so there the tests write over several databases part by part.
func (b backend) atomicity() shardid.Atomicity {
	if b.name == "sqlite" {
		return shardid.BestEffort
	}
	return shardid.TwoPhaseCommit
}

// physicalShards is how many physical databases the routing tests spread
// the logical shards over; testdb creates them as <package database>_0 .. _3.
const physicalShards = 4

var backends = []backend{
	{
		name: "sqlite",
		dialector: func(_ testing.TB, dir string) gorm.Dialector {
			return sqlite.Open(sqliteDSN(filepath.Join(dir, "shard.db")))
		},
		physical: func(_ testing.TB, dir string, i int) gorm.Dialector {
			return sqlite.Open(sqliteDSN(filepath.Join(dir, fmt.Sprintf("physical-%d.db", i))))
		},
	},
	{
		name:      "mariadb",
		dialector: func(t testing.TB, _ string) gorm.Dialector { return mysql.Open(requireDSN(t, mysqlDSNVar)) },
		physical: func(t testing.TB, _ string, i int) gorm.Dialector {
			cfg, err := mysqldriver.ParseDSN(requireDSN(t, mysqlDSNVar))
			if err != nil {
				t.Fatal(err)
			}
			cfg.DBName = fmt.Sprintf("%s_%d", cfg.DBName, i)
			return mysql.Open(cfg.FormatDSN())
		},
	},
	{
		name:      "postgres",
		dialector: func(t testing.TB, _ string) gorm.Dialector { return postgres.Open(requireDSN(t, postgresDSNVar)) },
		physical: func(t testing.TB, _ string, i int) gorm.Dialector {
			u, err := url.Parse(requireDSN(t, postgresDSNVar))
			if err != nil {
				t.Fatal(err)
			}
			u.Path = fmt.Sprintf("%s_%d", u.Path, i)
			return postgres.Open(u.String())
		},
	},
}

// shards maps the logical shards evenly onto physicalShards databases of b.
func shards(t testing.TB, b backend, dir string) []shardid.Shard {
	count := shardid.Layout{}.ShardCount()
	list := make([]shardid.Shard, physicalShards)
	for i := range list {
		list[i] = shardid.Shard{
			Name:      fmt.Sprintf("%s-%d", b.name, i),
			Dialector: b.physical(t, dir, i),
			Logical:   []shardid.Range{{From: i * count / physicalShards, To: (i+1)*count/physicalShards - 1}},
		}
	}
	return list
}

// direct opens the physical databases of b without the plugin, to see where
// rows really are.
func direct(t testing.TB, b backend, dir string) []*gorm.DB {
	dbs := make([]*gorm.DB, physicalShards)
	for i := range dbs {
		db, err := gorm.Open(b.physical(t, dir, i), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if sqlDB, err := db.DB(); err == nil {
				_ = sqlDB.Close()
			}
		})
		dbs[i] = db
	}
	return dbs
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
	return testdb.Require(t, variable)
}

// firstStart drops the shared map from the plugin's database, so that the
// plugin about to be registered seeds it from its own Config.Shards, as on a
// first start, whatever map an earlier test left.
func firstStart(t testing.TB, db *gorm.DB) {
	t.Helper()
	if err := db.Exec("DROP TABLE IF EXISTS shardid_shard_map").Error; err != nil {
		t.Fatalf("dropping the shared map: %v", err)
	}
}

// open connects to the backend with the plugin registered; a cfg that
// leaves Atomic at its zero value gets the backend's atomicity.
func open(t testing.TB, b backend, dir string, cfg shardid.Config) *gorm.DB {
	t.Helper()
	if cfg.Atomic == shardid.TwoPhaseCommit {
		cfg.Atomic = b.atomicity()
	}
	db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("open %s: %v", b.name, err)
	}
	firstStart(t, db)
	p := shardid.New(cfg)
	if err := db.Use(p); err != nil {
		t.Fatalf("db.Use: %v", err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	// First: a plugin left open would go on saying, on its own pool, that a
	// live process routes by its map, and hold later tests' move cleanups.
	t.Cleanup(func() { _ = p.Close() })
	return db
}

// forEachBackend runs test once per backend, as a subtest.
func forEachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

// forEachServer runs test on MariaDB and on PostgreSQL, where moves run
// with other processes beside them.
func forEachServer(t *testing.T, test func(t *testing.T, b backend)) {
	for _, b := range backends {
		if b.name != "sqlite" {
			t.Run(b.name, func(t *testing.T) { test(t, b) })
		}
	}
}

// fresh drops and re-creates the tables of models.
func fresh(t testing.TB, db *gorm.DB, models ...any) {
	t.Helper()
	if err := migrator(db).DropTable(models...); err != nil {
		t.Fatalf("drop: %v", err)
	}
	if err := migrator(db).AutoMigrate(models...); err != nil {
		t.Fatalf("migrate: %v", err)
	}
}

// migrator is the plugin's shard-aware migrator for db, which has the plugin
// registered.
func migrator(db *gorm.DB) gorm.Migrator {
	return db.Config.Plugins[(&shardid.Plugin{}).Name()].(*shardid.Plugin).Migrator(db)
}
