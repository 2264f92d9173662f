package shardid

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type mgPlaceItem struct {
	ID    int64 `shardid:""`
	Name  string
	Email string        `gorm:"index:idx_mg_place_email"`
	Langs []mgPlaceLang `gorm:"many2many:mg_place_item_langs"`
}

type mgPlaceLang struct { // unsharded
	ID    int64
	Code  string
	Email string `gorm:"index:idx_mg_lang_email"`
}

type mgPlaceItemV2 struct {
	ID    int64 `shardid:""`
	Name  string
	Email string `gorm:"index:idx_mg_place_email"`
	Extra string
}

func (mgPlaceItemV2) TableName() string { return "mg_place_items" }

func openFile(t *testing.T, dir, name string) *gorm.DB {
	t.Helper()
	d, err := gorm.Open(sqlite.Open(filepath.Join(dir, name)), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if s, err := d.DB(); err == nil {
			_ = s.Close()
		}
	})
	return d
}

// TestEveryMigratorChangeActsWhereTheTableLives: column, index and table
// changes of an unsharded model act on the plugin's database only, those of a
// sharded one on every physical database; answers hold for all of them.
func TestEveryMigratorChangeActsWhereTheTableLives(t *testing.T) {
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &mgPlaceItem{}, &mgPlaceLang{}))
	s0, s1 := openFile(t, dir, "s0.db"), openFile(t, dir, "s1.db")
	mainDB := openFile(t, dir, "main.db")
	for _, c := range []struct {
		name  string
		d     *gorm.DB
		items bool
	}{{"main", mainDB, false}, {"s0", s0, true}, {"s1", s1, true}} {
		for _, tbl := range []string{"mg_place_items", "mg_place_item_langs"} {
			if c.d.Migrator().HasTable(tbl) != c.items {
				t.Errorf("%s has %s: %v", c.name, tbl, !c.items)
			}
		}
		if c.d.Migrator().HasTable("mg_place_langs") == c.items {
			t.Errorf("%s has mg_place_langs: %v", c.name, c.items)
		}
	}
	mig := p.Migrator(db)
	// Unsharded: only the plugin's database.
	must(t, mig.RenameColumn(&mgPlaceLang{}, "code", "iso"))
	if !mainDB.Migrator().HasColumn("mg_place_langs", "iso") {
		t.Error("RenameColumn of an unsharded model: not on the plugin's database")
	}
	must(t, mig.RenameColumn(&mgPlaceLang{}, "iso", "code"))
	must(t, mig.DropIndex(&mgPlaceLang{}, "idx_mg_lang_email"))
	if mainDB.Migrator().HasIndex("mg_place_langs", "idx_mg_lang_email") {
		t.Error("DropIndex of an unsharded model: still on the plugin's database")
	}
	must(t, mig.CreateIndex(&mgPlaceLang{}, "idx_mg_lang_email"))
	must(t, mig.AlterColumn(&mgPlaceLang{}, "Code"))
	must(t, mig.DropColumn(&mgPlaceLang{}, "Email"))
	if mainDB.Migrator().HasColumn("mg_place_langs", "email") {
		t.Error("DropColumn of an unsharded model: still there")
	}
	// Sharded: every physical database.
	must(t, mig.RenameColumn(&mgPlaceItem{}, "name", "title"))
	for i, d := range []*gorm.DB{s0, s1} {
		if !d.Migrator().HasColumn("mg_place_items", "title") {
			t.Errorf("RenameColumn of a sharded model: not on s%d", i)
		}
	}
	if !mig.HasColumn(&mgPlaceItem{}, "title") {
		t.Error("HasColumn: false though every shard has it")
	}
	must(t, s1.Exec("ALTER TABLE mg_place_items DROP COLUMN title").Error)
	if mig.HasColumn(&mgPlaceItem{}, "title") {
		t.Error("HasColumn: true though s1 lacks it")
	}
	if mig.HasColumn("mg_place_items", "title") {
		t.Error("HasColumn by name: true though s1 lacks it")
	}
	if _, err := mig.ColumnTypes(&mgPlaceItem{}); err == nil {
		t.Error("ColumnTypes: no error though the shards differ")
	}
	must(t, s1.Exec("ALTER TABLE mg_place_items ADD COLUMN title text").Error)
	must(t, mig.RenameColumn(&mgPlaceItem{}, "title", "name"))
	must(t, mig.DropIndex(&mgPlaceItem{}, "idx_mg_place_email"))
	for i, d := range []*gorm.DB{s0, s1} {
		if d.Migrator().HasIndex("mg_place_items", "idx_mg_place_email") {
			t.Errorf("DropIndex of a sharded model: still on s%d", i)
		}
	}
	must(t, mig.CreateIndex(&mgPlaceItem{}, "idx_mg_place_email"))
	if !mig.HasIndex(&mgPlaceItem{}, "idx_mg_place_email") {
		t.Error("HasIndex false after CreateIndex")
	}
	must(t, mig.AlterColumn(&mgPlaceItem{}, "Name"))
	must(t, mig.DropColumn(&mgPlaceItem{}, "Email"))
	for i, d := range []*gorm.DB{s0, s1} {
		if d.Migrator().HasColumn("mg_place_items", "email") {
			t.Errorf("DropColumn of a sharded model: still on s%d", i)
		}
	}
	// GetTables: every table, once.
	tables, err := mig.GetTables()
	must(t, err)
	for _, want := range []string{"mg_place_items", "mg_place_langs", "mg_place_item_langs"} {
		if !slices.Contains(tables, want) {
			t.Errorf("GetTables lacks %s: %v", want, tables)
		}
	}
	// DropTable of the many2many join table, by name and by model.
	must(t, mig.DropTable("mg_place_item_langs"))
	for i, d := range []*gorm.DB{s0, s1} {
		if d.Migrator().HasTable("mg_place_item_langs") {
			t.Errorf("DropTable of the join table: still on s%d", i)
		}
	}
	if mig.HasTable("mg_place_item_langs") {
		t.Error("HasTable of the dropped join table: true")
	}
	// AutoMigrate again brings it back; a changed model adds its column everywhere.
	must(t, p.AutoMigrate(db, &mgPlaceItem{}))
	must(t, p.AutoMigrate(db, &mgPlaceItemV2{}))
	for i, d := range []*gorm.DB{s0, s1} {
		if !d.Migrator().HasTable("mg_place_item_langs") || !d.Migrator().HasColumn("mg_place_items", "extra") {
			t.Errorf("s%d: join table or extra column missing after AutoMigrate", i)
		}
	}
}

// TestAMigratorOfANamedTableMakesItOnEveryShard: Migrator(db.Table(name)) of a sharded model acts on that table on every shard.
func TestAMigratorOfANamedTableMakesItOnEveryShard(t *testing.T) {
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &revUser{}))
	must(t, p.Migrator(db.Table("mg_archived_users")).AutoMigrate(&revUser{}))
	s0, s1 := openFile(t, dir, "s0.db"), openFile(t, dir, "s1.db")
	mainDB := openFile(t, dir, "main.db")
	for i, d := range []*gorm.DB{s0, s1} {
		if !d.Migrator().HasTable("mg_archived_users") {
			t.Errorf("s%d lacks mg_archived_users", i)
		}
	}
	if mainDB.Migrator().HasTable("mg_archived_users") {
		t.Error("the plugin's database has mg_archived_users")
	}
	if !p.Migrator(db.Table("mg_archived_users")).HasTable(&revUser{}) {
		t.Error("HasTable via Table: false")
	}
}

// A sharded model's statements on a table named with Table(...), which
// Migrator(db.Table(name)) made on every shard, run in a process started
// after the migration, which knows the table from shardid_tables only, as in
// the process that made it: by the ID (GORM qualifies First(&x, id) by the
// table named, or by its alias), by IDs over several databases, and over
// every shard. A table recorded with another placement rule, or an unsharded
// model's, is refused all the same.
func TestStatementsOnATableItsMigratorNamedRunAfterARestart(t *testing.T) {
	dir := t.TempDir()
	db, p := openWith(t, dir, Config{Atomic: BestEffort})
	must(t, p.Migrator(db.Table("mg_named_users")).AutoMigrate(&revUser{}))
	must(t, p.Migrator(db.Table("mg_named_photos")).AutoMigrate(&revPhoto{}))
	must(t, p.Migrator(db.Table("main.mg_named_main")).AutoMigrate(&revUser{})) // recorded with its schema
	first := revUser{Name: "a"}
	must(t, db.Table("mg_named_users").Create(&first).Error)
	var got revUser
	must(t, db.Table("mg_named_users").First(&got, first.ID).Error)
	if got.Name != "a" {
		t.Errorf("First by its ID in the process that made the table: %+v", got)
	}
	must(t, p.Close())

	db, p = openWith(t, dir, Config{Atomic: BestEffort}) // a new process: the record is all it knows of the table
	half := Layout{}.ShardCount() / 2
	rows := []revUser{{Name: "b"}, {Name: "c"}}
	must(t, db.Table("mg_named_users").Clauses(OnShard(0)).Create(&rows[0]).Error)
	must(t, db.Table("mg_named_users").Clauses(OnShard(half)).Create(&rows[1]).Error)
	for _, table := range []string{"mg_named_users", "mg_named_users AS u"} {
		got = revUser{}
		if err := db.Table(table).First(&got, rows[1].ID).Error; err != nil || got.Name != "c" {
			t.Errorf("Table(%q).First(&x, id): %v, %+v", table, err, got)
		}
	}
	var some []revUser
	if err := db.Table("mg_named_users").Order("id").Find(&some, []int64{first.ID, rows[0].ID, rows[1].ID}).Error; err != nil || len(some) != 3 {
		t.Errorf("Find by three IDs on two databases: %v, %+v", err, some)
	}
	var n int64
	if err := db.Table("mg_named_users").Model(&revUser{}).Clauses(AllShards()).Count(&n).Error; err != nil || n != 3 {
		t.Errorf("Count over every shard: %v, %d; want 3", err, n)
	}
	must(t, db.Table("mg_named_users").Model(&revUser{ID: rows[0].ID}).Update("name", "b2").Error)
	must(t, db.Table("mg_named_users").Delete(&revUser{}, rows[1].ID).Error)
	var all []revUser
	must(t, db.Table("mg_named_users").Clauses(AllShards()).Order("id").Find(&all).Error)
	if len(all) != 2 || all[0].Name != "a" || all[1].Name != "b2" {
		t.Errorf("the table over every shard after the update and the delete: %+v", all)
	}

	must(t, db.Table("main.mg_named_main").Clauses(OnShard(half)).Create(&revUser{Name: "m"}).Error)
	if err := db.Table("main.mg_named_main").Model(&revUser{}).Clauses(AllShards()).Count(&n).Error; err != nil || n != 1 {
		t.Errorf("Count over every shard of a table named with its schema: %v, %d; want 1", err, n)
	}

	// Refused: the rows of a table placed by another rule, and of an unsharded model.
	if err := db.Table("mg_named_photos").Clauses(AllShards()).Find(&all).Error; !errors.Is(err, ErrCrossShard) {
		t.Errorf("revUser's statement on a table recorded as placed by colocate:user_id: %v, want ErrCrossShard", err)
	}
	must(t, p.AutoMigrate(db, &mgPlaceLang{}))
	if err := db.Table("mg_place_langs").Clauses(AllShards()).Find(&all).Error; !errors.Is(err, ErrCrossShard) {
		t.Errorf("revUser's statement on an unsharded model's table: %v, want ErrCrossShard", err)
	}
}

// mgHashedUser places its rows by the hash of Code.
type mgHashedUser struct {
	ID   int64 `shardid:"hash:Code"`
	Code string
}

// Migrator(db.Table(name)) of a model with a hash or colocate key indexes
// (and checks) the column of the table named, not of the model's own table,
// which need not exist: the migration succeeds where GORM's does, and a
// lookup by the key finds the row.
func TestAMigratorOfANamedTableIndexesThePlacingColumnOfThatTable(t *testing.T) {
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.Migrator(db.Table("mg_named_hashed")).AutoMigrate(&mgHashedUser{}))
	must(t, p.Migrator(db.Table("mg_named_photos")).AutoMigrate(&revPhoto{}))
	for i, d := range []*gorm.DB{openFile(t, dir, "s0.db"), openFile(t, dir, "s1.db")} {
		if !d.Migrator().HasIndex("mg_named_hashed", "idx_shardid_mg_named_hashed_code") {
			t.Errorf("s%d: the hash column of mg_named_hashed has no index", i)
		}
		if !d.Migrator().HasIndex("mg_named_photos", "idx_shardid_mg_named_photos_user_id") {
			t.Errorf("s%d: the colocate column of mg_named_photos has no index", i)
		}
		if d.Migrator().HasTable(&mgHashedUser{}) || d.Migrator().HasTable(&revPhoto{}) {
			t.Errorf("s%d: a model's own table was made", i)
		}
	}
	must(t, db.Table("mg_named_hashed").Create(&mgHashedUser{Code: "k"}).Error)
	var got mgHashedUser
	if err := db.Table("mg_named_hashed").Where("code = ?", "k").First(&got).Error; err != nil || got.Code != "k" {
		t.Errorf("a lookup by the key: %v, %+v", err, got)
	}
}
