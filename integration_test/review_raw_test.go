package integration

import (
	"errors"
	"testing"

	"github.com/shardid/shardid"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type revRawItem struct {
	ID   int64 `shardid:""`
	Name string
}

// MySQL reads ".1FROM t" as the number .1 and FROM t; the tokenizer takes the
// dot after SELECT for a qualifier's and "1FROM" for an identifier, finds no
// table, and the raw SQL runs on the plugin's database.
func TestReviewRawNumberBeforeFromHidesTheTable(t *testing.T) {
	b := backends[1] // mariadb
	dir := t.TempDir()
	db := open(t, b, dir, shardid.Config{Shards: shards(t, b, dir)})
	fresh(t, db, &revRawItem{})
	// A copy of the table on the plugin's own database, as plain db.AutoMigrate leaves it.
	plain, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Exec("CREATE TABLE IF NOT EXISTS rev_raw_items (id bigint primary key, name text)").Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Exec("DROP TABLE rev_raw_items") })
	for _, sql := range []string{"SELECT name FROM rev_raw_items", "SELECT .1FROM rev_raw_items"} {
		var out []map[string]any
		err := db.Raw(sql).Scan(&out).Error
		if !errors.Is(err, shardid.ErrNoShard) {
			t.Errorf("%s: got %v (%d rows), want ErrNoShard", sql, err, len(out))
		}
	}
}
