package integration

import (
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// TestAShardOpensWhileTheApplicationHoldsThePluginDatabasesConnection: a
// physical database's first statement checks its token on the plugin's own
// pool, not the application's: with the application's pool of one
// connection held by its transaction, or by the transaction GORM's
// CreateInBatches opens, a shard given as Dialector or as DB opens, and the
// rows are written (SQLite, whose applications often keep one connection).
func TestAShardOpensWhileTheApplicationHoldsThePluginDatabasesConnection(t *testing.T) {
	b := backends[0]
	for _, givenAs := range []string{"Dialector", "DB"} {
		t.Run(givenAs, func(t *testing.T) {
			dir := t.TempDir()
			count := shardid.Layout{}.ShardCount()
			start := func() (*gorm.DB, *shardid.Plugin) { // each start a process whose shards are not open yet
				main, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
				must(t, err)
				sqlMain, err := main.DB()
				must(t, err)
				sqlMain.SetMaxOpenConns(1)
				list := make([]shardid.Shard, 2)
				for i := range list {
					list[i] = shardid.Shard{Name: fmt.Sprintf("s%d", i), Logical: []shardid.Range{{From: i * count / 2, To: (i+1)*count/2 - 1}}}
					if givenAs == "Dialector" {
						list[i].Dialector = b.physical(t, dir, i)
						continue
					}
					list[i].DB, err = gorm.Open(b.physical(t, dir, i), &gorm.Config{Logger: logger.Discard})
					must(t, err)
				}
				p := shardid.New(shardid.Config{Shards: list, Atomic: shardid.BestEffort, ConnectTimeout: 2 * time.Second})
				must(t, main.Use(p))
				t.Cleanup(func() { _ = p.Close() })
				return main, p
			}
			main, p := start()
			must(t, p.AutoMigrate(main, &author{}, &setting{}))
			main, _ = start()
			err := main.Transaction(func(tx *gorm.DB) error {
				if err := tx.Create(&setting{Value: "x"}).Error; err != nil {
					return err
				}
				return main.Clauses(shardid.OnShard(1)).Create(&author{Name: "beside the transaction"}).Error
			})
			if err != nil {
				t.Errorf("a Create on a shard not open yet, the application's transaction holding its pool's one connection: %v", err)
			}
			main, _ = start()
			rows := make([]author, 30)
			for i := range rows {
				rows[i].Name = "batched"
			}
			if err := main.CreateInBatches(&rows, 10).Error; err != nil {
				t.Errorf("CreateInBatches over shards not open yet, its transaction holding the pool's one connection: %v", err)
			}
		})
	}
}
