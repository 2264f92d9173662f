package shardid

import (
	"fmt"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// benchPlain is the baseline model: no shardid tag, a preset ID.
type benchPlain struct {
	ID   int64 `gorm:"primaryKey;autoIncrement:false"`
	Name string
}

// benchSharded gets its ID in-process and is routed to one of four
// physical databases.
type benchSharded struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Name string
}

func openFake(b *testing.B) *gorm.DB {
	pool, _ := newFakeDB()
	db, err := gorm.Open(sqlite.Dialector{Conn: pool}, &gorm.Config{Logger: logger.Discard, DisableAutomaticPing: true})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkRoutingCost measures what the plugin adds to a statement, on
// connections that answer without I/O: a plain GORM Create with a preset ID,
// First by ID and Find by an IN list of ten IDs, against the same on a
// sharded model routed over four physical databases (IDs from snowflake, so
// no round trip is involved; the ten IDs need all four databases).
func BenchmarkRoutingCost(b *testing.B) {
	plain := openFake(b)
	routed := openFake(b)
	var shards []Shard
	for i := range 4 {
		shards = append(shards, Shard{Name: fmt.Sprintf("fake-%d", i), DB: openFake(b), Logical: []Range{{From: i * 2048, To: i*2048 + 2047}}})
	}
	p := New(Config{Shards: shards, Snowflake: SnowflakeConfig{FixedWorker: true}})
	if err := routed.Use(p); err != nil {
		b.Fatal(err)
	}
	id := p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), 3000, 1)
	// Ten IDs on the four physical databases (2048 logical shards each).
	var ids []int64
	for i := range 10 {
		ids = append(ids, p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), i*819, 1))
	}
	// Each pair alternates within every iteration, so the drift of a shared
	// machine hits both alike; allocations are counted by the sub-benchmarks
	// below.
	pairs := []struct {
		name           string
		plain, sharded func() error
	}{
		{"create",
			func() error { return plain.Create(&benchPlain{ID: id, Name: "n"}).Error },
			func() error { return routed.Create(&benchSharded{Name: "n"}).Error }},
		{"first",
			func() error { var row benchPlain; return plain.First(&row, id).Error },
			func() error { var row benchSharded; return routed.First(&row, id).Error }},
		{"find-in-10",
			func() error { var rows []benchPlain; return plain.Find(&rows, ids).Error },
			func() error { var rows []benchSharded; return routed.Find(&rows, ids).Error }},
	}
	for _, pair := range pairs {
		b.Run(pair.name, func(b *testing.B) {
			var spent [2]time.Duration
			i := 0
			for b.Loop() {
				i++
				for k, run := range [2]func() error{pair.plain, pair.sharded} {
					k = (k + i) % 2
					run = [2]func() error{pair.plain, pair.sharded}[k]
					start := time.Now()
					if err := run(); err != nil {
						b.Fatal(err)
					}
					spent[k] += time.Since(start)
				}
			}
			plainNs := float64(spent[0].Nanoseconds()) / float64(b.N)
			shardedNs := float64(spent[1].Nanoseconds()) / float64(b.N)
			b.ReportMetric(plainNs, "plain-ns/op")
			b.ReportMetric(shardedNs, "shardid-ns/op")
			b.ReportMetric(shardedNs-plainNs, "added-ns/op")
			b.ReportMetric(shardedNs/plainNs, "shardid/plain")
		})
		b.Run(pair.name+"/plain", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := pair.plain(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(pair.name+"/shardid", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := pair.sharded(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
