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

// TestWritesOverSeveralDatabasesOnSQLite: SQLite has no two-phase commit,
// so by default a Create split over two databases, an update over both, a
// transaction across shards, and a Create in a transaction on the plugin's
// database (CreateInBatches's) are refused with ErrNotAtomic before anything
// is written.
func TestWritesOverSeveralDatabasesOnSQLite(t *testing.T) {
	dir := t.TempDir()
	dsn := func(name string) string { return "file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)" }
	half := Layout{}.ShardCount() / 2
	db, err := gorm.Open(sqlite.Open(dsn("main.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := New(Config{Shards: []Shard{ // Atomic left at its default
		{Name: "s0", Dialector: sqlite.Open(dsn("s0.db")), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "s1", Dialector: sqlite.Open(dsn("s1.db")), Logical: []Range{{From: half, To: 2*half - 1}}},
	}})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	must(t, p.AutoMigrate(db, &revUser{}))
	p.CountStatements()
	var direct []*gorm.DB
	for _, name := range []string{"s0.db", "s1.db"} {
		d, err := gorm.Open(sqlite.Open(dsn(name)), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		direct = append(direct, d)
	}
	rows := []revUser{{Name: "a"}, {Name: "b"}}
	must(t, db.Clauses(OnShard(1)).Create(&rows[0]).Error)
	must(t, db.Clauses(OnShard(half+1)).Create(&rows[1]).Error)
	split := []revUser{{ID: p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), 2, 0), Name: "c"},
		{ID: p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), half+2, 0), Name: "d"}}
	checks := map[string]error{
		"split Create":     db.Create(&split).Error,
		"update over both": db.Model(&revUser{}).Where("id IN ?", []int64{rows[0].ID, rows[1].ID}).Update("name", "x").Error,
		"transaction across shards": db.Clauses(AcrossShards()).Transaction(func(tx *gorm.DB) error {
			return tx.Model(&rows[0]).Update("name", "y").Error
		}),
		// GORM's transaction around the batches is on the plugin's database.
		"CreateInBatches of rows on one database": db.CreateInBatches(&[]revUser{
			{ID: p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), 3, 0), Name: "e"},
			{ID: p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), 4, 0), Name: "f"}}, 1).Error,
		"Create in a transaction on the plugin's database": db.Transaction(func(tx *gorm.DB) error {
			return tx.Create(&revUser{Name: "g"}).Error
		}),
	}
	for what, err := range checks {
		if !errors.Is(err, ErrNotAtomic) {
			t.Errorf("%s on SQLite: %v, want ErrNotAtomic", what, err)
		}
	}
	for kind, n := range p.FanOutStats() {
		if n != 0 {
			t.Errorf("%d %s statement(s) counted as sent to several databases; each was refused before any part was sent", n, kind)
		}
	}
	for k, d := range direct {
		var names []string
		must(t, d.Model(&revUser{}).Order("name").Pluck("name", &names).Error)
		if len(names) != 1 || names[0] != []string{"a", "b"}[k] {
			t.Errorf("database %d holds %v after the refused writes, want only %q", k, names, []string{"a", "b"}[k])
		}
	}
}

// A sharded statement in a transaction begun without a clause, on the
// plugin's own database, is refused, and the error names AcrossShards too:
// a sign-up's new rows have no ID to give a ByID clause before they exist.
func TestATransactionWithoutAClauseNamesAcrossShardsForItsNewRows(t *testing.T) {
	db, _, direct := revRouted(t, &revPlain{})
	err := db.Transaction(func(tx *gorm.DB) error {
		r := revPlain{Name: "new"}
		if err := tx.Create(&r).Error; err != nil {
			return err
		}
		return tx.Model(&r).Update("name", "renamed").Error
	})
	if !errors.Is(err, ErrCrossShard) || !strings.Contains(err.Error(), "shardid.AcrossShards()") {
		t.Fatalf("update of a row created in a transaction without a clause: %v, want ErrCrossShard naming AcrossShards", err)
	}
	for i, d := range direct {
		var n int64
		must(t, d.Model(&revPlain{}).Count(&n).Error)
		if n != 0 {
			t.Errorf("database %d holds %d rows of the refused transaction", i, n)
		}
	}
}
