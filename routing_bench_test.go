package shardid

import (
	"fmt"
	"testing"

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
// connections that answer without I/O: a plain GORM Create with a preset ID
// and First by ID, against the same on a sharded model routed over four
// physical databases (IDs from snowflake, so no round trip is involved).
func BenchmarkRoutingCost(b *testing.B) {
	plain := openFake(b)
	routed := openFake(b)
	var shards []Shard
	for i := range 4 {
		shards = append(shards, Shard{Name: fmt.Sprintf("fake-%d", i), DB: openFake(b), Logical: []Range{{From: i * 2048, To: i*2048 + 2047}}})
	}
	p := New(Config{Shards: shards})
	if err := routed.Use(p); err != nil {
		b.Fatal(err)
	}
	id := p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), 3000, 1)
	b.Run("create/plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := plain.Create(&benchPlain{ID: id, Name: "n"}).Error; err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("create/shardid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := routed.Create(&benchSharded{Name: "n"}).Error; err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("first/plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var row benchPlain
			if err := plain.First(&row, id).Error; err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("first/shardid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var row benchSharded
			if err := routed.First(&row, id).Error; err != nil {
				b.Fatal(err)
			}
		}
	})
}
