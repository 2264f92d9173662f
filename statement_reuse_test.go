package shardid

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
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

// TestAnUpsertUsedAgainRetriedAfterAMoveKeepsItsOwnConflictClause: a
// *gorm.DB whose first Create was an upsert updating every column, used
// again for a Create that skips conflicting rows (DoNothing) which a stale
// process sends to a moved range's source and runs again on its new
// database, still skips the existing row there: the retry is built from the
// second Create's clause, not the first one's, and leaves the row as it was.
func TestAnUpsertUsedAgainRetriedAfterAMoveKeepsItsOwnConflictClause(t *testing.T) {
	ps := processes{t, t.TempDir()}
	half := Layout{}.ShardCount() / 2
	shards := []Shard{
		{Name: "a", Dialector: ps.file("a.db"), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "b", Dialector: ps.file("b.db"), Logical: []Range{{From: half, To: 2*half - 1}}},
	}
	mover, p, err := ps.open(Config{Shards: shards})
	must(t, err)
	must(t, p.AutoMigrate(mover, &revUser{}))
	stale, _, err := ps.open(Config{Shards: shards, MapRefresh: -1}) // follows the map only when a write is refused as moved
	must(t, err)
	at := time.Now().Add(-time.Second)
	kept, upserted := p.Layout().Compose(at, 1, 1), p.Layout().Compose(at, 2, 1)
	must(t, mover.Create(&revUser{ID: kept, Name: "kept"}).Error)
	created := stale.Model(&revUser{})
	must(t, created.Clauses(clause.OnConflict{UpdateAll: true}).Create(&revUser{ID: upserted, Name: "upserted"}).Error)
	_, err = p.Move(context.Background(), Move{Logical: Range{From: 0, To: half - 1}, To: "b"})
	must(t, err)
	must(t, created.Clauses(clause.OnConflict{DoNothing: true}).Create(&revUser{ID: kept, Name: "overwritten"}).Error)
	var row revUser
	must(t, mover.First(&row, kept).Error)
	if row.Name != "kept" {
		t.Errorf("the existing row is named %q after a Create that skips conflicts, want %q", row.Name, "kept")
	}
}

// TestAShardClauseHandleKeptAcrossAMoveBeginsOnTheNewDatabase: a *gorm.DB
// given a shard clause once (a handle kept for a tenant) and used for a
// transaction after a move of its shard begins that transaction on the
// shard's new database, as a clause given anew does, and its statements
// (a read, a raw update) run there.
func TestAShardClauseHandleKeptAcrossAMoveBeginsOnTheNewDatabase(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{})
	l := p.Layout()
	id := l.Compose(time.Now().Add(-time.Second), 1, 1)
	must(t, db.Create(&revUser{ID: id, Name: "a"}).Error)
	handle := db.Clauses(ByID(id))
	rename := func(name string) func(tx *gorm.DB) error {
		return func(tx *gorm.DB) error { return tx.Model(&revUser{}).Where("id = ?", id).Update("name", name).Error }
	}
	must(t, handle.Transaction(rename("b")))
	_, err := p.Move(context.Background(), Move{Logical: Range{From: 0, To: l.ShardCount()/2 - 1}, To: "s1"})
	must(t, err)
	if err := handle.Transaction(rename("c")); err != nil {
		t.Fatalf("a transaction on the handle kept across the move: %v", err)
	}
	var row revUser
	must(t, direct[1].First(&row, id).Error)
	if row.Name != "c" {
		t.Errorf("the row on the new database is named %q, want %q", row.Name, "c")
	}
	must(t, handle.Session(&gorm.Session{}).Exec("UPDATE rev_users SET name = ? WHERE id = ?", "d", id).Error)
	var read revUser
	must(t, handle.Session(&gorm.Session{}).First(&read, id).Error)
	if read.Name != "d" {
		t.Errorf("read through the handle: %q, want the raw update's %q", read.Name, "d")
	}
}

// TestAShardClauseHandleUsedForAWriteThenBeginsOnItsShard: a *gorm.DB given
// a shard clause and used for an Update or a Create (GORM's transaction for
// it ends by giving the statement the pool the *gorm.DB was opened with)
// then begins a transaction on the clause's shard, as a new handle does, in
// which a write of that shard's row runs.
func TestAShardClauseHandleUsedForAWriteThenBeginsOnItsShard(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{})
	id := p.Layout().Compose(time.Now().Add(-time.Second), 1, 1)
	must(t, db.Create(&revUser{ID: id, Name: "a"}).Error)
	rename := func(tx *gorm.DB) error { return tx.Model(&revUser{}).Where("id = ?", id).Update("name", "b").Error }
	for name, write := range map[string]func(*gorm.DB) error{
		"Update": func(h *gorm.DB) error { return h.Model(&revUser{}).Where("id = ?", id).Update("name", "c").Error },
		"Create": func(h *gorm.DB) error { return h.Create(&revUser{Name: "d"}).Error },
	} {
		handle := db.Clauses(ByID(id))
		must(t, write(handle))
		if err := handle.Transaction(rename); err != nil {
			t.Errorf("a transaction on the handle after its %s: %v", name, err)
		}
	}
}

// reuseHooked writes, after its update, the revUser row named by Other.
type reuseHooked struct {
	ID    int64 `shardid:""`
	Name  string
	Other int64
}

func (h *reuseHooked) AfterUpdate(tx *gorm.DB) error {
	return tx.Model(&revUser{}).Where("id = ?", h.Other).Update("name", "hooked").Error
}

// TestAShardClauseHandleKeptAcrossAnotherRangesMoveIsNotToldToRetry: a
// *gorm.DB given a shard clause once and used for an update after a move
// took another range off its database, whose hook writes a row of that
// range in the transaction GORM began for the update, fails with
// ErrCrossShard, as a clause given anew does: not with ErrShardMoved, "the
// transaction began before the move", which every retry on the handle would
// get again (the handle's transaction was dated by the map of when the
// clause was given).
func TestAShardClauseHandleKeptAcrossAnotherRangesMoveIsNotToldToRetry(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{}, &reuseHooked{})
	at := time.Now().Add(-time.Second)
	id, other := p.Layout().Compose(at, 1, 1), p.Layout().Compose(at, 3, 1)
	must(t, db.Create(&reuseHooked{ID: id, Name: "a"}).Error)
	must(t, db.Create(&revUser{ID: other, Name: "b"}).Error)
	kept := db.Clauses(ByID(id))
	_, err := p.Move(context.Background(), Move{Logical: Range{From: 2, To: 5}, To: "s1"})
	must(t, err)
	for name, h := range map[string]*gorm.DB{"kept": kept, "new": db.Clauses(ByID(id))} {
		for try := range 2 {
			err := h.Model(&reuseHooked{ID: id, Other: other}).Updates(map[string]any{"name": "x"}).Error
			if errors.Is(err, ErrShardMoved) || !errors.Is(err, ErrCrossShard) {
				t.Errorf("%s handle, try %d: %v; want ErrCrossShard", name, try+1, err)
			}
		}
	}
}
