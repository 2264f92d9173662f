package shardid

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"
)

// Two shards given the same database are refused, or else a fan-out would
// read each row twice.
func TestTwoShardsOnOneDatabaseAreNotReadTwice(t *testing.T) {
	dir := t.TempDir()
	dsn := func(name string) string { return "file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)" }
	half := Layout{}.ShardCount() / 2
	db, err := gorm.Open(sqlite.Open(dsn("main.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := New(Config{Shards: []Shard{
		{Name: "a", Dialector: sqlite.Open(dsn("same.db")), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "b", Dialector: sqlite.Open(dsn("same.db")), Logical: []Range{{From: half, To: 2*half - 1}}},
	}})
	if err := db.Use(p); errors.Is(err, ErrInvalidConfig) {
		return // refused: as it should be
	}
	t.Cleanup(func() { _ = p.Close() })
	must(t, p.AutoMigrate(db, &revPlain{}))
	must(t, db.Create(&revPlain{Name: "one"}).Error)
	var n int64
	must(t, db.Model(&revPlain{}).Clauses(AllShards()).Count(&n).Error)
	if n != 1 {
		t.Errorf("one row created, AllShards counts %d: two shards on one database were accepted", n)
	}
}

// Two shards given one opened database, or sessions sharing its pool, are
// refused by name; so is a shard whose DSN is another's.
func TestShardsOfOneDatabaseAreRefusedByName(t *testing.T) {
	dir := t.TempDir()
	dsn := func(name string) string { return "file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)" }
	half := Layout{}.ShardCount() / 2
	shared, err := gorm.Open(sqlite.Open(dsn("shared.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := shared.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	for name, pair := range map[string][2]Shard{
		"one *gorm.DB":            {{DB: shared}, {DB: shared}},
		"one pool":                {{DB: shared}, {DB: shared.Session(&gorm.Session{NewDB: true})}},
		"a DSN and a DB":          {{DB: shared}, {Dialector: sqlite.Open(dsn("shared.db"))}},
		"one DSN, twice":          {{Dialector: sqlite.Open(dsn("x.db"))}, {Dialector: sqlite.Open(dsn("x.db"))}},
		"one file, two spellings": {{Dialector: sqlite.Open(dsn("z.db"))}, {Dialector: sqlite.Open(filepath.Join(dir, ".", "z.db"))}},
		"distinct (kept)":         {{Dialector: sqlite.Open(dsn("y0.db"))}, {Dialector: sqlite.Open(dsn("y1.db"))}},
	} {
		pair[0].Name, pair[0].Logical = "first", []Range{{From: 0, To: half - 1}}
		pair[1].Name, pair[1].Logical = "second", []Range{{From: half, To: 2*half - 1}}
		db, err := gorm.Open(sqlite.Open(dsn("main.db")), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		p := New(Config{Shards: pair[:]})
		err = db.Use(p)
		_ = p.Close()
		if sqlDB, dbErr := db.DB(); dbErr == nil {
			_ = sqlDB.Close()
		}
		if name == "distinct (kept)" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "first") || !strings.Contains(err.Error(), "second") {
			t.Errorf("%s: %v; want ErrInvalidConfig naming both shards", name, err)
		}
	}
}

// wrappedPool is a connection pool of the application's own, not an *sql.DB.
type wrappedPool struct{ gorm.ConnPool }

// A shard whose handle runs on a pool that is not an *sql.DB is refused: the
// plugin's strategies and moves run on its *sql.DB.
func TestShardOnAPoolThatIsNotAnSQLDBIsRefused(t *testing.T) {
	dir := t.TempDir()
	db, err := gorm.Open(sqlite.Open(filepath.Join(dir, "main.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	shard, err := gorm.Open(sqlite.Open(filepath.Join(dir, "a.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	shard.ConnPool = wrappedPool{shard.ConnPool}
	shard.Statement.ConnPool = shard.ConnPool
	count := Layout{}.ShardCount()
	p := New(Config{Shards: []Shard{{Name: "a", DB: shard, Logical: []Range{{From: 0, To: count - 1}}}}})
	if err := db.Use(p); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "shard a has no *sql.DB") {
		t.Fatalf("db.Use with a shard on a wrapped pool: %v, want ErrInvalidConfig naming it", err)
	}
}

// A shard's *gorm.DB that gorm.Open did not make is refused by name, where
// reading its dialect would panic.
func TestShardDBNotOpenedByGORMIsRefused(t *testing.T) {
	count := Layout{}.ShardCount()
	for name, shard := range map[string]*gorm.DB{
		"zero":           {},
		"config only":    {Config: &gorm.Config{}},
		"no connections": {Config: &gorm.Config{Dialector: sqlite.Open(":memory:")}},
	} {
		t.Run(name, func(t *testing.T) {
			db, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "main.db")), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			p := New(Config{Shards: []Shard{{Name: "a", DB: shard, Logical: []Range{{From: 0, To: count - 1}}}}})
			if err := db.Use(p); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "shard a: its *gorm.DB was not opened by gorm.Open") {
				t.Fatalf("db.Use with a %s gorm.DB as a shard: %v, want ErrInvalidConfig naming it", name, err)
			}
		})
	}
}

// TestShardNamesBoundToOtherDatabasesAreRefused: a process whose config
// swaps two shards' DSNs (the names and ranges as before) is refused when a
// statement first opens one of them, and writes nothing there; the
// process of the right config goes on.
func TestShardNamesBoundToOtherDatabasesAreRefused(t *testing.T) {
	dir := t.TempDir()
	dsn := func(name string) string { return "file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)" }
	half := Layout{}.ShardCount() / 2
	open := func(first, second string) (*gorm.DB, *Plugin) {
		db, err := gorm.Open(sqlite.Open(dsn("main.db")), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		p := New(Config{Atomic: BestEffort, Shards: []Shard{
			{Name: "s0", Dialector: sqlite.Open(dsn(first)), Logical: []Range{{From: 0, To: half - 1}}},
			{Name: "s1", Dialector: sqlite.Open(dsn(second)), Logical: []Range{{From: half, To: 2*half - 1}}},
		}})
		must(t, db.Use(p))
		t.Cleanup(func() { _ = p.Close() })
		return db, p
	}
	db, p := open("s0.db", "s1.db")
	must(t, p.AutoMigrate(db, &revUser{}))
	must(t, db.Clauses(OnShard(1)).Create(&revUser{Name: "a"}).Error)
	swapped, _ := open("s1.db", "s0.db")
	err := swapped.Clauses(OnShard(2)).Create(&revUser{Name: "b"}).Error
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "DSNs swapped") {
		t.Fatalf("a Create through a config with the DSNs swapped: %v, want ErrInvalidConfig", err)
	}
	for _, name := range []string{"s0.db", "s1.db"} {
		d, err := gorm.Open(sqlite.Open(dsn(name)), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		var names []string
		must(t, d.Model(&revUser{}).Pluck("name", &names).Error)
		if slices.Contains(names, "b") {
			t.Fatalf("%s holds the row the swapped config was refused", name)
		}
	}
	must(t, db.Clauses(OnShard(half+1)).Create(&revUser{Name: "c"}).Error)
}

// TestShardsThatOpenOneDatabaseAreRefused: a database reached by two
// spellings the DSN comparison cannot see through (here a symbolic link to
// its folder) is one database, by its token: two shard names opening it, or
// a shard opening the plugin's own database, are refused when they open,
// and nothing is written there; shards given as Dialector or as DB alike.
func TestShardsThatOpenOneDatabaseAreRefused(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Mkdir(filepath.Join(dir, "real"), 0o755))
	must(t, os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")))
	dsn := func(name string) string { return "file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)" }
	half := Layout{}.ShardCount() / 2
	shard := func(givenAs, name, file string, logical Range) Shard {
		if givenAs == "Dialector" {
			return Shard{Name: name, Dialector: sqlite.Open(dsn(file)), Logical: []Range{logical}}
		}
		opened, err := gorm.Open(sqlite.Open(dsn(file)), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		t.Cleanup(func() {
			if sqlDB, err := opened.DB(); err == nil {
				_ = sqlDB.Close()
			}
		})
		return Shard{Name: name, DB: opened, Logical: []Range{logical}}
	}
	for _, c := range []struct{ givenAs, what, second, says string }{
		{"Dialector", "two shard names", "link/s0.db", "open one database"},
		{"Dialector", "a shard and the plugin's database", "link/main.db", "plugin's own database"},
		{"DB", "two shard names", "link/s0.db", "open one database"},
		{"DB", "a shard and the plugin's database", "link/main.db", "plugin's own database"},
	} {
		c.what += " given as " + c.givenAs
		db, err := gorm.Open(sqlite.Open(dsn("real/main.db")), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		p := New(Config{Atomic: BestEffort, Shards: []Shard{
			shard(c.givenAs, "s0", "real/s0.db", Range{From: 0, To: half - 1}),
			shard(c.givenAs, "s1", c.second, Range{From: half, To: 2*half - 1}),
		}})
		must(t, db.Use(p))
		must(t, db.Clauses(OnShard(1)).Exec("SELECT 1").Error) // s0 opens first
		err = db.Clauses(OnShard(half + 1)).Exec("CREATE TABLE written_there (id INT)").Error
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s on one database: %v, want ErrInvalidConfig saying %q", c.what, err, c.says)
		}
		if err := p.AutoMigrate(db, &revUser{}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s on one database: AutoMigrate: %v, want ErrInvalidConfig", c.what, err)
		}
		must(t, p.Close())
		for _, name := range []string{"real/main.db", "real/s0.db"} {
			d, err := gorm.Open(sqlite.Open(dsn(name)), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			if d.Migrator().HasTable("written_there") || d.Migrator().HasTable(&revUser{}) && name == "real/main.db" {
				t.Errorf("%s on one database: %s holds what the refused shard would have written", c.what, name)
			}
		}
	}
}

// TestShardDBThatNamesTablesOtherwiseIsRefused: the plugin builds every
// statement with its own database's naming, and migrates a shard given as a
// *gorm.DB with that DB's: a shard whose naming differs is refused, one
// that names alike is not.
func TestShardDBThatNamesTablesOtherwiseIsRefused(t *testing.T) {
	dir := t.TempDir()
	half := Layout{}.ShardCount() / 2
	for _, c := range []struct {
		what   string
		naming schema.Namer
		err    error
	}{
		{"a table prefix", schema.NamingStrategy{TablePrefix: "x_"}, ErrInvalidConfig},
		{"singular tables", schema.NamingStrategy{SingularTable: true}, ErrInvalidConfig},
		{"the default, spelled out", schema.NamingStrategy{}, nil},
	} {
		db, err := gorm.Open(sqlite.Open(filepath.Join(dir, c.what+"-main.db")), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		s1, err := gorm.Open(sqlite.Open(filepath.Join(dir, c.what+"-s1.db")), &gorm.Config{Logger: logger.Discard, NamingStrategy: c.naming})
		must(t, err)
		p := New(Config{Atomic: BestEffort, Shards: []Shard{
			{Name: "s0", Dialector: sqlite.Open(filepath.Join(dir, c.what+"-s0.db")), Logical: []Range{{From: 0, To: half - 1}}},
			{Name: "s1", DB: s1, Logical: []Range{{From: half, To: 2*half - 1}}},
		}})
		if err := db.Use(p); !errors.Is(err, c.err) {
			t.Errorf("a shard's DB with %s: %v, want %v", c.what, err, c.err)
		}
		_ = p.Close()
	}
}

// TestStatementsAfterCloseSayThePluginIsClosed: after Close, a statement on
// a database whose pool the plugin opened and closed fails as one on a
// database it never opened: ErrShardUnavailable, the plugin closed.
func TestStatementsAfterCloseSayThePluginIsClosed(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{})
	half := Layout{}.ShardCount() / 2
	must(t, db.Clauses(OnShard(1)).Create(&revUser{Name: "a"}).Error) // s0 opens; s1 may not
	must(t, p.Close())
	for _, shard := range []int{1, half + 1} {
		var users []revUser
		err := db.Clauses(OnShard(shard)).Find(&users).Error
		if !errors.Is(err, ErrShardUnavailable) || !strings.Contains(err.Error(), "the plugin is closed") {
			t.Errorf("a query on shard %d after Close: %v, want ErrShardUnavailable saying the plugin is closed", shard, err)
		}
	}
}

type closedSnowflake struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Name string
}

type closedSegment struct {
	ID   int64 `shardid:"strategy:segment"`
	Name string
}

type closedUnsharded struct {
	ID   uint
	Name string
}

// TestShardedStatementsAfterCloseFailWithOrWithoutShards: after Close, a
// Create of each strategy, and a query, on a sharded model fail with
// ErrShardUnavailable saying the plugin is closed, before an ID is asked
// of a stopped strategy, whether Config lists shards or not; an unsharded
// model's run as before.
func TestShardedStatementsAfterCloseFailWithOrWithoutShards(t *testing.T) {
	models := []any{&revUser{}, &closedSnowflake{}, &closedSegment{}, &closedUnsharded{}}
	withShards, p, _ := revRouted(t, models...)
	file := filepath.Join(t.TempDir(), "alone.db")
	without, err := gorm.Open(sqlite.Open(file), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	alone := New(Config{Log: quiet})
	must(t, without.Use(alone))
	must(t, alone.AutoMigrate(without, models...))
	for _, c := range []struct {
		name   string
		db     *gorm.DB
		plugin *Plugin
	}{{"with shards", withShards, p}, {"without shards", without, alone}} {
		must(t, c.db.Create(&revUser{Name: "before"}).Error)
		must(t, c.plugin.Close())
		for _, row := range []any{&revUser{Name: "after"}, &closedSnowflake{Name: "after"}, &closedSegment{Name: "after"}} {
			if err := c.db.Create(row).Error; !errors.Is(err, ErrShardUnavailable) || !strings.Contains(err.Error(), "the plugin is closed") {
				t.Errorf("%s: a Create of %T after Close: %v, want ErrShardUnavailable saying the plugin is closed", c.name, row, err)
			}
		}
		var users []revUser
		if err := c.db.Find(&users).Error; !errors.Is(err, ErrShardUnavailable) {
			t.Errorf("%s: a query after Close: %v, want ErrShardUnavailable", c.name, err)
		}
		if err := c.db.Create(&closedUnsharded{Name: "after"}).Error; err != nil {
			t.Errorf("%s: an unsharded Create after Close: %v", c.name, err)
		}
	}
	plain, err := gorm.Open(sqlite.Open(file), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	var after int64
	must(t, plain.Model(&revUser{}).Where("name = ?", "after").Count(&after).Error)
	if after != 0 {
		t.Errorf("without shards, %d rows written after Close", after)
	}
}
