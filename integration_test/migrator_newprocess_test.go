package integration

import (
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

type mgLogin struct {
	ID    int64  `shardid:"hash:Login"`
	Login string `gorm:"size:64"`
}

// TestAlterColumnOfAProcessThatDidNotMigrateKeepsWhatAutoMigrateMade: on
// MariaDB, AlterColumn of the tagged key and of a string hash column, by a
// process that has not run AutoMigrate of the model (a migration script),
// leaves the key a plain BIGINT (no AUTO_INCREMENT) and the hash column its
// exact collation on every physical database, as AutoMigrate made them; it
// made the key AUTO_INCREMENT and the column case-insensitive everywhere,
// which the next AutoMigrate then refused.
func TestAlterColumnOfAProcessThatDidNotMigrateKeepsWhatAutoMigrateMade(t *testing.T) {
	b := backends[1]
	r := newRouting(t, b)
	must(t, r.plugin.Migrator(r.db).DropTable(&mgLogin{}))
	must(t, r.plugin.AutoMigrate(r.db, &mgLogin{}))

	dir := t.TempDir()
	db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := shardid.New(shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity()})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	must(t, p.Migrator(db).AlterColumn(&mgLogin{}, "Login"))
	must(t, p.Migrator(db).AlterColumn(&mgLogin{}, "ID"))
	for i, direct := range r.direct {
		if typ, generated := idColumn(t, direct, b, "mg_logins"); generated || typ != "bigint" {
			t.Errorf("physical %d: mg_logins.id is %s, generated=%v; want a plain bigint", i, typ, generated)
		}
		var collation string
		must(t, direct.Raw("SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'mg_logins' AND COLUMN_NAME = 'login'").Row().Scan(&collation))
		if collation != "utf8mb4_nopad_bin" && collation != "utf8mb4_0900_bin" {
			t.Errorf("physical %d: mg_logins.login has collation %s; want an exact one", i, collation)
		}
	}
	must(t, p.AutoMigrate(db, &mgLogin{}))
}
