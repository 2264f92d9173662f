package shardid

import (
	"testing"

	"gorm.io/gorm"
)

type revHooked struct {
	ID     int64 `shardid:""`
	Target int64 // the ID of a revPlain whose name the hook sets
}

// AfterCreate runs raw SQL on another sharded model's row, by its ID.
func (h *revHooked) AfterCreate(tx *gorm.DB) error {
	return tx.Exec("UPDATE rev_plains SET name = 'hooked' WHERE id = ?", h.Target).Error
}

// Raw SQL issued in a hook runs in GORM's transaction of the statement that
// fired the hook, on that statement's shard, though the row it names lives
// on the other database: it updates nothing there, and no error is returned.
func TestReviewRawSQLInAHookRunsOnTheParentsShard(t *testing.T) {
	db, p, direct := revRouted(t, &revHooked{}, &revPlain{})
	plains := revOnBoth(t, db, p, func() *revPlain { return &revPlain{Name: "n"} }, func(r *revPlain) int64 { return r.ID })
	for k := range 2 {
		target := plains[1-k] // on the other database than the hooked row
		h := revHooked{Target: target.ID}
		shard := p.router.Map().Logical(k)[0]
		err := db.Clauses(OnShard(shard)).Create(&h).Error
		t.Logf("create on database %d: %v", k, err)
		var got revPlain
		must(t, direct[1-k].First(&got, target.ID).Error)
		if err == nil && got.Name != "hooked" {
			t.Errorf("hooked row on database %d: the hook's UPDATE of a row on database %d changed nothing, and Create returned no error", k, 1-k)
		}
	}
}

// The same without a shard clause: a plain Create, whose row the plugin placed.
func TestReviewRawSQLInAHookOfAPlainCreate(t *testing.T) {
	db, p, direct := revRouted(t, &revHooked{}, &revPlain{})
	plains := revOnBoth(t, db, p, func() *revPlain { return &revPlain{Name: "n"} }, func(r *revPlain) int64 { return r.ID })
	for range 100 {
		h := revHooked{Target: plains[0].ID} // plains[0] is on database 0
		err := db.Create(&h).Error
		if p.physicalOf(p.layout.Shard(h.ID)) != 1 {
			must(t, direct[0].Model(&revPlain{}).Where("id = ?", plains[0].ID).Update("name", "n").Error) // undo the hook of a row on database 0
			continue
		}
		var got revPlain
		must(t, direct[0].First(&got, plains[0].ID).Error)
		t.Logf("create: %v; target's name %q", err, got.Name)
		if err == nil && got.Name != "hooked" {
			t.Errorf("hooked row on database 1: the hook's UPDATE of a row on database 0 changed nothing, and Create returned no error")
		}
		return
	}
	t.Fatal("no hooked row landed on database 1")
}
