package shardid

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/utils/tests"

	"github.com/shardid/shardid/strategies"
)

func TestUseRefusesBadConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		err  error
		text string
	}{
		{"layout widths", Config{Layout: Layout{TimeBits: 41, ShardBits: 13, SequenceBits: 10}}, ErrInvalidLayout, "want 63"},
		{"strategy", Config{DefaultStrategy: "uuidv4"}, ErrInvalidConfig, "allowed: instagram, snowflake"},
		{"worker", Config{Layout: Layout{WorkerBits: strategies.NoWorkerBits}, Snowflake: SnowflakeConfig{FixedWorker: true, WorkerID: 1}}, ErrInvalidConfig, "WorkerBits 0"},
		{"default worker bits", Config{Snowflake: SnowflakeConfig{FixedWorker: true, WorkerID: 64}}, ErrInvalidConfig, "0..63"},
		{"shard bits that would allocate gigabytes", Config{Layout: Layout{ShardBits: 31, SequenceBits: 10}}, ErrInvalidLayout, "at most 16"},
		{"worker with bits", Config{Layout: Layout{WorkerBits: 2}, Snowflake: SnowflakeConfig{FixedWorker: true, WorkerID: 4}}, ErrInvalidConfig, "0..3"},
		{"lease table", Config{Snowflake: SnowflakeConfig{Lease: strategies.LeaseOptions{Table: "x; DROP"}}}, ErrInvalidConfig, "plain SQL identifier"},
		{"map table", Config{MapTable: "map; DROP TABLE users"}, ErrInvalidConfig, "MapTable"},
		// Its kept tables (MapTable_databases) would pass the dialects' 63 characters.
		{"map table too long for its kept tables", Config{MapTable: strings.Repeat("m", 54)}, ErrInvalidConfig, "at most 53"},
		{"negative connect timeout", Config{ConnectTimeout: -time.Second}, ErrInvalidConfig, "ConnectTimeout -1s is negative"},
		{"negative move wait", Config{MoveWait: -1}, ErrInvalidConfig, "MoveWait"},
		{"negative in-doubt wait", Config{InDoubtAfter: -time.Minute}, ErrInvalidConfig, "InDoubtAfter -1m0s is negative"},
		{"negative parts at once", Config{PartsAtOnce: -1}, ErrInvalidConfig, "PartsAtOnce -1 is negative (zero is the default, 16)"},
		{"unknown atomicity", Config{Atomic: Atomicity(2)}, ErrInvalidConfig, "Atomic 2"},
		// An untyped 5 meant as seconds: the map's loop would spin, and refuse every statement.
		{"map refresh of nanoseconds", Config{MapRefresh: 5}, ErrInvalidConfig, "MapRefresh 5ns is under 1ms"},
		{"map refresh of a microsecond", Config{MapRefresh: time.Microsecond}, ErrInvalidConfig, "MapRefresh 1µs is under 1ms"},
		{"in-doubt wait of nanoseconds", Config{InDoubtAfter: 60}, ErrInvalidConfig, "InDoubtAfter 60ns is under 1ms"},
		// The plugin's tables keep a shard's name in VARCHAR(191): MariaDB would refuse, or cut, a longer one.
		{"shard name too long", Config{Shards: []Shard{{Name: strings.Repeat("s", 192), Dialector: sqlite.Open(":memory:"), Logical: []Range{{From: 0, To: 8191}}}}}, ErrInvalidConfig, "name has 192 characters, at most 191"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "x.db")), &gorm.Config{Logger: logger.Discard})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Use(New(c.cfg)); !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("got %v, want %v mentioning %q", err, c.err, c.text)
			}
		})
	}
}

func TestDefaultStrategyIsUsed(t *testing.T) {
	type untyped struct {
		ID int64 `shardid:""`
	}
	db, _ := testDB(t, Config{DefaultStrategy: "snowflake", Layout: Layout{WorkerBits: 3}, Snowflake: SnowflakeConfig{FixedWorker: true, WorkerID: 5}})
	migrate(t, db, &untyped{})
	row := untyped{}
	must(t, db.Create(&row).Error)
	if w := (Layout{WorkerBits: 3}).Decode(row.ID).Worker; w != 5 {
		t.Fatalf("worker %d, want 5: the snowflake default was not used", w)
	}
}

func TestDialectorWrapperKeepsSavePoints(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, &plain{})
	err := db.Transaction(func(tx *gorm.DB) error {
		must(t, tx.Create(&plain{Name: "kept"}).Error)
		_ = tx.Transaction(func(inner *gorm.DB) error {
			must(t, inner.Create(&plain{Name: "rolled back"}).Error)
			return errors.New("roll back the savepoint")
		})
		return nil
	})
	must(t, err)
	var names []string
	db.Model(&plain{}).Pluck("name", &names)
	if len(names) != 1 || names[0] != "kept" {
		t.Fatalf("rows %v, want only the one outside the savepoint", names)
	}
}

// The shared map's heartbeat runs on a pool of the plugin's own: it never
// waits for, or takes, a connection of the application's, whose statements
// keep the connection, and its settings, they had without the plugin.
func TestMapHeartbeatTakesNoApplicationConnection(t *testing.T) {
	db, p, _, _ := routedOverN(t, 2, Config{MapRefresh: 5 * time.Millisecond})
	sqlDB, err := db.DB()
	must(t, err)
	sqlDB.SetMaxOpenConns(1)
	before := sqlDB.Stats().WaitCount
	seen := p.ShardMap()
	must(t, db.Transaction(func(tx *gorm.DB) error { // holds the application's only connection
		time.Sleep(300 * time.Millisecond) // sixty heartbeats
		return nil
	}))
	if waited := sqlDB.Stats().WaitCount - before; waited != 0 {
		t.Fatalf("the application's pool was waited on %d times while its one connection was held", waited)
	}
	if p.ShardMap() != seen {
		t.Fatal("the map changed")
	}
}

// A plugin database SQLite keeps in memory is one per connection: the
// shared map stays on the application's pool there, and works.
func TestMapStoreOfAnInMemoryPluginDatabase(t *testing.T) {
	dir := t.TempDir()
	db, err := gorm.Open(sqlite.Open(":memory:"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	sqlDB, err := db.DB()
	must(t, err)
	sqlDB.SetMaxOpenConns(1) // one database in memory
	count := Layout{}.ShardCount()
	p := New(Config{Atomic: BestEffort, Shards: []Shard{
		{Name: "a", Dialector: sqlite.Open(filepath.Join(dir, "a.db")), Logical: []Range{{From: 0, To: count/2 - 1}}},
		{Name: "b", Dialector: sqlite.Open(filepath.Join(dir, "b.db")), Logical: []Range{{From: count / 2, To: count - 1}}},
	}})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	must(t, p.AutoMigrate(db, &revUser{}))
	u := revUser{Name: "m"}
	must(t, db.Create(&u).Error)
	var got revUser
	must(t, db.First(&got, u.ID).Error)
	var versions int64
	must(t, db.Table("shardid_shard_map").Count(&versions).Error)
	if got.Name != "m" || versions == 0 {
		t.Fatalf("read %+v, and %d map versions in the plugin's database", got, versions)
	}
}

// A GORM handle that only builds SQL (GORM's DummyDialector, which DryRun
// programs use to print statements) has no *sql.DB: the plugin still
// registers, statements build as they do without it, a snowflake ID is
// made in-process, and a strategy that needs the database says so.
func TestHandleThatOnlyBuildsSQL(t *testing.T) {
	open := func() *gorm.DB {
		db, err := gorm.Open(tests.DummyDialector{}, &gorm.Config{DryRun: true, Logger: logger.Discard})
		must(t, err)
		return db
	}
	plain, routed := open(), open()
	must(t, routed.Use(New(Config{Snowflake: SnowflakeConfig{FixedWorker: true}, Log: quiet})))
	type account struct {
		ID   uint
		Name string
	}
	statements := map[string]func(*gorm.DB) *gorm.DB{
		"first":  func(db *gorm.DB) *gorm.DB { return db.First(&account{}, 3) },
		"find":   func(db *gorm.DB) *gorm.DB { return db.Where("name = ?", "x").Find(&[]account{}) },
		"create": func(db *gorm.DB) *gorm.DB { return db.Create(&account{Name: "a"}) },
		"update": func(db *gorm.DB) *gorm.DB { return db.Model(&account{ID: 1}).Update("name", "b") },
	}
	for name, run := range statements {
		want, got := run(plain), run(routed)
		must(t, got.Error)
		if got.Statement.SQL.String() != want.Statement.SQL.String() || fmt.Sprint(got.Statement.Vars) != fmt.Sprint(want.Statement.Vars) {
			t.Errorf("%s: built %q %v with the plugin, %q %v without", name, got.Statement.SQL.String(), got.Statement.Vars, want.Statement.SQL.String(), want.Statement.Vars)
		}
	}

	type order struct {
		ID   int64 `shardid:"strategy:snowflake"`
		Name string
	}
	row := order{Name: "o"}
	created := routed.Create(&row)
	must(t, created.Error)
	if row.ID == 0 || !strings.HasPrefix(created.Statement.SQL.String(), "INSERT INTO `orders`") {
		t.Fatalf("a snowflake Create built %q with ID %d", created.Statement.SQL.String(), row.ID)
	}
	type invoice struct {
		ID int64 `shardid:""` // instagram: its clock-sequence lives in the database
	}
	if err := routed.Create(&invoice{}).Error; err == nil || !strings.Contains(err.Error(), "instagram") {
		t.Fatalf("an instagram Create on a handle without a database: %v, want the strategy's error", err)
	}
}

// TestPluginOnASecondDatabaseIsRefused: one plugin routes the statements of
// the database it was registered on; registered on a second one, it would
// leave that one's sharded models without IDs or routing, so it is refused.
// gorm.Open with a copy of the first database's config (as dbresolver opens
// its sources) initializes it again, and is accepted.
func TestPluginOnASecondDatabaseIsRefused(t *testing.T) {
	dir := t.TempDir()
	first, err := gorm.Open(sqlite.Open(filepath.Join(dir, "first.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := New(Config{})
	must(t, first.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	second, err := gorm.Open(sqlite.Open(filepath.Join(dir, "second.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	if err := second.Use(p); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("the plugin registered on a second database: %v, want ErrInvalidConfig", err)
	}
	if _, ok := second.Config.Plugins[p.Name()]; ok {
		t.Error("the second database lists the plugin it refused")
	}
	listed, err := gorm.Open(sqlite.Open(filepath.Join(dir, "listed.db")), &gorm.Config{Logger: logger.Discard, Plugins: map[string]gorm.Plugin{p.Name(): p}})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("the plugin given in a second database's gorm.Config.Plugins: %v, want ErrInvalidConfig", err)
	}
	if listed != nil {
		if db, err := listed.DB(); err == nil {
			_ = db.Close()
		}
	}
	copied := *first.Config
	if _, err := gorm.Open(sqlite.Open(filepath.Join(dir, "source.db")), &copied); err != nil {
		t.Fatalf("gorm.Open with a copy of the first database's config: %v", err)
	}
}

// TestToSQLShowsAStatementThatNamesNoShard: db.ToSQL (DryRun) of a query on
// a sharded model that names no shard shows the SQL plain GORM would build,
// and the statement is refused all the same: it runs nowhere.
func TestToSQLShowsAStatementThatNamesNoShard(t *testing.T) {
	db, _, _ := revRouted(t, &revUser{})
	plain, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "plain.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	byName := func(tx *gorm.DB) *gorm.DB { return tx.Where("name = ?", "ann").Find(&[]revUser{}) }
	if got, want := db.ToSQL(byName), plain.ToSQL(byName); got != want || got == "" {
		t.Fatalf("ToSQL: %q, plain GORM: %q", got, want)
	}
	if err := db.Session(&gorm.Session{DryRun: true}).Where("name = ?", "ann").Find(&[]revUser{}).Error; !errors.Is(err, ErrNoShard) {
		t.Fatalf("DryRun of a query naming no shard: %v, want ErrNoShard", err)
	}
}

// TestProcessesWithoutShardsShareTheLayoutTheirDatabaseRecords: without
// Config.Shards, the first process to migrate a sharded model records its
// layout in the plugin's database; a process of another layout on that
// database (a rolling restart that changed it) is refused at db.Use, or, if
// it started before the record, at its migration; one of the same layout is
// not.
func TestProcessesWithoutShardsShareTheLayoutTheirDatabaseRecords(t *testing.T) {
	dsn := "file:" + filepath.Join(t.TempDir(), "one.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	process := func(layout Layout) (*gorm.DB, *Plugin, error) {
		db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		p := New(Config{Layout: layout, Log: quiet})
		t.Cleanup(func() { _ = p.Close() })
		return db, p, db.Use(p)
	}
	earlyDB, early, err := process(Layout{ShardBits: 12}) // nothing recorded yet: nothing to refuse
	must(t, err)
	oldDB, old, err := process(Layout{})
	must(t, err)
	must(t, old.AutoMigrate(oldDB, &revUser{}))
	must(t, oldDB.Create(&revUser{Name: "old"}).Error)

	if _, _, err := process(Layout{SequenceBits: 11}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "shardid_layout") {
		t.Errorf("db.Use of a process of another layout: %v, want ErrInvalidConfig naming shardid_layout", err)
	}
	if err := early.AutoMigrate(earlyDB, &revUser{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("AutoMigrate of a process of another layout started before the record: %v, want ErrInvalidConfig", err)
	}
	againDB, _, err := process(Layout{})
	must(t, err)
	must(t, againDB.Create(&revUser{Name: "again"}).Error)
}

// TestAStatementAfterAFailedUseNamesItsError: GORM keeps the callbacks of a
// db.Use that failed after registering them (here a layout other than the
// one the database records); a statement on a sharded model is then refused
// with that Use's error, not as if the plugin had been closed, and writes
// nothing. A good Use afterwards works.
func TestAStatementAfterAFailedUseNamesItsError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	openAgain := func() *gorm.DB {
		again, err := gorm.Open(sqlite.Open(path), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if sqlDB, err := again.DB(); err == nil {
				_ = sqlDB.Close()
			}
		})
		return again
	}
	p := New(Config{})
	first := openAgain()
	must(t, first.Use(p))
	must(t, p.AutoMigrate(first, &revUser{}))
	must(t, p.Close())

	db2 := openAgain()
	bad := New(Config{Layout: Layout{ShardBits: 12}})
	if err := db2.Use(bad); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Use with a layout other than the recorded one: %v, want ErrInvalidConfig", err)
	}
	u := revUser{Name: "x"}
	if err := db2.Create(&u).Error; !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "db.Use failed") || errors.Is(err, ErrShardUnavailable) || u.ID != 0 {
		t.Errorf("Create after a failed Use: %v (ID %d); want the Use's ErrInvalidConfig, saying db.Use failed, and no ID", err, u.ID)
	}
	if err := db2.First(&revUser{}, 1).Error; !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("First after a failed Use: %v; want the Use's ErrInvalidConfig", err)
	}
	var n int64
	must(t, openAgain().Table("rev_users").Count(&n).Error)
	if n != 0 {
		t.Errorf("%d rows written after a failed Use", n)
	}
	good := New(Config{})
	must(t, db2.Use(good))
	t.Cleanup(func() { _ = good.Close() })
	must(t, db2.Create(&revUser{Name: "y"}).Error)
}

// TestLayoutBeforeUseIsTheConfiguredOne: Layout() before db.Use is the
// configured layout with its defaults filled in, not the default layout.
func TestLayoutBeforeUseIsTheConfiguredOne(t *testing.T) {
	p := New(Config{Layout: Layout{ShardBits: 12}})
	if l := p.Layout(); l.ShardBits != 12 || l.SequenceBits != 11 || l.ShardCount() != 4096 {
		t.Errorf("Layout() before Use: %+v (ShardCount %d), want 40/12/11", l, l.ShardCount())
	}
}

// TestPluginMethodsBeforeUseDoNotPanic: every method of a plugin not yet
// registered with db.Use returns (what needs its database fails with
// ErrPluginNotOpen), with Config.Shards and without.
func TestPluginMethodsBeforeUseDoNotPanic(t *testing.T) {
	db, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "m.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	calls := map[string]func(p *Plugin) error{
		"Migrator":    func(p *Plugin) error { return p.Migrator(db).CreateTable(&revUser{}) },
		"AutoMigrate": func(p *Plugin) error { return p.AutoMigrate(db, &revUser{}) },
		"Move": func(p *Plugin) error {
			_, err := p.Move(ctx, Move{Logical: Range{From: 0, To: 1}, To: "x"})
			return err
		},
		"CancelMove":           func(p *Plugin) error { return p.CancelMove(ctx, Range{From: 0, To: 1}) },
		"CleanupMove":          func(p *Plugin) error { return p.CleanupMove(ctx, Range{From: 0, To: 1}) },
		"Moves":                func(p *Plugin) error { _, err := p.Moves(ctx); return err },
		"MoveStats":            func(p *Plugin) error { _ = p.MoveStats(); return nil },
		"Audit":                func(p *Plugin) error { _, err := p.Audit(ctx); return err },
		"MapVersion":           func(p *Plugin) error { _ = p.MapVersion(); return nil },
		"RefreshMap":           func(p *Plugin) error { _, err := p.RefreshMap(ctx); return err },
		"Ping":                 func(p *Plugin) error { _, err := p.Ping(ctx); return err },
		"CountStatements":      func(p *Plugin) error { p.CountStatements(); return nil },
		"StatementStats":       func(p *Plugin) error { _ = p.StatementStats(); return nil },
		"FanOutStats":          func(p *Plugin) error { _ = p.FanOutStats(); return nil },
		"PoolStats":            func(p *Plugin) error { _ = p.PoolStats(); return nil },
		"Physicals":            func(p *Plugin) error { _ = p.Physicals(); return nil },
		"RouteOf":              func(p *Plugin) error { _, _ = p.RouteOf(db.Model(&revUser{})); return nil },
		"MovedWrites":          func(p *Plugin) error { _ = p.MovedWrites(); return nil },
		"RecoverTransactions":  func(p *Plugin) error { return p.RecoverTransactions(ctx) },
		"TransactionStats":     func(p *Plugin) error { _ = p.TransactionStats(); return nil },
		"AddTicketServer":      func(p *Plugin) error { return p.AddTicketServer(ctx, TicketServer{Name: "t", DB: db, Offset: 1}) },
		"PrepareTicketServers": func(p *Plugin) error { return p.PrepareTicketServers(ctx) },
		"Stats":                func(p *Plugin) error { _ = p.Stats(); return nil },
		"ShardMap":             func(p *Plugin) error { _ = p.ShardMap(); return nil },
		"SwapShardMap":         func(p *Plugin) error { return p.SwapShardMap(nil) },
		"Close":                func(p *Plugin) error { return p.Close() },
	}
	mustNotOpen := map[string]bool{"Migrator": true, "AutoMigrate": true, "RecoverTransactions": true, "SwapShardMap": true}
	for name, call := range calls {
		for _, cfg := range []Config{{}, {Shards: []Shard{{Name: "a", DB: db, Logical: []Range{{From: 0, To: 8191}}}}}} {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s before db.Use (%d shards): panic: %v", name, len(cfg.Shards), r)
					}
				}()
				if err := call(New(cfg)); mustNotOpen[name] && !errors.Is(err, ErrPluginNotOpen) {
					t.Errorf("%s before db.Use (%d shards): %v; want ErrPluginNotOpen", name, len(cfg.Shards), err)
				}
			}()
		}
		func() { // a nil *Plugin (a field never set) is one never registered
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s of a nil *Plugin: panic: %v", name, r)
				}
			}()
			if err := call(nil); mustNotOpen[name] && !errors.Is(err, ErrPluginNotOpen) {
				t.Errorf("%s of a nil *Plugin: %v; want ErrPluginNotOpen", name, err)
			}
		}()
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("db.Use of a nil *Plugin: panic: %v", r)
			}
		}()
		if err := db.Use((*Plugin)(nil)); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "shardid.New") {
			t.Errorf("db.Use of a nil *Plugin: %v; want ErrInvalidConfig saying to make it with shardid.New", err)
		}
	}()
	if m := New(Config{}).ShardMap(); m != nil {
		t.Errorf("ShardMap before db.Use: %v; want nil", m)
	}
}

// TestAProcessWithoutShardsIsRefusedBesideASharedMap: one pod of a
// deployment whose config lost its Shards, on the plugin's database where
// the others keep their shared map, would put every sharded row on the
// plugin's database, where they neither write nor read them. It is refused
// at db.Use with ErrInvalidConfig naming the map and its databases, and
// nothing is made there.
func TestAProcessWithoutShardsIsRefusedBesideASharedMap(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "main.db") + "?_pragma=busy_timeout(10000)"
	count := Layout{}.ShardCount()
	routed, err := gorm.Open(sqlite.Open(main), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := New(Config{Atomic: BestEffort, Shards: []Shard{
		{Name: "pg-a", Dialector: sqlite.Open(filepath.Join(dir, "a.db")), Logical: []Range{{From: 0, To: count/2 - 1}}},
		{Name: "pg-b", Dialector: sqlite.Open(filepath.Join(dir, "b.db")), Logical: []Range{{From: count / 2, To: count - 1}}},
	}})
	must(t, routed.Use(p))
	defer p.Close()
	must(t, p.AutoMigrate(routed, &revUser{}))

	lost, err := gorm.Open(sqlite.Open(main), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	bare := New(Config{})
	err = lost.Use(bare)
	defer bare.Close()
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "shardid_shard_map") || !strings.Contains(err.Error(), "pg-a, pg-b") {
		t.Fatalf("db.Use without Shards beside a shared map: %v; want ErrInvalidConfig naming the map and its databases", err)
	}
	if lost.Migrator().HasTable(&revUser{}) {
		t.Fatal("the sharded table was made on the plugin's database")
	}
	// A process of sharded models not of that map opts out with a map table of its own.
	other, err := gorm.Open(sqlite.Open(main), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	apart := New(Config{MapTable: "other_app_map"})
	must(t, other.Use(apart))
	defer apart.Close()
}
