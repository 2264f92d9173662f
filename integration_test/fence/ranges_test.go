package fence_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shardid/shardid/internal/fence"
)

// TestRangesSQLSelectsTheRangesRows: the condition RangesSQL writes for an
// int64 key (the key masked in place) selects exactly the rows whose
// logical shard is in the ranges, as the shifted shard expression of
// ShardSQL does, on every dialect: ranges at the first and the last shard,
// in the middle, several, one shard, every shard, none.
func TestRangesSQLSelectsTheRangesRows(t *testing.T) {
	last := layout.ShardCount() - 1
	cases := [][]fence.Range{
		{{From: 0, To: 2047}},
		{{From: 6144, To: last}},
		{{From: 100, To: 4000}},
		{{From: 0, To: 0}, {From: 17, To: 17}, {From: last, To: last}},
		{{From: 0, To: last}},
		{{From: 2048, To: 4095}, {From: 6144, To: 7000}},
		nil,
	}
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			db := openDB(t, dialect)
			mustExec(t, db, "DROP TABLE IF EXISTS ranges_rows")
			mustExec(t, db, "CREATE TABLE ranges_rows (id BIGINT PRIMARY KEY)")
			rng := rand.New(rand.NewPCG(1, 2))
			shards := map[int64]int{}
			for i := range 400 {
				shard := rng.IntN(last + 1)
				if i < 4 {
					shard = []int{0, last, 2047, 2048}[i] // the edges
				}
				id := layout.Compose(layout.Epoch.AddDate(0, 0, 1+i), shard, rng.IntN(1<<layout.SequenceBits))
				shards[id] = shard
				mustExec(t, db, fmt.Sprintf("INSERT INTO ranges_rows (id) VALUES (%d)", id))
			}
			f := newFence(dialect)
			table := fence.Table{Name: "ranges_rows", Key: "id", Kind: fence.KeyInt64}
			shifted, err := f.ShardSQL(table, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, ranges := range cases {
				masked, err := f.RangesSQL(table, "", ranges)
				if err != nil {
					t.Fatal(err)
				}
				want := 0
				for _, shard := range shards {
					for _, r := range ranges {
						if shard >= r.From && shard <= r.To {
							want++
							break
						}
					}
				}
				for _, cond := range []string{masked, fence.InRanges(shifted, ranges)} {
					var got int
					if err := db.QueryRow("SELECT count(*) FROM ranges_rows WHERE " + cond).Scan(&got); err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Errorf("ranges %v: %s selects %d rows, want %d", ranges, cond, got, want)
					}
				}
			}
		})
	}
}
