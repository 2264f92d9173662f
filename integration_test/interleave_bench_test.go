package integration

import (
	"testing"
	"time"
)

// benchKind is one kind of work a benchmark times beside others.
type benchKind struct {
	name string
	run  func() error
}

// interleaved runs every kind once per iteration, the first one rotating,
// so that the drift of a shared machine hits all alike; it reports each
// kind's ns/op and returns them, by kind.
func interleaved(b *testing.B, kinds []benchKind) []float64 {
	spent := make([]time.Duration, len(kinds))
	iteration := 0
	for b.Loop() {
		iteration++
		for i := range kinds {
			k := (i + iteration) % len(kinds)
			start := time.Now()
			if err := kinds[k].run(); err != nil {
				b.Fatal(kinds[k].name, ": ", err)
			}
			spent[k] += time.Since(start)
		}
	}
	perOp := make([]float64, len(kinds))
	for k, kind := range kinds {
		perOp[k] = float64(spent[k].Nanoseconds()) / float64(b.N)
		b.ReportMetric(perOp[k], kind.name+"-ns/op")
	}
	return perOp
}
