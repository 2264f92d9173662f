package shardid

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"
)

type afterHookedRow struct {
	ID   int64  `shardid:""`
	Name string `gorm:"uniqueIndex"`
}

var afterUpdates atomic.Int64

// AfterUpdate counts the rows it sees written, and fails for "boom".
func (r *afterHookedRow) AfterUpdate(tx *gorm.DB) error {
	afterUpdates.Add(1)
	if r.Name == "boom" {
		return errors.New("boom")
	}
	return nil
}

// TestFanOutUpdateWhosePartFailsToWriteRunsNoAfterHook: the parts of an
// update over two databases all write before any runs its After hooks, as
// one statement does: when the write of either part fails (a unique index),
// no row's AfterUpdate runs, and no row is written anywhere.
func TestFanOutUpdateWhosePartFailsToWriteRunsNoAfterHook(t *testing.T) {
	db, p, direct := revRouted(t, &afterHookedRow{})
	n := 0
	mk := func() *afterHookedRow { n++; return &afterHookedRow{Name: fmt.Sprint("r", n)} }
	id := func(r *afterHookedRow) int64 { return r.ID }
	rows := revOnBoth(t, db, p, mk, id)
	taken := revOnBoth(t, db, p, mk, id)
	for k := range direct {
		name := taken[k].Name
		must(t, direct[k].Model(taken[k]).Update("name", "dup").Error)
		afterUpdates.Store(0)
		if err := db.Model(&[]afterHookedRow{*rows[0], *rows[1]}).Update("name", "dup").Error; err == nil {
			t.Fatalf("a name taken on database %d: the update ran", k)
		}
		if got := afterUpdates.Load(); got != 0 {
			t.Errorf("the write failed on database %d: AfterUpdate ran %d times, want none", k, got)
		}
		for j, r := range rows {
			var got afterHookedRow
			must(t, direct[j].First(&got, r.ID).Error)
			if got.Name != r.Name {
				t.Errorf("the write failed on database %d: the row on database %d is %+v, want it as it was", k, j, got)
			}
		}
		must(t, direct[k].Model(taken[k]).Update("name", name).Error)
	}
}

// TestFanOutUpdateWhoseAfterHookFailsReportsEveryPartsRows: an After hook
// that fails rolls the statement back on every database, and the statement
// reports the rows it wrote before, as GORM does on one database.
func TestFanOutUpdateWhoseAfterHookFailsReportsEveryPartsRows(t *testing.T) {
	db, p, direct := revRouted(t, &afterHookedRow{})
	n := 0
	rows := revOnBoth(t, db, p, func() *afterHookedRow { n++; return &afterHookedRow{Name: fmt.Sprint("r", n)} }, func(r *afterHookedRow) int64 { return r.ID })
	res := db.Model(&[]afterHookedRow{*rows[0], *rows[1]}).Update("name", "boom")
	if res.Error == nil || res.RowsAffected != 2 {
		t.Errorf("an AfterUpdate that fails: error %v, %d rows affected; want its error and 2", res.Error, res.RowsAffected)
	}
	for k, r := range rows {
		var got afterHookedRow
		must(t, direct[k].First(&got, r.ID).Error)
		if got.Name != r.Name {
			t.Errorf("database %d: %+v after a failed AfterUpdate, want the row as it was", k, got)
		}
	}
}

type purgedRow struct {
	ID        int64 `shardid:""`
	Name      string
	DeletedAt gorm.DeletedAt
}

// BeforeDelete deletes a row named "purge" for good, and so the whole
// statement's rows, as on one database.
func (r *purgedRow) BeforeDelete(tx *gorm.DB) error {
	if r.Name == "purge" || r.Name == "" {
		tx.Statement.Unscoped = true
	}
	return nil
}

// TestFanOutDeleteMadeUnscopedByAHookDeletesForGoodEverywhere: a Before
// hook that makes a delete of one value unscoped, run once, makes every part
// of it unscoped; hooks of rows split over databases that make their parts
// unscoped alike delete for good everywhere, and hooks that disagree (one
// database's rows only) are refused, as their conditions are, and delete
// nothing.
func TestFanOutDeleteMadeUnscopedByAHookDeletesForGoodEverywhere(t *testing.T) {
	db, p, direct := revRouted(t, &purgedRow{})
	id := func(r *purgedRow) int64 { return r.ID }
	rowsNamed := func(name string) []*purgedRow {
		return revOnBoth(t, db, p, func() *purgedRow { return &purgedRow{Name: name} }, id)
	}
	left := func(what string, rows []*purgedRow, want int64) {
		t.Helper()
		for k, r := range rows {
			var n int64
			must(t, direct[k].Unscoped().Model(&purgedRow{}).Where("id = ? AND deleted_at IS NULL", r.ID).Count(&n).Error)
			var kept int64
			must(t, direct[k].Unscoped().Model(&purgedRow{}).Where("id = ?", r.ID).Count(&kept).Error)
			if kept != want || want == 1 && n != 1 {
				t.Errorf("%s: database %d holds %d of the row (%d not deleted), want %d", what, k, kept, n, want)
			}
		}
	}
	rows := rowsNamed("a")
	must(t, db.Clauses(AllShards()).Where("name = ?", "a").Delete(&purgedRow{}).Error)
	left("a delete of one value whose hook ran once", rows, 0)

	rows = rowsNamed("purge")
	must(t, db.Delete(&[]purgedRow{*rows[0], *rows[1]}).Error)
	left("a delete of rows whose hooks all made it unscoped", rows, 0)

	rows = rowsNamed("b")
	rows[0].Name = "purge"
	if err := db.Delete(&[]purgedRow{*rows[0], *rows[1]}).Error; !errors.Is(err, ErrCrossShard) {
		t.Errorf("a delete of rows one database's hooks made unscoped: %v, want ErrCrossShard", err)
	}
	left("a refused delete", rows, 1)
}
