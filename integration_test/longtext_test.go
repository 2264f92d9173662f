package integration

import (
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

type LtNote struct {
	ID   int64 `shardid:""`
	Body string
}

// TestTextColumnsOfThePluginsTablesMadeByEarlierVersionsAreWidened: on
// MariaDB, the map, a move's state and a commit's databases were TEXT
// columns (64 KiB) in tables earlier versions made; the plugin makes each a
// LONGTEXT when it prepares its tables, so that a map of many ranges, a
// move keeping many keys aside and a commit over thousands of databases fit.
func TestTextColumnsOfThePluginsTablesMadeByEarlierVersionsAreWidened(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("TEXT holds 64 KiB on MySQL and MariaDB only")
		}
		dir := t.TempDir()
		main, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		tables := []string{"lt_map", "lt_map_moves", "lt_map_tables", "lt_map_databases", "shardid_transactions"}
		drop := func() {
			for _, table := range tables {
				must(t, main.Exec("DROP TABLE IF EXISTS "+table).Error)
			}
			for _, db := range direct(t, b, dir) {
				must(t, db.Migrator().DropTable(&LtNote{}))
			}
		}
		drop()
		t.Cleanup(drop)
		for _, ddl := range []string{ // as versions before made them
			"CREATE TABLE lt_map (version BIGINT NOT NULL PRIMARY KEY, map TEXT NOT NULL, created_ms BIGINT NOT NULL)",
			"CREATE TABLE lt_map_moves (from_shard INT NOT NULL, to_shard INT NOT NULL, phase VARCHAR(32) NOT NULL, state TEXT NOT NULL, updated_ms BIGINT NOT NULL, PRIMARY KEY (from_shard, to_shard))",
			"CREATE TABLE shardid_transactions (gid VARCHAR(64) NOT NULL PRIMARY KEY, outcome VARCHAR(8) NOT NULL, decided_ms BIGINT NOT NULL, branch_databases TEXT NOT NULL)",
		} {
			must(t, main.Exec(ddl).Error)
		}
		db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		p := shardid.New(shardid.Config{Shards: shards(t, b, dir), MapTable: "lt_map", Atomic: b.atomicity()})
		must(t, db.Use(p))
		t.Cleanup(func() { _ = p.Close() })
		must(t, p.AutoMigrate(db, &LtNote{})) // a table new to the record: its moves are looked at
		for _, c := range []struct{ table, column string }{{"lt_map", "map"}, {"lt_map_moves", "state"}, {"shardid_transactions", "branch_databases"}} {
			var dataType string
			must(t, main.Raw("SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?", c.table, c.column).Scan(&dataType).Error)
			if !strings.EqualFold(dataType, "longtext") {
				t.Errorf("%s.%s made TEXT by an earlier version: %s after the plugin prepared its tables, want longtext", c.table, c.column, dataType)
			}
		}
	})
}
