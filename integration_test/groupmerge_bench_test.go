package integration

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/internal/fence"
)

// groupedOrder is the row of the GROUP BY benchmark.
type groupedOrder struct {
	ID     int64 `shardid:""`
	UserID int64 `gorm:"not null;index"`
	Amount int64 `gorm:"not null"`
}

// BenchmarkGroupByOverDatabases: Group("user_id") with a count and a sum
// over 100,000 rows of 1,000 users on four physical databases (MariaDB and
// PostgreSQL), through the plugin, against each part's own query sent to
// its database directly (the same SQL, kept to the database's ranges) one
// at a time, and the four sent at once (what the databases' shared cores
// allow), interleaved.
func BenchmarkGroupByOverDatabases(b *testing.B) {
	for _, be := range backends {
		if be.name == "sqlite" {
			continue
		}
		b.Run(be.name, func(b *testing.B) {
			dir := b.TempDir()
			db := open(b, be, dir, shardid.Config{Shards: shards(b, be, dir)})
			fresh(b, db, &groupedOrder{})
			physicals := direct(b, be, dir)
			layout := shardid.Layout{}.Normalized()
			perDatabase := layout.ShardCount() / physicalShards
			at := layout.Epoch.AddDate(1, 0, 0)
			parts := make([]string, physicalShards)
			for k, physical := range physicals {
				rows := make([]groupedOrder, 25000)
				for i := range rows {
					rows[i] = groupedOrder{ID: layout.Compose(at.Add(time.Duration(i)*time.Millisecond), k*perDatabase+i%perDatabase, 0),
						UserID: int64((k*25000 + i) % 1000), Amount: int64(i % 97)}
				}
				must(b, physical.CreateInBatches(&rows, 1000).Error)
				f := fence.Fence{Dialect: physical.Dialector.Name(), ShardBits: layout.ShardBits, SequenceBits: layout.SequenceBits}
				kept, err := f.RangesSQL(fence.Table{Name: "grouped_orders", Key: "id", Kind: fence.KeyInt64}, "grouped_orders",
					[]fence.Range{{From: k * perDatabase, To: (k+1)*perDatabase - 1}})
				must(b, err)
				parts[k] = "SELECT user_id, count(*) AS n, sum(amount) AS total FROM grouped_orders WHERE (" + kept + ") GROUP BY user_id"
			}
			type group struct{ UserID, N, Total int64 }
			runPart := func(k int) error {
				var rows []group
				return physicals[k].Raw(parts[k]).Scan(&rows).Error
			}
			kinds := []benchKind{{"merged", func() error {
				var rows []group
				err := db.Clauses(shardid.AllShards()).Model(&groupedOrder{}).Select("user_id, count(*) AS n, sum(amount) AS total").Group("user_id").Find(&rows).Error
				if err == nil && len(rows) != 1000 {
					return errors.New("not 1,000 groups")
				}
				return err
			}}}
			for k := range physicals {
				kinds = append(kinds, benchKind{"part-" + string(rune('0'+k)), func() error { return runPart(k) }})
			}
			kinds = append(kinds, benchKind{"parts-at-once", func() error {
				errs := make([]error, len(physicals))
				var wg sync.WaitGroup
				for k := range physicals {
					wg.Go(func() { errs[k] = runPart(k) })
				}
				wg.Wait()
				return errors.Join(errs...)
			}})
			perOp := interleaved(b, kinds)
			slowest := max(perOp[1], perOp[2], perOp[3], perOp[4])
			b.ReportMetric(perOp[0]/slowest, "merged×slowest-part")
			b.ReportMetric(perOp[0]/perOp[5], "merged×parts-at-once")
		})
	}
}
