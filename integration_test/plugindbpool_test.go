package integration

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"strings"
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

// TestAnIDMadeInATransactionHoldingThePoolsLastConnectionFailsWithinConnectTimeout:
// an ID whose strategy needs a connection of the database's pool outside
// the statement's transaction (an instagram fetch, a snowflake lease, a
// segment block), made in a transaction holding the one connection of that
// pool, fails with ErrShardUnavailable within Config.ConnectTimeout saying
// why, rather than waiting until the context ends for a connection only the
// transaction gives back; nothing is left in use.
func TestAnIDMadeInATransactionHoldingThePoolsLastConnectionFailsWithinConnectTimeout(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		for _, model := range []any{&ltOrder{}, &closedUnderSegment{}, &poolOfOneInstagram{}} {
			dir := t.TempDir()
			first := open(t, b, dir, shardid.Config{})
			fresh(t, first, model)
			later := open(t, b, dir, shardid.Config{ConnectTimeout: time.Second}) // a process that did not migrate
			own, err := later.DB()
			must(t, err)
			own.SetMaxOpenConns(1)
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			started := time.Now()
			err = later.WithContext(ctx).Clauses(shardid.OnShard(0)).Transaction(func(tx *gorm.DB) error {
				return tx.Create(model).Error
			})
			cancel()
			took := time.Since(started)
			if !errors.Is(err, shardid.ErrShardUnavailable) || took > 5*time.Second || !strings.Contains(err.Error(), "SetMaxOpenConns") {
				t.Errorf("%T: after %s: %v, want ErrShardUnavailable within ConnectTimeout naming the pool's cap", model, took.Round(time.Millisecond), err)
			}
			settled(t, []*sql.DB{own}, before)
			// Outside a transaction the same process makes its IDs.
			must(t, later.Clauses(shardid.OnShard(0)).Create(model).Error)
		}
	})
}

type poolOfOneInstagram struct {
	ID   int64 `shardid:""`
	Name string
}
