package strategies_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	. "github.com/shardid/shardid/strategies"
)

// BenchmarkSegmentNext measures the latency of one ID while small blocks make
// refills happen all through the run, and reports its percentiles: the fast
// path must not wait for them.
func BenchmarkSegmentNext(b *testing.B) {
	targets := map[string]func(testing.TB) Target{
		"sqlite": sqliteTarget,
		"mysql":  func(tb testing.TB) Target { return mysqlTarget(tb, -1) },
	}
	for _, name := range []string{"sqlite", "mysql"} {
		b.Run(name, func(b *testing.B) {
			target := targets[name](b)
			target.Table = fmt.Sprintf("seg_bench_%016x", rand.Uint64())
			b.Cleanup(func() {
				_, _ = target.DB.Exec("DELETE FROM shardid_segments WHERE name = ?", target.Table)
			})
			const step = 20_000 // a block lasts about 2 ms here: 100 refills in 2,000,000 IDs
			s, err := NewSegment(Layout{}, SegmentOptions{InitialStep: step, MinStep: step, MaxStep: step})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			ctx, shards, ids := context.Background(), []int{7}, make([]int64, 1)
			if err := s.Generate(ctx, target, shards, ids); err != nil { // the first block, outside the timing
				b.Fatal(err)
			}
			latencies := make([]time.Duration, b.N)
			refillsBefore, waitsBefore := sequenceRefills(s), s.Stats().Waits.Refill
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				err := s.Generate(ctx, target, shards, ids)
				latencies[i] = time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			slices.Sort(latencies)
			at := func(p float64) float64 { return float64(latencies[int(p*float64(len(latencies)-1))]) }
			b.ReportMetric(at(0.50), "p50-ns")
			b.ReportMetric(at(0.99), "p99-ns")
			b.ReportMetric(at(0.999), "p99.9-ns")
			b.ReportMetric(float64(sequenceRefills(s)-refillsBefore), "refills")
			b.ReportMetric(float64(s.Stats().Waits.Refill-waitsBefore), "refill-waits")
		})
	}
}

func sequenceRefills(s *Segment) uint64 {
	var refills uint64
	for _, seq := range s.Stats().Sequences {
		refills += seq.Refills
	}
	return refills
}
