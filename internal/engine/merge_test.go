package engine

import (
	"fmt"
	"reflect"
	"testing"

	"gorm.io/gorm"

	"github.com/shardid/shardid/shardrouter"
)

type mergedRow struct {
	ID   int64 `shardid:""`
	Name string
}

// BenchmarkMergeOnly measures the k-way merge alone, on parts already
// fetched: its CPU per row stays the same when the rows quadruple.
func BenchmarkMergeOnly(b *testing.B) {
	db, e := openEngine(b, Config{}, false)
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(&mergedRow{}); err != nil {
		b.Fatal(err)
	}
	m, err := e.model(stmt.Schema)
	if err != nil {
		b.Fatal(err)
	}
	order := &shardrouter.Order{Columns: []shardrouter.OrderColumn{{Field: m.pk().field, Desc: true}}, Key: m.pk().field}
	rowsType := reflect.TypeOf([]mergedRow{})
	for _, perPart := range []int{1020, 4020} {
		parts := make([]reflect.Value, 4)
		for k := range parts {
			rows := make([]mergedRow, perPart)
			for i := range rows {
				rows[i].ID = int64(1<<50) - int64(i)*4 - int64(k)
			}
			parts[k] = reflect.ValueOf(rows)
		}
		b.Run(fmt.Sprintf("rows-%d", 4*perPart), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				merged, err := mergeOrdered(stmt, order, mergeOrder{}, rowsType, parts, nil, 20, perPart-20, true)
				if err != nil || merged.Len() != 20 {
					b.Fatal(err, merged.Len())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(4*perPart), "ns/row")
		})
	}
}
