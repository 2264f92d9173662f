package integration

import (
	"errors"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/strategies"
)

// A MariaDB shard whose connections leave statements uncommitted (autocommit=0
// in its DSN) would keep the worker leases, segment blocks and instagram's
// durable mark of its ID sources in one session, where other processes do
// not see them: AutoMigrate and Create of a snowflake, segment or instagram
// model there fail with strategies.ErrNoAutocommit, and the row gets no ID.
func TestAShardWithoutAutocommitMakesNoID(t *testing.T) {
	b := backends[1]
	if b.name != "mariadb" {
		t.Fatalf("backends[1] is %s, want mariadb", b.name)
	}
	cfg, err := mysqldriver.ParseDSN(requireDSN(t, mysqlDSNVar))
	must(t, err)
	cfg.DBName += "_0"
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["autocommit"] = "0"
	db, err := gorm.Open(b.dialector(t, ""), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	firstStart(t, db)
	count := shardid.Layout{}.ShardCount()
	p := shardid.New(shardid.Config{Shards: []shardid.Shard{
		{Name: "no-autocommit", Dialector: mysql.Open(cfg.FormatDSN()), Logical: []shardid.Range{{From: 0, To: count - 1}}},
	}})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	flake, segment, instagram := &PodFlake{}, &PodSegment{}, &PodInstagram{}
	for _, c := range []struct {
		row any
		id  func() int64
	}{
		{flake, func() int64 { return flake.ID }},
		{segment, func() int64 { return segment.ID }},
		{instagram, func() int64 { return instagram.ID }},
	} {
		if err := p.AutoMigrate(db, c.row); !errors.Is(err, strategies.ErrNoAutocommit) {
			t.Errorf("AutoMigrate(%T): %v, want ErrNoAutocommit", c.row, err)
		}
		if err := db.Create(c.row).Error; !errors.Is(err, strategies.ErrNoAutocommit) || c.id() != 0 {
			t.Errorf("Create(%T): %v, ID %d, want ErrNoAutocommit and no ID", c.row, err, c.id())
		}
	}
}
