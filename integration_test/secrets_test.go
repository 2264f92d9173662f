package integration

import (
	"errors"
	"strings"
	"testing"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// TestConfigErrorsHideTheDSNsPassword: db.Use refuses two shards given one
// DSN, naming it without its password, which an application logs with its
// start-up error.
func TestConfigErrorsHideTheDSNsPassword(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dsn, open := "root:s3cret-pw@tcp(127.0.0.1:3306)/shardid_unreached", mysql.Open
		if b.name == "postgres" {
			dsn, open = "postgres://postgres:s3cret-pw@127.0.0.1:5432/shardid_unreached", postgres.Open
		}
		main, err := gorm.Open(b.dialector(t, t.TempDir()), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		half := shardid.Layout{}.ShardCount() / 2
		p := shardid.New(shardid.Config{Shards: []shardid.Shard{
			{Name: "a", Dialector: open(dsn), Logical: []shardid.Range{{From: 0, To: half - 1}}},
			{Name: "b", Dialector: open(dsn), Logical: []shardid.Range{{From: half, To: 2*half - 1}}},
		}})
		err = main.Use(p)
		if !errors.Is(err, shardid.ErrInvalidConfig) || strings.Contains(err.Error(), "s3cret-pw") || !strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("two shards of one DSN: %v; want ErrInvalidConfig naming the DSN, its password hidden", err)
		}
	})
}
