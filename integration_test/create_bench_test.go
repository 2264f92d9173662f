package integration

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/strategies"
)

// plainRow is the baseline: no shardid tag, an ID the caller presets.
type plainRow struct {
	ID   int64 `gorm:"primaryKey;autoIncrement:false"`
	Name string
}

// instagramRow gets its ID from the instagram strategy.
type instagramRow struct {
	ID   int64 `shardid:"strategy:instagram"`
	Name string
}

// BenchmarkCreate compares a plain GORM Create with a preset ID against the
// same Create whose ID the instagram strategy assigns, one row and batches of
// 100, on each database. Compare plain and instagram of one run.
func BenchmarkCreate(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			db := open(b, be, b.TempDir(), shardid.Config{})
			fresh(b, db, &plainRow{}, &instagramRow{})
			var next atomic.Int64
			next.Store(time.Now().UnixNano())
			b.Run("one/plain", func(b *testing.B) {
				for b.Loop() {
					if err := db.Create(&plainRow{ID: next.Add(1), Name: "n"}).Error; err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("one/instagram", func(b *testing.B) {
				for b.Loop() {
					if err := db.Create(&instagramRow{Name: "n"}).Error; err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("batch100/plain", func(b *testing.B) {
				rows := make([]plainRow, 100)
				for b.Loop() {
					for i := range rows {
						rows[i] = plainRow{ID: next.Add(1), Name: "n"}
					}
					if err := db.CreateInBatches(&rows, 100).Error; err != nil {
						b.Fatal(err)
					}
				}
			})
			sf, _ := strategies.NewSnowflake(strategies.Layout{}, 0)
			b.Run("batch100/plain-shaped", func(b *testing.B) {
				rows := make([]plainRow, 100)
				for b.Loop() {
					for i := range rows {
						id, _ := sf.Next(rand.IntN(8192))
						rows[i] = plainRow{ID: id, Name: "n"}
					}
					if err := db.CreateInBatches(&rows, 100).Error; err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("batch100/instagram", func(b *testing.B) {
				rows := make([]instagramRow, 100)
				for b.Loop() {
					for i := range rows {
						rows[i] = instagramRow{Name: "n"}
					}
					if err := db.CreateInBatches(&rows, 100).Error; err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
