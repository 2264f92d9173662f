package strategies

import (
	"context"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkTicketRingShare is Table 1 of Hu & Wang: the share of 2,000,000
// requests with random keys that each server gets, by consistent hashing
// with 1, 160 and 1000 virtual nodes per server and by random choice. ns/op
// is one lookup; max-dev-% is the largest distance of a server's share from
// 1/N, relative to 1/N.
func BenchmarkTicketRingShare(b *testing.B) {
	const requests = 2000000
	for _, n := range []int{3, 4} {
		for _, method := range []string{"ring-v1", "ring-v160", "ring-v1000", "random"} {
			b.Run(fmt.Sprintf("servers=%d/%s", n, method), func(b *testing.B) {
				var pick func(rng *mrand.Rand) int
				if method == "random" {
					pick = func(rng *mrand.Rand) int { return rng.IntN(n) }
				} else {
					var v int
					_, _ = fmt.Sscanf(method, "ring-v%d", &v)
					r := newRing(ringNames(n), v)
					pick = func(rng *mrand.Rand) int { i, _ := r.lookup(rng.Uint64(), nil); return i }
				}
				rng := mrand.New(mrand.NewPCG(1, 2))
				for b.Loop() {
					pick(rng)
				}
				b.StopTimer()
				counts := make([]int, n)
				rng = mrand.New(mrand.NewPCG(3, 4))
				for range requests {
					counts[pick(rng)]++
				}
				worst := 0.0
				shares := make([]string, n)
				for i, c := range counts {
					share := float64(c) / requests
					shares[i] = fmt.Sprintf("%.2f%%", 100*share)
					worst = max(worst, math.Abs(share*float64(n)-1))
				}
				b.ReportMetric(100*worst, "max-dev-%")
				b.Logf("%d servers, %s, %d requests: %s", n, method, requests, strings.Join(shares, " "))
			})
		}
	}
}

// BenchmarkTicketThroughput takes one ID per op from 1, 2 and 3 MariaDB
// ticket servers, from 4 goroutines per CPU.
func BenchmarkTicketThroughput(b *testing.B) {
	benchmarkTicketThroughput(b, mysqlTicketDB(b))
}

// BenchmarkTicketThroughputPostgres is the same on PostgreSQL sequences.
func BenchmarkTicketThroughputPostgres(b *testing.B) {
	benchmarkTicketThroughput(b, postgresTicketDB(b))
}

func benchmarkTicketThroughput(b *testing.B, d ticketDB) {
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			table := ticketTable(b)
			var servers []TicketServer
			for i := range n {
				servers = append(servers, d.server(b, table, fmt.Sprintf("ticket-%d", i+1), i, i+1, nil))
				// The default 2 idle connections would make PostgreSQL fork a backend for most requests.
				servers[i].DB.SetMaxIdleConns(8)
			}
			g := newTestTicket(b, servers, TicketOptions{table: table})
			shardCount := Layout{}.ShardCount()
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := mrand.New(mrand.NewPCG(mrand.Uint64(), 0))
				ids := make([]int64, 1)
				for pb.Next() {
					if err := g.Generate(context.Background(), Target{}, []int{rng.IntN(shardCount)}, ids); err != nil {
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
