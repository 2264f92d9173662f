package bench

import (
	"sync/atomic"
	"testing"
	"time"

	bwmarrin "github.com/bwmarrin/snowflake"
	"github.com/sony/sonyflake"

	"github.com/shardid/shardid/strategies"
)

// BenchmarkNextID: one ID per op, from one goroutine and from all cores.
// shardid's IDs spread over logical shards (the unsaturated case: each shard
// has its own sequence); bwmarrin and sonyflake have one sequence per node.
func BenchmarkNextID(b *testing.B) {
	shardid, err := strategies.NewSnowflake(strategies.Layout{}, 0)
	if err != nil {
		b.Fatal(err)
	}
	node, err := bwmarrin.NewNode(1)
	if err != nil {
		b.Fatal(err)
	}
	sony := sonyflake.NewSonyflake(sonyflake.Settings{MachineID: func() (uint16, error) { return 1, nil }})
	if sony == nil {
		b.Fatal("sonyflake: no generator")
	}
	generators := []struct {
		name string
		next func(shard int) int64
	}{
		{"shardid-snowflake", func(shard int) int64 { id, _ := shardid.Next(shard); return id }},
		{"bwmarrin", func(int) int64 { return node.Generate().Int64() }},
		{"sonyflake", func(int) int64 { id, _ := sony.NextID(); return int64(id) }},
	}
	for _, g := range generators {
		b.Run(g.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			shard := 0
			for b.Loop() {
				shard++
				g.next(shard)
			}
		})
		b.Run(g.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			var start atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				shard := int(start.Add(1000))
				for pb.Next() {
					shard++
					g.next(shard)
				}
			})
		})
	}
}

// BenchmarkSaturatedShard: every ID in one logical shard, so the sequence
// fills every millisecond; the rate (ids/s) against the 1,024,000/s cap of
// the default layout shows how little of each tick the wait for the next one
// loses.
func BenchmarkSaturatedShard(b *testing.B) {
	g, err := strategies.NewSnowflake(strategies.Layout{}, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := g.Next(7); err != nil {
			b.Fatal(err)
		}
	}
	rate := float64(b.N) / time.Since(start).Seconds()
	b.ReportMetric(rate, "ids/s")
	b.ReportMetric(100*rate/1_024_000, "%cap")
}
