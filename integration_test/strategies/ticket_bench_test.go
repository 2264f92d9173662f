package strategies_test

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"testing"

	. "github.com/shardid/shardid/strategies"
)

// BenchmarkTicketThroughput takes one ID per op from 1, 2 and 3 MariaDB
// ticket servers, from 4 goroutines per CPU, and a batch of 64 per op (a
// CreateInBatches) from 3.
func BenchmarkTicketThroughput(b *testing.B) {
	benchmarkTicketThroughput(b, mysqlTicketDB(b))
}

// BenchmarkTicketThroughputPostgres is the same on PostgreSQL sequences.
func BenchmarkTicketThroughputPostgres(b *testing.B) {
	benchmarkTicketThroughput(b, postgresTicketDB(b))
}

func benchmarkTicketThroughput(b *testing.B, d ticketDB) {
	for _, c := range []struct{ servers, batch int }{{1, 1}, {2, 1}, {3, 1}, {3, 64}} {
		n := c.servers
		b.Run(fmt.Sprintf("servers=%d/batch=%d", n, c.batch), func(b *testing.B) {
			table := ticketTable(b)
			var servers []TicketServer
			for i := range n {
				servers = append(servers, d.server(b, table, fmt.Sprintf("ticket-%d", i+1), i, i+1, nil))
				// The default 2 idle connections would make PostgreSQL fork a backend for most requests.
				servers[i].DB.SetMaxIdleConns(8)
			}
			g := newTestTicket(b, servers, TicketOptions{Table: table})
			shardCount := Layout{}.ShardCount()
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := mrand.New(mrand.NewPCG(mrand.Uint64(), 0))
				ids, shards := make([]int64, c.batch), make([]int, c.batch)
				for pb.Next() {
					for i := range shards {
						shards[i] = rng.IntN(shardCount)
					}
					if err := g.Generate(context.Background(), Target{}, shards, ids); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			var shares []string
			for _, s := range g.Stats().Servers {
				shares = append(shares, fmt.Sprintf("%s %d (%d failed)", s.Name, s.Issued, s.Failures))
			}
			b.Logf("%d ops: %s", b.N, strings.Join(shares, ", "))
		})
	}
}
