package integration

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// TestFailingStatementsRepeatedLeaveNothingBehind: failing and cancelled
// statements over two databases, each form repeated a thousand times (an
// update whose part fails, a transaction across shards whose function fails
// after writing both, reads cancelled or timed out, a context cancelled
// before the prepare, an update whose hook panics, the panic recovered),
// leave no goroutine, connection, prepared branch or heap growing with the
// count of repeats.
func TestFailingStatementsRepeatedLeaveNothingBehind(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, pools, accounts := smallPools(t, b, 4, shardid.Config{})
		ids := []int64{accounts[0].ID, accounts[1].ID}
		boom := errors.New("boom")
		forms := map[string]func() error{
			"failing part": func() error {
				return r.db.Model(&account{}).Where("id IN ?", ids).Update("balance", gorm.Expr("no_such_column + 1")).Error
			},
			"failing transaction": func() error {
				return r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
					for _, a := range accounts {
						if err := tx.Model(&a).Update("balance", gorm.Expr("balance + 1")).Error; err != nil {
							return err
						}
					}
					return boom
				})
			},
			"cancelled read": func() error {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				var got []account
				return r.db.WithContext(ctx).Where("id IN ?", ids).Find(&got).Error
			},
			"timed out read": func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				defer cancel()
				cond, args := sleepWhere(b, accounts[1].ID, 1)
				var got []account
				return r.db.WithContext(ctx).Where("id IN ?", ids).Where(cond, args...).Find(&got).Error
			},
			"failing across commit": func() error {
				return r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
					if err := tx.Model(&accounts[0]).Update("balance", gorm.Expr("balance + 1")).Error; err != nil {
						return err
					}
					return tx.Model(&accounts[1]).Update("balance", gorm.Expr("no_such_column")).Error
				})
			},
		}
		type panicKey struct{}
		type cancelKey struct{}
		must(t, r.db.Callback().Update().After("gorm:update").Register("test:soak", func(db *gorm.DB) {
			if db.Statement.Context.Value(panicKey{}) != nil {
				panic("hook")
			}
			if cancel, ok := db.Statement.Context.Value(cancelKey{}).(context.CancelFunc); ok {
				cancel()
			}
		}))
		forms["panicking hook"] = func() (err error) {
			defer func() {
				if recover() != nil {
					err = boom
				}
			}()
			ctx := context.WithValue(context.Background(), panicKey{}, true)
			return r.db.WithContext(ctx).Model(&account{}).Where("id IN ?", ids).Update("balance", gorm.Expr("balance + 1")).Error
		}
		forms["cancelled before prepare"] = func() error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			return r.db.WithContext(context.WithValue(ctx, cancelKey{}, cancel)).Model(&account{}).Where("id IN ?", ids).Update("balance", gorm.Expr("balance + 1")).Error
		}
		forms["cancelled in an across transaction"] = func() error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			return r.db.WithContext(ctx).Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				for _, a := range accounts {
					if err := tx.Model(&a).Update("balance", gorm.Expr("balance + 1")).Error; err != nil {
						return err
					}
				}
				cancel()
				return nil
			})
		}
		forms["panicking across transaction"] = func() (err error) {
			defer func() {
				if recover() != nil {
					err = boom
				}
			}()
			return r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				for _, a := range accounts {
					if err := tx.Model(&a).Update("balance", gorm.Expr("balance + 1")).Error; err != nil {
						return err
					}
				}
				panic("in the transaction")
			})
		}
		forms["panicking hook in an across transaction"] = func() (err error) {
			defer func() {
				if recover() != nil {
					err = boom
				}
			}()
			return r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				if err := tx.Model(&accounts[0]).Update("balance", gorm.Expr("balance + 1")).Error; err != nil {
					return err
				}
				ctx := context.WithValue(context.Background(), panicKey{}, true)
				return tx.WithContext(ctx).Model(&accounts[1]).Update("balance", gorm.Expr("balance + 1")).Error
			})
		}
		fresh(t, r.db, &leg{}, &soakGuarded{})
		count := shardid.Layout{}.ShardCount()
		guarded := []soakGuarded{{Version: 1}, {Version: 2}}
		for k := range guarded {
			must(t, r.db.Clauses(shardid.OnShard(k*count/2)).Create(&guarded[k]).Error)
		}
		forms["plan refused by hooks"] = func() error {
			if err := r.db.Model(&guarded).Update("balance", gorm.Expr("balance + 1")).Error; !errors.Is(err, shardid.ErrCrossShard) {
				t.Fatalf("err = %v, want ErrCrossShard", err)
			}
			return boom
		}
		forms["rolled back anchor"] = func() error {
			return r.db.Transaction(func(tx *gorm.DB) error { // on the plugin's database: the Create commits with it
				legs := []leg{{AccountID: accounts[0].ID}, {AccountID: accounts[1].ID}}
				if err := tx.Create(&legs).Error; err != nil {
					return err
				}
				return boom
			})
		}
		taken := leg{AccountID: accounts[0].ID}
		must(t, r.db.Create(&taken).Error)
		forms["failing batch"] = func() error {
			legs := []leg{{AccountID: accounts[0].ID}, {AccountID: accounts[1].ID}, {AccountID: accounts[0].ID, ID: taken.ID}}
			return r.db.CreateInBatches(&legs, 2).Error // the last batch's ID is taken
		}
		for name, form := range forms {
			t.Run(name, func(t *testing.T) {
				measure := func(n int) (int, uint64) {
					for range n {
						if err := form(); err == nil {
							t.Fatalf("%s succeeded", name)
						}
					}
					settled(t, pools, 1<<30)
					deadline := time.Now().Add(10 * time.Second)
					var g int
					for g = runtime.NumGoroutine(); time.Now().Before(deadline); g = runtime.NumGoroutine() {
						time.Sleep(100 * time.Millisecond)
						if runtime.NumGoroutine() == g {
							break
						}
					}
					runtime.GC()
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					return g, ms.HeapAlloc
				}
				g0, h0 := measure(20)
				n := soakRepeats()
				// Slower forms run fewer times: each waits for its deadline, a
				// new connection, or its anchor's commit.
				if d := map[string]int{"timed out read": 10, "cancelled before prepare": 10, "rolled back anchor": 5, "failing batch": 5}[name]; d > 0 {
					n /= d
				}
				g1, h1 := measure(n)
				t.Logf("%s: goroutines %d -> %d, heap %d -> %d, open %d/%d", name, g0, g1, h0, h1, pools[0].Stats().OpenConnections, pools[1].Stats().OpenConnections)
				if g1 > g0+20 {
					t.Errorf("goroutines grew from %d to %d over %d repeats", g0, g1, n)
				}
				if h1 > h0+3<<19 { // a statement kept is some KiB: a thousand kept are several MiB
					t.Errorf("heap grew from %d to %d over %d repeats", h0, h1, n)
				}
				r.noPrepared(t)
			})
		}
	})
}

// soakGuarded's BeforeUpdate adds a condition on the row's own version,
// which differs between rows on different databases.
type soakGuarded struct {
	ID      int64 `shardid:""`
	Balance int64
	Version int64
}

func (g *soakGuarded) BeforeUpdate(tx *gorm.DB) error {
	tx.Statement.Where("version = ?", g.Version)
	return nil
}

type soakFlake struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Name string
}

type soakSegment struct {
	ID   int64 `shardid:"strategy:segment"`
	Name string
}

// serverConnections counts the connections to the databases of the test on
// the server, other than the one asking.
func serverConnections(t *testing.T, b backend, db *gorm.DB) int64 {
	t.Helper()
	var n int64
	q := "SELECT count(*) FROM information_schema.PROCESSLIST WHERE DB LIKE CONCAT(DATABASE(), '%') AND ID <> CONNECTION_ID()"
	if b.name == "postgres" {
		q = "SELECT count(*) FROM pg_stat_activity WHERE datname LIKE current_database() || '%' AND pid <> pg_backend_pid()"
	}
	must(t, db.Raw(q).Scan(&n).Error)
	return n
}

// TestPluginsOpenedAndClosedRepeatedlyLeaveNothingBehind: a process that
// opens a plugin over physical databases it dials itself, with its map
// refresh, recovery, snowflake lease and segment blocks in use and a write
// over two databases done, and closes it, many times over, ends with as many
// goroutines and server connections as after the first few rounds.
func TestPluginsOpenedAndClosedRepeatedlyLeaveNothingBehind(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		watch, err := gorm.Open(b.dialector(t, dir), &gorm.Config{})
		must(t, err)
		defer func() {
			if s, err := watch.DB(); err == nil {
				_ = s.Close()
			}
		}()
		// A refresh about once a round; a map older than three refreshes and
		// a second is refused, which a server slow to accept connections on a
		// busy machine reached with 50 ms, and a connection given 5 s failed:
		// this counts what is left behind, not how fast the server answers.
		cfg := shardid.Config{Shards: shards(t, b, dir), MapRefresh: 500 * time.Millisecond, ConnectTimeout: 30 * time.Second,
			InDoubtAfter: 100 * time.Millisecond, PoolIdleTimeout: time.Second}
		round := func() {
			db := open(t, b, dir, cfg)
			p := db.Config.Plugins["shardid"].(*shardid.Plugin)
			must(t, migrator(db).AutoMigrate(&account{}, &soakFlake{}, &soakSegment{}))
			must(t, db.Create(&[]account{{Balance: 1}, {Balance: 2}, {Balance: 3}, {Balance: 4}}).Error)
			must(t, db.Create(&soakFlake{Name: "x"}).Error)
			must(t, db.Create(&soakSegment{Name: "x"}).Error)
			time.Sleep(30 * time.Millisecond)
			must(t, p.Close())
			if s, err := db.DB(); err == nil {
				_ = s.Close()
			}
		}
		noGrowth(t, b, watch, round, 3, 25, "plugins opened and closed")
	})
}

// TestStatementsOnADatabaseThatIsDownLeaveNothingBehind: statements on a
// physical database whose server refuses connections fail, each one trying
// to open it again, and a process retrying them for long holds no more
// goroutines or heap after hundreds of tries than after a few.
func TestStatementsOnADatabaseThatIsDownLeaveNothingBehind(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		list := shards(t, b, dir)[:2]
		count := shardid.Layout{}.ShardCount()
		list[0].Logical = []shardid.Range{{From: 0, To: count/2 - 1}}
		list[1].Logical = []shardid.Range{{From: count / 2, To: count - 1}}
		list[1].Dialector = map[string]gorm.Dialector{
			"mariadb":  mysql.Open("root@tcp(127.0.0.1:1)/nothing"),
			"postgres": postgres.Open("postgres://postgres@127.0.0.1:1/nothing?sslmode=disable"),
		}[b.name]
		db := open(t, b, dir, shardid.Config{Shards: list, ConnectTimeout: 200 * time.Millisecond})
		measure := func(n int) (int, uint64) {
			for range n {
				var a account
				if err := db.Clauses(shardid.OnShard(count - 1)).First(&a).Error; err == nil {
					t.Fatal("a read on a database that is down succeeded")
				}
			}
			time.Sleep(300 * time.Millisecond)
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return runtime.NumGoroutine(), ms.HeapAlloc
		}
		g0, h0 := measure(10)
		g1, h1 := measure(soakRepeats())
		t.Logf("goroutines %d -> %d, heap %d -> %d", g0, g1, h0, h1)
		if g1 > g0+20 {
			t.Errorf("goroutines grew from %d to %d over 300 statements on a database that is down", g0, g1)
		}
		if h1 > h0+8<<20 {
			t.Errorf("heap grew from %d to %d over 300 statements on a database that is down", h0, h1)
		}
	})
}

// soakRepeats is how many times each form runs after the first few.
func soakRepeats() int {
	if n, err := strconv.Atoi(os.Getenv("SHARDID_SOAK_REPEATS")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// TestPluginClosedUnderSlowReadsLeavesNothingBehind: a plugin closed while
// reads over both databases wait on a slow one, opened and closed so many
// times, ends with as many goroutines and server connections as after the
// first rounds: the reads end, and nothing they began outlives them.
func TestPluginClosedUnderSlowReadsLeavesNothingBehind(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		watch, err := gorm.Open(b.dialector(t, dir), &gorm.Config{})
		must(t, err)
		defer func() {
			if s, err := watch.DB(); err == nil {
				_ = s.Close()
			}
		}()
		cfg := shardid.Config{Shards: shards(t, b, dir)}
		setup := open(t, b, dir, cfg)
		fresh(t, setup, &account{})
		must(t, setup.Create(&[]account{{Balance: 1}, {Balance: 2}, {Balance: 3}, {Balance: 4}}).Error)
		var all []account
		must(t, setup.Clauses(shardid.AllShards()).Find(&all).Error)
		round := func() {
			db := open(t, b, dir, cfg)
			p := db.Config.Plugins["shardid"].(*shardid.Plugin)
			cond, args := sleepWhere(b, all[0].ID, 0.5)
			done := make(chan struct{})
			for range 3 {
				go func() {
					defer func() { done <- struct{}{} }()
					var got []account
					_ = db.Clauses(shardid.AllShards()).Where(cond, args...).Find(&got).Error
				}()
			}
			time.Sleep(100 * time.Millisecond)
			_ = p.Close()
			for range 3 {
				<-done
			}
			if s, err := db.DB(); err == nil {
				_ = s.Close()
			}
		}
		noGrowth(t, b, watch, round, 2, 15, "plugins closed under reads")
	})
}

// noGrowth runs round warm times, then many times, and fails when the
// goroutines or the server's connections (as watch counts them), read once
// they settle, grew by more than a bound that a busy machine leaves room for.
func noGrowth(t *testing.T, b backend, watch *gorm.DB, round func(), warm, many int, what string) {
	t.Helper()
	measure := func(n int) (int, int64) {
		for range n {
			round()
		}
		var g int
		var c int64
		deadline := time.Now().Add(10 * time.Second)
		for {
			g, c = runtime.NumGoroutine(), serverConnections(t, b, watch)
			time.Sleep(300 * time.Millisecond)
			if (g == runtime.NumGoroutine() && c == serverConnections(t, b, watch)) || time.Now().After(deadline) {
				return g, c
			}
		}
	}
	g0, c0 := measure(warm)
	g1, c1 := measure(many)
	t.Logf("goroutines %d -> %d, server connections %d -> %d", g0, g1, c0, c1)
	if g1 > g0+10 {
		t.Errorf("goroutines grew from %d to %d over %d %s", g0, g1, many, what)
	}
	if c1 > c0+5 {
		t.Errorf("server connections grew from %d to %d over %d %s", c0, c1, many, what)
	}
}
