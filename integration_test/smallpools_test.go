package integration

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
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

// TestStatementsOverDatabasesOnPoolsOfOneConnection: many goroutines run
// statements over two databases whose pools hold one connection each
// (updates and reads over both, split Creates, transactions across shards):
// none waits on one database's connection while holding the other's for
// good, every statement ends, and the balances add up.
func TestStatementsOverDatabasesOnPoolsOfOneConnection(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, pools, accounts := smallPools(t, b, 1, shardid.Config{})
		ids := []int64{accounts[0].ID, accounts[1].ID}
		before := runtime.NumGoroutine()
		const workers, rounds = 8, 5
		errs := make(chan error, workers*rounds)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db := r.db.WithContext(ctx)
		done := make(chan struct{})
		var added int64
		go func() {
			defer close(done)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for range rounds {
						var err error
						switch w % 4 {
						case 0:
							err = db.Model(&account{}).Where("id IN ?", ids).Update("balance", gorm.Expr("balance + 1")).Error
							if err == nil {
								atomic.AddInt64(&added, 2)
							}
						case 1:
							var got []account
							err = db.Where("id IN ?", ids).Find(&got).Error
						case 2:
							err = db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
								if err := tx.Model(&accounts[0]).Update("balance", gorm.Expr("balance - 1")).Error; err != nil {
									return err
								}
								return tx.Model(&accounts[1]).Update("balance", gorm.Expr("balance + 1")).Error
							})
						case 3:
							rows := make([]account, 8)
							err = db.Create(&rows).Error
						}
						errs <- err
					}
				})
			}
			wg.Wait()
		}()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			t.Fatal("statements still running 10 s past their contexts' deadline")
		}
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("a statement failed: %v", err)
			}
		}
		got := balances(t, r, accounts)
		if got[0]+got[1] != 200+added {
			t.Errorf("balances %v add up to %d, want %d", got, got[0]+got[1], 200+added)
		}
		settled(t, pools, before)
		r.noPrepared(t)
	})
}

// TestCreateInBatchesOverDatabasesOnPoolsOfOneConnection: goroutines
// running CreateInBatches of rows on two databases at once, each pool of
// one connection, all write their rows: a batch's part, holding its
// database's connection, does not wait for the commit of another
// CreateInBatches's branches, which needs that connection.
func TestCreateInBatchesOverDatabasesOnPoolsOfOneConnection(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, pools, accounts := smallPools(t, b, 1, shardid.Config{})
		fresh(t, r.db, &leg{})
		before := runtime.NumGoroutine()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		const workers, rounds = 8, 3
		errs := make(chan error, workers*rounds)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range rounds {
					legs := []leg{{AccountID: accounts[0].ID}, {AccountID: accounts[1].ID}, {AccountID: accounts[0].ID}, {AccountID: accounts[1].ID}}
					errs <- r.db.WithContext(ctx).CreateInBatches(&legs, 2).Error
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("a CreateInBatches failed: %v", err)
			}
		}
		var n int64
		must(t, r.db.Clauses(shardid.AllShards()).Model(&leg{}).Count(&n).Error)
		if n != workers*rounds*4 {
			t.Errorf("%d rows, want %d", n, workers*rounds*4)
		}
		r.noPrepared(t)
		settled(t, pools, before)
	})
}
