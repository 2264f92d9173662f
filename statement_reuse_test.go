package shardid

import (
	"context"
	"testing"
	"time"

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

// TestAStatementWithAShardClauseUsedAgainAfterAMoveReadsTheNewRanges: a
// *gorm.DB under a shard clause, which reads the ranges the map gives the
// clause's database, read again after a move brought another range there
// reads that range's rows too, as a new one does: its last run's ranges are
// not left in its conditions. With conditions joined by Or as well.
func TestAStatementWithAShardClauseUsedAgainAfterAMoveReadsTheNewRanges(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{})
	l := p.Layout()
	at := time.Now().Add(-time.Second)
	half := l.ShardCount() / 2
	must(t, db.Create(&revUser{ID: l.Compose(at, 1, 1), Name: "a"}).Error)
	must(t, db.Create(&revUser{ID: l.Compose(at, half+1, 1), Name: "b"}).Error)
	plain := db.Clauses(OnShard(half + 1)).Model(&revUser{})
	ored := db.Clauses(OnShard(half+1)).Model(&revUser{}).Where("name = ?", "a").Or("name = ?", "b")
	for name, q := range map[string]*gorm.DB{"plain": plain, "Or": ored} {
		var rows []revUser
		must(t, q.Find(&rows).Error)
		if len(rows) != 1 {
			t.Fatalf("%s: %d rows before the move, want 1", name, len(rows))
		}
	}
	_, err := p.Move(context.Background(), Move{Logical: Range{From: 0, To: half - 1}, To: "s1"})
	must(t, err)
	for name, q := range map[string]*gorm.DB{"plain": plain, "Or": ored} {
		var rows []revUser
		must(t, q.Find(&rows).Error)
		var n int64
		must(t, q.Count(&n).Error)
		if len(rows) != 2 || n != 2 {
			t.Errorf("%s: after the move the statement used again read %d rows and counted %d, want 2 and 2", name, len(rows), n)
		}
	}
}
