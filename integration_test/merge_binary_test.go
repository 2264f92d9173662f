package integration

import (
	"testing"

	"gorm.io/gorm"
)

type binaryRow struct {
	ID  int64  `shardid:""`
	G   int64  `gorm:"not null"`
	Vb  []byte `gorm:"type:varbinary(8)"`
	Bl  []byte `gorm:"type:blob"`
	Fix []byte `gorm:"type:binary(3)"`
}

// TestMariaDBsBinaryStringsMergeByTheirBytes: MariaDB's BINARY, VARBINARY
// and BLOB columns, whose collation information_schema leaves NULL, compare
// their bytes (a NUL before a space, a prefix first): grouped, distinct and
// in MIN/MAX over four databases they merge as one database answers.
func TestMariaDBsBinaryStringsMergeByTheirBytes(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("MariaDB's binary strings")
		}
		values := [][]byte{{0x20}, {0x00}, {0xff, 0x00}, {0x20, 0x20}, {}, {0x61}, {0x41}, {0x61, 0x00}}
		var rows []binaryRow
		for i := range 16 {
			v := values[i%len(values)]
			rows = append(rows, binaryRow{G: int64(i % 3), Vb: v, Bl: v, Fix: v})
		}
		tw := newTwin(t, b, &binaryRow{}, nil, rows, []int{0, 1, 2, 3})
		for _, c := range []string{"vb", "bl", "fix"} {
			tw.same(t, "GROUP BY "+c, func(db *gorm.DB, into any) *gorm.DB {
				return db.Select(c + ", count(*) AS n").Group(c).Order(c + " desc").Find(into)
			}, rowMaps)
			tw.same(t, "DISTINCT "+c, func(db *gorm.DB, into any) *gorm.DB { return db.Distinct(c).Order(c).Find(into) }, rowMaps)
			tw.same(t, "COUNT(DISTINCT "+c+")", func(db *gorm.DB, into any) *gorm.DB { return db.Distinct(c).Count(into.(*int64)) }, number)
			tw.same(t, "MIN and MAX of "+c+" per group", func(db *gorm.DB, into any) *gorm.DB {
				return db.Select("g, min(" + c + ") AS lo, max(" + c + ") AS hi").Group("g").Order("g").Find(into)
			}, rowMaps)
		}
	})
}
