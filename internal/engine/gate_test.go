package engine

import (
	"testing"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/sqlscan"
)

type gateRow struct {
	ID   int64 `shardid:""`
	Name string
}

// BenchmarkGate is the last gate's own cost per statement: checking the SQL
// of a First by ID, whose text the gate has read before (its cache), against
// tokenizing that text each time, which the cache spares.
func BenchmarkGate(b *testing.B) {
	db, e := openEngine(b, Config{}, true)
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(&gateRow{}); err != nil {
		b.Fatal(err)
	}
	const sql = "SELECT * FROM `gate_rows` WHERE `gate_rows`.`id` = ? ORDER BY `gate_rows`.`id` LIMIT 1"
	b.Run("checked-from-cache", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := e.checkSent(stmt, sql, 0, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tokenized-each-time", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sqlscan.Read("sqlite", sql); err != nil {
				b.Fatal(err)
			}
		}
	})
}
