package strategies

import (
	"context"
	"database/sql"
	"errors"
	"math/bits"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The ticket servers' tests are in the integration module's strategies
// package, which has the MariaDB and PostgreSQL drivers.

// ticketOf is the ticket an ID was made from.
func ticketOf(l Layout, id int64) int64 {
	l = l.Normalized()
	return id>>(l.ShardBits+l.SequenceBits)<<l.SequenceBits | id&(1<<l.SequenceBits-1)
}

func TestTicketValidation(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "never-opened.db")) // NewTicket does not connect
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := func(name, dialect string, offset int) TicketServer {
		return TicketServer{Name: name, Dialect: dialect, DB: db, Offset: offset}
	}
	cases := []struct {
		name    string
		servers []TicketServer
		opts    TicketOptions
		want    string
	}{
		{"none", nil, TicketOptions{}, "no ticket server"},
		{"duplicate offsets", []TicketServer{srv("a", "mysql", 1), srv("b", "mysql", 1)}, TicketOptions{}, "both have offset 1"},
		{"offset 0", []TicketServer{srv("a", "mysql", 0)}, TicketOptions{}, "want 1..16"},
		{"offset above step", []TicketServer{srv("a", "mysql", 5)}, TicketOptions{Step: 4}, "want 1..4"},
		{"duplicate names", []TicketServer{srv("a", "mysql", 1), srv("a", "postgres", 2)}, TicketOptions{}, "two servers are named"},
		{"no name", []TicketServer{srv("", "mysql", 1)}, TicketOptions{}, "has no name"},
		{"no DB", []TicketServer{{Name: "a", Dialect: "mysql", Offset: 1}}, TicketOptions{}, "has no DB"},
		{"unknown dialect", []TicketServer{srv("a", "sqlite", 1)}, TicketOptions{}, "unsupported database dialect"},
		{"step too big", []TicketServer{srv("a", "mysql", 1)}, TicketOptions{Step: 70000}, "Step 70000"},
		{"backoffs", []TicketServer{srv("a", "mysql", 1)}, TicketOptions{Backoff: time.Second, MaxBackoff: time.Millisecond}, "MaxBackoff"},
	}
	for _, c := range cases {
		_, err := NewTicket(Layout{}, c.servers, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: NewTicket: %v, want %q", c.name, err, c.want)
		}
		err = PrepareTicketServers(context.Background(), c.opts.Step, c.servers)
		if c.opts.Backoff == 0 && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: PrepareTicketServers: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := NewTicket(Layout{}, []TicketServer{srv("a", "oracle", 1)}, TicketOptions{}); !errors.Is(err, ErrUnsupportedDialect) {
		t.Errorf("unknown dialect: %v, want ErrUnsupportedDialect", err)
	}
	if _, err := NewTicket(Layout{}, []TicketServer{srv("a", "mysql", 1)}, TicketOptions{Table: "tickets`; DROP"}); err == nil || !strings.Contains(err.Error(), "not a plain SQL identifier") {
		t.Errorf("a table name with a quote: %v", err)
	}
	if _, err := NewTicket(Layout{TimeBits: 1}, []TicketServer{srv("a", "mysql", 1)}, TicketOptions{}); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("bad layout: %v, want ErrInvalidLayout", err)
	}

	g, err := NewTicket(Layout{}, []TicketServer{srv("a", "mysql", 1)}, TicketOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []TicketServer{srv("b", "mysql", 1), srv("a", "mysql", 2), srv("b", "mysql", 17)} {
		if err := g.AddServer(context.Background(), s); err == nil {
			t.Errorf("AddServer(%+v) succeeded", s)
		}
	}
	if err := g.Generate(context.Background(), Target{}, []int{1}, make([]int64, 2)); err == nil {
		t.Error("Generate with 1 shard for 2 ids succeeded")
	}
	_ = g.Close()
	if err := g.Generate(context.Background(), Target{}, []int{1}, make([]int64, 1)); err == nil {
		t.Error("Generate after Close succeeded")
	}
}

// TestTicketIDLayout checks the formula on fixed tickets, without a database.
func TestTicketIDLayout(t *testing.T) {
	l := Layout{}.Normalized()
	for _, ticket := range []int64{1, 1023, 1024, 1<<40 + 17, 1<<50 - 1} {
		for _, shard := range []int{0, 1, 4095, l.ShardCount() - 1} {
			id := l.ComposeTicks(ticket>>l.SequenceBits, shard, int(ticket&(1<<l.SequenceBits-1)))
			if l.Shard(id) != shard || ticketOf(l, id) != ticket || bits.Len64(uint64(id)) > 63 {
				t.Errorf("ticket %d shard %d: id %d decodes to shard %d ticket %d", ticket, shard, id, l.Shard(id), ticketOf(l, id))
			}
		}
	}
}

// Servers lists the ring's servers in the order given, then added.
func TestTicketServersInOrder(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "never-opened.db")) // NewTicket does not connect
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g, err := NewTicket(Layout{}, []TicketServer{{Name: "b", Dialect: "mysql", DB: db, Offset: 2}, {Name: "a", Dialect: "postgres", DB: db, Offset: 1}}, TicketOptions{})
	if err != nil {
		t.Fatal(err)
	}
	servers := g.Servers()
	if len(servers) != 2 || servers[0].Name != "b" || servers[1].Name != "a" || servers[1].Dialect != "postgres" || servers[0].DB != db {
		t.Fatalf("Servers() = %+v, want b then a, as given", servers)
	}
}
