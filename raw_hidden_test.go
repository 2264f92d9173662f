package shardid

import (
	"errors"
	"testing"

	"gorm.io/gorm"
)

// withDecoyCopy puts a copy of the sharded table raw_authors on the plugin's own
// database (as a plain db.AutoMigrate leaves it), with one row, so that SQL
// the gate lets through off a shard visibly runs there.
func withDecoyCopy(t *testing.T) (*gorm.DB, []*gorm.DB) {
	t.Helper()
	db, _, direct := routedSQLite(t)
	must(t, db.Create(&rawAuthor{Name: "real"}).Error) // the plugin has seen the model
	must(t, db.Create(&rawSetting{Value: "v"}).Error)
	main, err := db.DB()
	must(t, err)
	if _, err := main.Exec("CREATE TABLE raw_authors (id integer PRIMARY KEY, name text)"); err != nil {
		t.Fatal(err)
	}
	if _, err := main.Exec("INSERT INTO raw_authors (id, name) VALUES (1, 'decoy')"); err != nil {
		t.Fatal(err)
	}
	return db, direct
}

// Raw SQL off a shard that names the sharded table raw_authors is refused
// with ErrNoShard however its FROM list is spelled: after an alias spelled
// like a clause keyword (qualify, offset), or a join condition on a column
// named conflict.
func TestRawSQLHidingAShardedTableBehindAKeywordAliasIsRefused(t *testing.T) {
	db, _ := withDecoyCopy(t)
	for _, sql := range []string{
		"SELECT count(*) FROM raw_authors", // control: refused
		"SELECT count(*) FROM raw_settings qualify, raw_authors",
		"SELECT count(*) FROM raw_settings offset, raw_authors",
		"SELECT count(*) FROM (SELECT 1 AS conflict) c JOIN raw_settings s ON conflict, raw_authors a",
	} {
		var n int64
		err := db.Raw(sql).Scan(&n).Error
		if !errors.Is(err, ErrNoShard) {
			t.Errorf("%s: got err=%v n=%d (ran on the plugin's database), want ErrNoShard", sql, err, n)
		}
	}
	// A write, too: it changes the unsharded table from the sharded table's rows.
	err := db.Exec("UPDATE raw_settings SET value = (SELECT max(name) FROM raw_settings qualify, raw_authors)").Error
	if !errors.Is(err, ErrNoShard) {
		t.Errorf("UPDATE hiding raw_authors: got %v, want ErrNoShard", err)
	}
	var s rawSetting
	must(t, db.First(&s).Error)
	if s.Value != "v" {
		t.Errorf("the unsharded row was rewritten from the sharded table's name: %q", s.Value)
	}
}

// SQLite takes "for" as an alias: the JOIN after it is a join, not
// MySQL's USE INDEX FOR JOIN.
func TestRawSQLJoiningAfterAnAliasNamedForIsRefused(t *testing.T) {
	db, _ := withDecoyCopy(t)
	for _, sql := range []string{
		"SELECT count(*) FROM raw_settings AS for JOIN raw_authors ON 1 = 1",
		"SELECT count(*) FROM raw_settings for JOIN raw_authors ON 1 = 1",
	} {
		var n int64
		err := db.Raw(sql).Scan(&n).Error
		if !errors.Is(err, ErrNoShard) {
			t.Errorf("%s: got err=%v n=%d (ran on the plugin's database), want ErrNoShard", sql, err, n)
		}
	}
}

// SQLite compares names by ASCII case only: a CTE named raw_authorſ (long s)
// is not raw_authors, and FROM raw_authors reads the table.
func TestACTEWhoseNameFoldsToATablesOnlyInUnicodeHidesNothing(t *testing.T) {
	db, _ := withDecoyCopy(t)
	sql := "WITH raw_author\u017f AS (SELECT 1 AS id) SELECT count(*) FROM raw_authors"
	var n int64
	err := db.Raw(sql).Scan(&n).Error
	if !errors.Is(err, ErrNoShard) {
		t.Errorf("%s: got err=%v n=%d (ran on the plugin's database), want ErrNoShard", sql, err, n)
	}
}

// On a shard (a ByID clause), raw SQL naming an unsharded model's table is
// refused with ErrCrossShard, however the FROM list is spelled.
func TestRawSQLOnAShardHidingAnUnshardedTableIsRefused(t *testing.T) {
	db, _, _ := routedSQLite(t)
	a := rawAuthor{Name: "a"}
	must(t, db.Create(&a).Error)
	must(t, db.Create(&rawSetting{Value: "v"}).Error)
	for _, sql := range []string{
		"SELECT count(*) FROM raw_settings", // control
		"SELECT count(*) FROM raw_authors qualify, raw_settings",
		"SELECT count(*) FROM raw_authors AS for JOIN raw_settings ON 1 = 1",
	} {
		var n int64
		err := db.Clauses(ByID(a.ID)).Raw(sql).Scan(&n).Error
		if !errors.Is(err, ErrCrossShard) {
			t.Errorf("%s on a shard: got %v, want ErrCrossShard", sql, err)
		}
	}
}

// The last gate on a model's statement routed by ID (no one-shard clause):
// a select item's subquery naming another sharded table (rev_photos) would
// read this database's rows only: refused (ErrCrossShard) however spelled.
func TestASelectItemHidingAnotherShardedTableIsRefused(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{}, &revPhoto{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "u"} }, func(u *revUser) int64 { return u.ID })
	for _, u := range users {
		must(t, db.Create(&revPhoto{UserID: u.ID, URL: "x"}).Error)
	}
	u := users[0]
	for _, sel := range []string{
		"id, (SELECT count(*) FROM rev_photos) AS n", // control: refused
		"id, (SELECT count(*) FROM (SELECT 1 AS one) qualify, rev_photos) AS n",
		"id, (SELECT count(*) FROM (SELECT 1 AS one) AS for JOIN rev_photos ON 1 = 1) AS n",
	} {
		var rows []map[string]any
		err := db.Model(&revUser{}).Select(sel).Where("id = ?", u.ID).Find(&rows).Error
		if !errors.Is(err, ErrCrossShard) {
			t.Errorf("Select(%q): got err=%v rows=%v (one database's photos counted), want ErrCrossShard", sel, err, rows)
		}
	}
}

// Legitimate unsharded SQL whose strings, comments or aliases spell a
// sharded table's name must run as without the plugin.
func TestRawSQLSpellingAShardedTableOutsideATablePlaceRuns(t *testing.T) {
	db, _, _ := routedSQLite(t)
	must(t, db.Create(&rawAuthor{Name: "real"}).Error)
	must(t, db.Create(&rawSetting{Value: "raw_authors"}).Error)
	var m []map[string]any
	for _, q := range []string{
		"SELECT * FROM raw_settings WHERE value = 'raw_authors'",
		"SELECT * FROM raw_settings WHERE value = 'it''s raw_authors'",
		"SELECT * FROM raw_settings raw_authors WHERE raw_authors.value <> ''",
		"SELECT value AS \"raw_authors\" FROM raw_settings",
		"SELECT * FROM raw_settings -- raw_authors\n",
		"WITH raw_authors AS (SELECT * FROM raw_settings) SELECT * FROM raw_authors",
		"WITH RECURSIVE raw_authors(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM raw_authors WHERE n < 3) SELECT * FROM raw_authors",
		"SELECT * FROM raw_settings WHERE value LIKE '%raw_authors%'",
		"SELECT * FROM raw_settings WHERE value IS NOT DISTINCT FROM 'x'",
		"SELECT json_extract('{\"raw_authors\":1}', '$.raw_authors')",
	} {
		if err := db.Raw(q).Scan(&m).Error; err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	if err := db.Model(&rawSetting{}).Where("value = ?", "raw_authors").Find(&[]rawSetting{}).Error; err != nil {
		t.Errorf("a value spelling a table: %v", err)
	}
	if err := db.Model(&rawSetting{}).Where("value = 'raw_authors'").Find(&[]rawSetting{}).Error; err != nil {
		t.Errorf("a literal spelling a table: %v", err)
	}
}
