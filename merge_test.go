package shardid

import (
	"testing"

	"gorm.io/gorm"
)

// An ordered merge over several databases whose destination lacks the key
// column, in each form a query can take, is logged for a reader to judge.
func TestOrderedMergeWithoutTheKeySelected(t *testing.T) {
	db, p, _ := revRouted(t, &revPlain{})
	var all []*revPlain
	for range 6 {
		all = append(all, revOnBoth(t, db, p, func() *revPlain { return &revPlain{Name: "n", Rank: 1} }, func(r *revPlain) int64 { return r.ID })...)
	}
	// name each row by its rank in id order, as one database would return them
	var want []int64
	must(t, db.Clauses(AllShards()).Order("id").Limit(3).Find(&all).Error)
	for _, r := range all {
		want = append(want, r.ID)
		must(t, db.Model(r).Update("name", r.ID).Error)
	}
	t.Run("pluck", func(t *testing.T) {
		var names []string
		err := db.Model(&revPlain{}).Clauses(AllShards()).Order("id").Limit(3).Pluck("name", &names).Error
		t.Logf("pluck: %v %v want %v", err, names, want)
	})
	t.Run("struct", func(t *testing.T) {
		var out []struct{ Name string }
		err := db.Model(&revPlain{}).Clauses(AllShards()).Order("id").Limit(3).Find(&out).Error
		t.Logf("struct: %v %v want %v", err, out, want)
	})
	t.Run("select", func(t *testing.T) {
		var out []revPlain
		err := db.Clauses(AllShards()).Select("name").Order("id").Limit(3).Find(&out).Error
		t.Logf("select: %v %v want %v", err, out, want)
	})
	t.Run("alias", func(t *testing.T) {
		var out []revPlain
		err := db.Clauses(AllShards()).Select("rank AS id, name").Order("id").Limit(3).Find(&out).Error
		t.Logf("alias: %v %v want %v", err, out, want)
	})
	t.Run("scan", func(t *testing.T) {
		var out []map[string]any
		err := db.Model(&revPlain{}).Clauses(AllShards()).Order("id").Limit(3).Find(&out).Error
		t.Logf("maps: %v %v want %v", err, out, want)
	})
	t.Run("batches", func(t *testing.T) {
		var seen []int64
		var rows []revPlain
		err := db.Clauses(AllShards()).FindInBatches(&rows, 5, func(tx *gorm.DB, batch int) error {
			for _, r := range rows {
				seen = append(seen, r.ID)
			}
			return nil
		}).Error
		t.Logf("batches: %v %d rows", err, len(seen))
	})
}
