package shardid

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type (
	rawAuthor struct {
		ID   int64 `shardid:""`
		Name string
	}
	rawSetting struct { // unsharded: lives on the plugin's database
		ID    int64
		Value string `gorm:"index"`
	}
	// rawHooked runs SQL on the unsharded table from a hook, on its own shard's connection.
	rawHooked struct {
		ID   int64 `shardid:""`
		Name string
	}
)

func (h *rawHooked) AfterCreate(tx *gorm.DB) error {
	return tx.Exec("UPDATE raw_settings SET value = ?", h.Name).Error
}

// routedSQLite opens the plugin's database and two physical SQLite
// databases, each with half of the logical shards, and returns them opened
// directly too.
func routedSQLite(t *testing.T) (*gorm.DB, *Plugin, []*gorm.DB) {
	t.Helper()
	db, p, direct := twoSQLiteShards(t)
	migrate(t, db, &rawSetting{}) // the sharded tables on each physical database, without the plugin
	for _, d := range direct {
		migrate(t, d, &rawAuthor{}, &rawHooked{})
	}
	return db, p, direct
}

func TestRawSQLNamingAShardedTableIsRefused(t *testing.T) {
	db, _, direct := routedSQLite(t)
	a := rawAuthor{Name: "kept"}
	must(t, db.Create(&a).Error)
	for _, sql := range []string{
		"DELETE FROM raw_authors",
		"DELETE FROM /* comment */ raw_authors",
		"DELETE FROM\n-- comment\nraw_authors",
		`DELETE FROM "raw_authors"`,
		"DELETE FROM `raw_authors`",
		"DELETE FROM [raw_authors]",
		"DELETE FROM RAW_AUTHORS",
		`DELETE FROM "main"."raw_authors"`,
		"DELETE FROM main.raw_authors",
		"UPDATE raw_settings SET value = 'x'; DELETE FROM raw_authors",
		"WITH doomed AS (SELECT id FROM raw_authors) DELETE FROM raw_settings WHERE id IN (SELECT id FROM doomed)",
		"CREATE INDEX idx_raw_authors_name ON raw_authors (name)",
		"ALTER TABLE raw_authors ADD COLUMN age integer",
		"DROP TABLE raw_authors",
		"PRAGMA table_info(raw_authors)", // not read, and names the table
	} {
		err := db.Exec(sql).Error
		if !errors.Is(err, ErrNoShard) {
			t.Errorf("%s: got %v, want ErrNoShard", sql, err)
		}
	}
	// A table without its model is read, not guessed at.
	for _, table := range []string{"raw_authors", "main.raw_authors", "RAW_AUTHORS", "raw_settings s JOIN raw_authors a ON a.id = s.id"} {
		err := db.Table(table).Where("1 = 1").Delete(&map[string]any{}).Error
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, ErrNoShard) || strings.Contains(fe.Detail, "could not be read") {
			t.Errorf("Table(%q): got %v, want ErrNoShard for a table read", table, err)
		}
	}
	// Nothing changed on the shards: the row, its columns, no new index.
	for i, d := range direct {
		var n int64
		must(t, d.Model(&rawAuthor{}).Count(&n).Error)
		if want := int64(len(where(db, a.ID, i))); n != want {
			t.Errorf("physical %d holds %d authors, want %d", i, n, want)
		}
		if d.Migrator().HasColumn(&rawAuthor{}, "age") || d.Migrator().HasIndex(&rawAuthor{}, "idx_raw_authors_name") {
			t.Errorf("physical %d was altered", i)
		}
	}
}

// where lists the physical database holding id, as its shard bits say.
func where(db *gorm.DB, id int64, physical int) []int {
	p := db.Config.Plugins[pluginName].(*Plugin)
	if p.ShardMap().Physical(p.Layout().Shard(id)) == physical {
		return []int{physical}
	}
	return nil
}

func TestRawSQLThatNamesNoShardedTableRunsAsWithoutThePlugin(t *testing.T) {
	db, _, _ := routedSQLite(t)
	must(t, db.Create(&rawSetting{Value: "v"}).Error)
	for _, sql := range []string{
		"SELECT 1",
		"SELECT value AS raw_authors FROM raw_settings WHERE value <> 'raw_authors' /* raw_authors */",
		"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'raw_authors'",
		"PRAGMA foreign_keys",
		"SELECT * FROM pragma_index_list('raw_settings')",
	} {
		var rows []map[string]any
		if err := db.Raw(sql).Scan(&rows).Error; err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
	// GORM's migrator on an unsharded model, and its savepoints.
	m := db.Migrator()
	must(t, m.DropIndex(&rawSetting{}, "Value"))
	must(t, m.CreateIndex(&rawSetting{}, "Value"))
	must(t, m.RenameColumn(&rawSetting{}, "value", "text"))
	must(t, m.RenameColumn(&rawSetting{}, "text", "value"))
	if !m.HasTable(&rawSetting{}) || !m.HasColumn(&rawSetting{}, "value") {
		t.Error("the migrator does not see the unsharded table")
	}
	err := db.Transaction(func(tx *gorm.DB) error {
		must(t, tx.Exec("SAVEPOINT by_hand").Error) // as GORM's dialectors set them
		return tx.Transaction(func(inner *gorm.DB) error {
			return inner.Create(&rawSetting{Value: "nested"}).Error
		})
	})
	must(t, err)
}

func TestRawSQLOnAnUnshardedTableFromAShardIsRefused(t *testing.T) {
	db, _, direct := routedSQLite(t)
	must(t, db.Create(&rawSetting{Value: "before"}).Error)
	a := rawAuthor{Name: "a"}
	must(t, db.Create(&a).Error)
	// A hook's SQL runs on its statement's shard connection.
	err := db.Create(&rawHooked{Name: "after"}).Error
	if !errors.Is(err, ErrCrossShard) {
		t.Errorf("raw SQL on an unsharded table in a hook: got %v, want ErrCrossShard", err)
	}
	for i, d := range direct {
		var n int64
		must(t, d.Model(&rawHooked{}).Count(&n).Error)
		if n != 0 {
			t.Errorf("physical %d keeps the refused row", i)
		}
	}
	for name, tx := range map[string]*gorm.DB{
		"a shard clause":   db.Clauses(ByID(a.ID)).Exec("UPDATE raw_settings SET value = 'x'"),
		"unreadable SQL":   db.Clauses(ByID(a.ID)).Exec("PRAGMA table_info(raw_settings)"),
		"schema-qualified": db.Clauses(ByID(a.ID)).Raw(`SELECT * FROM "main"."raw_settings"`).Scan(&[]rawSetting{}),
	} {
		if !errors.Is(tx.Error, ErrCrossShard) {
			t.Errorf("%s: got %v, want ErrCrossShard", name, tx.Error)
		}
	}
	err = db.Clauses(ByID(a.ID)).Transaction(func(tx *gorm.DB) error {
		return tx.Exec("UPDATE raw_settings SET value = 'x'").Error
	})
	if !errors.Is(err, ErrCrossShard) {
		t.Errorf("in a shard's transaction: got %v, want ErrCrossShard", err)
	}
	var s rawSetting
	must(t, db.First(&s).Error)
	if s.Value != "before" {
		t.Errorf("the unsharded row changed to %q", s.Value)
	}
	// On its shard, raw SQL on the sharded table runs.
	var n int64
	if err := db.Clauses(ByID(a.ID)).Raw("SELECT count(*) FROM raw_authors").Scan(&n).Error; err != nil || n != 1 {
		t.Errorf("raw SQL with ByID: %v, %d rows", err, n)
	}
}

// A one-shard clause lets a statement name any sharded table on its shard,
// not an unsharded model's: a select item or a SET value reading it would
// read a table of that name on the shard (a leftover copy), not the rows on
// the plugin's database.
func TestAShardClauseDoesNotLetAModelStatementReadAnUnshardedTable(t *testing.T) {
	db, p, direct := routedSQLite(t)
	must(t, db.Create(&rawSetting{Value: "real"}).Error)
	a := rawAuthor{Name: "a"}
	must(t, db.Create(&a).Error)
	k := p.ShardMap().Physical(p.Layout().Shard(a.ID))
	migrate(t, direct[k], &rawSetting{})
	must(t, direct[k].Create(&rawSetting{Value: "stale"}).Error)

	type out struct {
		ID    int64
		Value string
	}
	var got []out
	err := db.Clauses(ByID(a.ID)).Model(&rawAuthor{}).Where("id = ?", a.ID).
		Select("id, (SELECT max(value) FROM raw_settings) AS value").Scan(&got).Error
	if !errors.Is(err, ErrCrossShard) {
		t.Errorf("a select item naming the unsharded table: got %v, %+v; want ErrCrossShard", err, got)
	}
	err = db.Clauses(ByID(a.ID)).Model(&a).Update("name", gorm.Expr("(SELECT max(value) FROM raw_settings)")).Error
	if !errors.Is(err, ErrCrossShard) {
		t.Errorf("a SET value naming the unsharded table: got %v, want ErrCrossShard", err)
	}
	var stored rawAuthor
	must(t, direct[k].First(&stored, a.ID).Error)
	if stored.Name != "a" {
		t.Errorf("the row was written from the shard's copy: name %q", stored.Name)
	}
}

// Only PostgreSQL cuts a long name: on SQLite (and MySQL) a table named by
// the first 63 bytes of a sharded table's longer name is another table, an
// unsharded model's here, whose statements run as without the plugin, and
// which a statement on a shard may not read.
type (
	rawLongSharded struct {
		ID   int64 `shardid:""`
		Name string
	}
	rawLongPlain struct {
		ID   int64
		Name string
	}
)

var rawLongPrefix = strings.Repeat("p", 63)

func (rawLongSharded) TableName() string { return rawLongPrefix + "_archive" }
func (rawLongPlain) TableName() string   { return rawLongPrefix }

func TestATableNamedByTheFirst63BytesOfAShardedTablesNameIsAnotherTableOffPostgreSQL(t *testing.T) {
	db, p, direct := twoSQLiteShards(t)
	migrate(t, db, &rawLongPlain{})
	for _, d := range direct {
		migrate(t, d, &rawLongSharded{})
	}
	a := rawLongSharded{Name: "a"}
	must(t, db.Create(&a).Error)
	if err := db.Create(&rawLongPlain{Name: "plain"}).Error; err != nil {
		t.Errorf("Create of the unsharded model: %v", err)
	}
	if err := db.Exec("DELETE FROM " + rawLongPrefix + " WHERE name = 'nothing'").Error; err != nil {
		t.Errorf("raw SQL on the unsharded table: %v", err)
	}
	k := p.ShardMap().Physical(p.Layout().Shard(a.ID))
	migrate(t, direct[k], &rawLongPlain{}) // a leftover copy on the shard
	var got []map[string]any
	err := db.Model(&rawLongSharded{}).Where("id = ?", a.ID).
		Select("id, (SELECT max(name) FROM " + rawLongPrefix + ") AS name").Find(&got).Error
	if !errors.Is(err, ErrCrossShard) {
		t.Errorf("a statement on a shard naming the unsharded table: %v, %v; want ErrCrossShard", err, got)
	}
}

func TestRawSQLUnroutedIsUntouched(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, &rawAuthor{})
	must(t, db.Create(&rawAuthor{Name: "x"}).Error)
	for _, sql := range []string{"DELETE FROM /* c */ raw_authors", "PRAGMA table_info(raw_authors)"} {
		if err := db.Exec(sql).Error; err != nil {
			t.Errorf("%s without Shards: %v", sql, err)
		}
	}
}

// twoSQLiteShards opens the plugin's SQLite database and two physical ones,
// with the plugin registered, and the physical ones directly too.
func twoSQLiteShards(t *testing.T) (*gorm.DB, *Plugin, []*gorm.DB) {
	t.Helper()
	dir := t.TempDir()
	dsn := func(name string) string {
		return "file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	}
	half := Layout{}.ShardCount() / 2
	db, err := gorm.Open(sqlite.Open(dsn("main.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	p := New(Config{Atomic: BestEffort, Shards: []Shard{
		{Name: "s0", Dialector: sqlite.Open(dsn("s0.db")), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "s1", Dialector: sqlite.Open(dsn("s1.db")), Logical: []Range{{From: half, To: 2*half - 1}}},
	}})
	must(t, db.Use(p))
	var direct []*gorm.DB
	for _, name := range []string{"s0.db", "s1.db"} {
		d, err := gorm.Open(sqlite.Open(dsn(name)), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		direct = append(direct, d)
	}
	t.Cleanup(func() {
		_ = p.Close()
		for _, d := range append(direct, db) {
			if sqlDB, err := d.DB(); err == nil {
				_ = sqlDB.Close()
			}
		}
	})
	return db, p, direct
}

type revHooked struct {
	ID     int64 `shardid:""`
	Target int64 // the ID of a revPlain whose name the hook sets
}

// AfterCreate runs raw SQL on another sharded model's row, by its ID.
func (h *revHooked) AfterCreate(tx *gorm.DB) error {
	return tx.Exec("UPDATE rev_plains SET name = 'hooked' WHERE id = ?", h.Target).Error
}

// Raw SQL issued in a hook runs in GORM's transaction of the statement that
// fired the hook, on that statement's shard, though the row it names may live
// on the other database: it must not update nothing there and report no
// error.
func TestRawSQLInAHookDoesNotMissItsRowSilently(t *testing.T) {
	db, p, direct := revRouted(t, &revHooked{}, &revPlain{})
	plains := revOnBoth(t, db, p, func() *revPlain { return &revPlain{Name: "n"} }, func(r *revPlain) int64 { return r.ID })
	for k := range 2 {
		target := plains[1-k] // on the other database than the hooked row
		h := revHooked{Target: target.ID}
		shard := p.ShardMap().Logical(k)[0]
		err := db.Clauses(OnShard(shard)).Create(&h).Error
		t.Logf("create on database %d: %v", k, err)
		var got revPlain
		must(t, direct[1-k].First(&got, target.ID).Error)
		if err == nil && got.Name != "hooked" {
			t.Errorf("hooked row on database %d: the hook's UPDATE of a row on database %d changed nothing, and Create returned no error", k, 1-k)
		}
	}
}

// The same without a shard clause: a plain Create, whose row the plugin placed.
func TestRawSQLInAHookOfAPlainCreateDoesNotMissItsRowSilently(t *testing.T) {
	db, p, direct := revRouted(t, &revHooked{}, &revPlain{})
	plains := revOnBoth(t, db, p, func() *revPlain { return &revPlain{Name: "n"} }, func(r *revPlain) int64 { return r.ID })
	for range 100 {
		h := revHooked{Target: plains[0].ID} // plains[0] is on database 0
		err := db.Create(&h).Error
		if err == nil && p.ShardMap().Physical(p.Layout().Shard(h.ID)) == 0 {
			must(t, direct[0].Model(&revPlain{}).Where("id = ?", plains[0].ID).Update("name", "n").Error) // undo the hook of a row on database 0
			continue
		}
		// The hook refused (the row rolled back, its ID given back), or its UPDATE reached the row.
		if err != nil && (!errors.Is(err, ErrNoShard) && !errors.Is(err, ErrCrossShard) || h.ID != 0) {
			t.Fatalf("a Create whose hook's UPDATE names a row of another database: %v, ID %d; want a refusal and no ID", err, h.ID)
		}
		var got revPlain
		must(t, direct[0].First(&got, plains[0].ID).Error)
		t.Logf("create: %v; target's name %q", err, got.Name)
		if err == nil && got.Name != "hooked" {
			t.Errorf("hooked row on database 1: the hook's UPDATE of a row on database 0 changed nothing, and Create returned no error")
		}
		return
	}
	t.Fatal("no hooked row landed on database 1")
}

// TestRawRowUnderAClauseOfAnUnreachableDatabaseFailsItsScan: Row of raw SQL
// under a shard clause whose database cannot be opened returns a row whose
// Scan fails with ErrShardUnavailable naming the database, as a sharded
// model's failed Row does, not nil, whose Scan panics in the caller.
func TestRawRowUnderAClauseOfAnUnreachableDatabaseFailsItsScan(t *testing.T) {
	dir := t.TempDir()
	half := Layout{}.ShardCount() / 2
	db, err := gorm.Open(sqlite.Open("file:"+filepath.Join(dir, "main.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := New(Config{Shards: []Shard{
		{Name: "s0", Dialector: sqlite.Open("file:" + filepath.Join(dir, "s0.db")), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "s1", Dialector: sqlite.Open("file:" + filepath.Join(dir, "missing", "s1.db")), Logical: []Range{{From: half, To: 2*half - 1}}},
	}})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	row := db.Clauses(OnShard(half + 1)).Raw("SELECT 1").Row()
	if row == nil {
		t.Fatal("Row of raw SQL under the clause of an unreachable database: nil, want a row whose Scan fails")
	}
	var n int
	if err := row.Scan(&n); !errors.Is(err, ErrShardUnavailable) || !strings.Contains(err.Error(), "s1") {
		t.Errorf("Scan: %v, want ErrShardUnavailable naming s1", err)
	}
}
