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

// The column a BeforeUpdate hook sets in a fan-out update reaches every
// database, as it would on one.
func TestFanOutUpdateHookColumnReachesEveryDatabase(t *testing.T) {
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
