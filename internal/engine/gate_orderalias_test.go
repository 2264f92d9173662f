package engine

import (
	"errors"
	"testing"
)

type rgRank struct {
	ID   int64 `shardid:""`
	Qty  int
	Rank int
}

// TestAnOrderByTheTablesColumnBesideAnAliasOfItsNameIsRefusedOverShards:
// ORDER BY a table-qualified column, with a select item aliased to that
// column's name: each database orders by the table's column, which the merge
// cannot read, so the statement over several databases is refused; the merge
// never returns rows in another order than one database's.
func TestAnOrderByTheTablesColumnBesideAnAliasOfItsNameIsRefusedOverShards(t *testing.T) {
	db, e := openEngine(t, Config{Atomic: BestEffort}, true)
	must(t, e.Migrator(db).AutoMigrate(&rgRank{}))
	half := Config{}.Layout.Normalized().ShardCount() / 2
	// on a: qty 0 rank 10, qty 2 rank 20; on b: qty 1 rank 30, qty 3 rank 40
	for i, s := range []int{1, half + 1, 1, half + 1} {
		rank := map[int]int{0: 10, 1: 30, 2: 20, 3: 40}[i]
		must(t, db.Clauses(hinted{OnShard(s)}).Create(&rgRank{Qty: i, Rank: rank}).Error)
	}
	// one database's answer: every row, ordered by the table's qty
	var every []rgRank
	must(t, db.Clauses(hinted{AllShards()}).Order("qty").Find(&every).Error)
	var want []int
	for _, r := range every {
		want = append(want, r.Rank)
	}
	var got []rgRank
	err := db.Clauses(hinted{AllShards()}).Select("id, rank AS qty").Order("rg_ranks.qty").Find(&got).Error
	var gotQ []int
	for _, r := range got {
		gotQ = append(gotQ, r.Qty)
	}
	if !errors.Is(err, ErrCrossShard) {
		t.Errorf("ordered by rg_ranks.qty, selecting rank AS qty, over two databases: %v, order %v (one database's: %v); want ErrCrossShard", err, gotQ, want)
	}
}
