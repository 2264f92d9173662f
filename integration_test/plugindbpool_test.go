package integration

import (
	"context"
	"runtime"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// TestTransactionAcrossShardsCommitsWithThePluginDatabasesPoolOfOneConnection:
// a transaction across shards whose branch on the plugin's own database holds
// the one connection the application's pool allows commits, its rows on
// every database: the plugin records its decision without a second
// connection of the application's pool, which would wait for the branch.
func TestTransactionAcrossShardsCommitsWithThePluginDatabasesPoolOfOneConnection(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, pools, accounts := smallPools(t, b, 2, shardid.Config{})
		fresh(t, r.db, &setting{})
		own, err := r.db.DB()
		must(t, err)
		own.SetMaxOpenConns(1)
		before := runtime.NumGoroutine()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		started := time.Now()
		err = r.db.WithContext(ctx).Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&setting{Value: "beside the accounts"}).Error; err != nil {
				return err
			}
			if err := addTo(tx, accounts[0], -5); err != nil {
				return err
			}
			return addTo(tx, accounts[1], 5)
		})
		if err != nil {
			t.Fatalf("after %s: %v", time.Since(started).Round(time.Millisecond), err)
		}
		if got := balances(t, r, accounts); got != [2]int64{95, 105} {
			t.Errorf("balances %v, want [95 105]", got)
		}
		if n := r.settingsOn(t); n != 1 {
			t.Errorf("%d settings, want 1", n)
		}
		settled(t, append(pools, own), before)
	})
}
