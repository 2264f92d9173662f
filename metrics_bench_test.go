package shardid

import (
	"fmt"
	"testing"
)

// BenchmarkStatementCounting measures what counting statements (what the
// Prometheus collector turns on) adds to a routed Create and First by ID: the
// same plugin set-up twice, on connections that answer without I/O, one
// counting and one not, run alternately.
func BenchmarkStatementCounting(b *testing.B) {
	open := func(count bool) (*Plugin, func() error, func() error) {
		routed := openMain(b)
		var shards []Shard
		for i := range 4 {
			shards = append(shards, Shard{Name: fmt.Sprintf("fake-%d", i), DB: openFake(b), Logical: []Range{{From: i * 2048, To: i*2048 + 2047}}})
		}
		p := New(Config{Shards: shards, Snowflake: SnowflakeConfig{FixedWorker: true}, MapRefresh: -1, Log: quiet})
		if err := routed.Use(p); err != nil {
			b.Fatal(err)
		}
		if count {
			p.CountStatements()
		}
		id := p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), 3000, 1)
		create := func() error { return routed.Create(&benchSharded{Name: "n"}).Error }
		first := func() error { var row benchSharded; return routed.First(&row, id).Error }
		return p, create, first
	}
	_, createPlain, firstPlain := open(false)
	counting, createCounted, firstCounted := open(true)
	pairs := []struct {
		name             string
		without, counted func() error
	}{
		{"create", createPlain, createCounted},
		{"first", firstPlain, firstCounted},
	}
	for _, pair := range pairs {
		b.Run(pair.name, func(b *testing.B) {
			withoutNs, countedNs := interleaved(b, pair.without, pair.counted)
			b.ReportMetric(withoutNs, "uncounted-ns/op")
			b.ReportMetric(countedNs, "counted-ns/op")
			b.ReportMetric(countedNs/withoutNs, "counted/uncounted")
		})
		b.Run(pair.name+"/uncounted", allocations(pair.without))
		b.Run(pair.name+"/counted", allocations(pair.counted))
	}
	if n := counting.StatementStats(); len(n) == 0 || n[0].Count+n[1*len(StatementKinds())].Count == 0 {
		b.Fatal("the counting plugin counted nothing")
	}
}
