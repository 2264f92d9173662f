package integration

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// TestACreateWhoseIDReservationGoesUnansweredIsUnavailableAndNamed: a Create
// whose ID reservation (instagram's clock-sequence) meets a server that
// stopped answering on a pooled connection fails, at the DSN's read timeout,
// with ErrShardUnavailable naming the database, as its INSERT would, and
// not with go-sql-driver's "invalid connection" alone: an application (and
// an operator's dashboard) tells a database down from a bad row by it.
func TestACreateWhoseIDReservationGoesUnansweredIsUnavailableAndNamed(t *testing.T) {
	requireDSN(t, mysqlDSNVar)
	b := backends[1]
	for _, d := range direct(t, b, "")[:2] {
		must(t, d.Migrator().DropTable(&LcValue{}))
		must(t, d.AutoMigrate(&LcValue{}))
	}
	var proxy *chaosProxy
	cfg, err := mysqldriver.ParseDSN(requireDSN(t, mysqlDSNVar))
	must(t, err)
	proxy = newChaosProxy(t, cfg.Addr)
	cfg.Addr, cfg.DBName, cfg.ReadTimeout = proxy.listener.Addr().String(), fmt.Sprintf("%s_%d", cfg.DBName, 1), time.Second
	db, err := gorm.Open(b.dialector(t, ""), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	count := shardid.Layout{}.ShardCount()
	p := shardid.New(shardid.Config{ConnectTimeout: time.Second, Shards: []shardid.Shard{
		{Name: "up", Dialector: b.physical(t, "", 0), Logical: []shardid.Range{{From: 0, To: count/2 - 1}}},
		{Name: "silent", Dialector: mysql.Open(cfg.FormatDSN()), Logical: []shardid.Range{{From: count / 2, To: count - 1}}},
	}})
	firstStart(t, db)
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	must(t, db.Clauses(shardid.OnShard(count-1)).Create(&LcValue{Val: 1}).Error) // a pooled connection to it
	for _, c := range []struct {
		name   string
		create func() error
	}{
		{"with a shard clause", func() error { return db.Clauses(shardid.OnShard(count - 1)).Create(&LcValue{Val: 2}).Error }},
		{"in GORM's transaction on the plugin's database", func() error { return db.Create(&LcValue{Val: 2}).Error }},
	} {
		failed := false
		for range 20 { // rows of no shard clause go to a logical shard of either database
			proxy.stall(3 * time.Second)
			err := c.create()
			proxy.stall(0)
			if err == nil {
				continue
			}
			if !errors.Is(err, shardid.ErrShardUnavailable) || !strings.Contains(err.Error(), "silent") {
				t.Errorf("a Create %s whose ID reservation went unanswered: %v, want ErrShardUnavailable naming silent", c.name, err)
			}
			failed = true
			break
		}
		if !failed {
			t.Errorf("no Create %s reached the silent database", c.name)
		}
	}
}
