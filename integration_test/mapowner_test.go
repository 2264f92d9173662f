package integration

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

type moNote struct {
	ID   int64 `shardid:""`
	Text string
}

// TestAProcessOfAMistypedMapTableIsRefusedByTheShardsItNames: on MariaDB
// and PostgreSQL, the physical databases record the shared map that first
// opened them; a process naming them with a mistyped Config.MapTable, which
// would seed and follow a map of its own, is refused with ErrInvalidConfig
// at its first statement there, writing nothing and recording nothing for
// its map, while another process of the real map works.
func TestAProcessOfAMistypedMapTableIsRefusedByTheShardsItNames(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		for _, db := range direct(t, b, dir) {
			must(t, db.Exec("DROP TABLE IF EXISTS shardid_map_owner").Error)
		}
		real := open(t, b, dir, shardid.Config{Shards: shards(t, b, dir), Log: slog.New(slog.DiscardHandler)})
		fresh(t, real, &moNote{})
		must(t, real.Create(&moNote{Text: "real"}).Error)

		db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		t.Cleanup(func() {
			for _, table := range []string{"mo_typo_map", "mo_typo_map_databases", "mo_typo_map_tables", "mo_typo_map_moves"} {
				_ = real.Exec("DROP TABLE IF EXISTS " + table).Error
			}
		})
		typo := shardid.New(shardid.Config{Shards: shards(t, b, dir), MapTable: "mo_typo_map", Atomic: b.atomicity(), Log: slog.New(slog.DiscardHandler)})
		must(t, db.Use(typo))
		t.Cleanup(func() { _ = typo.Close() })
		if err := db.Create(&moNote{Text: "stray"}).Error; !errors.Is(err, shardid.ErrInvalidConfig) || !strings.Contains(err.Error(), "shardid_map_owner") {
			t.Errorf("Create of a process of a mistyped map table: %v, want ErrInvalidConfig naming shardid_map_owner", err)
		}
		var strays, recorded int64
		must(t, real.Clauses(shardid.AllShards()).Model(&moNote{}).Where("text = ?", "stray").Count(&strays).Error)
		if real.Migrator().HasTable("mo_typo_map_databases") {
			must(t, real.Raw("SELECT count(*) FROM mo_typo_map_databases").Scan(&recorded).Error)
		}
		if strays != 0 || recorded != 0 {
			t.Errorf("the refused process wrote %d rows and recorded %d databases for its map", strays, recorded)
		}

		sameDB, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		same := shardid.New(shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity(), Log: slog.New(slog.DiscardHandler)})
		must(t, sameDB.Use(same))
		t.Cleanup(func() { _ = same.Close() })
		must(t, sameDB.Create(&moNote{Text: "same"}).Error)
	})
}
