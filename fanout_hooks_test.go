package shardid

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
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

// TestFanOutWriteWithoutGORMsTransactionWritesNothingWhenAPartFails: with
// SkipDefaultTransaction (of a Session, or of the database), GORM begins no
// transaction for a statement; a write over two databases whose second part
// fails (a unique index) still writes nothing on the first, as one
// statement on one database would: an update, a Save of rows, a Create.
func TestFanOutWriteWithoutGORMsTransactionWritesNothingWhenAPartFails(t *testing.T) {
	for _, global := range []bool{false, true} {
		gormConfig := gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: global}
		db, p, direct, _ := routedOverNWith(t, 2, gormConfig, Config{}, &afterHookedRow{})
		db = db.Session(&gorm.Session{SkipDefaultTransaction: true})
		n := 0
		mk := func() *afterHookedRow { n++; return &afterHookedRow{Name: fmt.Sprint("r", n)} }
		id := func(r *afterHookedRow) int64 { return r.ID }
		rows := revOnBoth(t, db, p, mk, id)
		taken := revOnBoth(t, db, p, mk, id)
		must(t, direct[1].Model(taken[1]).Update("name", "dup").Error)
		unchanged := func(what string) {
			t.Helper()
			for k, r := range rows {
				var got afterHookedRow
				must(t, direct[k].First(&got, r.ID).Error)
				if got.Name != r.Name {
					t.Errorf("skipping GORM's transaction on the database too: %v: %s: database %d holds %+v, want the row as it was", global, what, k, got)
				}
			}
		}
		if err := db.Model(&[]afterHookedRow{*rows[0], *rows[1]}).Update("name", "dup").Error; err == nil {
			t.Fatal("an update breaking a unique index: no error")
		}
		unchanged("an update whose second part failed")
		saved := []afterHookedRow{{ID: rows[0].ID, Name: "x"}, {ID: rows[1].ID, Name: "dup"}}
		if err := db.Save(&saved).Error; err == nil {
			t.Fatal("a Save breaking a unique index: no error")
		}
		unchanged("a Save whose second part failed")
		before := rowsOn(t, direct, &afterHookedRow{})
		l := p.Layout()
		batch := []afterHookedRow{ // on database 0, then on database 1, where "dup" is taken
			{ID: l.Compose(time.Now(), 1, 1), Name: "new"},
			{ID: l.Compose(time.Now(), l.ShardCount()-1, 1), Name: "dup"},
		}
		if err := db.Create(&batch).Error; err == nil {
			t.Fatal("a Create breaking a unique index: no error")
		}
		if after := rowsOn(t, direct, &afterHookedRow{}); after != before {
			t.Errorf("skipping GORM's transaction on the database too: %v: a Create whose part failed left %d rows", global, after-before)
		}
	}
}

type tableMovingRow struct {
	ID   int64 `shardid:""`
	Name string
}

// BeforeUpdate sends the update to another table, for a value without an ID
// (an update by conditions) or a row named "shadow".
func (r *tableMovingRow) BeforeUpdate(tx *gorm.DB) error {
	if r.ID == 0 || r.Name == "shadow" {
		tx.Statement.Table = "shadow_rows"
	}
	return nil
}

// TestFanOutWriteWhoseHookSetsAnotherTableIsRefused: the parts of a write
// over several databases keep to their ranges on the table they were
// planned on, and those without the hooks would write it; a Before hook
// that sets another table refuses the statement, nothing written, whether
// it ran once for one value or for one database's rows.
func TestFanOutWriteWhoseHookSetsAnotherTableIsRefused(t *testing.T) {
	db, p, direct := revRouted(t, &tableMovingRow{})
	rows := revOnBoth(t, db, p, func() *tableMovingRow { return &tableMovingRow{Name: "a"} }, func(r *tableMovingRow) int64 { return r.ID })
	for _, d := range direct {
		must(t, d.Exec("CREATE TABLE shadow_rows (id integer primary key, name text)").Error)
		for _, r := range rows {
			must(t, d.Exec("INSERT INTO shadow_rows VALUES (?, 'old')", r.ID).Error)
		}
	}
	ids := []int64{rows[0].ID, rows[1].ID}
	if err := db.Model(&tableMovingRow{}).Where("id IN ?", ids).Update("name", "z").Error; !errors.Is(err, ErrCrossShard) {
		t.Errorf("a hook run once setting another table: %v, want ErrCrossShard", err)
	}
	shadowed := []tableMovingRow{*rows[0], *rows[1]}
	shadowed[0].Name = "shadow"
	if err := db.Model(&shadowed).Update("name", "z").Error; !errors.Is(err, ErrCrossShard) {
		t.Errorf("one database's rows' hook setting another table: %v, want ErrCrossShard", err)
	}
	for k, d := range direct {
		var names []string
		must(t, d.Raw("SELECT name FROM shadow_rows UNION ALL SELECT name FROM table_moving_rows WHERE id IN ?", ids).Scan(&names).Error)
		if slices.Contains(names, "z") {
			t.Errorf("database %d: %v after refused writes, want nothing written", k, names)
		}
	}
}

type returnedRow struct {
	ID   int64 `shardid:""`
	Name string
}

// BeforeUpdate asks for the written rows back.
func (r *returnedRow) BeforeUpdate(tx *gorm.DB) error {
	tx.Statement.AddClause(clause.Returning{})
	return nil
}

// TestFanOutUpdateWhoseHookAsksForReturningGivesBackTheWrittenRows: rows on
// two databases whose hooks ask for RETURNING *, some of them kept out by a
// condition: the caller's slice becomes the rows written, as GORM makes it
// on one database.
func TestFanOutUpdateWhoseHookAsksForReturningGivesBackTheWrittenRows(t *testing.T) {
	db, p, _ := revRouted(t, &returnedRow{})
	id := func(r *returnedRow) int64 { return r.ID }
	a := revOnBoth(t, db, p, func() *returnedRow { return &returnedRow{Name: "a"} }, id)
	b := revOnBoth(t, db, p, func() *returnedRow { return &returnedRow{Name: "b"} }, id)
	rows := []returnedRow{*a[0], *b[0], *a[1]}
	must(t, db.Model(&rows).Where("name = ?", "a").Update("name", "z").Error)
	got := []int64{}
	for _, r := range rows {
		if r.Name != "z" {
			t.Errorf("a row given back: %+v, want name z", r)
		}
		got = append(got, r.ID)
	}
	slices.Sort(got)
	want := []int64{a[0].ID, a[1].ID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the slice holds %v, want the rows written %v", got, want)
	}
}

// instanceHooked reads, in its hooks, a value given with GORM's
// InstanceSet, GORM's way to pass settings to the hooks of the statement.
type instanceHooked struct {
	ID   int64 `shardid:""`
	Name string
	Note string
}

func (h *instanceHooked) BeforeCreate(tx *gorm.DB) error {
	v, ok := tx.InstanceGet("shardid_test:who")
	h.Note = fmt.Sprintf("%v/%v", v, ok)
	return nil
}

func (h *instanceHooked) BeforeUpdate(tx *gorm.DB) error {
	v, ok := tx.InstanceGet("shardid_test:who")
	tx.Statement.SetColumn("note", fmt.Sprintf("%v/%v", v, ok))
	return nil
}

// TestInstanceSetReachesTheHooksOfASplitCreate: db.InstanceSet(k, v).Create(&rows)
// lets every row's BeforeCreate read v with tx.InstanceGet(k) in plain GORM, and
// with the plugin, whether the rows are on one database or split over two.
func TestInstanceSetReachesTheHooksOfASplitCreate(t *testing.T) {
	db, p, direct := revRouted(t, &instanceHooked{})
	on := func(id int64) int { return p.ShardMap().Physical(p.Layout().Shard(id)) }

	one := instanceHooked{Name: "one"}
	must(t, db.InstanceSet("shardid_test:who", "alice").Create(&one).Error)
	if one.Note != "alice/true" {
		t.Errorf("one row, one database: the hook read %q, want %q", one.Note, "alice/true")
	}

	rows := make([]instanceHooked, 16)
	for i, id := range spreadIDs(p.Layout(), len(rows)) {
		rows[i] = instanceHooked{ID: id, Name: "split"}
	}
	must(t, db.InstanceSet("shardid_test:who", "alice").Create(&rows).Error)
	seen := map[int]bool{}
	for _, r := range rows {
		seen[on(r.ID)] = true
	}
	if len(seen) != 2 {
		t.Fatal("the rows did not spread over both databases")
	}
	for i, d := range direct {
		var stored []instanceHooked
		must(t, d.Where("name = ?", "split").Find(&stored).Error)
		for _, s := range stored {
			if s.Note != "alice/true" {
				t.Errorf("physical %d: row %d was written with note %q, want %q (what plain GORM writes)", i, s.ID, s.Note, "alice/true")
			}
		}
	}
}

// TestInstanceSetReachesTheHooksOfAnUpdateOverTwoDatabases: the same for
// an update by IDs whose rows are on two physical databases.
func TestInstanceSetReachesTheHooksOfAnUpdateOverTwoDatabases(t *testing.T) {
	db, p, direct := revRouted(t, &instanceHooked{})
	rows := revOnBoth(t, db, p, func() *instanceHooked { return &instanceHooked{Name: "x"} }, func(r *instanceHooked) int64 { return r.ID })

	must(t, db.InstanceSet("shardid_test:who", "carol").Model(&instanceHooked{}).Where("id = ?", rows[0].ID).Update("name", "one").Error)
	var got instanceHooked
	must(t, direct[0].First(&got, rows[0].ID).Error)
	if got.Note != "carol/true" {
		t.Errorf("an update on one database: the hook read %q, want %q", got.Note, "carol/true")
	}

	ids := []int64{rows[0].ID, rows[1].ID}
	must(t, db.InstanceSet("shardid_test:who", "carol").Model(&instanceHooked{}).Where("id IN ?", ids).Update("name", "two").Error)
	for i, d := range direct {
		var stored instanceHooked
		must(t, d.First(&stored, ids[i]).Error)
		if stored.Name != "two" || stored.Note != "carol/true" {
			t.Errorf("physical %d: row %d is %q with note %q, want %q with note %q (what plain GORM writes)", i, stored.ID, stored.Name, stored.Note, "two", "carol/true")
		}
	}
}

// tallyRow's AfterUpdate adds one to the tally of another row, as hooks
// keep counters.
type tallyRow struct {
	ID      int64 `shardid:""`
	Name    string
	N       int
	TallyOf int64 `gorm:"-"`
}

func (r *tallyRow) AfterUpdate(tx *gorm.DB) error {
	if r.TallyOf == 0 {
		return nil
	}
	return tx.Model(&tallyRow{ID: r.TallyOf}).Update("n", gorm.Expr("n + 1")).Error
}

// A hook of a write on one database that writes a row of another database
// is refused with ErrCrossShard saying that GORM's transaction of the write
// holds one database and what to do, and nothing is written: the hooked
// row's update rolls back with it.
func TestAHookWritingAnotherDatabaseInsideGORMsTransactionIsRefusedSayingWhy(t *testing.T) {
	db, p, direct := revRouted(t, &tallyRow{})
	rows := revOnBoth(t, db, p, func() *tallyRow { return &tallyRow{Name: "a"} }, func(r *tallyRow) int64 { return r.ID })
	hooked, tally := rows[0], rows[1]
	hooked.TallyOf = tally.ID
	err := db.Model(hooked).Update("name", "b").Error
	if !errors.Is(err, ErrCrossShard) || !strings.Contains(err.Error(), "transaction GORM began") || !strings.Contains(err.Error(), "AcrossShards") {
		t.Fatalf("a hook updating a row of the other database: %v, want ErrCrossShard naming GORM's transaction and AcrossShards", err)
	}
	for k, d := range direct {
		var got []tallyRow
		must(t, d.Find(&got).Error)
		for _, r := range got {
			if r.Name != "a" || r.N != 0 {
				t.Errorf("database %d after the refused update: %+v", k, r)
			}
		}
	}
}

type countingHookedRow struct {
	ID   int64 `shardid:""`
	Name string
}

var seenAffected []int64

func (r *countingHookedRow) AfterCreate(tx *gorm.DB) error { return r.seen(tx) }
func (r *countingHookedRow) AfterUpdate(tx *gorm.DB) error { return r.seen(tx) }
func (r *countingHookedRow) AfterDelete(tx *gorm.DB) error { return r.seen(tx) }

func (r *countingHookedRow) seen(tx *gorm.DB) error {
	seenAffected = append(seenAffected, tx.Statement.RowsAffected)
	return nil
}

// TestAfterHooksOfAWriteOverSeveralDatabasesSeeItsWholeCount: the After
// hooks of a Create, an update and a delete whose rows are on two databases
// see in tx.Statement.RowsAffected the rows the whole statement affected, as
// GORM's hooks do on one database, not their own database's.
func TestAfterHooksOfAWriteOverSeveralDatabasesSeeItsWholeCount(t *testing.T) {
	db, p, _ := revRouted(t, &countingHookedRow{})
	ids := spreadIDs(p.Layout(), 4)
	var rows []countingHookedRow
	for _, id := range ids {
		rows = append(rows, countingHookedRow{ID: id, Name: "a"})
	}
	check := func(name string, res *gorm.DB, want int64, hooks int) {
		t.Helper()
		must(t, res.Error)
		if res.RowsAffected != want || len(seenAffected) != hooks || slices.ContainsFunc(seenAffected, func(n int64) bool { return n != want }) {
			t.Errorf("%s: %d rows affected, After hooks saw %v; want %d, seen by %d hooks", name, res.RowsAffected, seenAffected, want, hooks)
		}
		seenAffected = nil
	}
	check("Create", db.Create(&rows), 4, 4)
	check("Update by IDs", db.Model(&countingHookedRow{}).Where("id IN ?", ids).Update("name", "b"), 4, 1)
	check("Update of the rows", db.Model(&rows).Update("name", "c"), 4, 4)
	check("Delete over every shard", db.Clauses(AllShards()).Where("name = ?", "c").Delete(&countingHookedRow{}), 4, 1)
}
