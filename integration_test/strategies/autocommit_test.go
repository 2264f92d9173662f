package strategies_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/shardid/shardid/integration_test/internal/testdb"
	. "github.com/shardid/shardid/strategies"
)

// withoutAutocommit is the MariaDB test database i opened as a pool whose
// connections do not commit each statement on their own, as autocommit=0 in
// a DSN or in the server's init_connect makes them.
func withoutAutocommit(t *testing.T, i int) *sql.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(mysqlDSN(t, i))
	must(t, err)
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["autocommit"] = "0"
	db, err := sql.Open("mysql", cfg.FormatDSN())
	must(t, err)
	t.Cleanup(func() { _ = db.Close() })
	var on int
	must(t, db.QueryRow("SELECT @@autocommit").Scan(&on))
	if on != 0 {
		t.Fatalf("autocommit is %d on the pool opened with autocommit=0", on)
	}
	return db
}

// On a MariaDB database whose connections leave their statements
// uncommitted, a worker lease, a segment block and the instagram durable
// mark would stay in one session, unseen by the other processes and rolled
// back when the connection closes: two generators both leased worker 0
// there, and would have made equal IDs. The generators refuse such a
// database with ErrNoAutocommit before they lease, reserve or hand out
// anything; a ticket server's own pinned connection turns autocommit on,
// so each ticket is committed, and seen by every connection, once it is
// handed out.
func TestMySQLWithoutAutocommitIsRefusedOrCommitted(t *testing.T) {
	if !testdb.Set(t, mysqlDSNVar) {
		return
	}
	plain := mysqlTarget(t, -1)
	target := func() Target {
		db := withoutAutocommit(t, -1)
		return Target{Name: "no-autocommit", Dialect: "mysql", Table: "autocommit_rows", Conn: db, DB: db}
	}
	ctx := context.Background()
	ids := make([]int64, 1)

	lo := LeaseOptions{Table: leaseTableFor(t, plain)}
	a, b := leased(t, Layout{WorkerBits: 1}, lo), leased(t, Layout{WorkerBits: 1}, lo)
	for name, g := range map[string]*Snowflake{"a": a, "b": b} {
		if err := g.Generate(ctx, target(), []int{3}, ids); !errors.Is(err, ErrNoAutocommit) {
			t.Errorf("snowflake %s: %v (ID %d, leases %+v), want ErrNoAutocommit", name, err, ids[0], g.Stats().Leases)
		}
	}

	s, err := NewSegment(Layout{}, SegmentOptions{})
	must(t, err)
	defer s.Close()
	if err := s.Generate(ctx, target(), []int{3}, ids); !errors.Is(err, ErrNoAutocommit) {
		t.Errorf("segment: %v (ID %d), want ErrNoAutocommit", err, ids[0])
	}

	g, err := NewInstagram(Layout{})
	must(t, err)
	if err := g.Generate(ctx, target(), []int{3}, ids); !errors.Is(err, ErrNoAutocommit) {
		t.Errorf("instagram: %v (ID %d), want ErrNoAutocommit", err, ids[0])
	}

	table := ticketTable(t)
	server := mysqlTicketDB(t).server(t, table, "t1", -1, 1, nil)
	server.DB = withoutAutocommit(t, -1)
	tickets := newTestTicket(t, []TicketServer{server}, TicketOptions{Table: table})
	for range 3 {
		must(t, tickets.Generate(ctx, Target{Name: "shard"}, []int{3}, ids))
		var committed int64
		must(t, plain.DB.QueryRow("SELECT COALESCE(MAX(id), 0) FROM `"+table+"`").Scan(&committed))
		if ticket := ticketOf(Layout{}, ids[0]); committed != ticket {
			t.Fatalf("ticket %d handed out, and the server's table holds %d for other connections", ticket, committed)
		}
	}
}
