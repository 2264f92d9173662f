package integration

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// smallPools opens the plugin over two physical databases of b given as
// DB, each pool held to conns connections, with an account on each.
func smallPools(t *testing.T, b backend, conns int, cfg shardid.Config) (*routing, []*sql.DB, [2]account) {
	t.Helper()
	dir := t.TempDir()
	count := shardid.Layout{}.ShardCount()
	list := make([]shardid.Shard, 2)
	pools := make([]*sql.DB, 2)
	for i := range list {
		db, err := gorm.Open(b.physical(t, dir, i), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		pools[i], err = db.DB()
		must(t, err)
		pools[i].SetMaxOpenConns(conns)
		t.Cleanup(func() { _ = pools[i].Close() })
		list[i] = shardid.Shard{Name: fmt.Sprintf("%s-%d", b.name, i), DB: db, Logical: []shardid.Range{{From: i * count / 2, To: (i+1)*count/2 - 1}}}
	}
	cfg.Shards = list
	db := open(t, b, dir, cfg)
	r := &routing{b: b, db: db, direct: direct(t, b, dir)[:2], plugin: db.Config.Plugins["shardid"].(*shardid.Plugin)}
	fresh(t, db, &account{})
	var accounts [2]account
	for k := range accounts {
		accounts[k] = account{Balance: 100}
		must(t, db.Clauses(shardid.OnShard(k*count/2)).Create(&accounts[k]).Error)
	}
	return r, pools, accounts
}

// sleepWhere is a condition true of every row that sleeps s seconds on the
// row with id, so that one database's part of a read is slow.
func sleepWhere(b backend, id int64, s float64) (string, []any) {
	if b.name == "postgres" {
		return "pg_sleep(CASE WHEN id = ? THEN ? ELSE 0 END)::text = ''", []any{id, s}
	}
	return "SLEEP(CASE WHEN id = ? THEN ? ELSE 0 END) = 0", []any{id, s}
}

// settled waits for the pools to have no connection in use and the
// goroutines to come back to about before, failing otherwise.
func settled(t *testing.T, pools []*sql.DB, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		inUse := 0
		for _, p := range pools {
			inUse += p.Stats().InUse
		}
		n := runtime.NumGoroutine()
		if inUse == 0 && n <= before+10 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still in use, %d goroutines (%d before)", inUse, n, before)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func balances(t *testing.T, r *routing, accounts [2]account) [2]int64 {
	t.Helper()
	var got [2]int64
	for k, d := range r.direct {
		var a account
		must(t, d.First(&a, accounts[k].ID).Error)
		got[k] = a.Balance
	}
	return got
}

// TestSplitCreateOnPoolsOfOneConnection: a Create whose rows go to two
// databases, each pool of one connection, writes them: a part, holding its
// database's connection in its transaction, needs no second one for the
// IDs the statement already made.
func TestSplitCreateOnPoolsOfOneConnection(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, atomicity := range []shardid.Atomicity{b.atomicity(), shardid.BestEffort} {
			r, pools, accounts := smallPools(t, b, 1, shardid.Config{Atomic: atomicity})
			fresh(t, r.db, &leg{})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			legs := []leg{{AccountID: accounts[0].ID, Amount: 1}, {AccountID: accounts[1].ID, Amount: 2}}
			must(t, r.db.WithContext(ctx).Create(&legs).Error)
			cancel()
			for k, d := range r.direct {
				var n int64
				must(t, d.Model(&leg{}).Where("account_id = ?", accounts[k].ID).Count(&n).Error)
				if n != 1 {
					t.Errorf("database %d holds %d rows of its account, want 1", k, n)
				}
			}
			settled(t, pools, runtime.NumGoroutine())
		}
	})
}
