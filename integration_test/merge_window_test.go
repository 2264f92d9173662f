package integration

import (
	"math"
	"testing"

	"gorm.io/gorm"
)

type windowRow struct {
	ID int64 `shardid:""`
	G  int64 `gorm:"not null"`
}

// TestMergedWindowWithTheLargestLimit: Limit(math.MaxInt) with an Offset
// (MySQL's way to say "all rows after the first n") over several databases
// returns what one database returns; each part's LIMIT is OFFSET+LIMIT,
// which must not overflow.
func TestMergedWindowWithTheLargestLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		var rows []windowRow
		for i := range 9 {
			rows = append(rows, windowRow{G: int64(i % 4)})
		}
		tw := newTwin(t, b, &windowRow{}, nil, rows, []int{0, 1, 2, 3})
		list := func() any { return &[]windowRow{} }
		tw.same(t, "ordered rows", func(db *gorm.DB, into any) *gorm.DB {
			return db.Order("g, id").Limit(math.MaxInt).Offset(2).Find(into)
		}, list)
		tw.same(t, "rows in no order, counted", func(db *gorm.DB, into any) *gorm.DB {
			var found []windowRow
			db = db.Limit(math.MaxInt).Offset(5).Find(&found)
			*into.(*int64) = int64(len(found))
			return db
		}, number)
		tw.same(t, "groups", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("g, count(*) AS n").Group("g").Order("g").Limit(math.MaxInt).Offset(1).Find(into)
		}, rowMaps)
		tw.same(t, "distinct values", func(db *gorm.DB, into any) *gorm.DB {
			return db.Distinct("g").Order("g desc").Limit(math.MaxInt).Offset(1).Pluck("g", into)
		}, func() any { return &[]int64{} })
		tw.same(t, "an offset and a limit each of half the range", func(db *gorm.DB, into any) *gorm.DB {
			return db.Order("id").Limit(math.MaxInt / 2).Offset(math.MaxInt/2 + 2).Find(into)
		}, list)
	})
}
