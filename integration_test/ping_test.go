package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// cutProxy forwards TCP connections to a database until cut. Cut, it stops
// accepting (new connections wait in the listen queue) and its connections
// go silent: nothing is forwarded and nothing is closed, as with a server
// behind a lost network.
type cutProxy struct {
	listener net.Listener
	target   string
	cut      chan struct{} // closed by cutOff
	end      chan struct{} // closed at the test's end

	mu    sync.Mutex // protects conns
	conns []net.Conn
	wg    sync.WaitGroup
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	p := &cutProxy{listener: l, target: target, cut: make(chan struct{}), end: make(chan struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		close(p.end)
		_ = l.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) addr() string { return p.listener.Addr().String() }

func (p *cutProxy) cutOff() { close(p.cut) }

func (p *cutProxy) isCut() bool {
	select {
	case <-p.cut:
		return true
	default:
		return false
	}
}

func (p *cutProxy) keep(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *cutProxy) accept() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		p.keep(client)
		if p.isCut() {
			return // this one and the next get no word
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.keep(server)
		p.wg.Go(func() { p.pipe(server, client) })
		p.wg.Go(func() { p.pipe(client, server) })
	}
}

// pipe copies src to dst; when one side closes before the cut, both close.
func (p *cutProxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(silenced{p, dst}, src)
	if !p.isCut() {
		_ = dst.Close()
		_ = src.Close()
	}
}

// silenced writes until the proxy is cut, then holds the write until the
// test ends.
type silenced struct {
	p *cutProxy
	w io.Writer
}

func (s silenced) Write(b []byte) (int, error) {
	if s.p.isCut() {
		<-s.p.end
		return 0, net.ErrClosed
	}
	return s.w.Write(b)
}

// pingServer is a server kind the ping test runs on.
type pingServer struct {
	name string
	// dsn names the database <package database><suffix>, created if missing.
	dsn       func(t *testing.T, suffix string) string
	target    func(dsn string) string       // host:port
	viaProxy  func(dsn, addr string) string // the DSN, through addr
	dialector func(dsn string) gorm.Dialector
	drop      func(t *testing.T, dsn string) // drops the database of dsn, from a connection of its own
}

// dropOn runs drop on server.
func dropOn(t *testing.T, server gorm.Dialector, drop string) {
	t.Helper()
	onServer(t, server, func(db *gorm.DB) { must(t, db.Exec(drop).Error) })
}

// onServer runs use on a connection of its own to server, closed after.
func onServer(t *testing.T, server gorm.Dialector, use func(db *gorm.DB)) {
	t.Helper()
	db, err := gorm.Open(server, &gorm.Config{Logger: logger.Discard})
	must(t, err)
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}()
	use(db)
}

// ensureDatabase runs create on the server if exists says no.
func ensureDatabase(t *testing.T, server gorm.Dialector, exists, create string) {
	t.Helper()
	onServer(t, server, func(db *gorm.DB) {
		var found bool
		must(t, db.Raw(exists).Scan(&found).Error)
		if !found {
			must(t, db.Exec(create).Error)
		}
	})
}

var pingServers = []pingServer{
	{
		name: "mariadb",
		dsn: func(t *testing.T, suffix string) string {
			cfg, err := mysqldriver.ParseDSN(requireDSN(t, mysqlDSNVar))
			must(t, err)
			database := cfg.DBName + suffix
			cfg.DBName = ""
			ensureDatabase(t, mysql.Open(cfg.FormatDSN()), "SELECT COUNT(*) > 0 FROM information_schema.schemata WHERE schema_name = '"+database+"'",
				"CREATE DATABASE IF NOT EXISTS `"+database+"`")
			cfg.DBName = database
			return cfg.FormatDSN()
		},
		target: func(dsn string) string { cfg, _ := mysqldriver.ParseDSN(dsn); return cfg.Addr },
		viaProxy: func(dsn, addr string) string {
			cfg, _ := mysqldriver.ParseDSN(dsn)
			cfg.Addr = addr
			return cfg.FormatDSN()
		},
		dialector: mysql.Open,
		drop: func(t *testing.T, dsn string) {
			cfg, _ := mysqldriver.ParseDSN(dsn)
			database := cfg.DBName
			cfg.DBName = ""
			dropOn(t, mysql.Open(cfg.FormatDSN()), "DROP DATABASE `"+database+"`")
		},
	},
	{
		name: "postgres",
		dsn: func(t *testing.T, suffix string) string {
			u, err := url.Parse(requireDSN(t, postgresDSNVar))
			must(t, err)
			database := strings.TrimPrefix(u.Path, "/") + suffix
			u.Path = "/postgres"
			ensureDatabase(t, postgres.Open(u.String()), "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = '"+database+"')",
				`CREATE DATABASE "`+database+`"`)
			u.Path = "/" + database
			return u.String()
		},
		target: func(dsn string) string { u, _ := url.Parse(dsn); return u.Host },
		viaProxy: func(dsn, addr string) string {
			u, _ := url.Parse(dsn)
			u.Host = addr
			return u.String()
		},
		dialector: postgres.Open,
		drop: func(t *testing.T, dsn string) {
			u, _ := url.Parse(dsn)
			database := strings.TrimPrefix(u.Path, "/")
			u.Path = "/postgres"
			dropOn(t, postgres.Open(u.String()), `DROP DATABASE "`+database+`" WITH (FORCE)`)
		},
	},
}

// TestPingThroughACutProxy: of three physical databases, the one behind a
// proxy is reported down within Config.ConnectTimeout once the proxy is cut,
// and the others and the ticket server up with a round trip. It uses the
// databases <package database>_main, _0, _1 and _2, creating them if missing.
func TestPingThroughACutProxy(t *testing.T) {
	for _, server := range pingServers {
		t.Run(server.name, func(t *testing.T) { testPingThroughACutProxy(t, server) })
	}
}

func testPingThroughACutProxy(t *testing.T, server pingServer) {
	const timeout = 3 * time.Second
	count := shardid.Layout{}.ShardCount()
	var proxy *cutProxy
	list := make([]shardid.Shard, 3)
	for i := range list {
		dsn := server.dsn(t, fmt.Sprintf("_%d", i))
		if i == 1 {
			proxy = newCutProxy(t, server.target(dsn))
			dsn = server.viaProxy(dsn, proxy.addr())
		}
		list[i] = shardid.Shard{Name: fmt.Sprintf("%s-%d", server.name, i), Dialector: server.dialector(dsn),
			Logical: []shardid.Range{{From: i * count / len(list), To: (i+1)*count/len(list) - 1}}}
	}
	main := server.dsn(t, "_main")
	db, err := gorm.Open(server.dialector(main), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	firstStart(t, db)
	p := shardid.New(shardid.Config{Shards: list, ConnectTimeout: timeout,
		Ticket: shardid.TicketConfig{Servers: []shardid.TicketServer{{Name: "tickets", Dialector: server.dialector(main), Offset: 1}}}})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })

	ping := func(down string) {
		t.Helper()
		start := time.Now()
		results, err := p.Ping(context.Background())
		must(t, err)
		if elapsed := time.Since(start); elapsed > timeout+30*time.Second { // generous: the bound, or never
			t.Fatalf("Ping took %v with a ConnectTimeout of %v", elapsed, timeout)
		}
		want := []string{list[0].Name, list[1].Name, list[2].Name, "tickets"}
		if len(results) != len(want) {
			t.Fatalf("Ping gave %+v, want %v", results, want)
		}
		for i, r := range results {
			kind := shardid.KindPhysical
			if i == 3 {
				kind = shardid.KindTicket
			}
			switch {
			case r.Name != want[i] || r.Kind != kind:
				t.Errorf("result %d: %s (%s), want %s (%s)", i, r.Name, r.Kind, want[i], kind)
			case r.Name == down && (!errors.Is(r.Err, shardid.ErrShardUnavailable) || !strings.Contains(r.Err.Error(), "did not answer") || r.RTT != 0):
				t.Errorf("%s behind the cut proxy: %+v, want down, not answering", r.Name, r)
			case r.Name != down && (r.Err != nil || r.RTT <= 0):
				t.Errorf("%s: %+v, want up with a round trip", r.Name, r)
			}
		}
	}
	ping("")
	proxy.cutOff()
	ping(list[1].Name) // on the pool's connection, gone silent
	ping(list[1].Name) // on a new one, which the proxy does not accept
}

// TestPingReportsADroppedDatabaseDown: a physical database dropped while
// the plugin's pool holds connections to it (which MySQL keeps answering
// pings on, though every statement there fails) is reported down, naming
// it, and the others up; so is a ticket server on it.
func TestPingReportsADroppedDatabaseDown(t *testing.T) {
	for _, server := range pingServers {
		t.Run(server.name, func(t *testing.T) { testPingReportsADroppedDatabaseDown(t, server) })
	}
}

func testPingReportsADroppedDatabaseDown(t *testing.T, server pingServer) {
	count := shardid.Layout{}.ShardCount()
	list := make([]shardid.Shard, 2)
	for i := range list {
		list[i] = shardid.Shard{Name: fmt.Sprintf("%s-%d", server.name, i), Dialector: server.dialector(server.dsn(t, fmt.Sprintf("_dropped_%d", i))),
			Logical: []shardid.Range{{From: i * count / len(list), To: (i+1)*count/len(list) - 1}}}
	}
	dropped := server.dsn(t, "_dropped_1")
	db, err := gorm.Open(server.dialector(server.dsn(t, "_dropped_main")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	must(t, db.Exec("DROP TABLE IF EXISTS shardid_shard_databases").Error) // the dropped database comes back with another token
	firstStart(t, db)
	p := shardid.New(shardid.Config{Shards: list, ConnectTimeout: 3 * time.Second,
		Ticket: shardid.TicketConfig{Servers: []shardid.TicketServer{{Name: "tickets", Dialector: server.dialector(dropped), Offset: 1}}}})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	for _, r := range pingOf(t, p) {
		if r.Err != nil {
			t.Fatalf("before the drop: %s: %v", r.Name, r.Err)
		}
	}
	server.drop(t, dropped)
	results := pingOf(t, p)
	if r := results[0]; r.Err != nil {
		t.Errorf("%s, not dropped: %v", r.Name, r.Err)
	}
	if r := results[1]; !errors.Is(r.Err, shardid.ErrShardUnavailable) || !strings.Contains(r.Err.Error(), r.Name) || r.RTT != 0 {
		t.Errorf("%s, its database dropped: %+v; want it down, named", r.Name, r)
	}
	if r := results[2]; r.Kind != shardid.KindTicket || r.Err == nil || !strings.Contains(r.Err.Error(), r.Name) || r.RTT != 0 {
		t.Errorf("ticket server %s, its database dropped: %+v; want it down, named", r.Name, r)
	}
}

func pingOf(t *testing.T, p *shardid.Plugin) []shardid.PingResult {
	t.Helper()
	results, err := p.Ping(context.Background())
	must(t, err)
	return results
}
