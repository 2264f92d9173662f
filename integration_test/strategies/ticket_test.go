package strategies_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardid/shardid/integration_test/internal/testdb"
	. "github.com/shardid/shardid/strategies"
)

// ticketTable is a counter name no other test uses.
func ticketTable(t testing.TB) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "shardid_tickets_t" + hex.EncodeToString(b)
}

// ticketDB opens one ticket server's database, directly or through a proxy
// the test can cut, and drops the test's counter at the end.
type ticketDB struct {
	dialect, driver string
	dsn             func(i int) string // direct
	viaProxy        func(dsn, addr string) string
	target          func(dsn string) string // host:port behind the DSN
}

func mysqlTicketDB(t testing.TB) ticketDB {
	testdb.Require(t, mysqlDSNVar) // here, in the test: the closures below may run in its subtests
	return ticketDB{
		dialect: "mysql", driver: "mysql",
		dsn: func(i int) string { return mysqlDSN(t, i) },
		viaProxy: func(dsn, addr string) string {
			cfg, _ := mysql.ParseDSN(dsn)
			cfg.Addr, cfg.Timeout = addr, time.Second
			return cfg.FormatDSN()
		},
		target: func(dsn string) string { cfg, _ := mysql.ParseDSN(dsn); return cfg.Addr },
	}
}

func postgresTicketDB(t testing.TB) ticketDB {
	testdb.Require(t, postgresDSNVar)
	return ticketDB{
		dialect: "postgres", driver: "pgx",
		dsn: func(i int) string { return postgresDSN(t, i) },
		viaProxy: func(dsn, addr string) string {
			u, _ := url.Parse(dsn)
			u.Host = addr
			q := u.Query()
			q.Set("connect_timeout", "1")
			u.RawQuery = q.Encode()
			return u.String()
		},
		target: func(dsn string) string { u, _ := url.Parse(dsn); return u.Host },
	}
}

func ticketDBs(t *testing.T) []ticketDB {
	return []ticketDB{mysqlTicketDB(t), postgresTicketDB(t)}
}

// server opens database i as the ticket server name with offset; with a
// proxy, through it.
func (d ticketDB) server(t testing.TB, table, name string, i, offset int, proxy *tcpProxy) TicketServer {
	t.Helper()
	dsn := d.dsn(i)
	direct, err := sql.Open(d.driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		drop := "DROP TABLE IF EXISTS `" + table + "`"
		if d.dialect == "postgres" {
			drop = `DROP SEQUENCE IF EXISTS "` + table + `"`
		}
		if _, err := direct.Exec(drop); err != nil {
			t.Errorf("dropping %s on %s: %v", table, name, err)
		}
		_ = direct.Close()
	})
	db := direct
	if proxy != nil {
		if db, err = sql.Open(d.driver, d.viaProxy(dsn, proxy.Addr())); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
	}
	return TicketServer{Name: name, Dialect: d.dialect, DB: db, Offset: offset}
}

// ticketOf is the ticket an ID was made from.
func ticketOf(l Layout, id int64) int64 {
	l = l.Normalized()
	return id>>(l.ShardBits+l.SequenceBits)<<l.SequenceBits | id&(1<<l.SequenceBits-1)
}

func newTestTicket(t testing.TB, servers []TicketServer, opts TicketOptions) *Ticket {
	t.Helper()
	g, err := NewTicket(Layout{}, servers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	if err := g.PrepareServers(context.Background()); err != nil {
		t.Fatal(err)
	}
	return g
}

// serverOf is the index of the server whose offset a ticket ID carries.
func serverOf(offsets []int, id int64) int {
	residue := int(ticketOf(Layout{}, id) % DefaultTicketStep)
	for i, offset := range offsets {
		if offset%DefaultTicketStep == residue {
			return i
		}
	}
	return -1
}

// shardsOn returns n shards that g's ring gives to the server of offsets[0],
// found by the offset their tickets carry.
func shardsOn(t *testing.T, g *Ticket, offsets []int, n int) []int {
	t.Helper()
	var shards []int
	id := make([]int64, 1)
	for shard := 0; len(shards) < n; shard++ {
		if err := g.Generate(context.Background(), Target{}, []int{shard}, id); err != nil {
			t.Fatal(err)
		}
		if serverOf(offsets, id[0]) == 0 {
			shards = append(shards, shard)
		}
	}
	return shards
}

func TestTicketIDsAreUniqueAndKeepTheShard(t *testing.T) {
	for _, d := range ticketDBs(t) {
		t.Run(d.dialect, func(t *testing.T) {
			table := ticketTable(t)
			offsets := []int{3, 7, 16} // 16 = Step: residue 0
			var servers []TicketServer
			for i, off := range offsets {
				servers = append(servers, d.server(t, table, fmt.Sprintf("ticket-%d", i+1), i, off, nil))
			}
			opts := TicketOptions{Table: table}
			g := newTestTicket(t, servers, opts)
			layout := Layout{}.Normalized()

			const workers, calls = 8, 300
			var mu sync.Mutex
			seen := map[int64]int{}        // id -> shard
			serverOfShard := map[int]int{} // the ring keeps a shard on one server
			want := make([]uint64, len(servers))
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Go(func() {
					rng := mrand.New(mrand.NewPCG(uint64(w), 1))
					for range calls {
						n := 1 + rng.IntN(8)
						shards, ids := make([]int, n), make([]int64, n)
						for k := range shards {
							shards[k] = rng.IntN(layout.ShardCount())
						}
						if err := g.Generate(context.Background(), Target{}, shards, ids); err != nil {
							errs <- err
							return
						}
						mu.Lock()
						for k, id := range ids {
							if prev, dup := seen[id]; dup {
								errs <- fmt.Errorf("id %d issued twice (shards %d and %d)", id, prev, shards[k])
							}
							seen[id] = shards[k]
							server := serverOf(offsets, id)
							if server < 0 {
								errs <- fmt.Errorf("id %d of shard %d: ticket residue %d is no server's", id, shards[k], ticketOf(layout, id)%16)
								continue
							}
							want[server]++
							if prev, ok := serverOfShard[shards[k]]; ok && prev != server {
								errs <- fmt.Errorf("shard %d: tickets from servers %d and %d", shards[k], prev, server)
							}
							serverOfShard[shards[k]] = server
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for id, shard := range seen {
				if got := layout.Shard(id); got != shard {
					t.Fatalf("id %d decodes to shard %d, want %d", id, got, shard)
				}
				if err := layout.Check(id, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			stats := g.Stats()
			if stats.Issued != uint64(len(seen)) {
				t.Errorf("Stats.Issued = %d, want %d", stats.Issued, len(seen))
			}
			for i, s := range stats.Servers {
				t.Logf("%s: issued %d (%.1f%%), %d IDs carry its offset", s.Name, s.Issued, 100*float64(s.Issued)/float64(len(seen)), want[i])
				if s.Issued != want[i] || !s.Up || s.Failures != 0 {
					t.Errorf("%+v, want %d issued, up, no failures", s, want[i])
				}
			}
		})
	}
}

func TestTicketShardIDsAscendOnOneServer(t *testing.T) {
	d := mysqlTicketDB(t)
	table := ticketTable(t)
	g := newTestTicket(t, []TicketServer{d.server(t, table, "a", 0, 1, nil), d.server(t, table, "b", 1, 2, nil)}, TicketOptions{Table: table})
	last := map[int]int64{}
	for k := range 200 {
		shard := k % 5
		ids := make([]int64, 1)
		if err := g.Generate(context.Background(), Target{}, []int{shard}, ids); err != nil {
			t.Fatal(err)
		}
		if ids[0] <= last[shard] {
			t.Fatalf("shard %d: %d after %d", shard, ids[0], last[shard])
		}
		last[shard] = ids[0]
	}
}

// ticketPhase is one row of the paper's Table 2.
type ticketPhase struct {
	name   string
	down   []int // servers cut during the phase
	calls  int   // Generate calls of the phase, besides the background's
	issued []uint64
	fails  []uint64
}

// TestTicketFailoverTable2 replays Table 2 of Hu & Wang: three ticket
// servers, one then two of them cut, both back, then a fourth added, while
// a background caller and the phases' own calls must all get IDs, and no
// ticket is issued twice.
func TestTicketFailoverTable2(t *testing.T) {
	for _, d := range ticketDBs(t) {
		t.Run(d.dialect, func(t *testing.T) { testTicketTable2(t, d) })
	}
}

func testTicketTable2(t *testing.T, d ticketDB) {
	table := ticketTable(t)
	opts := TicketOptions{Table: table, Backoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Timeout: 5 * time.Second} // healthy servers answer within it on a busy machine
	var proxies []*tcpProxy
	var servers []TicketServer
	for i := range 4 {
		proxies = append(proxies, newTCPProxy(t, d.target(d.dsn(i))))
		servers = append(servers, d.server(t, table, fmt.Sprintf("ticket-%d", i+1), i, i+1, proxies[i]))
	}
	g := newTestTicket(t, servers[:3], opts)
	layout := Layout{}.Normalized()

	var mu sync.Mutex
	seen := map[int64]bool{}
	var failures []error
	generate := func(rng *mrand.Rand) {
		n := 1 + rng.IntN(4)
		shards, ids := make([]int, n), make([]int64, n)
		for k := range shards {
			shards[k] = rng.IntN(layout.ShardCount())
		}
		err := g.Generate(context.Background(), Target{}, shards, ids)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failures = append(failures, err)
			return
		}
		for k, id := range ids {
			if seen[id] {
				failures = append(failures, fmt.Errorf("id %d issued twice", id))
			}
			seen[id] = true
			if layout.Shard(id) != shards[k] {
				failures = append(failures, fmt.Errorf("id %d: shard %d, want %d", id, layout.Shard(id), shards[k]))
			}
		}
	}
	stop := make(chan struct{})
	var background sync.WaitGroup
	var backgroundCalls atomic.Int64 // ended
	background.Go(func() {
		rng := mrand.New(mrand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			default:
				generate(rng)
				backgroundCalls.Add(1)
			}
		}
	})

	// settle waits for the background call in flight at a cut to end: its tickets answered before the cut are counted only then.
	settle := func() {
		t.Helper()
		ended := backgroundCalls.Load()
		for deadline := time.Now().Add(30 * time.Second); backgroundCalls.Load() <= ended; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the background caller made no call in 30s")
			}
		}
	}
	phases := []struct {
		name  string
		setup func()
		down  []int
	}{
		{"all up", func() {}, nil},
		{"server 1 down", func() { proxies[0].Cut(); settle() }, []int{0}},
		{"servers 1, 2 down", func() { proxies[1].Cut(); settle() }, []int{0, 1}},
		{"1, 2 back", func() {
			proxies[0].Restore()
			proxies[1].Restore()
			time.Sleep(opts.MaxBackoff)
			settle()
		}, nil},
		{"server 4 added", func() {
			if err := g.AddServer(context.Background(), servers[3]); err != nil {
				t.Error(err)
			}
		}, nil},
	}
	var rows []ticketPhase
	rng := mrand.New(mrand.NewPCG(3, 4))
	for _, ph := range phases {
		ph.setup()
		before := g.Stats()
		calls := 0
		for ; calls < 300; calls++ {
			generate(rng)
		}
		// A restored server serves again once a probe finds it up; on
		// PostgreSQL a dead pooled connection may cost a probe first.
		for deadline := time.Now().Add(5 * time.Second); ph.name == "1, 2 back" && time.Now().Before(deadline); calls++ {
			if now := g.Stats(); now.Servers[0].Issued > before.Servers[0].Issued && now.Servers[1].Issued > before.Servers[1].Issued {
				break
			}
			generate(rng)
		}
		after := g.Stats()
		row := ticketPhase{name: ph.name, down: ph.down, calls: calls}
		for i, s := range after.Servers {
			var b ServerState
			if i < len(before.Servers) {
				b = before.Servers[i]
			}
			row.issued = append(row.issued, s.Issued-b.Issued)
			row.fails = append(row.fails, s.Failures-b.Failures)
		}
		rows = append(rows, row)
	}
	close(stop)
	background.Wait()

	t.Logf("%-18s %-6s %-28s %s", "phase", "calls", "tickets issued by server 1..n", "failed requests")
	for _, r := range rows {
		t.Logf("%-18s %-6d %-28s %v", r.name, r.calls, fmt.Sprint(r.issued), r.fails)
	}
	for _, err := range failures {
		t.Error(err)
	}
	for _, r := range rows {
		for i, n := range r.issued {
			down := false
			for _, j := range r.down {
				down = down || i == j
			}
			if down && n != 0 {
				t.Errorf("%s: server %d is cut but issued %d tickets", r.name, i+1, n)
			}
			if !down && n == 0 {
				t.Errorf("%s: server %d is up but issued nothing", r.name, i+1)
			}
		}
	}
	for _, s := range g.Stats().Servers {
		if !s.Up {
			t.Errorf("%s is still down at the end: %+v", s.Name, s)
		}
	}
	if g.Stats().Issued != uint64(len(seen)) {
		t.Errorf("Stats.Issued = %d, want %d", g.Stats().Issued, len(seen))
	}
	t.Logf("%d IDs, none twice; %d requests failed over", len(seen), g.Stats().Waits.Failover)
}

func TestTicketAllServersDown(t *testing.T) {
	d := mysqlTicketDB(t)
	table := ticketTable(t)
	var servers []TicketServer
	var proxies []*tcpProxy
	for i := range 2 {
		proxies = append(proxies, newTCPProxy(t, d.target(d.dsn(i))))
		servers = append(servers, d.server(t, table, fmt.Sprintf("ticket-%d", i+1), i, i+1, proxies[i]))
	}
	g := newTestTicket(t, servers, TicketOptions{Table: table, Backoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond})
	ids := make([]int64, 3)
	shards := []int{1, 2, 3}
	if err := g.Generate(context.Background(), Target{}, shards, ids); err != nil {
		t.Fatal(err)
	}
	for _, p := range proxies {
		p.Cut()
	}
	for range 3 {
		start := time.Now()
		err := g.Generate(context.Background(), Target{}, shards, ids)
		if !errors.Is(err, ErrNoTicketServer) || !strings.Contains(err.Error(), "ticket-1") || !strings.Contains(err.Error(), "ticket-2") {
			t.Fatalf("all cut: %v, want ErrNoTicketServer naming both", err)
		}
		if time.Since(start) > time.Second {
			t.Fatalf("failing took %s", time.Since(start))
		}
	}
	for _, s := range g.Stats().Servers {
		if s.Up || s.Failures == 0 || s.RetryAt.IsZero() {
			t.Errorf("%+v, want down with failures and a retry time", s)
		}
	}
	for _, p := range proxies {
		p.Restore()
	}
	time.Sleep(50 * time.Millisecond)
	if err := g.Generate(context.Background(), Target{}, shards, ids); err != nil {
		t.Fatalf("after restore: %v", err)
	}
}

func TestTicketCancellationDoesNotMarkServersDown(t *testing.T) {
	d := mysqlTicketDB(t)
	table := ticketTable(t)
	g := newTestTicket(t, []TicketServer{d.server(t, table, "a", 0, 1, nil)}, TicketOptions{Table: table})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := g.Generate(ctx, Target{}, []int{1}, make([]int64, 1))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
	if s := g.Stats().Servers[0]; !s.Up || s.Failures != 0 {
		t.Fatalf("after a canceled call: %+v", s)
	}
}

func TestPrepareTicketServersIsIdempotentAndConcurrent(t *testing.T) {
	for _, d := range ticketDBs(t) {
		t.Run(d.dialect, func(t *testing.T) {
			table := ticketTable(t)
			servers := []TicketServer{d.server(t, table, "a", 0, 1, nil), d.server(t, table, "b", 1, 2, nil)}
			opts := TicketOptions{Table: table}
			prepare := func(servers []TicketServer) error {
				g, err := NewTicket(Layout{}, servers, opts)
				if err != nil {
					return err
				}
				defer g.Close()
				return g.PrepareServers(context.Background())
			}
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for i := range errs {
				wg.Go(func() { errs[i] = prepare(servers) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if err := prepare(servers); err != nil {
				t.Fatalf("again: %v", err)
			}
			g := newTestTicket(t, servers, opts)
			if err := g.Generate(context.Background(), Target{}, []int{1, 2, 3}, make([]int64, 3)); err != nil {
				t.Fatal(err)
			}
			// The same databases under other offsets would repeat tickets.
			moved := []TicketServer{servers[0], servers[1]}
			moved[0].Offset, moved[1].Offset = 5, 6
			if err := prepare(moved); err == nil {
				t.Fatal("a database that served offset 1 was accepted for offset 5")
			}
		})
	}
}

// A counter that served one step is refused for another, though its last
// ticket fits both (17 is 1 modulo 8 and modulo 16): a server added at
// offset 9 of step 16 would issue 9 and 25 again. On MySQL/MariaDB, where
// the session numbers the tickets, a process that never prepared the
// servers is refused too; a table made before its series was recorded is
// judged by its last ticket, then records the series.
func TestPrepareTicketServersRefusesACounterOfAnotherStep(t *testing.T) {
	for _, d := range ticketDBs(t) {
		t.Run(d.dialect, func(t *testing.T) {
			table := ticketTable(t)
			a := d.server(t, table, "a", 0, 1, nil)
			prepare := func(step int) error {
				g, err := NewTicket(Layout{}, []TicketServer{a}, TicketOptions{Table: table, Step: step})
				if err != nil {
					return err
				}
				defer g.Close()
				return g.PrepareServers(context.Background())
			}
			g := newTestTicket(t, []TicketServer{a}, TicketOptions{Table: table, Step: 8})
			id := make([]int64, 1)
			for range 3 {
				must(t, g.Generate(context.Background(), Target{}, []int{0}, id))
			}
			if last := ticketOf(Layout{}, id[0]); last != 17 {
				t.Fatalf("third ticket of offset 1 step 8 is %d, want 17", last)
			}
			if err := prepare(16); err == nil || !strings.Contains(err.Error(), "another offset or step") {
				t.Fatalf("a counter of step 8 prepared for step 16: %v, want it refused", err)
			}
			must(t, prepare(8))
			if d.dialect != "mysql" {
				return // the sequence's own increment numbers every process's tickets
			}
			// A process that never prepared the servers numbers by its session.
			unprepared, err := NewTicket(Layout{}, []TicketServer{a}, TicketOptions{Table: table, Step: 16})
			must(t, err)
			defer unprepared.Close()
			if err := unprepared.Generate(context.Background(), Target{}, []int{0}, id); !errors.Is(err, ErrNoTicketServer) || !strings.Contains(err.Error(), "another offset or step") {
				t.Fatalf("tickets of step 16 from a counter of step 8: %v (ticket %d), want ErrNoTicketServer saying why", err, ticketOf(Layout{}, id[0]))
			}
			_, err = a.DB.Exec("ALTER TABLE `" + table + "` COMMENT = ''") // as an earlier version made it
			must(t, err)
			must(t, prepare(8))
			if err := prepare(16); err == nil {
				t.Fatal("a table made before the series was recorded, prepared for step 8, was then accepted for step 16")
			}
		})
	}
}

// TestTicketMySQLContentionIsNotAFailure: REPLACEs of the one row from
// several processes (here, generators) deadlock now and then on InnoDB;
// that must not take the server down.
func TestTicketMySQLContentionIsNotAFailure(t *testing.T) {
	d := mysqlTicketDB(t)
	table := ticketTable(t)
	server := d.server(t, table, "only", 0, 1, nil)
	var gens []*Ticket
	for range 16 {
		// A statement's timeout far past a deep lock queue on a busy
		// machine: a deadlock, not a slow server, is what is tested.
		gens = append(gens, newTestTicket(t, []TicketServer{server}, TicketOptions{Table: table, Timeout: 30 * time.Second}))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		g := gens[w%len(gens)]
		wg.Go(func() {
			ids := make([]int64, 2)
			for range 60 {
				if err := g.Generate(context.Background(), Target{}, []int{1, 2}, ids); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, g := range gens {
		if s := g.Stats().Servers[0]; !s.Up || s.Failures != 0 || s.Issued != 60*2 {
			t.Fatalf("%+v, want up, no failures, %d issued", s, 60*2)
		}
	}
}

// TestTicketLargeBatchOutlivesTheTimeout: the timeout is per statement, so a
// MySQL batch of many statements may take longer than it.
func TestTicketLargeBatchOutlivesTheTimeout(t *testing.T) {
	d := mysqlTicketDB(t)
	table := ticketTable(t)
	const timeout = time.Second // one statement's, with room for one on a busy machine
	g := newTestTicket(t, []TicketServer{d.server(t, table, "only", 0, 1, nil)}, TicketOptions{Table: table, Timeout: timeout})
	shards, ids := make([]int, 4000), make([]int64, 4000) // about a millisecond each, several timeouts in all
	start := time.Now()
	if err := g.Generate(context.Background(), Target{}, shards, ids); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("%d tickets in %s, timeout %s", len(ids), took, timeout)
	for k := 1; k < len(ids); k++ {
		if ids[k] <= ids[k-1] {
			t.Fatalf("ids[%d] = %d after %d: one shard's batch must ascend", k, ids[k], ids[k-1])
		}
	}
	if s := g.Stats().Servers[0]; !s.Up || s.Failures != 0 {
		t.Fatalf("%+v", s)
	}
}

// TestTicketRecoversDespiteDeadPinnedConnections: the pinned connection of
// a server that was cut is dead; after the server is back, the next probe
// must open a new one, not fail again.
func TestTicketRecoversDespiteDeadPinnedConnections(t *testing.T) {
	d := mysqlTicketDB(t)
	table := ticketTable(t)
	proxy := newTCPProxy(t, d.target(d.dsn(0)))
	servers := []TicketServer{d.server(t, table, "cut", 0, 1, proxy), d.server(t, table, "steady", 1, 2, nil)}
	opts := TicketOptions{Table: table, Backoff: 20 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
	g := newTestTicket(t, servers, opts)
	shards := shardsOn(t, g, []int{1, 2}, 4) // of the server behind the proxy
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			for range 5 {
				if err := g.Generate(context.Background(), Target{}, shards[:1], make([]int64, 1)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	proxy.Cut()
	proxy.Restore()
	// The first call meets a dead connection and fails over; the next
	// probe, after one back-off, must bring the server back.
	for k := range 3 {
		if err := g.Generate(context.Background(), Target{}, shards[:1], make([]int64, 1)); err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			time.Sleep(2 * opts.Backoff)
		}
	}
	if s := g.Stats().Servers[0]; !s.Up || s.Failures > 1 {
		t.Fatalf("%+v: want up again after at most one failure", s)
	}
}

// TestTicketStalledServerFailsOverWithinTheTimeout: a server that stops
// answering without closing anything costs the requests that were on it one
// Timeout, and those queued behind them nothing more.
func TestTicketStalledServerFailsOverWithinTheTimeout(t *testing.T) {
	d := mysqlTicketDB(t)
	table := ticketTable(t)
	proxy := newTCPProxy(t, d.target(d.dsn(0)))
	servers := []TicketServer{d.server(t, table, "stalled", 0, 1, proxy), d.server(t, table, "steady", 1, 2, nil)}
	const timeout = 2 * time.Second // the steady server answers within it on a busy machine
	g := newTestTicket(t, servers, TicketOptions{Table: table, Timeout: timeout, Backoff: 10 * time.Second, MaxBackoff: 10 * time.Second})
	shards := shardsOn(t, g, []int{1, 2}, 6) // of the stalled server
	proxy.Stall()
	var wg sync.WaitGroup
	took := make([]time.Duration, len(shards))
	for k, shard := range shards {
		wg.Go(func() {
			start := time.Now()
			if err := g.Generate(context.Background(), Target{}, []int{shard}, make([]int64, 1)); err != nil {
				t.Error(err)
			}
			took[k] = time.Since(start)
		})
	}
	wg.Wait()
	t.Logf("calls took %v (timeout %s)", took, timeout)
	// One after another, the six would take six timeouts; four leave room for a busy machine.
	if slowest := slices.Max(took); slowest > 4*timeout {
		t.Errorf("the slowest call took %s, want under %s", slowest, 4*timeout)
	}
	if s := g.Stats().Servers[0]; s.Up || s.Failures != 1 {
		t.Errorf("%+v, want down after one failure", s)
	}
	proxy.Restore()
}

// TestTicketStalledServersAreNotTheCallersDeadline: when every server
// stopped answering, each within its Timeout, a caller whose context is live
// fails with ErrNoTicketServer saying the servers did not answer in time, not
// with an error that errors.Is reads as the caller's own deadline.
func TestTicketStalledServersAreNotTheCallersDeadline(t *testing.T) {
	for _, d := range ticketDBs(t) {
		t.Run(d.dialect, func(t *testing.T) {
			table := ticketTable(t)
			proxy := newTCPProxy(t, d.target(d.dsn(0)))
			g := newTestTicket(t, []TicketServer{d.server(t, table, "stalled", 0, 1, proxy)}, TicketOptions{Table: table, Timeout: 300 * time.Millisecond})
			if err := g.Generate(context.Background(), Target{}, []int{1}, make([]int64, 1)); err != nil {
				t.Fatal(err)
			}
			proxy.Stall()
			defer proxy.Restore()
			err := g.Generate(context.Background(), Target{}, []int{1}, make([]int64, 1))
			if !errors.Is(err, ErrNoTicketServer) || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 300ms") {
				t.Fatalf("every server stalled, the caller's context live: %v", err)
			}
		})
	}
}

// TestTicketServersAllDownCostEachCallerOneTimeoutAtMost: while every server
// is down and the one tried as the last resort stalls, the requests that
// come meanwhile do not queue behind each other's tries (on MySQL/MariaDB
// for its one pinned connection, one Timeout each): one request at a time
// tries it, and the others fail at once with ErrNoTicketServer. Once the
// server answers again, the next request gets its ticket.
func TestTicketServersAllDownCostEachCallerOneTimeoutAtMost(t *testing.T) {
	for _, d := range ticketDBs(t) {
		t.Run(d.dialect, func(t *testing.T) {
			table := ticketTable(t)
			proxy := newTCPProxy(t, d.target(d.dsn(0)))
			const timeout = 300 * time.Millisecond
			g := newTestTicket(t, []TicketServer{d.server(t, table, "stalled", 0, 1, proxy)}, TicketOptions{Table: table, Timeout: timeout, Backoff: 10 * time.Second, MaxBackoff: 10 * time.Second})
			must(t, g.Generate(context.Background(), Target{}, []int{1}, make([]int64, 1)))
			proxy.Stall()
			if err := g.Generate(context.Background(), Target{}, []int{1}, make([]int64, 1)); !errors.Is(err, ErrNoTicketServer) {
				t.Fatalf("the only server stalled: %v, want ErrNoTicketServer", err)
			}
			var wg sync.WaitGroup
			took := make([]time.Duration, 8)
			for k := range took {
				wg.Go(func() {
					start := time.Now()
					if err := g.Generate(context.Background(), Target{}, []int{1}, make([]int64, 1)); !errors.Is(err, ErrNoTicketServer) {
						t.Errorf("the only server down and stalled: %v, want ErrNoTicketServer", err)
					}
					took[k] = time.Since(start)
				})
			}
			wg.Wait()
			// One after another, the eight would take eight timeouts.
			if slowest := slices.Max(took); slowest > 3*timeout {
				t.Errorf("calls took %v: the slowest %s, want under %s", took, slowest, 3*timeout)
			}
			proxy.Restore()
			time.Sleep(timeout) // a try that was under way ends
			// A request that gives up before its try leaves the server to the next one.
			gaveUp, cancel := context.WithCancel(context.Background())
			cancel()
			if err := g.Generate(gaveUp, Target{}, []int{1}, make([]int64, 1)); !errors.Is(err, context.Canceled) {
				t.Fatalf("a cancelled request: %v", err)
			}
			if err := g.Generate(context.Background(), Target{}, []int{1}, make([]int64, 1)); err != nil {
				t.Fatalf("the server answering again: %v", err)
			}
		})
	}
}
