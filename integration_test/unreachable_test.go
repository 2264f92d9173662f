package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
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

// The fault modes of a faultyServer.
const (
	answering = "answering" // forwards to the real server
	silent    = "silent"    // accepts connections and never says a word, as a hung server does
	refusing  = "refusing"  // nothing listens: connections are refused
	resetting = "resetting" // accepts connections and closes them at once
)

// faultyServer stands for a database server at an address of its own, in
// one of the fault modes above; a change of mode drops its connections.
type faultyServer struct {
	addr, upstream string

	mu       sync.Mutex // protects the fields below
	mode     string
	listener net.Listener // nil while refusing
	conns    []net.Conn
}

func newFaultyServer(t *testing.T, upstream, mode string) *faultyServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	s := &faultyServer{addr: l.Addr().String(), upstream: upstream, mode: answering, listener: l}
	go s.serve(l)
	t.Cleanup(func() { s.set(t, refusing) })
	s.set(t, mode)
	return s
}

// set puts the server in mode, dropping the connections it holds.
func (s *faultyServer) set(t *testing.T, mode string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = mode
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
	switch {
	case mode == refusing && s.listener != nil:
		_ = s.listener.Close()
		s.listener = nil
	case mode != refusing && s.listener == nil:
		l, err := net.Listen("tcp", s.addr) // the same port again, as a server restarted
		must(t, err)
		s.listener = l
		go s.serve(l)
	}
}

func (s *faultyServer) serve(l net.Listener) {
	for {
		client, err := l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		switch s.mode {
		case silent:
			s.conns = append(s.conns, client) // held open, never answered
		case answering:
			if server, err := net.Dial("tcp", s.upstream); err == nil {
				s.conns = append(s.conns, client, server)
				go func() { _, _ = io.Copy(server, client); _ = server.Close() }()
				go func() { _, _ = io.Copy(client, server); _ = client.Close() }()
				break
			}
			_ = client.Close()
		default:
			_ = client.Close()
		}
		s.mu.Unlock()
	}
}

// physicalAt is b's physical database i behind a faultyServer in mode, its
// DSN with no timeouts of its own: the plugin's ConnectTimeout bounds it.
func physicalAt(t *testing.T, b backend, i int, mode string) (gorm.Dialector, *faultyServer) {
	t.Helper()
	if b.name == "mariadb" {
		cfg, err := mysqldriver.ParseDSN(requireDSN(t, mysqlDSNVar))
		must(t, err)
		server := newFaultyServer(t, cfg.Addr, mode)
		cfg.Addr, cfg.DBName = server.addr, fmt.Sprintf("%s_%d", cfg.DBName, i)
		return mysql.Open(cfg.FormatDSN()), server
	}
	u, err := url.Parse(requireDSN(t, postgresDSNVar))
	must(t, err)
	server := newFaultyServer(t, u.Host, mode)
	u.Host, u.Path = server.addr, fmt.Sprintf("%s_%d", u.Path, i)
	return postgres.Open(u.String()), server
}

// plugged opens b's main database with the plugin over two physical
// databases: "up", b's physical database 0, with the lower half of the
// logical shards, and "gone", opened with dialector, with the upper half;
// the author table is made fresh on both.
func plugged(t *testing.T, b backend, dialector gorm.Dialector) *gorm.DB {
	t.Helper()
	count := shardid.Layout{}.ShardCount()
	list := []shardid.Shard{
		{Name: "up", Dialector: b.physical(t, "", 0), Logical: []shardid.Range{{From: 0, To: count/2 - 1}}},
		{Name: "gone", Dialector: dialector, Logical: []shardid.Range{{From: count / 2, To: count - 1}}},
	}
	for _, d := range direct(t, b, "")[:2] {
		must(t, d.Migrator().DropTable(&author{}))
		must(t, d.AutoMigrate(&author{}))
	}
	db, err := gorm.Open(b.dialector(t, ""), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	p := shardid.New(shardid.Config{Shards: list, ConnectTimeout: connectTimeout})
	firstStart(t, db)
	bounded(t, "db.Use", func() error { return db.Use(p) })
	t.Cleanup(func() { _ = p.Close() })
	return db
}

// The bound of the tests: a fault is reported within connectTimeout, with
// room for a busy machine.
const (
	connectTimeout = 2 * time.Second  // the healthy database's dials, on a busy machine, take far less
	faultBound     = 10 * time.Second // a silent fault costs a connectTimeout, twice where Begin retries
)

// TestUnreachableShard: on MariaDB and PostgreSQL, a physical database that
// is silent, refuses or resets connections, from the first open or after it
// served, fails every statement that needs it (a read, a create, an update,
// a count over every shard, a transaction, which is not begun) within
// Config.ConnectTimeout with ErrShardUnavailable naming it, while the other
// database serves its own; once it answers again it serves them all.
func TestUnreachableShard(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		for _, mode := range []string{silent, refusing, resetting} {
			for _, later := range []bool{false, true} {
				name := mode + "/at-first-open"
				if later {
					name = mode + "/after-serving"
				}
				t.Run(name, func(t *testing.T) { unreachableShard(t, b, mode, later) })
			}
		}
	})
}

// unreachableShard is TestUnreachableShard on b, with the fault mode from
// the first open, or from after the database served.
func unreachableShard(t *testing.T, b backend, mode string, later bool) {
	first := mode
	if later {
		first = answering
	}
	dialector, server := physicalAt(t, b, 1, first)
	db := plugged(t, b, dialector)
	count := shardid.Layout{}.ShardCount()
	up := &author{Name: "on the database that is up"}
	must(t, db.Clauses(shardid.OnShard(0)).Create(up).Error)
	kept := &author{Name: "on the database that goes"}
	if later {
		serves(t, db, count-1)
		must(t, db.Clauses(shardid.OnShard(count-1)).Create(kept).Error)
		server.set(t, mode)
	} else {
		kept.ID = shardid.Layout{}.Compose(time.Now(), count-1, 1)
	}

	var n int64
	for _, statement := range []struct {
		what string
		run  func() error
	}{
		{"a transaction", func() error { // first: its Begin meets a connection the fault dropped
			ran := false
			err := db.Clauses(shardid.ByID(kept.ID)).Transaction(func(tx *gorm.DB) error {
				ran = true
				return tx.Create(&author{Name: "in a transaction"}).Error
			})
			if ran {
				return fmt.Errorf("begun, then: %w", err)
			}
			return err
		}},
		{"a read", func() error { return db.First(&author{}, kept.ID).Error }},
		{"a create", func() error { return db.Clauses(shardid.OnShard(count - 1)).Create(&author{Name: "x"}).Error }},
		{"an update", func() error { return db.Model(&author{ID: kept.ID}).Update("name", "changed").Error }},
		{"a count over every shard", func() error { return db.Clauses(shardid.AllShards()).Model(&author{}).Count(&n).Error }},
	} {
		err := bounded(t, statement.what, statement.run)
		if !errors.Is(err, shardid.ErrShardUnavailable) || !strings.Contains(err.Error(), "gone") {
			t.Errorf("%s on the %s database: %v; want ErrShardUnavailable naming it", statement.what, mode, err)
		}
	}
	var got author
	must(t, db.First(&got, up.ID).Error)

	server.set(t, answering)
	serves(t, db, count-1)
}

// serves checks that every kind of statement runs on logical shard s.
func serves(t *testing.T, db *gorm.DB, s int) {
	t.Helper()
	a := &author{Name: "served"}
	must(t, db.Clauses(shardid.OnShard(s)).Create(a).Error)
	var got author
	must(t, db.First(&got, a.ID).Error)
	must(t, db.Model(a).Update("name", "updated").Error)
	var n int64
	must(t, db.Clauses(shardid.AllShards()).Model(&author{}).Count(&n).Error)
	must(t, db.Clauses(shardid.ByID(a.ID)).Transaction(func(tx *gorm.DB) error {
		return tx.Create(&author{Name: "in a transaction"}).Error
	}))
}

// bounded runs statement, failing the test when it takes longer than
// faultBound; it gives up waiting for it at a minute.
func bounded(t *testing.T, what string, statement func() error) error {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- statement() }()
	select {
	case err := <-done:
		elapsed := time.Since(start)
		t.Logf("%s: %v after %v", what, err, elapsed.Round(time.Millisecond))
		if elapsed > faultBound {
			t.Errorf("%s took %v, with a ConnectTimeout of %v", what, elapsed, connectTimeout)
		}
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s is still waiting after a minute, with a ConnectTimeout of %v", what, connectTimeout)
		return nil
	}
}

// TestUnreachableEndedConnectionsRedial: on MariaDB and PostgreSQL, once the
// server has ended the pooled connections to a physical database (as a
// restart or an administrator's kill does) right after they served, a
// transaction on it begins on a new connection, where a read then runs: a
// Begin on a lost connection is retried, not failed with the driver's error
// (issue 16).
func TestUnreachableEndedConnectionsRedial(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		db := plugged(t, b, b.physical(t, "", 1))
		s := shardid.Layout{}.ShardCount() - 1
		a := &author{Name: "before the kill"}
		must(t, db.Clauses(shardid.OnShard(s)).Create(a).Error)
		must(t, db.First(&author{}, a.ID).Error) // a second use: pgx checks a connection again only after a second idle
		endConnections(t, b, 1)

		ran := false
		err := db.Clauses(shardid.OnShard(s)).Transaction(func(tx *gorm.DB) error {
			ran = true
			return tx.Create(&author{Name: "in a transaction"}).Error
		})
		if err != nil || !ran {
			t.Fatalf("a transaction after the kill: %v, its function ran: %v; want it begun on a new connection", err, ran)
		}
		// After it, on its new connection: a read is not retried on an ended one, as pgx may have sent it.
		if err := db.First(&author{}, a.ID).Error; err != nil {
			t.Fatalf("a read after the transaction: %v", err)
		}
	})
}

// TestRecoveryListsTheOthersWhileSeveralDatabasesHang: on MariaDB and
// PostgreSQL, physical databases whose servers accept connections and never
// answer each cost recovery a ConnectTimeout to open; six of them, before one
// that answers, do not spend a pass's context (three ConnectTimeouts) before
// that one is listed: the pass fails on each silent one, and on nothing else.
func TestRecoveryListsTheOthersWhileSeveralDatabasesHang(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		const hung, timeout = 6, time.Second
		var silentOnes []gorm.Dialector
		for i := range hung {
			dialector, _ := physicalAt(t, b, i+1, silent)
			silentOnes = append(silentOnes, dialector)
		}
		p := recoveryBehind(t, b, silentOnes, timeout)
		_ = p.RecoverTransactions(context.Background()) // waits for the pass db.Use began, which would hold the next one up
		recoveryFailsOnlyOnSilent(t, p, hung, hung/2*timeout)
	})
}

// TestRecoveryListsTheOthersWhileServedDatabasesGoSilent: on MariaDB and
// PostgreSQL, physical databases recovery has opened and listed, whose
// servers then go silent, each hold their listing up to ConnectTimeout
// (a new connection's dial); three of them, before one that answers, do not
// spend a pass's context (two ConnectTimeouts) before that one is listed.
func TestRecoveryListsTheOthersWhileServedDatabasesGoSilent(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		const hung, timeout = 3, 2 * time.Second
		var servedOnes []gorm.Dialector
		var servers []*faultyServer
		for i := range hung {
			dialector, server := physicalAt(t, b, i+1, answering)
			servedOnes, servers = append(servedOnes, dialector), append(servers, server)
		}
		p := recoveryBehind(t, b, servedOnes, timeout)
		must(t, p.RecoverTransactions(context.Background())) // every database opened and listed
		for _, server := range servers {
			server.set(t, silent)
		}
		time.Sleep(1100 * time.Millisecond) // pgx checks a pooled connection after a second idle, and dials again
		recoveryFailsOnlyOnSilent(t, p, hung, 2*timeout)
	})
}

// recoveryBehind registers a plugin with two-phase commit over physical
// databases silent-0, silent-1 …, opened with dialectors and serving no
// logical shard, then "answering", b's physical database 0, serving them all.
func recoveryBehind(t *testing.T, b backend, dialectors []gorm.Dialector, timeout time.Duration) *shardid.Plugin {
	t.Helper()
	var list []shardid.Shard
	for i, dialector := range dialectors {
		list = append(list, shardid.Shard{Name: fmt.Sprintf("silent-%d", i), Dialector: dialector})
	}
	list = append(list, shardid.Shard{Name: "answering", Dialector: b.physical(t, "", 0), Logical: []shardid.Range{{From: 0, To: shardid.Layout{}.ShardCount() - 1}}})
	db, err := gorm.Open(b.dialector(t, ""), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	p := shardid.New(shardid.Config{Shards: list, ConnectTimeout: timeout})
	firstStart(t, db)
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// recoveryFailsOnlyOnSilent runs a recovery pass with the context given and
// checks that it failed on each of the silent databases and on nothing else:
// the answering one, after them, was listed.
func recoveryFailsOnlyOnSilent(t *testing.T, p *shardid.Plugin, hung int, pass time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pass)
	defer cancel()
	err := p.RecoverTransactions(ctx)
	if err == nil {
		t.Fatalf("recovery with %d silent databases: no error; want one naming each", hung)
	}
	for i := range hung {
		if !strings.Contains(err.Error(), fmt.Sprintf("silent-%d", i)) {
			t.Errorf("recovery's error does not name silent-%d: %v", i, err)
		}
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.Contains(line, "silent-") {
			t.Errorf("recovery failed on more than the silent databases (%q), the answering one unlisted: %v", line, err)
		}
	}
}

// TestUnreachableBeginAfterRefusal: on MariaDB and PostgreSQL, a Begin on a
// physical database whose server has dropped its connections and now
// refuses new ones fails within ConnectTimeout with ErrShardUnavailable
// naming the database, and begins once the server answers again.
func TestUnreachableBeginAfterRefusal(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dialector, server := physicalAt(t, b, 1, answering)
		db := plugged(t, b, dialector)
		s := shardid.Layout{}.ShardCount() - 1
		a := &author{Name: "before the refusal"}
		must(t, db.Clauses(shardid.OnShard(s)).Create(a).Error)
		must(t, db.First(&author{}, a.ID).Error) // used again: pgx will not check it for a second
		server.set(t, refusing)

		err := bounded(t, "a Begin", func() error {
			tx := db.Clauses(shardid.OnShard(s)).Begin()
			if tx.Error == nil {
				tx.Rollback()
			}
			return tx.Error
		})
		if !errors.Is(err, shardid.ErrShardUnavailable) || !strings.Contains(err.Error(), "gone") {
			t.Errorf("a Begin on the refusing database: %v; want ErrShardUnavailable naming it", err)
		}

		server.set(t, answering)
		serves(t, db, s)
	})
}

// endConnections has the server of b end every connection to b's physical
// database i, from an administrator's connection to the main database, and
// waits until they are gone.
func endConnections(t *testing.T, b backend, i int) {
	t.Helper()
	admin, err := gorm.Open(b.dialector(t, ""), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	defer func() {
		if sqlDB, err := admin.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}()
	var database, list, kill string
	if b.name == "mariadb" {
		cfg, err := mysqldriver.ParseDSN(requireDSN(t, mysqlDSNVar))
		must(t, err)
		database = fmt.Sprintf("%s_%d", cfg.DBName, i)
		list, kill = "SELECT id FROM information_schema.processlist WHERE db = ?", "KILL CONNECTION %d"
	} else {
		u, err := url.Parse(requireDSN(t, postgresDSNVar))
		must(t, err)
		database = fmt.Sprintf("%s_%d", strings.TrimPrefix(u.Path, "/"), i)
		list, kill = "SELECT pid FROM pg_stat_activity WHERE datname = ?", "SELECT pg_terminate_backend(%d)"
	}
	var ids []int64
	must(t, admin.Raw(list, database).Scan(&ids).Error)
	if len(ids) == 0 {
		t.Fatalf("no connection to %s to end", database)
	}
	for _, id := range ids {
		must(t, admin.Exec(fmt.Sprintf(kill, id)).Error)
	}
	for deadline := time.Now().Add(faultBound); ; time.Sleep(10 * time.Millisecond) {
		var now []int64
		must(t, admin.Raw(list, database).Scan(&now).Error)
		left := slices.DeleteFunc(now, func(id int64) bool { return !slices.Contains(ids, id) }) // not one the plugin opened since
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("connections %v to %s still there after %v", left, database, faultBound)
		}
	}
}

// TestAPresetIDOfNowOnADatabaseThatRefusesNamesIt: a Create with an ID of
// now given first moves its database's clock-sequence past it; when the
// server has dropped its connections and refuses new ones, it fails with
// ErrShardUnavailable naming the database.
func TestAPresetIDOfNowOnADatabaseThatRefusesNamesIt(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dialector, server := physicalAt(t, b, 1, answering)
		db := plugged(t, b, dialector)
		s := shardid.Layout{}.ShardCount() - 1
		preset := func(seq int) error {
			return db.Create(&author{ID: shardid.Layout{}.Compose(time.Now(), s, seq), Name: "preset"}).Error
		}
		must(t, preset(1)) // the clock-sequence is made, a connection pooled
		server.set(t, refusing)
		err := bounded(t, "a create with an ID of now given", func() error { return preset(2) })
		if !errors.Is(err, shardid.ErrShardUnavailable) || !strings.Contains(err.Error(), "on gone") {
			t.Errorf("a create with an ID of now given, its database refusing: %v; want ErrShardUnavailable naming the database", err)
		}
	})
}
