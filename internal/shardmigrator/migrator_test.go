package shardmigrator

import (
	"bytes"
	"context"
	"errors"
	"log"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/strategies"
)

// fakePlugin shards the tables it names over two SQLite files.
type fakePlugin struct {
	physical  []*gorm.DB
	sharded   map[string]bool // table names
	prepare   error           // what PrepareStrategies returns
	down      error           // what Reachable returns
	events    bytes.Buffer    // what Events gets
	migrating sync.Mutex      // the plugin's lock of migrations, in one process
}

func (f *fakePlugin) Events() *slog.Logger { return slog.New(slog.NewTextHandler(&f.events, nil)) }

func (f *fakePlugin) Routed() bool                    { return true }
func (f *fakePlugin) Physical() []string              { return []string{"s0", "s1"} }
func (f *fakePlugin) Reachable(context.Context) error { return f.down }
func (f *fakePlugin) LockMigrations(context.Context) (func(), error) {
	f.migrating.Lock()
	return f.migrating.Unlock, nil
}
func (f *fakePlugin) LogOn(_ int, l logger.Interface) logger.Interface { return l }

func (f *fakePlugin) OpenPhysical(_ context.Context, k int) (*gorm.DB, error) {
	return f.physical[k], nil
}

func (f *fakePlugin) Model(s *schema.Schema) (*Model, error) {
	if !f.sharded[s.Table] {
		return nil, nil
	}
	return &Model{Sharded: true, Key: "ID", Generators: []strategies.Generator{nil}}, nil
}
func (f *fakePlugin) ShardedTable(table string) bool { return f.sharded[table] }
func (f *fakePlugin) OwnCopy(db *gorm.DB) *gorm.DB   { return db }
func (f *fakePlugin) PrepareStrategies(*gorm.DB, map[strategies.Generator]bool) error {
	return f.prepare
}
func (f *fakePlugin) RegisterTables(*gorm.DB, []any) error { return nil }
func (f *fakePlugin) KeepFences(db *gorm.DB) (*gorm.DB, func(error) error, error) {
	return db, func(err error) error { return err }, nil
}
func (f *fakePlugin) CheckNewTables(*gorm.DB, []any) error { return nil }
func (f *fakePlugin) RenameRegisteredColumn(*gorm.DB, string, string, string) error {
	return nil
}
func (f *fakePlugin) CheckTableUnmoved(*gorm.DB, string) error { return nil }
func (f *fakePlugin) UnregisterTable(*gorm.DB, string) error   { return nil }
func (f *fakePlugin) RenameRegisteredTable(*gorm.DB, string, string) error {
	return nil
}
func (f *fakePlugin) TagError(model, field, detail string) error {
	return errors.New(model + "." + field + ": " + detail)
}

type fakeUser struct {
	ID   int64
	Name string
}

type fakeCountry struct {
	ID   int64
	Name string
}

// open returns the plugin's database, with its log in out, and a plugin
// that shards fake_users over two more.
func open(t *testing.T, out *bytes.Buffer) (*gorm.DB, *fakePlugin) {
	t.Helper()
	dir := t.TempDir()
	config := func() *gorm.Config {
		return &gorm.Config{Logger: logger.New(log.New(out, "", 0), logger.Config{LogLevel: logger.Warn})}
	}
	dbs := make([]*gorm.DB, 3)
	for i, name := range []string{"main", "s0", "s1"} {
		db, err := gorm.Open(sqlite.Open("file:"+filepath.Join(dir, name+".db")), config())
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
	return dbs[0], &fakePlugin{physical: dbs[1:], sharded: map[string]bool{"fake_users": true}}
}

// TestTablesGoWhereThePluginSays: a sharded model's table on every physical
// database and nowhere else, an unsharded one's on the plugin's database.
func TestTablesGoWhereThePluginSays(t *testing.T) {
	db, plugin := open(t, &bytes.Buffer{})
	m := New(plugin, db)
	if err := m.AutoMigrate(&fakeUser{}, &fakeCountry{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		where string
		db    *gorm.DB
		users bool
	}{{"the plugin's database", db, false}, {"s0", plugin.physical[0], true}, {"s1", plugin.physical[1], true}} {
		if got := c.db.Migrator().HasTable("fake_users"); got != c.users {
			t.Errorf("fake_users on %s: %v, want %v", c.where, got, c.users)
		}
		if got := c.db.Migrator().HasTable("fake_countries"); got == c.users {
			t.Errorf("fake_countries on %s: %v, want %v", c.where, got, !c.users)
		}
	}
	if !m.HasTable(&fakeUser{}) || !m.HasTable(&fakeCountry{}) {
		t.Error("HasTable: false for a table every database it belongs on has")
	}
}

// TestPhysicalDatabasesThatDisagree: ColumnTypes fails with
// ErrShardsDisagree naming both databases, with no columns (they would be
// the first database's alone); HasColumn says false and warns,
// among the plugin's events (not in GORM's log, which is the statements').
func TestPhysicalDatabasesThatDisagree(t *testing.T) {
	var out bytes.Buffer
	db, plugin := open(t, &out)
	m := New(plugin, db)
	if err := m.AutoMigrate(&fakeUser{}); err != nil {
		t.Fatal(err)
	}
	if err := plugin.physical[1].Migrator().DropColumn(&fakeUser{}, "Name"); err != nil {
		t.Fatal(err)
	}
	if columns, err := m.ColumnTypes(&fakeUser{}); !errors.Is(err, ErrShardsDisagree) || !strings.Contains(err.Error(), "s0 and s1") || columns != nil {
		t.Errorf("ColumnTypes = %d columns, %v; want none and ErrShardsDisagree between s0 and s1", len(columns), err)
	}
	out.Reset()
	if m.HasColumn(&fakeUser{}, "Name") { // logs a warning
		t.Error("HasColumn: true though s1 has no such column")
	}
	events := plugin.events.String()
	for _, want := range []string{"level=WARN", ErrShardsDisagree.Error(), `question="column shardmigrator.fakeUser.Name exists"`, "yes=s0", "no=s1"} {
		if !strings.Contains(events, want) {
			t.Errorf("the warning %q does not say %q", events, want)
		}
	}
	if strings.Contains(out.String(), ErrShardsDisagree.Error()) {
		t.Errorf("the warning went to GORM's logger too: %q", out.String())
	}
}

// TestGetTablesWarnsOfAShardedTableSomeDatabasesLack: GetTables lists a
// sharded table one physical database lacks, as the union of the databases'
// tables, and warns naming which have it and which do not; an unsharded
// table on one database alone is no disagreement.
func TestGetTablesWarnsOfAShardedTableSomeDatabasesLack(t *testing.T) {
	db, plugin := open(t, &bytes.Buffer{})
	m := New(plugin, db)
	if err := m.AutoMigrate(&fakeUser{}); err != nil {
		t.Fatal(err)
	}
	if err := plugin.physical[1].Migrator().DropTable(&fakeUser{}); err != nil {
		t.Fatal(err)
	}
	if err := plugin.physical[0].Migrator().CreateTable(&fakeCountry{}); err != nil {
		t.Fatal(err)
	}
	tables, err := m.GetTables()
	if err != nil || !slices.Contains(tables, "fake_users") {
		t.Fatalf("GetTables = %v, %v; want fake_users among them", tables, err)
	}
	events := plugin.events.String()
	for _, want := range []string{"level=WARN", ErrShardsDisagree.Error(), `question="table fake_users exists"`, "yes=s0", "no=s1"} {
		if !strings.Contains(events, want) {
			t.Errorf("the warning %q does not say %q", events, want)
		}
	}
	if strings.Contains(events, "fake_countries") {
		t.Errorf("an unsharded table was warned of: %q", events)
	}
}

// TestColumnsAndIndexesThatDifferBeyondTheirNames: a column whose
// nullability differs between two databases, and an index unique on one of
// them only, fail with ErrShardsDisagree rather than reading as the first
// database's.
func TestColumnsAndIndexesThatDifferBeyondTheirNames(t *testing.T) {
	db, plugin := open(t, &bytes.Buffer{})
	m := New(plugin, db)
	exec := func(sql string, on int) {
		t.Helper()
		if err := plugin.physical[on].Exec(sql).Error; err != nil {
			t.Fatal(err)
		}
	}
	exec("CREATE TABLE fake_users (id integer PRIMARY KEY, name varchar(40) NOT NULL)", 0)
	exec("CREATE TABLE fake_users (id integer PRIMARY KEY, name varchar(40))", 1)
	if columns, err := m.ColumnTypes(&fakeUser{}); !errors.Is(err, ErrShardsDisagree) {
		t.Errorf("ColumnTypes = %d columns, %v; want ErrShardsDisagree (NOT NULL on s0 only)", len(columns), err)
	}
	exec("CREATE UNIQUE INDEX idx_fake_users_name ON fake_users (name)", 0)
	exec("CREATE INDEX idx_fake_users_name ON fake_users (name)", 1)
	if indexes, err := m.GetIndexes(&fakeUser{}); !errors.Is(err, ErrShardsDisagree) {
		t.Errorf("GetIndexes = %d indexes, %v; want ErrShardsDisagree (unique on s0 only)", len(indexes), err)
	}
	exec("DROP TABLE fake_users", 1)
	exec("CREATE TABLE fake_users (id integer PRIMARY KEY, name varchar(40) NOT NULL)", 1)
	exec("CREATE UNIQUE INDEX idx_fake_users_name ON fake_users (name)", 1)
	if _, err := m.ColumnTypes(&fakeUser{}); err != nil {
		t.Errorf("ColumnTypes of databases that agree: %v", err)
	}
	if _, err := m.GetIndexes(&fakeUser{}); err != nil {
		t.Errorf("GetIndexes of databases that agree: %v", err)
	}
}

// TestAFailedMigrationDropsWhatItCreated: a strategy that cannot be prepared
// leaves no table the migration created.
func TestAFailedMigrationDropsWhatItCreated(t *testing.T) {
	db, plugin := open(t, &bytes.Buffer{})
	plugin.prepare = errors.New("no clock table")
	m := New(plugin, db)
	if err := m.AutoMigrate(&fakeCountry{}, &fakeUser{}); !errors.Is(err, plugin.prepare) {
		t.Fatalf("AutoMigrate = %v; want the strategy's error", err)
	}
	if db.Migrator().HasTable(&fakeCountry{}) {
		t.Error("fake_countries is left on the plugin's database")
	}
}

// TestQuestionsOfNoModel: a yes/no question of nil, or of a nil pointer, is
// answered, not a panic.
func TestQuestionsOfNoModel(t *testing.T) {
	db, plugin := open(t, &bytes.Buffer{})
	m := New(plugin, db)
	for _, value := range []any{nil, (*fakeUser)(nil)} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("HasTable(%#v) panicked: %v", value, r)
				}
			}()
			_ = m.HasTable(value)
			_ = m.HasColumn(value, "Name")
			_ = m.HasIndex(value, "idx")
		}()
	}
}

type fakeUserWithEmail struct {
	ID    int64
	Name  string
	Email string
}

func (fakeUserWithEmail) TableName() string { return "fake_users" }

// TestFailedMigrationKeepsTablesItCouldNotSee: a database that fails the
// look for its tables (a connection reset), then the change, keeps the table
// and its rows: a table the migration could not see is not one it created.
func TestFailedMigrationKeepsTablesItCouldNotSee(t *testing.T) {
	db, plugin := open(t, &bytes.Buffer{})
	m := New(plugin, db)
	if err := m.AutoMigrate(&fakeUser{}); err != nil {
		t.Fatal(err)
	}
	s1 := plugin.physical[1]
	if err := s1.Create(&fakeUser{ID: 1, Name: "kept"}).Error; err != nil {
		t.Fatal(err)
	}
	failFirstLook(t, s1)
	reset := errors.New("connection reset by peer")
	if err := s1.Callback().Raw().Before("gorm:raw").Register("test:fail_alter", func(tx *gorm.DB) {
		if strings.HasPrefix(tx.Statement.SQL.String(), "ALTER TABLE") {
			tx.AddError(reset)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := m.AutoMigrate(&fakeUserWithEmail{}); err == nil || !strings.Contains(err.Error(), "on s1") {
		t.Fatalf("AutoMigrate with s1 failing: %v, want an error naming s1", err)
	}
	var n int64
	if err := plugin.physical[1].Table("fake_users").Count(&n).Error; err != nil || n != 1 {
		t.Fatalf("s1's fake_users after the failed migration: %d rows, %v; want its 1 row kept", n, err)
	}
}

// TestChangesWaitForEveryDatabase: with a physical database down, a change
// of a sharded table is made on none of them, not on those before it.
func TestChangesWaitForEveryDatabase(t *testing.T) {
	db, plugin := open(t, &bytes.Buffer{})
	m := New(plugin, db)
	if err := m.AutoMigrate(&fakeUser{}); err != nil {
		t.Fatal(err)
	}
	plugin.down = errors.New("s1 did not answer")
	changes := map[string]func() error{
		"AutoMigrate":  func() error { return m.AutoMigrate(&fakeUserWithEmail{}) },
		"AddColumn":    func() error { return m.AddColumn(&fakeUserWithEmail{}, "Email") },
		"RenameColumn": func() error { return m.RenameColumn(&fakeUser{}, "name", "title") },
		"DropTable":    func() error { return m.DropTable(&fakeUser{}) },
	}
	for name, change := range changes {
		if err := change(); err == nil || !strings.Contains(err.Error(), "s1 did not answer") {
			t.Errorf("%s with s1 down: %v, want its error", name, err)
		}
		for k, s := range plugin.physical {
			if !s.Migrator().HasTable("fake_users") || !s.Migrator().HasColumn(&fakeUser{}, "name") || s.Migrator().HasColumn(&fakeUserWithEmail{}, "email") {
				t.Fatalf("%s with s1 down changed s%d", name, k)
			}
		}
	}
}

// TestRenameFinishesWhereItStopped: a rename made on some databases only (one
// went down part way) is finished by running it again; run where it is made
// everywhere, it fails as GORM's does on one database.
func TestRenameFinishesWhereItStopped(t *testing.T) {
	db, plugin := open(t, &bytes.Buffer{})
	m := New(plugin, db)
	if err := m.AutoMigrate(&fakeUser{}); err != nil {
		t.Fatal(err)
	}
	if err := plugin.physical[0].Migrator().RenameColumn(&fakeUser{}, "name", "title"); err != nil {
		t.Fatal(err)
	}
	if err := m.RenameColumn(&fakeUser{}, "name", "title"); err != nil {
		t.Fatalf("running the rename again: %v", err)
	}
	for k, s := range plugin.physical {
		if s.Migrator().HasColumn(&fakeUser{}, "name") || !s.Migrator().HasColumn(&fakeUser{}, "title") {
			t.Errorf("s%d after the rename: name %v, title %v", k, s.Migrator().HasColumn(&fakeUser{}, "name"), s.Migrator().HasColumn(&fakeUser{}, "title"))
		}
	}
	if err := m.RenameColumn(&fakeUser{}, "name", "title"); err == nil {
		t.Error("a rename made everywhere ran again without an error, as it would not on one database")
	}
}

// TestDropColumnAskedOfADatabaseThatFailsTheLook: a database whose look for
// the column fails is not taken for one where the drop is made already: the
// drop runs there too.
func TestDropColumnAskedOfADatabaseThatFailsTheLook(t *testing.T) {
	db, plugin := open(t, &bytes.Buffer{})
	m := New(plugin, db)
	if err := m.AutoMigrate(&fakeUser{}); err != nil {
		t.Fatal(err)
	}
	failFirstLook(t, plugin.physical[1])
	if err := m.DropColumn(&fakeUser{}, "Name"); err != nil {
		t.Fatal(err)
	}
	for k, s := range plugin.physical {
		if s.Migrator().HasColumn(&fakeUser{}, "name") {
			t.Errorf("s%d keeps the dropped column", k)
		}
	}
}

// failFirstLook makes db's first look at its tables (SQLite's sqlite_master)
// fail, as a database that drops the connection answers it.
func failFirstLook(t *testing.T, db *gorm.DB) {
	t.Helper()
	lookFails := 1
	if err := db.Callback().Row().Before("gorm:row").Register("test:fail_look", func(tx *gorm.DB) {
		if strings.Contains(tx.Statement.SQL.String(), "sqlite_master") && lookFails > 0 {
			lookFails--
			tx.Statement.SQL.Reset() // the database answers the look with an error
			tx.Statement.SQL.WriteString("SELECT * FROM a_look_that_fails")
			tx.Statement.Vars = nil
		}
	}); err != nil {
		t.Fatal(err)
	}
}
