package integration

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// silentServer accepts TCP connections and never says a word, as a server
// whose process hangs does. It returns its address.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

// closedPort returns an address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	must(t, l.Close())
	return addr
}

// TestUnreachableShard: db.Use neither waits for nor fails on a MariaDB shard
// that never answers or is down; the statements that need it fail with
// ErrShardUnavailable naming it, and the other shards serve theirs.
func TestUnreachableShard(t *testing.T) {
	b := backends[1]
	for _, c := range []struct{ name, addr string }{{"silent", silentServer(t)}, {"down", closedPort(t)}} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := mysqldriver.ParseDSN(requireDSN(t, mysqlDSNVar))
			must(t, err)
			cfg.Addr = c.addr
			count := shardid.Layout{}.ShardCount()
			list := []shardid.Shard{
				{Name: "up", Dialector: b.physical(t, "", 0), Logical: []shardid.Range{{From: 0, To: count/2 - 1}}},
				{Name: "gone", Dialector: mysql.Open(cfg.FormatDSN()), Logical: []shardid.Range{{From: count / 2, To: count - 1}}},
			}
			db, err := gorm.Open(b.dialector(t, ""), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			p := shardid.New(shardid.Config{Shards: list, ConnectTimeout: 300 * time.Millisecond})
			used := make(chan error, 1)
			firstStart(t, db)
			go func() { used <- db.Use(p) }()
			select {
			case err := <-used:
				must(t, err)
			case <-time.After(30 * time.Second): // generous: it returns at once, or never
				t.Fatal("db.Use is still waiting for the unreachable shard")
			}
			defer p.Close()
			upDB := direct(t, b, "")[0]
			must(t, upDB.Migrator().DropTable(&author{}))
			must(t, upDB.AutoMigrate(&author{}))
			up := &author{Name: "on the shard that is up"}
			must(t, db.Clauses(shardid.OnShard(1)).Create(up).Error)
			var got author
			must(t, db.First(&got, up.ID).Error)

			gone := shardid.Layout{}.Compose(time.Now(), count-1, 1)
			err = db.First(&author{}, gone).Error
			if !errors.Is(err, shardid.ErrShardUnavailable) || !strings.Contains(err.Error(), "gone") {
				t.Fatalf("a read on the unreachable shard: %v; want ErrShardUnavailable naming it", err)
			}
			err = db.Clauses(shardid.OnShard(count - 1)).Create(&author{Name: "x"}).Error
			if !errors.Is(err, shardid.ErrShardUnavailable) || !strings.Contains(err.Error(), "gone") {
				t.Fatalf("a create on the unreachable shard: %v; want ErrShardUnavailable naming it", err)
			}
			ran := false
			err = db.Clauses(shardid.ByID(gone)).Transaction(func(tx *gorm.DB) error {
				ran = true
				return tx.Create(&author{Name: "in a transaction"}).Error
			})
			if ran || !errors.Is(err, shardid.ErrShardUnavailable) || !strings.Contains(err.Error(), "gone") {
				t.Fatalf("a transaction on the unreachable shard: ran %v, %v; want it not begun, ErrShardUnavailable naming it", ran, err)
			}
			var n int64
			must(t, db.Model(&author{}).Where("id = ?", up.ID).Count(&n).Error)
			if n != 1 {
				t.Fatalf("the shard that is up lost its row: %d", n)
			}
			if err := db.Clauses(shardid.AllShards()).Model(&author{}).Count(&n).Error; !errors.Is(err, shardid.ErrShardUnavailable) {
				t.Fatalf("a count over every shard with one unreachable: %v; want ErrShardUnavailable, not a partial sum", err)
			}
		})
	}
}

// TestShardLostAfterOpening: a physical database the plugin reached, then
// cut off (its connections reset, new ones dropped), fails the reads and
// writes that need it with ErrShardUnavailable naming it, on MariaDB and
// PostgreSQL; the other database's go on.
func TestShardLostAfterOpening(t *testing.T) {
	for _, b := range backends {
		if b.name == "sqlite" {
			continue // a file is not lost so
		}
		t.Run(b.name, func(t *testing.T) {
			dialector, proxy := physicalViaProxy(t, b, 1)
			half := shardid.Layout{}.ShardCount() / 2
			list := []shardid.Shard{
				{Name: "kept", Dialector: b.physical(t, "", 0), Logical: []shardid.Range{{From: 0, To: half - 1}}},
				{Name: "lost", Dialector: dialector, Logical: []shardid.Range{{From: half, To: 2*half - 1}}},
			}
			db, err := gorm.Open(b.dialector(t, ""), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			p := shardid.New(shardid.Config{Shards: list, ConnectTimeout: time.Second})
			firstStart(t, db)
			must(t, db.Use(p))
			defer p.Close()
			must(t, p.Migrator(db).DropTable(&author{}))
			must(t, p.AutoMigrate(db, &author{}))
			kept, lost := &author{Name: "kept"}, &author{Name: "lost"}
			must(t, db.Clauses(shardid.OnShard(0)).Create(kept).Error)
			must(t, db.Clauses(shardid.OnShard(half)).Create(lost).Error)

			proxy.setCut(true)
			for what, err := range map[string]error{
				"a read":    db.First(&author{}, lost.ID).Error,
				"an update": db.Model(lost).Update("name", "after").Error,
				"a create":  db.Clauses(shardid.OnShard(half + 1)).Create(&author{Name: "new"}).Error,
			} {
				if !errors.Is(err, shardid.ErrShardUnavailable) || !strings.Contains(err.Error(), "lost") {
					t.Errorf("%s on the lost database: %v; want ErrShardUnavailable naming it", what, err)
				}
			}
			var got author
			must(t, db.First(&got, kept.ID).Error)
		})
	}
}
