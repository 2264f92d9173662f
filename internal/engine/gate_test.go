package engine

import (
	"fmt"
	"runtime"
	"strings"
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

// TestGateCacheHoldsBoundedMemoryForDistinctLargeTexts: statements whose SQL
// texts are all different and large (values written into the SQL, not bound)
// leave the heap after a collection about where it was: what the gate keeps
// of the texts it read is bounded in bytes, not only in count.
func TestGateCacheHoldsBoundedMemoryForDistinctLargeTexts(t *testing.T) {
	db, e := openEngine(t, Config{}, true)
	must(t, e.Migrator(db).AutoMigrate(&gateRow{}))
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	filler := strings.Repeat("x", 32<<10)
	run := func(from, to int) {
		for i := from; i < to; i++ {
			var rows []gateRow
			must(t, db.Clauses(hinted{OnShard(1)}).Where(fmt.Sprintf("name <> '%s%d'", filler, i)).Find(&rows).Error)
		}
	}
	run(0, 20)
	before := heap()
	run(20, 1020)
	after := heap()
	t.Logf("heap %d -> %d after 1000 texts of 32 KiB", before, after)
	if after > before+12<<20 {
		t.Errorf("heap grew by %d MiB over 1000 distinct texts of 32 KiB", (after-before)>>20)
	}
}
