package integration

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/strategies"
)

type ltOrder struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Note string
}

// TestAProcessOfAnotherLeaseTableLeasesNoWorkerID: two processes of one
// shared map whose Config.Snowflake.Lease.Table differ would lease worker
// IDs from two tables and could make equal IDs. The first process to lease
// in a physical database records its lease table there (a database that
// recorded none, as after an upgrade, takes the first one's); a process
// naming another is refused with ErrInvalidConfig at its AutoMigrate and at
// its first snowflake Create, before it creates its table or makes an ID,
// while one naming the same table (the default spelled out) works.
func TestAProcessOfAnotherLeaseTableLeasesNoWorkerID(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		physical := direct(t, b, dir)
		for _, db := range physical {
			must(t, db.Exec("DROP TABLE IF EXISTS shardid_lease_table").Error)
			must(t, db.Exec("DROP TABLE IF EXISTS lt_other_workers").Error)
		}
		t.Cleanup(func() {
			for _, db := range physical {
				_ = db.Exec("DROP TABLE IF EXISTS lt_other_workers").Error
			}
		})
		first := open(t, b, dir, shardid.Config{Shards: shards(t, b, dir), Log: slog.New(slog.DiscardHandler)})
		fresh(t, first, &ltOrder{})
		must(t, first.Create(&ltOrder{Note: "first"}).Error)

		process := func(table string) (*gorm.DB, *shardid.Plugin) {
			db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			p := shardid.New(shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity(), Log: slog.New(slog.DiscardHandler),
				Snowflake: shardid.SnowflakeConfig{Lease: strategies.LeaseOptions{Table: table}}})
			must(t, db.Use(p))
			t.Cleanup(func() { _ = p.Close() })
			return db, p
		}
		otherDB, other := process("lt_other_workers")
		if err := other.AutoMigrate(otherDB, &ltOrder{}); !errors.Is(err, shardid.ErrInvalidConfig) || !strings.Contains(err.Error(), "shardid_lease_table") {
			t.Errorf("AutoMigrate of a process of another lease table: %v, want ErrInvalidConfig naming shardid_lease_table", err)
		}
		if err := otherDB.Create(&ltOrder{Note: "other"}).Error; !errors.Is(err, shardid.ErrInvalidConfig) {
			t.Errorf("Create of a process of another lease table: %v, want ErrInvalidConfig", err)
		}
		var made int64
		must(t, first.Clauses(shardid.AllShards()).Model(&ltOrder{}).Where("note = ?", "other").Count(&made).Error)
		if made != 0 {
			t.Errorf("the refused process wrote %d rows", made)
		}
		for i, db := range physical {
			if db.Migrator().HasTable("lt_other_workers") {
				t.Errorf("physical %d: the refused process created its lease table", i)
			}
		}

		sameDB, same := process(strategies.DefaultLeaseTable)
		must(t, same.AutoMigrate(sameDB, &ltOrder{}))
		must(t, sameDB.Create(&ltOrder{Note: "same"}).Error)
	})
}
