package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// Models of the association forms: a sharded owner with colocated has-many,
// has-one and polymorphic children, an unsharded many2many target, and the
// belongs-to back from its children.
type (
	asOwner struct {
		ID    int64    `shardid:""`
		Name  string   `gorm:"size:20"`
		Items []asItem `gorm:"foreignKey:OwnerID"`
		Card  *asCard  `gorm:"foreignKey:OwnerID"`
		Marks []asMark `gorm:"many2many:as_owner_marks"`
		Notes []asNote `gorm:"polymorphic:Owner;polymorphicValue:owners"`
	}
	asItem struct {
		ID      int64 `shardid:"colocate:OwnerID"`
		OwnerID int64
		Owner   *asOwner
		Title   string `gorm:"size:20"`
		Rank    int
	}
	asCard struct {
		ID      int64 `shardid:"colocate:OwnerID"`
		OwnerID int64
		No      string `gorm:"size:20"`
	}
	asMark struct {
		ID    int64
		Label string `gorm:"size:20"`
	}
	asNote struct {
		ID        int64 `shardid:"colocate:OwnerID"`
		OwnerID   int64
		OwnerType string `gorm:"size:20"`
		Body      string `gorm:"size:20"`
	}
)

var asModels = []any{&asOwner{}, &asItem{}, &asCard{}, &asMark{}, &asNote{}}

// asTwin holds the plugin's database and one plain database (the main one,
// its tables prefixed) seeded with the same rows.
type asTwin struct {
	r      *routing
	one    *gorm.DB
	owners []int64 // owners[i] lives on physical database i
}

func newAsTwin(t *testing.T, b backend) *asTwin {
	t.Helper()
	r := newRouting(t, b)
	fresh(t, r.db, asModels...)
	if b.name != "sqlite" { // database <main>_9, beside the physical ones
		admin, err := gorm.Open(b.dialector(t, ""), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		name := admin.Migrator().CurrentDatabase() + "_9"
		_ = admin.Exec("CREATE DATABASE " + map[string]string{"mariadb": "IF NOT EXISTS "}[b.name] + name).Error
		t.Cleanup(func() { // after the plain database is closed
			_ = admin.Exec("DROP DATABASE IF EXISTS " + name + map[string]string{"postgres": " WITH (FORCE)"}[b.name]).Error
			if sqlDB, err := admin.DB(); err == nil {
				_ = sqlDB.Close()
			}
		})
	}
	// the plugin's migrator makes no foreign keys on the shards (docs/migrator.md)
	one, err := gorm.Open(b.physical(t, t.TempDir(), 9), &gorm.Config{Logger: logger.Discard, DisableForeignKeyConstraintWhenMigrating: true})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := one.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	must(t, one.Migrator().DropTable(append(asModels, "as_owner_marks")...))
	must(t, one.AutoMigrate(asModels...))
	for _, db := range append(slices.Clone(r.direct), one) {
		binaryCollation(t, b, db, "as_items", "title")
	}
	tw := &asTwin{r: r, one: one}
	n := r.plugin.Layout().ShardCount()
	for i := range physicalShards {
		o := asOwner{Name: fmt.Sprintf("o%d", i),
			Items: []asItem{{Title: "a", Rank: 2}, {Title: "b", Rank: 1}},
			Card:  &asCard{No: fmt.Sprintf("c%d", i)},
			Notes: []asNote{{Body: "n"}}}
		must(t, r.db.Clauses(shardid.OnShard(i*n/physicalShards)).Create(&o).Error)
		must(t, one.Create(&o).Error) // with the IDs the plugin made
		tw.owners = append(tw.owners, o.ID)
	}
	for _, l := range []string{"x", "y", "z"} {
		must(t, r.db.Create(&asMark{Label: l}).Error)
		must(t, one.Create(&asMark{Label: l}).Error)
	}
	return tw
}

// rows reads every table on both sides: each table's rows as maps sorted by
// their JSON, without the IDs of colocated children (made differently).
func (tw *asTwin) rows(t *testing.T) (sharded, one map[string][]string) {
	t.Helper()
	read := func(dbs []*gorm.DB, prefix string) map[string][]string {
		out := map[string][]string{}
		for _, table := range []string{"as_owners", "as_items", "as_cards", "as_marks", "as_notes", "as_owner_marks"} {
			from := dbs
			if table == "as_marks" && prefix == "" { // unsharded: on the plugin's database
				from = []*gorm.DB{tw.r.db.Session(&gorm.Session{NewDB: true})}
			}
			for _, db := range from {
				var ms []map[string]any
				must(t, db.Table(table).Find(&ms).Error)
				for _, m := range ms {
					if table != "as_owners" && table != "as_marks" {
						delete(m, "id")
					}
					j, _ := json.Marshal(m)
					out[table] = append(out[table], string(j))
				}
			}
			sort.Strings(out[table])
		}
		return out
	}
	return read(tw.r.direct, ""), read([]*gorm.DB{tw.one}, "one")
}

// zeroChildIDs returns a copy of v without the IDs the two sides made
// differently.
func zeroChildIDs(v any) any {
	if v == nil {
		return nil
	}
	p := reflect.New(reflect.TypeOf(v))
	p.Elem().Set(reflect.ValueOf(v))
	var walk func(x reflect.Value)
	walk = func(x reflect.Value) {
		switch x.Kind() {
		case reflect.Pointer:
			if !x.IsNil() {
				walk(x.Elem())
			}
		case reflect.Slice:
			for i := range x.Len() {
				walk(x.Index(i))
			}
		case reflect.Struct:
			switch x.Interface().(type) {
			case asItem, asCard, asNote:
				x.FieldByName("ID").SetInt(0)
			}
			for i := range x.NumField() {
				walk(x.Field(i))
			}
		}
	}
	walk(p)
	return p.Elem().Interface()
}

// assoc runs form on both sides: both give the same error kind, fill the
// same structs, report the same RowsAffected and leave the same rows, or
// the plugin refuses it with a named error and writes nothing.
func (tw *asTwin) assoc(t *testing.T, name string, form func(db *gorm.DB, owners []int64) (any, int64, error)) {
	t.Helper()
	before, beforeOne := tw.rows(t)
	gv, gn, gerr := form(tw.r.db.Session(&gorm.Session{}), tw.owners)
	if errors.Is(gerr, shardid.ErrCrossShard) || errors.Is(gerr, shardid.ErrNoShard) || errors.Is(gerr, shardid.ErrNotAtomic) {
		after, _ := tw.rows(t)
		if !reflect.DeepEqual(before, after) {
			t.Errorf("%s: refused (%v) but wrote:\nbefore %v\nafter  %v", name, gerr, before, after)
		}
		t.Logf("%s: refused: %v", name, gerr)
		return
	}
	wv, wn, werr := form(tw.one.Session(&gorm.Session{}), tw.owners)
	gv, wv = zeroChildIDs(gv), zeroChildIDs(wv)
	g, w := tw.rows(t)
	switch {
	case (werr == nil) != (gerr == nil):
		t.Errorf("%s: one database: %v; every shard: %v", name, werr, gerr)
	case werr == nil && (!reflect.DeepEqual(wv, gv) || wn != gn):
		gj, _ := json.Marshal(gv)
		wj, _ := json.Marshal(wv)
		t.Errorf("%s:\none database: %s (%d)\nsharded:      %s (%d)", name, wj, wn, gj, gn)
	}
	for table := range w { // what each side's form changed, so that one difference is reported once
		gr, ga := changes(before[table], g[table])
		wr, wa := changes(beforeOne[table], w[table])
		if !reflect.DeepEqual(gr, wr) || !reflect.DeepEqual(ga, wa) {
			t.Errorf("%s: table %s:\none database: removed %v added %v\nsharded:      removed %v added %v", name, table, wr, wa, gr, ga)
		}
	}
}

// byID begins a transaction on id's shard on the plugin's side; plain GORM
// needs no clause.
func byID(db *gorm.DB, id int64) *gorm.DB {
	if _, ok := db.Config.Plugins[(&shardid.Plugin{}).Name()]; ok {
		return db.Clauses(shardid.ByID(id))
	}
	return db
}

func asLoad(db *gorm.DB, ids []int64) []asOwner {
	var os []asOwner
	db.Where("id IN ?", ids).Order("id").Find(&os)
	return os
}

// TestAssociationFormsOverSeveralDatabasesAnswerAsOneDatabase: nested
// creates, saves with changed children, Select(...).Delete, the
// Association API on one owner and on owners of several databases,
// preloads (nested, conditioned, ordered and limited), Joins of a
// belongs-to, FullSaveAssociations and Omit(clause.Associations) on a
// sharded owner with colocated has-one, has-many and polymorphic children
// and an unsharded many2many target leave the same rows, fill the same
// structs and report the same RowsAffected as plain GORM on one database,
// or are refused with a named error, nothing written.
func TestAssociationFormsOverSeveralDatabasesAnswerAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newAsTwin(t, b)
		all := func(db *gorm.DB) *gorm.DB { return db.Clauses(shardid.AllShards()) }
		c := func(name string, f func(db *gorm.DB, ids []int64) (any, int64, error)) { tw.assoc(t, name, f) }
		c("Preload nested, ordered", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var os []asOwner
			r := db.Preload("Items", func(tx *gorm.DB) *gorm.DB { return tx.Order("rank, title") }).Preload("Items.Owner").Preload("Card").Preload("Notes").Where("id IN ?", ids).Order("id").Find(&os)
			return os, r.RowsAffected, r.Error
		})
		c("Preload with condition and Limit", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var os []asOwner
			r := db.Preload("Items", "rank > ?", 0, func(tx *gorm.DB) *gorm.DB { return tx.Order("rank desc, title, owner_id").Limit(3) }).Where("id IN ?", ids).Order("id").Find(&os)
			return os, r.RowsAffected, r.Error
		})
		c("Joins belongs-to", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var is []asItem
			r := all(db).Joins("Owner").Order("as_items.owner_id, as_items.title").Find(&is)
			return is, r.RowsAffected, r.Error
		})
		c("Joins belongs-to with owner condition", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var is []asItem
			r := db.Joins("Owner").Where("as_items.owner_id = ?", ids[1]).Order("as_items.title").Find(&is)
			return is, r.RowsAffected, r.Error
		})
		c("Create nested", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[0] + 1, Name: "new", Items: []asItem{{Title: "n1"}, {Title: "n2"}}, Card: &asCard{No: "nc"}, Notes: []asNote{{Body: "nn"}}, Marks: []asMark{{ID: 1}}}
			r := db.Omit("Marks.*").Create(&o)
			return o, r.RowsAffected, r.Error
		})
		c("Save with changed children", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var o asOwner
			must(t, db.Preload("Items").Preload("Card").First(&o, ids[1]).Error)
			o.Name = "saved"
			o.Items[0].Title = "changed"
			o.Items = append(o.Items, asItem{Title: "added"})
			o.Card.No = "cc"
			r := db.Save(&o)
			return o, r.RowsAffected, r.Error
		})
		c("FullSaveAssociations Save", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var o asOwner
			must(t, db.Preload("Items").Preload("Card").First(&o, ids[2]).Error)
			o.Items[0].Title = "full"
			o.Card.No = "fc"
			r := db.Session(&gorm.Session{FullSaveAssociations: true}).Save(&o)
			return o, r.RowsAffected, r.Error
		})
		c("Omit(Associations).Save", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var o asOwner
			must(t, db.Preload("Items").First(&o, ids[3]).Error)
			o.Name = "omitted"
			o.Items[0].Title = "not saved"
			r := db.Omit(clause.Associations).Save(&o)
			return o, r.RowsAffected, r.Error
		})
		c("Append has-many", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[0]}
			err := db.Model(&o).Association("Items").Append(&asItem{Title: "ap"})
			return o, 0, err
		})
		c("Append many2many", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[0]}
			err := db.Model(&o).Omit("Marks.*").Association("Marks").Append(&asMark{ID: 1}, &asMark{ID: 2})
			return o, 0, err
		})
		c("Append polymorphic", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[2]}
			err := db.Model(&o).Association("Notes").Append(&asNote{Body: "pa"})
			return o, 0, err
		})
		c("Count has-many of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := asLoad(db, ids)
			a := db.Model(&os).Association("Items")
			return os, a.Count(), a.Error
		})
		c("Find polymorphic of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := asLoad(db, ids)
			var ns []asNote
			err := db.Model(&os).Association("Notes").Find(&ns)
			sort.Slice(ns, func(i, j int) bool {
				return ns[i].OwnerID < ns[j].OwnerID || ns[i].OwnerID == ns[j].OwnerID && ns[i].Body < ns[j].Body
			})
			return ns, 0, err
		})
		c("Find has-many with Order of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := asLoad(db, ids)
			var is []asItem
			err := db.Model(&os).Order("title, owner_id").Association("Items").Find(&is)
			return is, 0, err
		})
		c("Replace has-one", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[1]}
			err := db.Model(&o).Association("Card").Replace(&asCard{No: "rc"})
			return o, 0, err
		})
		c("Replace has-many", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[2]}
			err := db.Model(&o).Association("Items").Replace(&asItem{Title: "rp"})
			return o, 0, err
		})
		c("Replace many2many", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[0]}
			err := db.Model(&o).Omit("Marks.*").Association("Marks").Replace(&asMark{ID: 3}, &asMark{ID: 1})
			return o, 0, err
		})
		c("Delete has-many of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := asLoad(db, ids)
			var is []asItem
			must(t, db.Where("title = ?", "b").Find(&is, "owner_id IN ?", ids).Error)
			err := db.Model(&os).Association("Items").Delete(&is)
			return os, 0, err
		})
		c("Clear polymorphic of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := asLoad(db, ids)
			err := db.Model(&os).Association("Notes").Clear()
			return os, 0, err
		})
		c("Append many2many on other owners", func(db *gorm.DB, ids []int64) (any, int64, error) {
			for _, id := range ids[1:3] {
				if err := db.Model(&asOwner{ID: id}).Omit("Marks.*").Association("Marks").Append(&asMark{ID: 2}, &asMark{ID: 3}); err != nil {
					return nil, 0, err
				}
			}
			return nil, 0, nil
		})
		c("Preload many2many ordered of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var os []asOwner
			r := db.Preload("Marks", func(tx *gorm.DB) *gorm.DB { return tx.Order("label desc") }).Where("id IN ?", ids).Order("id").Find(&os)
			return os, r.RowsAffected, r.Error
		})
		c("Preload many2many with condition of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var os []asOwner
			r := db.Preload("Marks", "label <> ?", "y").Where("id IN ?", ids).Order("id").Find(&os)
			return os, r.RowsAffected, r.Error
		})
		c("Delete many2many", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[1]}
			err := db.Model(&o).Association("Marks").Delete(&asMark{ID: 2})
			return o, 0, err
		})
		c("Delete many2many of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := asLoad(db, ids)
			err := db.Model(&os).Association("Marks").Delete(&asMark{ID: 3})
			return os, 0, err
		})
		c("Count many2many", func(db *gorm.DB, ids []int64) (any, int64, error) {
			a := db.Model(&asOwner{ID: ids[0]}).Association("Marks")
			return nil, a.Count(), a.Error
		})
		c("Find has-many with Limit of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := asLoad(db, ids)
			var is []asItem
			err := db.Model(&os).Order("rank desc, title, owner_id").Limit(3).Offset(1).Association("Items").Find(&is)
			return is, 0, err
		})
		c("Count has-many with Where of one owner", func(db *gorm.DB, ids []int64) (any, int64, error) {
			a := db.Model(&asOwner{ID: ids[1]}).Where("rank >= ?", 1).Association("Items")
			return nil, a.Count(), a.Error
		})
		c("Count has-many with Where of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := asLoad(db, ids)
			a := db.Model(&os).Where("rank >= ?", 1).Association("Items")
			return nil, a.Count(), a.Error
		})
		c("Delete has-one", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var o asOwner
			must(t, db.Preload("Card").First(&o, ids[0]).Error)
			err := db.Model(&o).Association("Card").Delete(o.Card)
			return o, 0, err
		})
		c("Unscoped Clear has-many", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[3]}
			err := db.Model(&o).Association("Items").Unscoped().Clear()
			return o, 0, err
		})
		c("Unscoped Clear has-many of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := asLoad(db, ids[:2])
			err := db.Model(&os).Association("Notes").Unscoped().Clear()
			return os, 0, err
		})
		c("Joins has-one with Preload", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var os []asOwner
			r := all(db).Joins("Card").Preload("Items", func(tx *gorm.DB) *gorm.DB { return tx.Order("title") }).Order("as_owners.id").Find(&os)
			return os, r.RowsAffected, r.Error
		})
		c("Joins belongs-to with a condition on it", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var is []asItem
			r := all(db).Joins("Owner").Where("Owner.name <> ?", "o0").Order("as_items.owner_id, as_items.title").Find(&is)
			return is, r.RowsAffected, r.Error
		})
		c("Create owners over databases with children", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := []asOwner{{ID: ids[1] + 2, Name: "m1", Items: []asItem{{Title: "m"}}, Card: &asCard{No: "m"}}, {ID: ids[2] + 2, Name: "m2", Notes: []asNote{{Body: "m"}}, Marks: []asMark{{ID: 2}}}}
			r := db.Omit("Marks.*").Create(&os)
			return os, r.RowsAffected, r.Error
		})
		c("Save moving a child to an owner of another database", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var o asOwner
			must(t, db.Preload("Items").First(&o, ids[1]).Error)
			var other asOwner
			must(t, db.First(&other, ids[2]).Error)
			other.Items = o.Items[:1]
			r := db.Save(&other)
			return other, r.RowsAffected, r.Error
		})
		c("Create child with a new belongs-to owner", func(db *gorm.DB, ids []int64) (any, int64, error) {
			it := asItem{Title: "bt", Owner: &asOwner{ID: ids[3] + 3, Name: "bt"}}
			r := db.Create(&it)
			return it, r.RowsAffected, r.Error
		})
		c("Create child with an existing belongs-to owner", func(db *gorm.DB, ids []int64) (any, int64, error) {
			it := asItem{Title: "be", Owner: &asOwner{ID: ids[2], Name: "changed?"}}
			r := db.Create(&it)
			return it, r.RowsAffected, r.Error
		})
		c("Create children of owners over databases with their belongs-to", func(db *gorm.DB, ids []int64) (any, int64, error) {
			is := []asItem{{Title: "b0", Owner: &asOwner{ID: ids[0]}}, {Title: "b3", Owner: &asOwner{ID: ids[3]}}}
			r := db.Create(&is)
			return is, r.RowsAffected, r.Error
		})
		c("Append has-many to owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := asLoad(db, ids[:2])
			err := db.Model(&os).Association("Items").Append(&asItem{Title: "s0"}, &asItem{Title: "s1"})
			return os, 0, err
		})
		c("Replace has-many of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := asLoad(db, ids[1:3])
			err := db.Model(&os).Association("Items").Replace(&asItem{Title: "r1"}, &asItem{Title: "r2"})
			return os, 0, err
		})
		c("Delete of a child of another owner", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var other asItem
			must(t, db.Where("owner_id = ?", ids[2]).Order("title").First(&other).Error)
			err := db.Model(&asOwner{ID: ids[0]}).Association("Items").Delete(&other)
			return nil, 0, err
		})
		c("Preload belongs-to of children over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var is []asItem
			r := all(db).Preload("Owner").Preload("Owner.Card").Order("owner_id, title, rank").Find(&is)
			return is, r.RowsAffected, r.Error
		})
		c("Joins nested belongs-to then has-one", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var is []asItem
			r := all(db).Joins("Owner.Card").Order("as_items.owner_id, as_items.title, as_items.rank").Find(&is)
			return is, r.RowsAffected, r.Error
		})
		c("Create nested with OnConflict UpdateAll", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var o asOwner
			must(t, db.Preload("Items").Preload("Card").First(&o, ids[0]).Error)
			o.Name = "up"
			o.Card = &asCard{No: "upc"}
			o.Items = append(o.Items, asItem{Title: "upi"})
			r := db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&o)
			return o, r.RowsAffected, r.Error
		})
		c("Preload of owners kept by Limit over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var os []asOwner
			r := all(db).Preload("Items", func(tx *gorm.DB) *gorm.DB { return tx.Order("title, rank") }).Preload("Card").Order("name desc, id").Limit(2).Offset(1).Find(&os)
			return os, r.RowsAffected, r.Error
		})
		c("FindInBatches with Preload over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var all0, batch []asOwner
			r := all(db).Preload("Notes").Preload("Card").Order("id").FindInBatches(&batch, 2, func(tx *gorm.DB, _ int) error {
				all0 = append(all0, batch...)
				return nil
			})
			return all0, r.RowsAffected, r.Error
		})
		c("Preload(clause.Associations) over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var os []asOwner
			r := all(db).Preload(clause.Associations).Order("id").Find(&os)
			for i := range os { // children in no order of their own
				slices.SortFunc(os[i].Items, func(a, b asItem) int { return strings.Compare(a.Title+fmt.Sprint(a.Rank), b.Title+fmt.Sprint(b.Rank)) })
				slices.SortFunc(os[i].Notes, func(a, b asNote) int { return strings.Compare(a.Body, b.Body) })
				slices.SortFunc(os[i].Marks, func(a, b asMark) int { return int(a.ID - b.ID) })
			}
			return os, r.RowsAffected, r.Error
		})
		c("Find has-one of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := asLoad(db, ids)
			var cs []asCard
			err := db.Model(&os).Order("no").Association("Card").Find(&cs)
			return cs, 0, err
		})
		c("Find belongs-to of a child", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var it asItem
			must(t, db.Where("owner_id = ?", ids[1]).Order("title").First(&it).Error)
			var o asOwner
			err := db.Model(&it).Association("Owner").Find(&o)
			return o, 0, err
		})
		c("Find belongs-to of children over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var is []asItem
			must(t, db.Where("owner_id IN ?", ids).Order("owner_id, title").Find(&is).Error)
			var os []asOwner
			err := db.Model(&is).Order("id").Association("Owner").Find(&os)
			return os, 0, err
		})
		c("Replace belongs-to with a new owner", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var it asItem
			must(t, db.Where("owner_id = ?", ids[1]).Order("title").First(&it).Error)
			err := db.Model(&it).Association("Owner").Replace(&asOwner{Name: "bnew"})
			return nil, 0, err
		})
		c("Replace belongs-to with an owner of another database", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var it asItem
			must(t, db.Where("owner_id = ?", ids[2]).Order("title").First(&it).Error)
			err := db.Model(&it).Association("Owner").Replace(&asOwner{ID: ids[3]})
			return nil, 0, err
		})
		c("Clear belongs-to", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var it asItem
			must(t, db.Where("owner_id = ?", ids[2]).Order("title").First(&it).Error)
			err := db.Model(&it).Association("Owner").Clear()
			return it, 0, err
		})
		c("FullSaveAssociations Save of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var os []asOwner
			must(t, db.Preload("Items", func(tx *gorm.DB) *gorm.DB { return tx.Order("title, rank") }).Where("id IN ?", ids[1:3]).Order("id").Find(&os).Error)
			for i := range os {
				os[i].Name += "!"
				if len(os[i].Items) > 0 {
					os[i].Items[0].Rank = 9
				}
			}
			r := db.Session(&gorm.Session{FullSaveAssociations: true}).Save(&os)
			return os, r.RowsAffected, r.Error
		})
		c("Preload with Select of columns over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var os []asOwner
			r := db.Preload("Items", func(tx *gorm.DB) *gorm.DB {
				return tx.Select("owner_id", "title").Order("title desc, owner_id").Offset(1).Limit(4)
			}).Where("id IN ?", ids).Order("id").Find(&os)
			return os, r.RowsAffected, r.Error
		})
		c("Preload polymorphic with Limit over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var os []asOwner
			r := db.Preload("Notes", func(tx *gorm.DB) *gorm.DB { return tx.Order("body desc, owner_id desc").Limit(2) }).Where("id IN ?", ids).Order("id").Find(&os)
			return os, r.RowsAffected, r.Error
		})
		c("Joins has-one with conditions", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var os []asOwner
			r := all(db).Joins("Card", db.Session(&gorm.Session{NewDB: true}).Where(&asCard{No: "c1"})).Order("as_owners.id").Find(&os)
			return os, r.RowsAffected, r.Error
		})
		c("InnerJoins has-one", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var os []asOwner
			r := all(db).InnerJoins("Card").Order("as_owners.id").Find(&os)
			return os, r.RowsAffected, r.Error
		})
		c("Preload deep nested of owners kept by Limit", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var os []asOwner
			r := all(db).Preload("Items", func(tx *gorm.DB) *gorm.DB { return tx.Order("title, rank") }).Preload("Items.Owner.Card").Order("id desc").Limit(3).Find(&os)
			return os, r.RowsAffected, r.Error
		})
		c("Count polymorphic of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := asLoad(db, ids)
			a := db.Model(&os).Association("Notes")
			return nil, a.Count(), a.Error
		})
		c("Create with Select of one association", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[2] + 5, Name: "sel", Items: []asItem{{Title: "si"}}, Card: &asCard{No: "not"}}
			r := db.Select("ID", "Name", "Items").Create(&o)
			return o, r.RowsAffected, r.Error
		})
		c("Create nested with Returning", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[1] + 5, Name: "ret", Items: []asItem{{Title: "ri", Rank: 4}}}
			r := db.Clauses(clause.Returning{}).Create(&o)
			return o, r.RowsAffected, r.Error
		})
		c("Updates with an association", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[3]}
			r := db.Model(&o).Updates(asOwner{Name: "upd", Items: []asItem{{Title: "ui"}}})
			return o, r.RowsAffected, r.Error
		})
		c("Transaction: nested Create, Append, Count, Preload", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var n int64
			var back asOwner
			err := byID(db, ids[0]).Transaction(func(tx *gorm.DB) error {
				o := asOwner{ID: ids[0] + 7, Name: "tx", Items: []asItem{{Title: "t1"}}, Notes: []asNote{{Body: "tn"}}}
				if err := tx.Create(&o).Error; err != nil {
					return err
				}
				if err := tx.Model(&o).Association("Items").Append(&asItem{Title: "t2"}); err != nil {
					return err
				}
				n = tx.Model(&o).Association("Items").Count()
				return tx.Preload("Items", func(q *gorm.DB) *gorm.DB { return q.Order("title") }).Preload("Notes").First(&back, o.ID).Error
			})
			return back, n, err
		})
		c("Transaction: children of owners of two databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			err := byID(db, ids[1]).Transaction(func(tx *gorm.DB) error {
				if err := tx.Model(&asOwner{ID: ids[1]}).Association("Items").Append(&asItem{Title: "x1"}); err != nil {
					return err
				}
				return tx.Model(&asOwner{ID: ids[2]}).Association("Items").Append(&asItem{Title: "x2"})
			})
			return nil, 0, err
		})
		c("Transaction rolled back after an association save", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[3]}
			err := byID(db, ids[3]).Transaction(func(tx *gorm.DB) error {
				if err := tx.Model(&o).Association("Items").Replace(&asItem{Title: "gone"}); err != nil {
					return err
				}
				return errors.New("roll back")
			})
			return nil, 0, err
		})
		c("Preload with a condition on child IDs of several databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			var iids []int64
			must(t, db.Model(&asItem{}).Where("owner_id IN ? AND title = ?", ids, "a").Pluck("id", &iids).Error)
			var os []asOwner
			r := db.Preload("Items", "id IN ?", iids).Where("id IN ?", ids).Order("id").Find(&os)
			return os, r.RowsAffected, r.Error
		})
		c("Find has-many of repeated owners and an absent one", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := []asOwner{{ID: ids[0]}, {ID: ids[2]}, {ID: ids[0]}, {ID: ids[3] + 11}}
			var is []asItem
			err := db.Model(&os).Order("owner_id, title, rank").Association("Items").Find(&is)
			return is, 0, err
		})
		c("Select(Items).Delete of owners one absent", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := []asOwner{{ID: ids[0]}, {ID: ids[1] + 11}}
			r := db.Select("Items").Delete(&os)
			return os, r.RowsAffected, r.Error
		})
		c("Clear many2many", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[0]}
			err := db.Model(&o).Association("Marks").Clear()
			return o, 0, err
		})
		c("Select(Items, Card).Delete", func(db *gorm.DB, ids []int64) (any, int64, error) {
			o := asOwner{ID: ids[3]}
			r := db.Select("Items", "Card").Delete(&o)
			return o, r.RowsAffected, r.Error
		})
		c("Select(Associations).Delete of owners over databases", func(db *gorm.DB, ids []int64) (any, int64, error) {
			os := []asOwner{{ID: ids[1]}, {ID: ids[2]}}
			r := db.Select(clause.Associations).Delete(&os)
			return os, r.RowsAffected, r.Error
		})
	})
}

// changes is what rows of sorted list before are gone from after, and what
// rows after has that before had not.
func changes(before, after []string) (removed, added []string) {
	n := map[string]int{}
	for _, r := range before {
		n[r]++
	}
	for _, r := range after {
		if n[r] > 0 {
			n[r]--
		} else {
			added = append(added, r)
		}
	}
	for _, r := range before {
		if n[r] > 0 {
			n[r]--
			removed = append(removed, r)
		}
	}
	return removed, added
}

// TestAttachingAChildToAnOwnerOfAnotherLogicalShardOnTheSameDatabaseIsRefused:
// two owners on one physical database but in different logical shards (a
// move may part them later): Append, Replace and a Save that hands an
// existing child to the other owner are refused with ErrCrossShard and write
// nothing, as across databases, so that no child's colocate column names a
// shard other than its ID's.
func TestAttachingAChildToAnOwnerOfAnotherLogicalShardOnTheSameDatabaseIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newAsTwin(t, b)
		db := tw.r.db
		other := asOwner{Name: "neighbour"}
		must(t, db.Clauses(shardid.OnShard(1)).Create(&other).Error)
		if tw.r.physicalOf(other.ID) != tw.r.physicalOf(tw.owners[0]) || tw.r.plugin.Layout().Shard(other.ID) == tw.r.plugin.Layout().Shard(tw.owners[0]) {
			t.Skip("the layout puts logical shards 0 and 1 on different databases")
		}
		forms := map[string]func(it asItem) error{
			"Append": func(it asItem) error { return db.Model(&asOwner{ID: other.ID}).Association("Items").Append(&it) },
			"Replace": func(it asItem) error {
				return db.Model(&asOwner{ID: other.ID}).Association("Items").Replace(&it)
			},
			"Save of the owner with the child": func(it asItem) error {
				o := other
				o.Items = []asItem{it}
				return db.Save(&o).Error
			},
			"Save of the child with the new owner ID": func(it asItem) error {
				it.OwnerID = other.ID
				return db.Save(&it).Error
			},
			"Update of the child's owner ID": func(it asItem) error {
				return db.Model(&it).Update("owner_id", other.ID).Error
			},
		}
		for name, form := range forms {
			var it asItem
			must(t, db.Where("owner_id = ?", tw.owners[0]).Order("title").First(&it).Error)
			err := form(it)
			var now asItem
			must(t, db.Where("owner_id = ?", tw.owners[0]).Where("id = ?", it.ID).Find(&now).Error)
			if !errors.Is(err, shardid.ErrCrossShard) || now.ID != it.ID {
				t.Errorf("%s: %v; the child's owner is still the first: %v", name, err, now.ID == it.ID)
			}
		}
	})
}
