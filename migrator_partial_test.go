package shardid

import (
	"strings"
	"testing"

	"gorm.io/gorm"
)

type mgPartItem struct {
	ID   int64 `shardid:""`
	Name string
}

type mgPartNote struct { // unsharded
	ID   int64
	Text string
}

// TestANewTableRefusedOnOneDatabaseIsDroppedFromEvery: s1 refuses the new table (a view holds its name): nothing is left, the
// error names s1, and a run once s1 allows it makes everything.
func TestANewTableRefusedOnOneDatabaseIsDroppedFromEvery(t *testing.T) {
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &revUser{})) // opens the shards
	s0, s1 := openFile(t, dir, "s0.db"), openFile(t, dir, "s1.db")
	mainDB := openFile(t, dir, "main.db")
	must(t, s1.Exec("CREATE VIEW mg_part_items AS SELECT 1 AS id").Error)
	err := p.AutoMigrate(db, &mgPartNote{}, &mgPartItem{})
	if err == nil || !strings.Contains(err.Error(), "s1") {
		t.Errorf("error does not name s1: %v", err)
	}
	if s0.Migrator().HasTable("mg_part_items") {
		t.Error("s0 keeps mg_part_items after the failed migration")
	}
	if mainDB.Migrator().HasTable("mg_part_notes") {
		t.Error("the plugin's database keeps mg_part_notes after the failed migration")
	}
	must(t, s1.Exec("DROP VIEW mg_part_items").Error)
	must(t, p.AutoMigrate(db, &mgPartNote{}, &mgPartItem{}))
	must(t, p.AutoMigrate(db, &mgPartNote{}, &mgPartItem{}))
	must(t, db.Create(&mgPartItem{Name: "x"}).Error)
}

// TestViewsRenamesAndHasTableActWhereTheTablesLive: views on a sharded model's query on every physical database; on an
// unsharded one's on the plugin's database only; DropView everywhere.
func TestViewsRenamesAndHasTableActWhereTheTablesLive(t *testing.T) {
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &mgPartItem{}, &mgPartNote{}))
	s0, s1 := openFile(t, dir, "s0.db"), openFile(t, dir, "s1.db")
	mainDB := openFile(t, dir, "main.db")
	hasView := func(d *gorm.DB, name string) bool {
		var n int64
		must(t, d.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name = ?", name).Scan(&n).Error)
		return n == 1
	}
	mig := p.Migrator(db)
	must(t, mig.CreateView("mg_item_names", gorm.ViewOption{Query: db.Model(&mgPartItem{}).Clauses(AllShards()).Select("id, name")}))
	must(t, mig.CreateView("mg_note_texts", gorm.ViewOption{Query: db.Model(&mgPartNote{}).Select("id, text")}))
	for _, c := range []struct {
		n            string
		d            *gorm.DB
		items, notes bool
	}{{"main", mainDB, false, true}, {"s0", s0, true, false}, {"s1", s1, true, false}} {
		if hasView(c.d, "mg_item_names") != c.items || hasView(c.d, "mg_note_texts") != c.notes {
			t.Errorf("%s: item view %v note view %v", c.n, hasView(c.d, "mg_item_names"), hasView(c.d, "mg_note_texts"))
		}
	}
	must(t, mig.DropView("mg_item_names"))
	must(t, mig.DropView("mg_note_texts"))
	for _, d := range []*gorm.DB{mainDB, s0, s1} {
		if hasView(d, "mg_item_names") || hasView(d, "mg_note_texts") {
			t.Error("a view survived DropView")
		}
	}
	// RenameTable of an unsharded model: the plugin's database only.
	must(t, mig.RenameTable(&mgPartNote{}, "mg_part_memos"))
	if !mainDB.Migrator().HasTable("mg_part_memos") || s0.Migrator().HasTable("mg_part_memos") {
		t.Error("RenameTable of an unsharded model misplaced")
	}
	must(t, mig.RenameTable("mg_part_memos", "mg_part_notes"))
	must(t, mig.RenameTable(&mgPartItem{}, "mg_part_things"))
	if !s0.Migrator().HasTable("mg_part_things") || !s1.Migrator().HasTable("mg_part_things") || mainDB.Migrator().HasTable("mg_part_things") {
		t.Error("RenameTable of a sharded model misplaced")
	}
	if !mig.HasTable("mg_part_things") {
		t.Error("HasTable of the renamed sharded table: false")
	}
	must(t, mig.RenameTable("mg_part_things", "mg_part_items"))
	if !mig.HasTable(&mgPartItem{}) {
		t.Error("HasTable after renaming back: false")
	}
}
