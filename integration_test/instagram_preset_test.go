package integration

import (
	"fmt"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

type (
	IpPreset struct {
		ID   int64 `shardid:""`
		Name string
	}
	IpOther struct { // another table of the strategy: no key of its catches a repeat
		ID   int64 `shardid:""`
		Name string
	}
)

// A preset instagram ID ahead of the database's clock, though behind the
// application's, moves the clock-sequence past it: the database's clock
// decides, as it issues the IDs. MariaDB's session clock is set a second
// behind this process's (the DSN's timestamp).
func TestAPresetInstagramIDAheadOfTheDatabasesClockIsNotIssuedAgain(t *testing.T) {
	cfg, err := mysqldriver.ParseDSN(requireDSN(t, mysqlDSNVar))
	must(t, err)
	admin, err := gorm.Open(mysql.Open(cfg.FormatDSN()), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	cfg.DBName += "_preset" // a clock-sequence no other test moved
	must(t, admin.Exec("DROP DATABASE IF EXISTS "+cfg.DBName).Error)
	must(t, admin.Exec("CREATE DATABASE "+cfg.DBName).Error)
	behind := time.Now().Add(-time.Second)
	cfg.Params = map[string]string{"timestamp": fmt.Sprintf("%d.%06d", behind.Unix(), behind.Nanosecond()/1000)}
	db, err := gorm.Open(mysql.Open(cfg.FormatDSN()), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	ids := shardid.New(shardid.Config{})
	must(t, db.Use(ids))
	t.Cleanup(func() { _ = ids.Close() })
	must(t, ids.AutoMigrate(db, &IpPreset{}, &IpOther{}))

	l := ids.Layout()
	const shard = 7
	first := IpPreset{Name: "first"}
	must(t, db.Clauses(shardid.OnShard(shard)).Create(&first).Error)
	tick := l.Decode(first.ID).Ticks
	preset := IpPreset{ID: l.ComposeTicks(tick+3, shard, 0), Name: "preset"} // ahead of the database's clock, behind this process's
	must(t, db.Create(&preset).Error)
	batch := make([]IpOther, 4<<l.Normalized().SequenceBits) // four ticks' sequences: the clock-sequence passes tick+3
	for i := range batch {
		batch[i].Name = "new"
	}
	must(t, db.Clauses(shardid.OnShard(shard)).Create(&batch).Error)
	for _, row := range batch {
		if row.ID == preset.ID {
			t.Fatalf("the preset ID %d (tick %d, 3 ahead of the database's clock) was issued again", preset.ID, tick+3)
		}
	}
}
