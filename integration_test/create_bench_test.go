package integration

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

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

// BenchmarkCreate compares, on each database, a plain GORM Create whose ID the
// caller presets with the same Create whose ID the instagram strategy
// assigns: one row, and CreateInBatches of 100. The three kinds alternate
// within every iteration, so that the drift of a shared machine hits them
// alike; each is reported as its own ns/op, with the ratios:
//
//   - sequential: preset IDs 1, 2, 3, ... (what an auto-increment key gives)
//   - shaped: preset IDs of the same shape as shardid's (time, random shard,
//     sequence), so that only the strategy's cost differs from instagram
//   - floor: shaped, after a bare SELECT 1 on the pool: what any strategy that
//     makes one round trip per INSERT pays at least
//   - instagram: IDs from the instagram strategy, one round trip per INSERT
func BenchmarkCreate(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			db := open(b, be, b.TempDir(), shardid.Config{})
			fresh(b, db, &plainRow{}, &instagramRow{})
			pool, _ := db.DB()
			var sequential atomic.Int64
			sequential.Store(time.Now().UnixNano())
			shaped, err := strategies.NewSnowflake(strategies.Layout{}, 0)
			if err != nil {
				b.Fatal(err)
			}
			for _, size := range []int{1, 100} {
				name := map[int]string{1: "one", 100: "batch100"}[size]
				b.Run(name, func(b *testing.B) {
					shapedRows := func() any {
						shards := make([]int, size)
						for i := range shards {
							shards[i] = rand.IntN(8192)
						}
						slices.Sort(shards) // ascending in the batch, as shardid's are
						rows := make([]plainRow, size)
						for i := range rows {
							id, _ := shaped.Next(shards[i])
							rows[i] = plainRow{ID: id, Name: "n"}
						}
						return &rows
					}
					kinds := []func() error{
						func() error { // sequential
							rows := make([]plainRow, size)
							for i := range rows {
								rows[i] = plainRow{ID: sequential.Add(1), Name: "n"}
							}
							return create(db, &rows, size)
						},
						func() error { return create(db, shapedRows(), size) }, // shaped
						func() error { // floor
							rows := shapedRows()
							var one int
							if err := pool.QueryRow("SELECT 1").Scan(&one); err != nil {
								return err
							}
							return create(db, rows, size)
						},
						func() error { // instagram
							rows := make([]instagramRow, size)
							for i := range rows {
								rows[i] = instagramRow{Name: "n"}
							}
							return create(db, &rows, size)
						},
					}
					spent := make([]time.Duration, len(kinds))
					iteration := 0
					for b.Loop() {
						iteration++
						for k := range kinds {
							k = (k + iteration) % len(kinds) // rotate which kind goes first
							start := time.Now()
							if err := kinds[k](); err != nil {
								b.Fatal(err)
							}
							spent[k] += time.Since(start)
						}
					}
					perOp := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
					b.ReportMetric(perOp(spent[0]), "sequential-ns/op")
					b.ReportMetric(perOp(spent[1]), "shaped-ns/op")
					b.ReportMetric(perOp(spent[2]), "floor-ns/op")
					b.ReportMetric(perOp(spent[3]), "instagram-ns/op")
					b.ReportMetric(perOp(spent[3])/perOp(spent[1]), "×shaped")
					b.ReportMetric(perOp(spent[3])/perOp(spent[0]), "×sequential")
					b.ReportMetric(perOp(spent[2])/perOp(spent[1]), "floor×shaped")
				})
			}
		})
	}
}

func create(db *gorm.DB, rows any, size int) error {
	if size == 1 {
		return db.Create(rows).Error
	}
	return db.CreateInBatches(rows, size).Error
}
