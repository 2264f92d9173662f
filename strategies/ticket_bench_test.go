package strategies

import (
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
