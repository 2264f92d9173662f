package integration

import (
	"fmt"
	"testing"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/internal/fence"
)

// keptNote is a sharded row of the kept-predicate benchmark.
type keptNote struct {
	ID   int64 `shardid:""`
	Name string
}

// BenchmarkKeptPredicate prices, on MariaDB and PostgreSQL, the condition on
// the key's shard bits that keeps a part of a statement over every shard to
// its database's ranges (invariant 1 of docs/moves.md): a Find by another
// column and a Count of a table of 2,000 rows on one physical database, the
// same SQL sent with and without the condition the plugin adds (kept to
// half of the logical shards), interleaved; and the floor of a Count kept
// by any condition on each row's key (id + 0 <> 0, which no index answers).
func BenchmarkKeptPredicate(b *testing.B) {
	for _, be := range backends {
		if be.name == "sqlite" {
			continue
		}
		b.Run(be.name, func(b *testing.B) {
			dir := b.TempDir()
			db := open(b, be, dir, shardid.Config{Shards: shards(b, be, dir)})
			fresh(b, db, &keptNote{})
			count := shardid.Layout{}.ShardCount()
			for _, shard := range []int{0, count/physicalShards/2 + 1} { // two ranges of database 0
				notes := make([]keptNote, 1000)
				for i := range notes {
					notes[i].Name = fmt.Sprint("n", i)
				}
				must(b, db.Clauses(shardid.OnShard(shard)).CreateInBatches(&notes, 500).Error)
			}
			layout := shardid.Layout{}.Normalized()
			f := fence.Fence{Dialect: db.Dialector.Name(), ShardBits: layout.ShardBits, SequenceBits: layout.SequenceBits}
			cond, err := f.RangesSQL(fence.Table{Name: "kept_notes", Key: "id", Kind: fence.KeyInt64}, "kept_notes", []fence.Range{{From: 0, To: count/physicalShards - 1}})
			must(b, err)
			kept := "(" + cond + ")"
			shardSQL, err := f.ShardSQL(fence.Table{Name: "kept_notes", Key: "id", Kind: fence.KeyInt64}, "kept_notes")
			must(b, err)
			shifted := "(" + fence.InRanges(shardSQL, []fence.Range{{From: 0, To: count/physicalShards - 1}}) + ")"
			physical := direct(b, be, dir)[0]
			queries := []struct{ name, sql string }{
				{"find", "SELECT * FROM kept_notes WHERE name = 'n7'"},
				{"find-kept", "SELECT * FROM kept_notes WHERE name = 'n7' AND " + kept},
				{"count", "SELECT count(*) FROM kept_notes"},
				{"count-kept", "SELECT count(*) FROM kept_notes WHERE " + kept},
				{"count-kept-shifted", "SELECT count(*) FROM kept_notes WHERE " + shifted}, // the shard field shifted out, as the triggers read it
				// The floor of any condition a database tests on each row of the key.
				{"count-any-condition", "SELECT count(*) FROM kept_notes WHERE id + 0 <> 0"},
			}
			kinds := make([]benchKind, len(queries))
			for i, q := range queries {
				kinds[i] = benchKind{q.name, func() error {
					var rows []map[string]any
					return physical.Raw(q.sql).Scan(&rows).Error
				}}
			}
			perOp := interleaved(b, kinds)
			b.ReportMetric(perOp[1]/perOp[0], "find-kept×plain")
			b.ReportMetric(perOp[3]/perOp[2], "count-kept×plain")
			b.ReportMetric(perOp[4]/perOp[2], "count-kept-shifted×plain")
			b.ReportMetric(perOp[5]/perOp[2], "count-any-condition×plain")
		})
	}
}
