package shardid

import (
	"testing"

	"gorm.io/gorm"
)

type revAudited struct {
	ID   int64 `shardid:""`
	Name string
	Note string
}

// BeforeUpdate stamps every updated row, the way GORM's docs show
// ("Changing values in hooks": tx.Statement.SetColumn).
func (a *revAudited) BeforeUpdate(tx *gorm.DB) error {
	tx.Statement.SetColumn("Note", "hooked")
	return nil
}

type revPlain struct {
	ID   int64 `shardid:""`
	Name string
	Rank int64 `gorm:"not null"`
}

// revRouted is routedSQLite with the review's models on both shards.
func revRouted(t *testing.T, models ...any) (*gorm.DB, *Plugin, []*gorm.DB) {
	t.Helper()
	db, p, direct := twoSQLiteShards(t)
	must(t, p.AutoMigrate(db, models...))
	return db, p, direct
}

// onBoth creates rows until each physical database holds one.
func revOnBoth[T any](t *testing.T, db *gorm.DB, p *Plugin, mk func() *T, id func(*T) int64) []*T {
	t.Helper()
	var seen [2]*T
	for i := 0; i < 200 && (seen[0] == nil || seen[1] == nil); i++ {
		r := mk()
		must(t, db.Create(r).Error)
		k := p.physicalOf(p.layout.Shard(id(r)))
		if seen[k] == nil {
			seen[k] = r
		}
	}
	if seen[0] == nil || seen[1] == nil {
		t.Fatal("could not place rows on both databases")
	}
	return seen[:]
}

// A fan-out update runs the BeforeUpdate hook on its first part only; the
// column the hook sets reaches the first database only.
func TestReviewFanOutUpdateHookColumnReachesEveryDatabase(t *testing.T) {
	db, p, direct := revRouted(t, &revAudited{})
	rows := revOnBoth(t, db, p, func() *revAudited { return &revAudited{Name: "x"} }, func(a *revAudited) int64 { return a.ID })
	ids := []int64{rows[0].ID, rows[1].ID}
	err := db.Model(&revAudited{}).Where("id IN ?", ids).Updates(revAudited{Name: "y"}).Error
	must(t, err)
	for k, d := range direct {
		var got revAudited
		must(t, d.First(&got, ids[k]).Error)
		if got.Name != "y" || got.Note != "hooked" {
			t.Errorf("database %d: row %+v, want name y and note hooked (as on one database)", k, got)
		}
	}
}
