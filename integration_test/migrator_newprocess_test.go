package integration

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/uuid"

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

// mgToken's key is a UUID's text; mgTokenUUID, the next deploy's model of
// its table, makes it a uuid.UUID, hashed as its 16 bytes.
type (
	mgToken struct {
		ID    int64  `shardid:"hash:Token"`
		Token string `gorm:"size:36"`
	}
	mgTokenUUID struct {
		ID    int64     `shardid:"hash:Token"`
		Token uuid.UUID `gorm:"size:36"`
	}
)

func (mgTokenUUID) TableName() string { return "mg_tokens" }

// TestAHashKeyOfAnotherTypeInTheNextDeployIsRefused: during a rolling
// restart the next deploy's model keeps the table's hash column but makes
// its key a uuid.UUID, which hashes the same token to other shards; its
// AutoMigrate and statements are refused with ErrInvalidTag, while the last
// deploy's process goes on finding its rows. The record of sharded tables
// made before it kept key types (no hash_key column) gains it at the next
// migration.
func TestAHashKeyOfAnotherTypeInTheNextDeployIsRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		must(t, r.plugin.Migrator(r.db).DropTable("mg_tokens")) // by name: an earlier run left its column renamed
		must(t, r.plugin.AutoMigrate(r.db, &mgToken{}))
		tokens := make([]uuid.UUID, 12)
		for i := range tokens {
			tokens[i] = uuid.New()
			must(t, r.db.Create(&mgToken{Token: tokens[i].String()}).Error)
		}
		must(t, r.db.Exec("ALTER TABLE shardid_tables DROP COLUMN IF EXISTS hash_key").Error) // as an earlier version made it
		process := func() (*gorm.DB, *shardid.Plugin) {
			db, err := gorm.Open(b.dialector(t, t.TempDir()), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			p := shardid.New(shardid.Config{Shards: shards(t, b, t.TempDir()), Atomic: b.atomicity()})
			must(t, db.Use(p))
			t.Cleanup(func() { _ = p.Close() })
			return db, p
		}
		upgraded, upgradedPlugin := process()
		must(t, upgradedPlugin.AutoMigrate(upgraded, &mgToken{}))
		next, nextPlugin := process()
		if err := nextPlugin.AutoMigrate(next, &mgTokenUUID{}); !errors.Is(err, shardid.ErrInvalidTag) || !strings.Contains(err.Error(), "uuid") {
			t.Fatalf("AutoMigrate of the token as a uuid.UUID: %v; want ErrInvalidTag naming the key types", err)
		}
		var got mgTokenUUID
		if err := next.Where("token = ?", tokens[5]).First(&got).Error; !errors.Is(err, shardid.ErrInvalidTag) {
			t.Fatalf("a read by the token as a uuid.UUID: %v (%+v); want ErrInvalidTag", err, got)
		}
		for _, token := range tokens {
			var row mgToken
			must(t, r.db.Where("token = ?", token.String()).First(&row).Error)
		}
		// The column renamed through the plugin's migrator keeps the rule and the key's type.
		must(t, upgradedPlugin.Migrator(upgraded).RenameColumn(&mgToken{}, "Token", "code"))
		renamed, renamedPlugin := process()
		must(t, renamedPlugin.AutoMigrate(renamed, &mgCode{}))
		var row mgCode
		must(t, renamed.Where("code = ?", tokens[7].String()).First(&row).Error)
	})
}

// mgCode is mgToken after its hash column was renamed.
type mgCode struct {
	ID   int64  `shardid:"hash:Code"`
	Code string `gorm:"size:36"`
}

func (mgCode) TableName() string { return "mg_tokens" }

// mgNote is the last deploy's model of mg_notes, without the tag: its rows
// on the plugin's database; mgNoteSharded is the next deploy's.
type (
	mgNote struct {
		ID   int64
		Body string `gorm:"size:64"`
	}
	mgNoteSharded struct {
		ID   int64  `shardid:""`
		Body string `gorm:"size:64"`
	}
)

func (mgNoteSharded) TableName() string { return "mg_notes" }

// TestShardingATableWithRowsOnThePluginsDatabaseWarns: the next deploy
// tags a model whose rows the last one keeps on the plugin's database; its
// AutoMigrate makes the sharded table beside them and warns on Config.Log,
// naming the table, that the sharded model reads none of them.
func TestShardingATableWithRowsOnThePluginsDatabaseWarns(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		must(t, r.plugin.Migrator(r.db).DropTable("mg_notes")) // wherever an earlier run left it
		must(t, r.plugin.AutoMigrate(r.db, &mgNote{}))
		t.Cleanup(func() { _ = r.db.Migrator().DropTable(&mgNote{}) })
		must(t, r.db.Create(&mgNote{Body: "kept"}).Error)
		db, err := gorm.Open(b.dialector(t, t.TempDir()), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		var out bytes.Buffer
		p := shardid.New(shardid.Config{Shards: shards(t, b, t.TempDir()), Atomic: b.atomicity(), Log: slog.New(slog.NewTextHandler(&out, nil))})
		must(t, db.Use(p))
		t.Cleanup(func() { _ = p.Close() })
		t.Cleanup(func() { _ = p.Migrator(db).DropTable(&mgNoteSharded{}) })
		must(t, p.AutoMigrate(db, &mgNoteSharded{}))
		if !strings.Contains(out.String(), "holds rows on the plugin's database") || !strings.Contains(out.String(), "table=mg_notes") {
			t.Fatalf("log of the migration: %q; want a warning naming mg_notes", out.String())
		}
	})
}
