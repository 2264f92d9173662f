package shardid

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid/strategies"
)

type ltTicket struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Note string
}

// TestProcessesWithoutShardsLeaseFromTheLeaseTableTheirDatabaseRecords:
// without Config.Shards the plugin's database is where every process leases
// its snowflake worker ID; the first to lease records its lease table there,
// and a process of another table is refused with ErrInvalidConfig at its
// first snowflake ID, making none, while one of the same table is not. A
// process that makes no snowflake ID is not asked.
func TestProcessesWithoutShardsLeaseFromTheLeaseTableTheirDatabaseRecords(t *testing.T) {
	dsn := "file:" + filepath.Join(t.TempDir(), "one.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	process := func(table string) (*gorm.DB, *Plugin) {
		db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		p := New(Config{Log: quiet, Snowflake: SnowflakeConfig{Lease: strategies.LeaseOptions{Table: table, Log: quiet}}})
		t.Cleanup(func() { _ = p.Close() })
		must(t, db.Use(p))
		return db, p
	}
	firstDB, first := process("")
	must(t, first.AutoMigrate(firstDB, &ltTicket{}))
	must(t, firstDB.Create(&ltTicket{Note: "first"}).Error)

	otherDB, other := process("other_workers")
	must(t, other.AutoMigrate(otherDB, &revUser{})) // no snowflake model: no lease, nothing asked
	err := otherDB.Create(&ltTicket{Note: "other"}).Error
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "shardid_workers") || !strings.Contains(err.Error(), "other_workers") {
		t.Errorf("first snowflake ID of a process of another lease table: %v, want ErrInvalidConfig naming both tables", err)
	}
	var rows int64
	must(t, firstDB.Clauses(AllShards()).Model(&ltTicket{}).Count(&rows).Error)
	if rows != 1 {
		t.Errorf("%d rows, want the first process's one", rows)
	}

	sameDB, _ := process(strategies.DefaultLeaseTable)
	must(t, sameDB.Create(&ltTicket{Note: "same"}).Error)
}
