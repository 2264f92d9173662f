package shardid

import (
	"testing"

	"gorm.io/gorm"
)

// reuseTag is an unsharded model, which lives on the plugin's database.
type reuseTag struct {
	ID   int64
	Name string
}

// TestAQueryUsedAgainBeginsWhereANewOneWould: a *gorm.DB whose query the
// plugin sent to a shard leaves that shard's connection behind it: a Begin
// on it afterwards begins on the plugin's database, as one that never ran
// does, so that an unsharded model's row is written in that transaction
// rather than refused as belonging elsewhere.
func TestAQueryUsedAgainBeginsWhereANewOneWould(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{})
	must(t, p.AutoMigrate(db, &reuseTag{}))
	rows := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "a"} }, func(r *revUser) int64 { return r.ID })
	for k, r := range rows {
		q := db.Where("id = ?", r.ID)
		var found []revUser
		must(t, q.Find(&found).Error)
		tx := q.Begin()
		must(t, tx.Error)
		if err := tx.Session(&gorm.Session{NewDB: true}).Create(&reuseTag{Name: "in tx"}).Error; err != nil {
			t.Errorf("a Begin on a query that ran on database %d: an unsharded Create in it: %v", k, err)
		}
		must(t, tx.Commit().Error)
	}
	var n int64
	must(t, db.Model(&reuseTag{}).Count(&n).Error)
	if n != 2 {
		t.Errorf("%d unsharded rows written, want 2", n)
	}
}
