package strategies_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	. "github.com/shardid/shardid/strategies"
)

// syncBuffer is a log destination the generator's goroutines share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// events counts the messages logged for server.
func (b *syncBuffer) events(t *testing.T, server string) map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	counts := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(b.buf.Bytes()))
	for dec.More() {
		var e map[string]any
		if err := dec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		if e["server"] == server {
			counts[e["msg"].(string)]++
		}
	}
	return counts
}

// TestTicketServerDownAndBackLogged cuts a ticket server's connection and
// mends it: TicketOptions.Log gets one warning that it is down, and one
// event when it serves again.
func TestTicketServerDownAndBackLogged(t *testing.T) {
	for _, d := range ticketDBs(t) {
		t.Run(d.dialect, func(t *testing.T) {
			table := ticketTable(t)
			var out syncBuffer
			opts := TicketOptions{Table: table, Backoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Timeout: 5 * time.Second,
				Log: slog.New(slog.NewJSONHandler(&out, nil))}
			var proxies []*tcpProxy
			var servers []TicketServer
			for i := range 2 {
				proxies = append(proxies, newTCPProxy(t, d.target(d.dsn(i))))
				servers = append(servers, d.server(t, table, fmt.Sprintf("ticket-%d", i+1), i, i+1, proxies[i]))
			}
			g := newTestTicket(t, servers, opts)
			shards := shardsOn(t, g, []int{1, 2}, 1)
			id := make([]int64, 1)
			proxies[0].Cut()
			if err := g.Generate(context.Background(), Target{}, shards, id); err != nil {
				t.Fatalf("no failover: %v", err)
			}
			proxies[0].Restore()
			deadline := time.Now().Add(30 * time.Second)
			for !g.Stats().Servers[0].Up && time.Now().Before(deadline) {
				time.Sleep(60 * time.Millisecond) // past the back-off: the next request probes the server
				if err := g.Generate(context.Background(), Target{}, shards, id); err != nil {
					t.Fatal(err)
				}
			}
			events := out.events(t, "ticket-1")
			if events["shardid: ticket server is down; its shards fail over to the next servers"] != 1 || events["shardid: ticket server is back"] != 1 {
				t.Errorf("events of ticket-1: %v, want one down and one back", events)
			}
		})
	}
}
