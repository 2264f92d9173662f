package integration

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// arItem is sharded by its ID, soft-deleted, with text the collations
// compare differently, NULLs, decimals and times.
type arItem struct {
	ID        int64 `shardid:""`
	CreatedAt time.Time
	UpdatedAt time.Time
	DeletedAt gorm.DeletedAt `gorm:"index"`
	Name      string         `gorm:"size:20"`
	Grp       string         `gorm:"size:10"`
	Qty       int
	Score     *int64
	Price     string `gorm:"type:decimal(10,2)"`
	At        *time.Time
	Ratio     float64
	Big       uint64
	Parts     []arPart `gorm:"foreignKey:ItemID"`
}

// arPart lives beside its item.
type arPart struct {
	ID     int64  `shardid:"colocate:ItemID"`
	ItemID int64  `gorm:"index"`
	Kind   string `gorm:"size:10"`
	N      int
}

// arForm is one query, run on the plugin's databases with AllShards and on
// one plain database holding the same rows.
type arForm struct {
	name string
	// ordered: the result's order is defined by the query, compare it.
	ordered bool
	run     func(db *gorm.DB) (any, error)
}

// arRig is the plugin's three physical databases and a plain reference.
type arRig struct {
	sh, ref *gorm.DB
	// canon writes results to compare with their types and times; padded,
	// so that a group of "a" and "a " may be either on one database too.
	canon canonOptions
	inTx  bool // sh and ref are transactions
}

func newARRig(t *testing.T, b backend, alter func(db *gorm.DB) error) *arRig {
	t.Helper()
	dir := t.TempDir()
	count := shardid.Layout{}.ShardCount()
	var list []shardid.Shard
	const n = 3
	for i := range n {
		list = append(list, shardid.Shard{Name: fmt.Sprintf("%s-%d", b.name, i), Dialector: b.physical(t, dir, i),
			Logical: []shardid.Range{{From: i * count / n, To: (i+1)*count/n - 1}}})
	}
	sh := open(t, b, dir, shardid.Config{Shards: list})
	fresh(t, sh, &arItem{}, &arPart{})
	ref, err := gorm.Open(b.physical(t, dir, n), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d, err := ref.DB(); err == nil {
			_ = d.Close()
		}
	})
	if err := ref.Migrator().DropTable(&arItem{}, &arPart{}); err != nil {
		t.Fatal(err)
	}
	ref.Config.DisableForeignKeyConstraintWhenMigrating = true
	if err := ref.AutoMigrate(&arItem{}, &arPart{}); err != nil {
		t.Fatal(err)
	}
	if alter != nil {
		for i := range n + 1 {
			db, err := gorm.Open(b.physical(t, dir, i), &gorm.Config{Logger: logger.Discard})
			if err != nil {
				t.Fatal(err)
			}
			err = alter(db)
			if d, e := db.DB(); e == nil {
				_ = d.Close()
			}
			if err != nil {
				t.Fatalf("alter: %v", err)
			}
		}
	}
	r := &arRig{sh: sh, ref: ref, canon: canonOptions{times: true, typed: true}}
	r.seed(t, b.name)
	return r
}

// seed writes the same rows on both sides: spread over the shards by their
// IDs, a few soft-deleted.
func (r *arRig) seed(t *testing.T, b string) {
	names := []string{"a", "A", "b", "B", "a ", "é", "É", "", "z", "Z", "b"}
	grps := []string{"x", "X", "y", "", "x"}
	base := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	layout := shardid.Layout{}.Normalized()
	var first int64
	for i := range 24 {
		it := arItem{Name: names[i%len(names)], Grp: grps[i%len(grps)], Qty: (i*7)%11 - 3,
			Price: fmt.Sprintf("%d.%02d", (i*13)%50, (i*37)%100)}
		it.ID = layout.Compose(base.Add(time.Duration(i)*time.Minute), (i*97)%layout.ShardCount(), i)
		it.CreatedAt = base.Add(time.Duration(i) * time.Hour)
		it.UpdatedAt = it.CreatedAt
		it.Ratio = []float64{0, math.Copysign(0, -1), 1.5, -2.25, 1e300, 0.1, 0.30000000000000004, 3}[i%8]
		if b == "postgres" && i%7 == 3 {
			it.Ratio = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[i%3]
		}
		it.Big = uint64(i%5) * 1000
		if b == "mariadb" { // BIGINT UNSIGNED: above the largest int64
			it.Big = math.MaxUint64 - uint64(i%5)*(1<<62)
		}
		if i%5 == 2 { // soft-deleted at a time both sides store alike
			it.DeletedAt = gorm.DeletedAt{Time: base.Add(time.Duration(i) * time.Second), Valid: true}
		}
		if i%4 == 3 {
			it.Price = fmt.Sprint(i) // SQLite stores it as an integer, the others as a decimal
		}
		if i%3 != 0 {
			s := int64((i*5)%9 - 4)
			it.Score = &s
		}
		if i%4 != 1 {
			at := base.Add(time.Duration((i*17)%30) * 24 * time.Hour)
			it.At = &at
		}
		for k := range i % 3 {
			it.Parts = append(it.Parts, arPart{ItemID: it.ID, Kind: names[(i+k)%len(names)], N: k + i%4})
		}
		row := it
		row.Parts = slices.Clone(it.Parts)
		if err := r.sh.Create(&row).Error; err != nil {
			t.Fatalf("seed: %v", err)
		}
		same := row // the plugin's IDs, given to the reference
		same.Parts = slices.Clone(row.Parts)
		if err := r.ref.Create(&same).Error; err != nil {
			t.Fatalf("seed reference: %v", err)
		}
		if i == 0 {
			first = row.ID
		}
	}
	late := arPart{ItemID: first, Kind: "late", N: 9} // the first item's only part, made last: its ID orders after every other part's
	if err := r.sh.Create(&late).Error; err != nil {
		t.Fatalf("seed: %v", err)
	}
	if err := r.ref.Create(&late).Error; err != nil {
		t.Fatalf("seed reference: %v", err)
	}
}

// checkForms runs each form on both sides: the plugin's result must be the
// reference's, or an ErrCrossShard refusal.
func (r *arRig) checkForms(t *testing.T, forms []arForm) {
	t.Helper()
	for _, f := range forms {
		if r.inTx {
			r.ref.SavePoint("form") // PostgreSQL's transaction survives the form's error
		}
		want, werr := f.run(r.ref.Session(&gorm.Session{}))
		if r.inTx && werr != nil {
			r.ref.RollbackTo("form")
			continue // it would abort the plugin's PostgreSQL branches, as it aborts one database's transaction
		}
		got, gerr := f.run(r.sh.Clauses(shardid.AllShards()))
		switch {
		case gerr != nil && (errors.Is(gerr, shardid.ErrCrossShard) || errors.Is(gerr, shardid.ErrNoShard)):
			t.Logf("%s: refused: %v", f.name, gerr)
		case werr != nil && gerr != nil:
			t.Logf("%s: both failed: %v / %v", f.name, gerr, werr)
		case gerr != nil || werr != nil:
			t.Errorf("%s: plugin err %v, one database err %v", f.name, gerr, werr)
		default:
			if g, w := r.canon.text(got, f.ordered), r.canon.text(want, f.ordered); g != w {
				at := 0
				for at < min(len(g), len(w)) && g[at] == w[at] {
					at++
				}
				from := max(0, at-200)
				t.Errorf("%s: differs at %d:\n plugin       …%s\n one database …%s", f.name, at, g[from:min(len(g), at+300)], w[from:min(len(w), at+300)])
			}
		}
	}
}

type arSmall struct {
	ID   int64
	Name string
}

type arMore struct {
	ID    int64
	Name  string
	Extra string
}

func (arSmall) TableName() string { return "ar_items" }

// TestAllShardsReadsMatchOneDatabase: reads over every physical database
// give what plain GORM gives on one database holding the same rows, or are
// refused with ErrCrossShard.
func TestAllShardsReadsMatchOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newARRig(t, b, nil)
		r.checkForms(t, arForms())
	})
}

// arForms are the queries the tests compare.
func arForms() []arForm {
	items := func(q func(db *gorm.DB) *gorm.DB, ordered bool, name string) arForm {
		return arForm{name, ordered, func(db *gorm.DB) (any, error) {
			var out []arItem
			err := q(db).Find(&out).Error
			return out, err
		}}
	}
	maps := func(q func(db *gorm.DB) *gorm.DB, ordered bool, name string) arForm {
		return arForm{name, ordered, func(db *gorm.DB) (any, error) {
			var out []map[string]any
			err := q(db.Model(&arItem{})).Scan(&out).Error
			return out, err
		}}
	}
	findMaps := func(q func(db *gorm.DB) *gorm.DB, ordered bool, name string) arForm {
		return arForm{name, ordered, func(db *gorm.DB) (any, error) {
			var out []map[string]any
			err := q(db.Model(&arItem{})).Find(&out).Error
			return out, err
		}}
	}
	number := func(q func(db *gorm.DB) *gorm.DB, name string) arForm {
		return arForm{name, true, func(db *gorm.DB) (any, error) {
			var out int64
			err := q(db.Model(&arItem{})).Count(&out).Error
			return out, err
		}}
	}
	pluck := func(column string, q func(db *gorm.DB) *gorm.DB, ordered bool, name string) arForm {
		return arForm{name, ordered, func(db *gorm.DB) (any, error) {
			var out []any
			err := q(db.Model(&arItem{})).Pluck(column, &out).Error
			return out, err
		}}
	}
	row := func(sel string, n int, q func(db *gorm.DB) *gorm.DB) arForm {
		return arForm{"Row " + sel, true, func(db *gorm.DB) (any, error) {
			vals := make([]any, n)
			ptrs := make([]any, n)
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			err := q(db.Model(&arItem{})).Select(sel).Row().Scan(ptrs...)
			return vals, err
		}}
	}
	id := func(db *gorm.DB) *gorm.DB { return db }
	forms := []arForm{
		items(func(db *gorm.DB) *gorm.DB { return db.Order("name, id") }, true, "Order(name, id)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("name desc, id").Limit(4).Offset(3) }, true, "Order(name desc, id).Limit(4).Offset(3)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("score").Order("id") }, true, "Order(score).Order(id)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("score desc, id").Limit(5) }, true, "Order(score desc, id).Limit(5)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("price desc, id") }, true, "Order(price desc, id)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("at, id").Offset(2).Limit(100) }, true, "Order(at, id).Offset(2)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Unscoped().Order("deleted_at, id") }, true, "Unscoped Order(deleted_at, id)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("grp, name desc, id").Limit(7) }, true, "Order(grp, name desc, id).Limit(7)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("ar_items.qty, ar_items.id") }, true, "Order(ar_items.qty, ar_items.id)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Select("ar_items.id, ar_items.name").Order("ar_items.id") }, true, "Select(table-qualified).Order"),
		items(func(db *gorm.DB) *gorm.DB { return db.Select("id, qty * 2 AS qty").Order("qty, id") }, true, "Select(qty*2 AS qty).Order(qty)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("name COLLATE \"C\", id") }, true, "Order(collate)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Where("ar_parts.n > ?", 1).Order("ar_items.id")
		}, true, "Joins colocated"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Distinct("ar_items.*").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Order("ar_items.id")
		}, true, "Distinct Joins colocated"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Where("id IN (?)", db.Session(&gorm.Session{NewDB: true}).Model(&arPart{}).Select("item_id").Where("n > 1")).Order("id")
		}, true, "Where subquery"),
		items(func(db *gorm.DB) *gorm.DB { return db.Preload("Parts", "n > ?", 1).Order("id") }, true, "Preload with condition"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Preload("Parts", func(tx *gorm.DB) *gorm.DB { return tx.Order("n desc, id").Limit(2) }).Order("id")
		}, true, "Preload with limit"),
		items(func(db *gorm.DB) *gorm.DB { return db.Limit(0).Order("id") }, true, "Limit(0)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("id").Limit(-1).Offset(20) }, true, "Limit(-1).Offset(20)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Where("name = ?", "a").Order("id") }, true, "Where name = a"),
		items(func(db *gorm.DB) *gorm.DB { return db.Where("name LIKE ?", "a%").Order("id") }, true, "Where name LIKE a%"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Order("name, id").Limit(6) }, true, "maps Order(name, id)"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Select("id, price, at").Order("price, id") }, true, "maps Order(price)"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Distinct("name").Order("name") }, true, "maps Distinct(name).Order(name)"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Distinct("grp", "qty").Order("qty desc, grp") }, true, "maps Distinct(grp, qty).Order"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Distinct("qty").Order("qty").Limit(3).Offset(1) }, true, "maps Distinct(qty).Limit.Offset"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("grp, count(*) AS n, sum(qty) AS s, avg(score) AS a, min(name) AS mn, max(at) AS mx").Group("grp").Order("grp")
		}, false, "Group(grp) aggregates"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n, sum(price) AS s, avg(price) AS a, min(price) AS lo, max(price) AS hi").Group("qty").Order("qty")
		}, true, "Group(qty) decimal aggregates"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Group("qty").Having("count(*) > ?", 1).Order("n desc, qty").Limit(3)
		}, true, "Group Having Order n desc Limit"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, sum(score) AS s").Group("qty").Having("sum(score) >= ? AND count(*) > ?", 0, 1).Order("qty")
		}, true, "Group Having sum and count"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Group("qty").Having("count(*) + 1 > ?", 2).Order("qty")
		}, true, "Having expression"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("avg(qty) AS a, avg(score) AS b, avg(price) AS c") }, true, "avg"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("min(name) AS a, max(name) AS b") }, true, "min/max text"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("min(at) AS a, max(at) AS b, count(at) AS c") }, true, "min/max time"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("min(score) AS a, max(score) AS b, sum(score) AS c, count(score) AS d")
		}, true, "min/max over NULL"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Where("qty > 1000").Select("min(score) AS a, sum(qty) AS b, count(*) AS c, avg(qty) AS d, max(at) AS e")
		}, true, "aggregates of no rows"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("count(distinct name) AS n") }, true, "count(distinct name)"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("count(distinct grp) AS n") }, true, "count(distinct grp)"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("count(distinct score) AS n") }, true, "count(distinct score)"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("name, count(*) AS n").Group("name").Order("name") }, true, "Group(name) Order(name)"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("grp, max(name) AS m").Group("grp").Order("grp") }, true, "Group(grp) max(name)"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("at, count(*) AS n").Group("at").Order("at") }, true, "Group(at)"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("price, count(*) AS n").Group("price").Order("price desc")
		}, true, "Group(price)"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("score, count(*) AS n").Group("score").Order("score") }, true, "Group(score) NULL"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("sum(qty) AS s").Group("grp").Order("s") }, true, "Group(grp) hidden key"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Group("qty").Order("count(*) desc, qty")
		}, true, "Order(count(*))"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Group("qty").Order("qty").Offset(2).Limit(2)
		}, true, "Group Offset Limit"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Unscoped().Select("qty, count(*) AS n").Group("qty").Order("qty")
		}, true, "Unscoped Group"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty, sum(qty) AS qty2").Group("qty").Order("qty2, qty") }, true, "alias order"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("ar_items.qty, count(ar_items.id) AS n").Group("ar_items.qty").Order("ar_items.qty")
		}, true, "qualified Group"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Group("qty").Having("n > ?", 1).Order("qty")
		}, true, "Having alias"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty AS q, count(*) AS n").Group("qty").Order("q desc") }, true, "aliased key"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty AS score, count(*) AS n").Group("qty").Order("score")
		}, true, "alias named as other column"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("max(qty) AS score").Group("grp").Order("score") }, true, "aggregate alias named as other column"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("sum(price) AS s, sum(qty) AS q, count(*) AS n") }, true, "sums"),
		number(func(db *gorm.DB) *gorm.DB { return db.Group("qty").Limit(2) }, "Group(qty).Limit(2).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Group("qty").Offset(3).Limit(100) }, "Group(qty).Offset(3).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Group("qty").Having("count(*) > ?", 1) }, "Group(qty).Having.Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Distinct("qty").Limit(1).Offset(1) }, "Distinct(qty).Limit.Offset.Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Distinct("qty").Order("qty") }, "Distinct(qty).Order.Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Select("DISTINCT qty") }, "Select(DISTINCT qty).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Select("count(distinct qty)") }, "Select(count(distinct qty)).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Offset(5) }, "Offset(5).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id") }, "Joins.Count"),
		number(func(db *gorm.DB) *gorm.DB {
			return db.Distinct("ar_items.id").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id")
		}, "Distinct(ar_items.id) Joins.Count"),
		number(func(db *gorm.DB) *gorm.DB {
			return db.Distinct("ar_items.qty").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id")
		}, "Distinct(ar_items.qty) Joins.Count"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("ar_parts.kind, count(*) AS n").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Group("ar_parts.kind").Order("ar_parts.kind")
		}, true, "Joins Group(other table)"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("ar_items.qty, count(*) AS n, sum(ar_parts.n) AS s").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Group("ar_items.qty").Order("ar_items.qty")
		}, true, "Joins Group sum(other table)"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Group("qty").Order("qty")
		}, true, "Joins Group unqualified"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("max(id) AS m, min(id) AS n") }, true, "max(id)"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, score, count(*) AS n").Group("qty, score").Order("qty, score desc")
		}, true, "Group(qty, score)"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Group("qty").Having("count(*) > 1 OR qty > 3").Order("qty")
		}, true, "Having OR"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Group("qty").Having("max(score) > ?", 0).Order("qty")
		}, true, "Having max"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Group("qty").Having("avg(score) > ?", 0.5).Order("qty")
		}, true, "Having avg float"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty, avg(score) AS a").Group("qty").Order("a desc, qty") }, true, "Order avg"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(score) AS c, count(*) AS n").Group("qty").Order("c, qty")
		}, true, "count(score)"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Where("score IS NULL").Group("qty").Order("qty")
		}, true, "Where IS NULL Group"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("count(*) AS n").Group("qty").Order("n, qty") }, true, "hidden group key order"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty, COUNT(1) AS n").Group("qty").Order("qty") }, true, "COUNT(1)"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty, sum(1) AS n").Group("qty").Order("qty") }, true, "sum(1)"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty, sum(qty) AS n").Group("qty").Order("qty DESC") }, true, "Order DESC upper"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty, count(*) AS n").Group("qty").Order("qty").Limit(3) }, true, "Group Limit"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty, count(*) n").Group("qty").Order("n, qty") }, true, "alias without AS"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty, count(*) AS \"n\"").Group("qty").Order("qty") }, true, "quoted alias"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, sum(price) AS s").Group("qty").Having("sum(price) > ?", "40.5").Order("qty")
		}, true, "Having decimal"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, max(price) AS s").Group("qty").Having("max(price) > ?", 40).Order("s")
		}, true, "Having max decimal int"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, min(at) AS s").Group("qty").Having("min(at) > ?", time.Date(2024, 3, 10, 0, 0, 0, 0, time.UTC)).Order("s, qty")
		}, true, "Having min time"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("grp, count(*) AS n").Group("grp").Having("grp <> ?", "x").Order("grp")
		}, true, "Having grouped text"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Distinct("qty", "score").Order("score, qty") }, true, "Distinct(qty, score) scan"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Select("id, price").Order("id") }, true, "maps price Order(id)"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Select("id, score").Order("id") }, true, "maps score Order(id)"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Select("id, at").Order("at desc, id") }, true, "maps at Order(at)"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Distinct("id", "qty").Order("qty, id").Limit(5) }, true, "Distinct(id, qty)"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Distinct().Select("qty").Order("qty") }, true, "Distinct().Select(qty)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Offset(2).Order("qty, id") }, true, "Offset without Limit"),
		items(func(db *gorm.DB) *gorm.DB { return db.Select("*").Order("id desc").Limit(3) }, true, "Select(*)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Select("ar_items.*").Order("id desc").Limit(3) }, true, "Select(ar_items.*)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Omit("name").Order("qty desc, id").Limit(3) }, true, "Omit(name)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Select("id", "qty").Order("qty desc, id").Limit(3) }, true, "Select(id, qty)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Select("qty").Order("qty desc").Limit(3) }, true, "Select(qty) no id"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("qty desc").Limit(3) }, false, "Order(qty desc).Limit ties"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Table("ar_items AS i").Where("i.qty > ?", 2).Order("i.qty, i.id")
		}, true, "Table alias"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Order("ar_parts.n desc, ar_items.id").Limit(4)
		}, true, "Order by joined column"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Select("ar_items.id, ar_items.qty, ar_parts.n AS qty").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Order("qty, id")
		}, true, "alias shadows ordered column"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Where("at > ?", time.Date(2024, 3, 10, 0, 0, 0, 0, time.UTC)).Order("at, id")
		}, true, "Where time"),
		items(func(db *gorm.DB) *gorm.DB { return db.Where("price > ?", "20.5").Order("id") }, true, "Where decimal"),
		{"Order(qty).Offset(2).First", true, func(db *gorm.DB) (any, error) {
			var it arItem
			err := db.Order("qty").Offset(2).First(&it).Error
			return it, err
		}},
		{"Order(at desc).Take", true, func(db *gorm.DB) (any, error) {
			var it arItem
			err := db.Order("at desc, id").Take(&it).Error
			return it, err
		}},
		{"Order(qty).Last", true, func(db *gorm.DB) (any, error) {
			var it arItem
			err := db.Order("qty").Last(&it).Error
			return it, err
		}},
		{"Scan aggregates into struct", true, func(db *gorm.DB) (any, error) {
			var out []struct {
				Qty int
				N   int
				A   float64
			}
			err := db.Model(&arItem{}).Select("qty, count(*) AS n, avg(score) AS a").Group("qty").Order("qty").Scan(&out).Error
			return out, err
		}},
		{"Find aggregates into struct", true, func(db *gorm.DB) (any, error) {
			var out []struct {
				Qty int
				N   int
			}
			err := db.Model(&arItem{}).Select("qty, count(*) AS n").Group("qty").Order("qty").Find(&out).Error
			return out, err
		}},
		{"Pluck Group", true, func(db *gorm.DB) (any, error) {
			var out []int
			err := db.Model(&arItem{}).Group("qty").Order("qty").Pluck("qty", &out).Error
			return out, err
		}},
		{"Distinct Pluck", true, func(db *gorm.DB) (any, error) {
			var out []int
			err := db.Model(&arItem{}).Distinct().Order("qty").Pluck("qty", &out).Error
			return out, err
		}},
		{"Pluck qty Order qty", true, func(db *gorm.DB) (any, error) {
			var out []int
			err := db.Model(&arItem{}).Order("qty").Pluck("qty", &out).Error
			return out, err
		}},
		{"Pluck score Order score", true, func(db *gorm.DB) (any, error) {
			var out []*int64
			err := db.Model(&arItem{}).Order("score desc").Pluck("score", &out).Error
			return out, err
		}},
		// A NULL plucked into []int64 fails its row's scan; each part fetches
		// OFFSET+LIMIT rows, more than the merge keeps, and one database does
		// not send the rows its LIMIT and OFFSET leave out: a NULL among them
		// must not fail the query (NULLs last descending on MySQL and SQLite,
		// ascending on PostgreSQL; skipped by the OFFSET on either).
		{"Pluck NULL score into []int64 past Limit, desc", true, func(db *gorm.DB) (any, error) {
			var out []int64
			err := db.Model(&arItem{}).Order("score desc").Limit(3).Pluck("score", &out).Error
			return out, err
		}},
		{"Pluck NULL score into []int64 past Limit, asc", true, func(db *gorm.DB) (any, error) {
			var out []int64
			err := db.Model(&arItem{}).Order("score").Limit(3).Pluck("score", &out).Error
			return out, err
		}},
		{"Pluck NULL score into []int64 before Offset", true, func(db *gorm.DB) (any, error) {
			var out []int64
			err := db.Model(&arItem{}).Order("score").Offset(8).Limit(3).Pluck("score", &out).Error
			return out, err
		}},
		{"Pluck NULL at into []*time.Time past Limit", true, func(db *gorm.DB) (any, error) {
			var out []*time.Time
			err := db.Model(&arItem{}).Order("at desc").Limit(5).Pluck("at", &out).Error
			return out, err
		}},
		{"Pluck NULL score into []int64 kept", true, func(db *gorm.DB) (any, error) {
			var out []int64
			err := db.Model(&arItem{}).Order("score").Offset(5).Limit(8).Pluck("score", &out).Error
			return out, err
		}},
		{"Pluck at Order at", true, func(db *gorm.DB) (any, error) {
			var out []*time.Time
			err := db.Model(&arItem{}).Order("at").Pluck("at", &out).Error
			return out, err
		}},
		{"Rows aggregate", true, func(db *gorm.DB) (any, error) {
			rows, err := db.Model(&arItem{}).Select("qty, count(*) AS n").Group("qty").Order("qty").Rows()
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var out []map[string]any
			for rows.Next() {
				m := map[string]any{}
				if err := db.ScanRows(rows, &m); err != nil {
					return nil, err
				}
				out = append(out, m)
			}
			return out, rows.Err()
		}},
		{"Find array", true, func(db *gorm.DB) (any, error) {
			var out [3]arItem
			err := db.Order("qty desc, id").Find(&out).Error
			return out, err
		}},
		{"Find single map", true, func(db *gorm.DB) (any, error) {
			out := map[string]any{}
			err := db.Model(&arItem{}).Order("qty desc, id").Find(&out).Error
			return out, err
		}},
		{"Find single struct", true, func(db *gorm.DB) (any, error) {
			var out arItem
			err := db.Order("qty desc, id").Find(&out).Error
			return out, err
		}},
		{"Find single struct unordered", true, func(db *gorm.DB) (any, error) {
			var out arItem
			res := db.Where("qty = ?", 4).Find(&out)
			return []any{res.RowsAffected, out.Qty}, res.Error
		}},
		{"RowsAffected Find", true, func(db *gorm.DB) (any, error) {
			var out []arItem
			res := db.Order("id").Limit(7).Offset(2).Find(&out)
			return res.RowsAffected, res.Error
		}},
		{"RowsAffected Group", true, func(db *gorm.DB) (any, error) {
			var out []map[string]any
			res := db.Model(&arItem{}).Select("qty, count(*) AS n").Group("qty").Scan(&out)
			return res.RowsAffected, res.Error
		}},
		items(func(db *gorm.DB) *gorm.DB { return db.Order("ratio, id") }, true, "Order(ratio, id)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("ratio desc, id").Limit(6) }, true, "Order(ratio desc, id)"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("ratio, count(*) AS n").Group("ratio").Order("ratio") }, true, "Group(ratio)"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("min(ratio) AS a, max(ratio) AS b, count(distinct ratio) AS c")
		}, true, "min/max ratio"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("grp, min(ratio) AS a, max(ratio) AS b").Group("grp").Order("grp")
		}, true, "Group(grp) min/max ratio"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("count(distinct ratio) AS c") }, true, "count(distinct ratio)"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Distinct("ratio").Order("ratio") }, true, "Distinct(ratio)"),
		number(func(db *gorm.DB) *gorm.DB { return db.Distinct("ratio") }, "Distinct(ratio).Count"),
		{"Pluck ratio Order ratio", true, func(db *gorm.DB) (any, error) {
			var out []float64
			err := db.Model(&arItem{}).Order("ratio desc").Pluck("ratio", &out).Error
			return out, err
		}},
		{"Find into fewer fields unordered", false, func(db *gorm.DB) (any, error) {
			var out []arSmall
			err := db.Model(&arItem{}).Where("qty > ?", 0).Find(&out).Error
			return out, err
		}},
		{"FindInBatches Limit", true, func(db *gorm.DB) (any, error) { return batchIDs(db.Limit(7), 3) }},
		{"FindInBatches Order desc", true, func(db *gorm.DB) (any, error) { return batchIDs(db.Order("id desc"), 4) }},
		items(func(db *gorm.DB) *gorm.DB { return db.Order("id").Limit(5).Offset(1000) }, true, "Offset past the rows"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("id desc").Limit(1000).Offset(17) }, true, "Offset near the end"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Preload("Parts").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id AND ar_parts.n = ?", 2).Order("ar_items.id")
		}, true, "Preload and Joins"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Unscoped().Where("deleted_at IS NOT NULL").Order("id desc").Limit(2)
		}, true, "deleted only"),
		items(func(db *gorm.DB) *gorm.DB { return db.Where("id IN ?", []int64{1, 2}).Order("id") }, true, "IN unknown ids"),
		number(func(db *gorm.DB) *gorm.DB { return db.Select("id, name") }, "Select(id, name).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Select("name") }, "Select(name).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Distinct("ar_items.qty").Order("ar_items.qty") }, "Distinct(qualified).Count"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Distinct("ar_items.qty").Order("ar_items.qty") }, true, "Distinct(qualified) maps"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("ar_items.qty AS q, count(*) AS n").Group("ar_items.qty").Order("ar_items.qty desc")
		}, true, "Group qualified Order qualified"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Group("qty").Order("qty").Limit(2).Offset(30)
		}, true, "Group Offset past"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty, count(*) AS n").Where("qty > 100").Group("qty") }, true, "Group of no rows"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("count(*) AS n, max(qty) AS m").Where("qty > 100") }, true, "aggregate of no rows"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Group("qty").Having("count(*) >= ?", 2).Having("qty > ?", 0).Order("qty")
		}, true, "two Havings"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("score, sum(qty) AS s").Group("score").Order("score desc")
		}, true, "Group(score) desc NULLs"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty, max(score) AS m").Group("qty").Order("m desc, qty") }, true, "Order max NULLs desc"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty, min(at) AS m").Group("qty").Order("m, qty") }, true, "Order min(at) NULLs"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("big, id") }, true, "Order(big, id)"),
		items(func(db *gorm.DB) *gorm.DB { return db.Order("big desc, id").Limit(5) }, true, "Order(big desc, id)"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("big, count(*) AS n").Group("big").Order("big") }, true, "Group(big)"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("min(big) AS a, max(big) AS b, sum(big) AS c, avg(big) AS d, count(distinct big) AS e")
		}, true, "aggregates of big"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("grp, sum(big) AS s").Group("grp").Having("sum(big) > ?", uint64(1)<<63).Order("s")
		}, true, "Having sum(big)"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, max(big) AS s").Group("qty").Having("max(big) > ?", uint64(1)<<63).Order("qty")
		}, true, "Having max(big) uint64"),
		{"Pluck big Order big", true, func(db *gorm.DB) (any, error) {
			var out []uint64
			err := db.Model(&arItem{}).Order("big desc").Pluck("big", &out).Error
			return out, err
		}},
		{"Scan sum(big)", true, func(db *gorm.DB) (any, error) {
			var out string
			err := db.Model(&arItem{}).Select("sum(big)").Scan(&out).Error
			return out, err
		}},
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("count(distinct(qty)) AS n") }, true, "count(distinct(qty))"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("COUNT( * ) AS n, SUM( qty ) AS s") }, true, "spaced items"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("count(ar_items.score) n, max(ar_items.qty) m") }, true, "qualified aggregates"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("sum(qty)+0 AS s") }, true, "aggregate expression"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("score, count(*) AS qty").Group("score").Order("qty, score")
		}, true, "alias named as a column, ordered"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("score, count(*) AS qty").Group("score").Having("qty > ?", 1).Order("score")
		}, true, "alias named as a column, HAVING"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("score AS s, count(*) AS n").Group("score").Order("score desc")
		}, true, "aliased key ordered by column"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("score AS qty, count(*) AS n").Group("score").Order("qty")
		}, true, "key aliased as another column"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("score AS qty, count(*) AS n").Group("score").Having("qty > ?", 0).Order("n, qty")
		}, true, "key aliased as another column, HAVING"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty, count(*) AS n").Group("qty").Order("1") }, true, "Order by position"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Group("qty").Order("qty").Order("n desc")
		}, true, "two Orders"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty", "count(*) AS n").Group("qty").Order("qty") }, true, "Select list of strings"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, count(*) AS n").Group("qty").Group("score").Order("qty")
		}, true, "Group twice, score hidden"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty, avg(qty) AS a, sum(qty) AS s, count(qty) AS c").Group("qty").Order("qty")
		}, true, "avg beside its sum and count"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("avg(price) AS a, avg(ratio) AS r") }, true, "avg decimal and float"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("sum(ratio) AS r") }, true, "sum float"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("max(ratio) AS r, min(deleted_at) AS d") }, true, "max float, min deleted_at"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Unscoped().Select("max(deleted_at) AS d, count(deleted_at) AS n")
		}, true, "Unscoped max deleted_at"),
		items(func(db *gorm.DB) *gorm.DB { return db.Limit(3).Limit(-1).Order("id") }, true, "Limit cancelled"),
		items(func(db *gorm.DB) *gorm.DB { return db.Offset(5).Offset(-1).Order("id").Limit(4) }, true, "Offset cancelled"),
		items(func(db *gorm.DB) *gorm.DB { return db.Limit(0).Offset(2).Order("id") }, true, "Limit(0).Offset(2)"),
		number(func(db *gorm.DB) *gorm.DB { return db.Limit(0) }, "Limit(0).Count"),
		items(func(db *gorm.DB) *gorm.DB { return db.Preload("Parts").Order("qty desc, id").Limit(3) }, true, "Preload Order Limit"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.InnerJoins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Where("ar_parts.kind = ?", "b").Order("ar_items.qty, ar_items.id")
		}, true, "InnerJoins raw"),
		findMaps(func(db *gorm.DB) *gorm.DB {
			return db.Select("ar_items.id, ar_items.qty, ar_parts.n").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Order("ar_items.id, ar_parts.n")
		}, true, "maps with a joined column"),
		findMaps(func(db *gorm.DB) *gorm.DB {
			return db.Select("ar_items.id, ar_parts.id AS part").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Order("ar_items.id desc").Limit(4)
		}, false, "maps joined Limit, ties"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Scopes(func(d *gorm.DB) *gorm.DB { return d.Offset(4).Limit(4) }).Order("price, id")
		}, true, "Scopes page Order(price)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Where("qty IN ?", []int{1, 4, 7}).Or("score IS NULL").Order("qty desc, id")
		}, true, "Or"),
		items(func(db *gorm.DB) *gorm.DB { return db.Not("qty", []int{1, 4}).Order("id").Limit(5).Offset(5) }, true, "Not"),
		row("count(*), sum(qty), avg(qty), max(price), min(at), sum(price), max(score), min(ratio), max(big)", 9, func(db *gorm.DB) *gorm.DB { return db.Where("qty > ?", -100) }),
		row("count(distinct qty)", 1, func(db *gorm.DB) *gorm.DB { return db.Where("qty > ?", -100) }),
		row("count(*), sum(qty), avg(qty), max(price), min(at), max(score), min(ratio), max(big)", 8, func(db *gorm.DB) *gorm.DB { return db.Where("qty > -100") }),
		row("count(*), sum(qty), avg(qty), max(price), min(at), max(score), max(big)", 7, func(db *gorm.DB) *gorm.DB { return db.Where("qty > ?", -100) }),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Where("qty > ?", -100).Select("qty, count(*) AS n, sum(price) AS s, avg(score) AS a, max(at) AS m, min(big) AS b").Group("qty").Order("qty")
		}, true, "Group with an argument (binary protocol)"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Where("qty > ?", -100).Select("qty, count(*) AS n, avg(score) AS a, max(at) AS m, min(big) AS b").Group("qty").Order("qty")
		}, true, "Group with an argument, no decimal"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Where("qty > ?", -100).Distinct("qty", "score").Order("qty, score")
		}, true, "Distinct with an argument"),
		findMaps(func(db *gorm.DB) *gorm.DB {
			return db.Where("qty > ?", -100).Select("qty, count(*) AS n, sum(price) AS s").Group("qty").Order("qty")
		}, true, "Find maps Group with an argument"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("QTY, count(*) AS n").Group("qty").Order("qty") }, true, "raw column in upper case"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("Qty, max(Score) AS m").Group("Qty").Order("Qty") }, true, "raw field name"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty", "count(*) AS n").Group("qty").Order("qty") }, true, "Select of a column and an item"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("Qty", "count(*) AS n").Group("qty").Order("qty") }, true, "Select of a field and an item"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("max(Qty), MIN(qty), count(*)") }, true, "unaliased aggregates"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("max(Qty)") }, true, "one unaliased aggregate"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("avg(Qty)") }, true, "unaliased avg"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("count(distinct Qty)") }, true, "unaliased count distinct"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Distinct("QTY").Order("qty") }, true, "Distinct raw upper case"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "qty", Alias: "q"}, {Name: "count(*)", Raw: true, Alias: "n"}}}).Group("qty").Order("qty")
		}, true, "clause.Select with aliases"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Table: clause.CurrentTable, Name: "qty"}, {Name: "max(score)", Raw: true}}}).Group("qty").Order("qty")
		}, true, "clause.Select of the current table"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("COUNT( * ), SUM( qty ),max(qty)") }, true, "unaliased spaced items"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty,\n\tcount(*)").Group("qty").Order("qty") }, true, "items after a newline"),
		maps(func(db *gorm.DB) *gorm.DB {
			return db.Select("qty", "count(*)", "sum(score)").Group("qty").Order("qty")
		}, true, "items as strings, unaliased"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("`qty`, count(*)").Group("qty").Order("qty") }, true, "backquoted (MySQL) item"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("ar_items.qty, count(*)").Group("qty").Order("qty") }, true, "qualified item unaliased"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty AS \"Q\", count(*) AS N").Group("qty").Order("qty") }, true, "aliases in upper case"),
		findMaps(func(db *gorm.DB) *gorm.DB { return db.Select("QTY, count(*) AS n").Group("qty").Order("qty") }, true, "Find maps raw upper case"),
		{"Find struct raw upper case", true, func(db *gorm.DB) (any, error) {
			var out []struct {
				Qty int
				N   int
			}
			err := db.Model(&arItem{}).Select("QTY, count(*) AS N").Group("qty").Order("qty").Find(&out).Error
			return out, err
		}},
		findMaps(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "qty", Alias: "score"}, {Name: "score", Alias: "qty"}}}).Order("qty, id")
		}, true, "clause.Select aliases swap ordered columns (maps)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "qty", Alias: "score"}, {Name: "score", Alias: "qty"}}}).Order("qty desc, id")
		}, true, "clause.Select aliases swap ordered columns"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "qty", Alias: "qty2"}}}).Order("qty desc, id")
		}, true, "clause.Select alias hides the ordered column"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "ratio", Alias: "qty"}, {Name: "qty", Alias: "n"}}}).Order("qty, id")
		}, true, "clause.Select alias names the ordered column"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "qty"}}, Distinct: true}).Order("qty, id")
		}, true, "clause.Select Distinct with the key"),
		findMaps(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "qty"}}, Distinct: true}).Order("qty")
		}, true, "clause.Select Distinct without the key"),
		findMaps(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Expression: clause.Expr{SQL: "id, qty AS score"}}).Order("score, id")
		}, true, "clause.Select expression"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "qty", Alias: "qty2"}}}).Order("qty desc, id").Limit(1)
		}, true, "clause.Select alias hides the ordered column, Limit(1)"),
		findMaps(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "qty", Alias: "qty2"}}}).Order("qty desc, id").Limit(2)
		}, true, "clause.Select alias hides the ordered column, maps Limit(2)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Select("id, qty AS qty2").Order("qty desc, id").Limit(1)
		}, true, "Select alias hides the ordered column, Limit(1)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "qty", Alias: "x"}}}).Order("qty, id desc").Limit(1)
		}, true, "clause.Select alias hides qty, Order(qty, id desc).Limit(1)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "qty", Alias: "x"}}}).Order("qty, id desc").Limit(2)
		}, true, "clause.Select alias hides qty, Order(qty, id desc).Limit(2)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "qty", Alias: "x"}}}).Order("qty desc, id desc").Limit(1)
		}, true, "clause.Select alias hides qty, Order(qty desc, id desc).Limit(1)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "qty", Alias: "x"}}}).Order("qty desc, id desc").Limit(2)
		}, true, "clause.Select alias hides qty, Order(qty desc, id desc).Limit(2)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "score", Alias: "x"}}}).Order("score desc, id").Limit(1)
		}, true, "clause.Select alias hides score, Order(score desc, id).Limit(1)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "score", Alias: "x"}}}).Order("score desc, id").Limit(2)
		}, true, "clause.Select alias hides score, Order(score desc, id).Limit(2)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "score", Alias: "x"}}}).Order("score, id desc").Limit(1)
		}, true, "clause.Select alias hides score, Order(score, id desc).Limit(1)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "score", Alias: "x"}}}).Order("score, id desc").Limit(2)
		}, true, "clause.Select alias hides score, Order(score, id desc).Limit(2)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "at", Alias: "x"}}}).Order("at desc, id").Limit(1)
		}, true, "clause.Select alias hides at, Order(at desc, id).Limit(1)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "at", Alias: "x"}}}).Order("at desc, id").Limit(2)
		}, true, "clause.Select alias hides at, Order(at desc, id).Limit(2)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "big", Alias: "x"}}}).Order("big, id desc").Limit(1)
		}, true, "clause.Select alias hides big, Order(big, id desc).Limit(1)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.Select{Columns: []clause.Column{{Name: "id"}, {Name: "big", Alias: "x"}}}).Order("big, id desc").Limit(2)
		}, true, "clause.Select alias hides big, Order(big, id desc).Limit(2)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Select("*").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Order("ar_items.id desc").Limit(3)
		}, true, "Select(*) Joins: two id columns"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Select("ar_items.*, ar_parts.*").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Order("ar_items.qty desc, ar_items.id").Limit(3)
		}, false, "Select(both tables) Joins ordered by qty"), // the rows of an item tie
		items(func(db *gorm.DB) *gorm.DB {
			return db.Select("ar_items.id, ar_parts.n AS qty").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Order("ar_items.qty desc, ar_items.id").Limit(3)
		}, true, "joined column aliased as the ordered one"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Select("ar_items.*, ar_parts.n AS qty").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Order("qty desc, ar_items.id").Limit(3)
		}, true, "joined column aliased as a column of the model"),
		maps(func(db *gorm.DB) *gorm.DB { return db.Select("qty").Group("qty").Order("max(score) desc, qty") }, true, "Order by a hidden aggregate"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Order("id desc").Limit(3)
		}, true, "Joins Order(id) unqualified"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Select("*").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Order("ar_items.id").Limit(1)
		}, true, "Select(*) Joins: two id columns, Limit(1)"),
		items(func(db *gorm.DB) *gorm.DB {
			return db.Select("ar_items.*, ar_parts.*").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Order("ar_items.id").Limit(1)
		}, true, "Select(both tables) Joins: two id columns, Limit(1)"),
		findMaps(func(db *gorm.DB) *gorm.DB {
			return db.Select("*").Joins("JOIN ar_parts ON ar_parts.item_id = ar_items.id").Order("ar_items.id").Limit(1)
		}, true, "maps Select(*) Joins: two id columns, Limit(1)"),
		number(id, "Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Group("grp") }, "Group(grp).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Group("name") }, "Group(name).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Distinct("name") }, "Distinct(name).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Distinct("grp", "qty") }, "Distinct(grp, qty).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Distinct("score") }, "Distinct(score).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Unscoped() }, "Unscoped Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Select("score") }, "Select(score).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Limit(3) }, "Limit(3).Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Order("name") }, "Order.Count"),
		number(func(db *gorm.DB) *gorm.DB { return db.Group("grp").Having("count(*) > ?", 3) }, "Group Having Count"),
		pluck("name", func(db *gorm.DB) *gorm.DB { return db.Order("name") }, false, "Pluck name Order name"),
		pluck("qty * 2", func(db *gorm.DB) *gorm.DB { return db.Order("id") }, true, "Pluck expression"),
		pluck("upper(name)", func(db *gorm.DB) *gorm.DB { return db }, false, "Pluck upper"),
		pluck("DISTINCT grp", func(db *gorm.DB) *gorm.DB { return db }, false, "Pluck DISTINCT grp"),
		pluck("price", func(db *gorm.DB) *gorm.DB { return db.Order("id") }, true, "Pluck price Order id"),
		pluck("at", func(db *gorm.DB) *gorm.DB { return db.Order("id") }, true, "Pluck at"),
		pluck("ar_items.id", func(db *gorm.DB) *gorm.DB { return db.Order("ar_items.id desc") }, true, "Pluck qualified id"),
		row("count(*), sum(qty), max(name), min(at)", 4, id),
		row("avg(score)", 1, id),
		row("sum(price)", 1, id),
		row("max(price)", 1, id),
		row("count(distinct qty)", 1, id),
		row("count(distinct grp)", 1, id),
		{"Scan sum into int", true, func(db *gorm.DB) (any, error) {
			var n int64
			err := db.Model(&arItem{}).Select("sum(qty)").Scan(&n).Error
			return n, err
		}},
		{"Scan avg into float", true, func(db *gorm.DB) (any, error) {
			var n float64
			err := db.Model(&arItem{}).Select("avg(qty)").Scan(&n).Error
			return n, err
		}},
		{"Scan max(at) into time", true, func(db *gorm.DB) (any, error) {
			var n sql.NullTime
			err := db.Model(&arItem{}).Select("max(at)").Scan(&n).Error
			return n, err
		}},
		{"Find into fewer fields", true, func(db *gorm.DB) (any, error) {
			var out []arSmall
			err := db.Model(&arItem{}).Order("name, id").Find(&out).Error
			return out, err
		}},
		{"Scan into fewer fields", true, func(db *gorm.DB) (any, error) {
			var out []arSmall
			err := db.Model(&arItem{}).Order("name, id").Scan(&out).Error
			return out, err
		}},
		{"Find into more fields", true, func(db *gorm.DB) (any, error) {
			var out []arMore
			err := db.Model(&arItem{}).Order("id").Find(&out).Error
			return out, err
		}},
		{"Table Find into fewer fields", true, func(db *gorm.DB) (any, error) {
			var out []arSmall
			err := db.Order("id desc").Find(&out).Error
			return out, err
		}},
		{"Rows", true, func(db *gorm.DB) (any, error) {
			rows, err := db.Model(&arItem{}).Order("id").Rows()
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var out []arItem
			for rows.Next() {
				var it arItem
				if err := db.ScanRows(rows, &it); err != nil {
					return nil, err
				}
				out = append(out, it)
			}
			return out, rows.Err()
		}},
		{"FindInBatches", true, func(db *gorm.DB) (any, error) { return batchIDs(db.Model(&arItem{}), 5) }},
		{"FindInBatches Where", true, func(db *gorm.DB) (any, error) { return batchIDs(db.Where("qty > ?", 0), 3) }},
		{"First", true, func(db *gorm.DB) (any, error) {
			var it arItem
			err := db.First(&it).Error
			return it, err
		}},
		{"Last", true, func(db *gorm.DB) (any, error) {
			var it arItem
			err := db.Last(&it).Error
			return it, err
		}},
		{"Unscoped Last", true, func(db *gorm.DB) (any, error) {
			var it arItem
			err := db.Unscoped().Last(&it).Error
			return it, err
		}},
		{"Order(name).First", true, func(db *gorm.DB) (any, error) {
			var it arItem
			err := db.Order("name desc").First(&it).Error
			return it, err
		}},
		{"Where.Last", true, func(db *gorm.DB) (any, error) {
			var it arItem
			err := db.Where("qty < ?", 0).Last(&it).Error
			return it, err
		}},
		{"Take count", true, func(db *gorm.DB) (any, error) {
			var it arItem
			err := db.Where("qty = ?", 4).Take(&it).Error
			return it.Qty, err
		}},
		{"First into map", true, func(db *gorm.DB) (any, error) {
			out := map[string]any{}
			err := db.Model(&arItem{}).Order("id").First(&out).Error
			return out, err
		}},
		{"Find uint64 ids", true, func(db *gorm.DB) (any, error) {
			var out []uint64
			err := db.Model(&arItem{}).Order("id").Pluck("id", &out).Error
			return out, err
		}},
	}
	return forms
}

// TestAllShardsReadsMatchOneDatabaseWithColumnCollations: the same, where
// the text columns compare by collations of their own: case-insensitive,
// PAD SPACE or NO PAD binary, ICU, NOCASE and RTRIM.
func TestAllShardsReadsMatchOneDatabaseWithColumnCollations(t *testing.T) {
	alter := map[string][]string{
		"sqlite": {"nocase", "rtrim"},
		"mariadb": {"ALTER TABLE ar_items MODIFY name varchar(20) COLLATE utf8mb4_bin, MODIFY grp varchar(10) COLLATE utf8mb4_nopad_bin",
			"ALTER TABLE ar_items MODIFY name varchar(20) COLLATE utf8mb4_nopad_bin, MODIFY grp varchar(10) COLLATE latin1_general_cs"},
		"postgres": {`ALTER TABLE ar_items ALTER COLUMN name TYPE varchar(20) COLLATE "und-x-icu", ALTER COLUMN grp TYPE varchar(10) COLLATE "C"`,
			`ALTER TABLE ar_items ALTER COLUMN name TYPE char(20), ALTER COLUMN grp TYPE varchar(10) COLLATE "en-US-u-va-posix-x-icu"`},
	}
	forEachBackend(t, func(t *testing.T, b backend) {
		for i, ddl := range alter[b.name] {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				r := newARRig(t, b, func(db *gorm.DB) error {
					if b.name != "sqlite" {
						return db.Exec(ddl).Error
					}
					var create string
					if err := db.Raw("SELECT sql FROM sqlite_master WHERE name = 'ar_items'").Row().Scan(&create); err != nil {
						return err
					}
					create = strings.Replace(create, "`name` text", "`name` text COLLATE "+ddl, 1)
					create = strings.Replace(create, "`grp` text", "`grp` text COLLATE "+ddl, 1)
					if err := db.Exec("DROP TABLE ar_items").Error; err != nil {
						return err
					}
					return db.Exec(create).Error
				})
				r.canon.padded = true
				r.checkForms(t, arForms())
			})
		}
	})
}

// TestAllShardsReadsInATransactionMatchOneDatabase: inside a transaction
// across shards that wrote rows on several databases, reads over every
// database see its writes as one database's transaction does.
func TestAllShardsReadsInATransactionMatchOneDatabase(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newARRig(t, b, nil)
		errRollback := errors.New("rollback")
		var added []arItem
		err := r.sh.Clauses(shardid.AcrossShards()).Transaction(func(shTx *gorm.DB) error {
			return r.ref.Transaction(func(refTx *gorm.DB) error {
				for i := range 6 {
					it := arItem{Name: fmt.Sprint("t", i), Grp: "x", Qty: 100 + i%3, Price: "1.25"}
					if err := shTx.Create(&it).Error; err != nil {
						return err
					}
					if err := refTx.Create(&it).Error; err != nil {
						return err
					}
					added = append(added, it)
				}
				gone := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) // a soft delete both sides stamp alike
				if err := shTx.Clauses(shardid.AllShards()).Model(&arItem{}).Where("qty = ?", 4).Update("deleted_at", gone).Error; err != nil {
					return err
				}
				if err := refTx.Model(&arItem{}).Where("qty = ?", 4).Update("deleted_at", gone).Error; err != nil {
					return err
				}
				tx := &arRig{sh: shTx, ref: refTx, inTx: true, canon: r.canon}
				tx.checkForms(t, arForms())
				return errRollback
			})
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("transaction: %v", err)
		}
		t.Logf("placed on %d rows", len(added))
		r.checkForms(t, arForms())
	})
}

// batchIDs runs q in FindInBatches of size rows, and returns each batch's IDs.
func batchIDs(q *gorm.DB, size int) (any, error) {
	var all [][]int64
	var batch []arItem
	err := q.FindInBatches(&batch, size, func(*gorm.DB, int) error {
		var ids []int64
		for _, b := range batch {
			ids = append(ids, b.ID)
		}
		all = append(all, ids)
		return nil
	}).Error
	return all, err
}

// joinedOwner and joinedKid share column names of other types and
// collations: the owner's n is text, the kid's a number. Nick and Rank are
// the owner's only.
type joinedOwner struct {
	ID    int64  `shardid:""`
	N     string `gorm:"size:8;not null"`
	Label string `gorm:"size:16;not null"`
	Nick  string `gorm:"size:16;not null"`
	Rank  int64
}

type joinedKid struct {
	ID      int64 `shardid:"colocate:OwnerID"`
	OwnerID int64
	N       int64
	Label   string `gorm:"size:16;not null"` // byte-ordered on every dialect (binaryCollation)
}

// joinRows is the join of joinedKid with its owner.
const joinRows = "JOIN joined_owners ON joined_owners.id = joined_kids.owner_id"

// newJoinedTwin holds an owner and its kid on each of the four databases,
// so that every part of a LIMIT 1 keeps its one row, and the same rows on
// one database.
func newJoinedTwin(t *testing.T, b backend) *twin {
	t.Helper()
	r := newRouting(t, b)
	fresh(t, r.db, &joinedOwner{}, &joinedKid{})
	one, err := gorm.Open(b.dialector(t, t.TempDir()), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := one.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	must(t, one.Migrator().DropTable(&joinedOwner{}, &joinedKid{}))
	must(t, one.AutoMigrate(&joinedOwner{}, &joinedKid{}))
	for _, db := range append(slices.Clone(r.direct), one) {
		binaryCollation(t, b, db, "joined_kids", "label")
	}
	shardCount := r.plugin.Layout().ShardCount()
	ownerN, labels, nicks := []string{"9", "10", "200", "3"}, []string{"b", "A", "a", "B"}, []string{"x", "X", "x", "y"}
	for i := range physicalShards {
		o := joinedOwner{N: ownerN[i], Label: labels[i], Nick: nicks[i], Rank: int64(i % 2)}
		must(t, r.db.Clauses(shardid.OnShard(i*shardCount/physicalShards)).Create(&o).Error)
		must(t, one.Create(&o).Error)
		k := joinedKid{OwnerID: o.ID, N: int64(i), Label: labels[len(labels)-1-i]}
		must(t, r.db.Create(&k).Error)
		must(t, one.Create(&k).Error)
	}
	return &twin{sharded: r.db.Clauses(shardid.AllShards()).Session(&gorm.Session{}), one: one, model: &joinedKid{}}
}

// TestAllShardsOrderedReadsRefuseAJoinedColumnOfTheOrderedName: rows
// ordered by a column of the model, whose select list reads a joined
// table's column of that name (joined_owners.n, maybe aliased so), carry
// that column's value under the name, of its own type and collation: the
// database orders by the table's column, or by the joined one as text, and
// a merge reading the value as the model's column would keep other rows.
// Such reads over several databases are refused; the model's own columns
// beside a joined one of another name merge as one database orders them.
func TestAllShardsOrderedReadsRefuseAJoinedColumnOfTheOrderedName(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newJoinedTwin(t, b)
		kids := func() any { return &[]joinedKid{} }
		tw.refused(t, "ordered by the table's n, the owner's n selected", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("joined_kids.id, joined_owners.n").Joins(joinRows).Order("joined_kids.n").Limit(2).Find(into)
		}, kids)
		tw.refused(t, "ordered by the table's n, the owner's n selected as n, into maps", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("joined_kids.id, joined_owners.n AS n").Joins(joinRows).Order("joined_kids.n desc").Limit(2).Find(into)
		}, rowMaps)
		tw.refused(t, "ordered by n, the owner's n selected", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("joined_kids.id, joined_owners.n").Joins(joinRows).Order("n").Limit(2).Find(into)
		}, kids)
		tw.refused(t, "ordered by label, the owner's label selected", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("joined_kids.id", "joined_owners.label").Joins(joinRows).Order("label, id").Limit(2).Find(into)
		}, rowMaps)
		tw.refused(t, "the owner's label plucked, ordered by label", func(db *gorm.DB, into any) *gorm.DB {
			return db.Joins(joinRows).Order("label").Limit(2).Pluck("joined_owners.label", into)
		}, strs)
		tw.same(t, "the kid's columns beside the owner's of another name", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("joined_kids.id, joined_kids.n, joined_kids.label, joined_owners.n AS owner_n").Joins(joinRows).Order("joined_kids.label desc, joined_kids.n").Limit(3).Find(into)
		}, rowMaps)
		tw.same(t, "the kid's columns, the owner's key beside them", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("joined_kids.n, joined_owners.id").Joins(joinRows).Order("joined_kids.n desc").Limit(3).Find(into)
		}, rowMaps)
	})
}

// TestAllShardsDistinctTextOfAJoinedTableIsRefused: DISTINCT values of a
// joined table's text column named bare (Distinct("nick")), whose collation
// the plugin cannot read from the query's table, are refused with
// ErrCrossShard on every dialect, as SQLite's were, not failed reading that
// collation; a joined table's numbers merge by value as one database's.
func TestAllShardsDistinctTextOfAJoinedTableIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newJoinedTwin(t, b)
		tw.refused(t, "Distinct of the owner's nick", func(db *gorm.DB, into any) *gorm.DB {
			return db.Joins(joinRows).Distinct("nick").Find(into)
		}, rowMaps)
		tw.refused(t, "Distinct Pluck of the owner's nick", func(db *gorm.DB, into any) *gorm.DB {
			return db.Joins(joinRows).Distinct().Order("nick").Pluck("nick", into)
		}, strs)
		tw.same(t, "Distinct of the owner's rank", func(db *gorm.DB, into any) *gorm.DB {
			return db.Joins(joinRows).Distinct("rank").Order("rank desc").Find(into)
		}, rowMaps)
	})
}

// casedRow has a nullable score read into an int64, which reads NULL as 0.
type casedRow struct {
	ID    int64 `shardid:""`
	Score int64
}

// TestAllShardsOrderedReadsFindColumnsNamedInAnotherCase: MySQL, MariaDB
// and SQLite return a column under the name the select list gives it
// (Select("id, SCORE") returns score as SCORE, ID as ID), which GORM scans
// into the field and into maps by that name. Ordered over several databases,
// the merge finds the ordered column and the key so named: a NULL score
// read into an int64 orders where the database puts NULLs (first
// ascending there), not as 0, and maps keyed ID merge by the key, as one
// database answers.
func TestAllShardsOrderedReadsFindColumnsNamedInAnotherCase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		var rows []casedRow
		for i := range 8 {
			rows = append(rows, casedRow{Score: int64(i - 5)})
		}
		tw := newTwin(t, b, &casedRow{}, nil, rows, []int{0, 1, 2, 3})
		for _, db := range []*gorm.DB{tw.sharded, tw.one} { // one NULL, on the third database, whose first row it is
			must(t, db.Model(&casedRow{}).Where("score = ?", 1).Update("score", nil).Error)
		}
		structs := func() any { return &[]casedRow{} }
		tw.same(t, "Select(id, SCORE) ordered by score, the first row", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("id, SCORE").Order("score").Limit(1).Find(into)
		}, structs)
		tw.same(t, "Select(id, SCORE) ordered by score desc", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("id, SCORE").Order("score desc").Limit(3).Offset(5).Find(into)
		}, structs)
		tw.same(t, "Select(ID, score) into maps ordered by ID", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("ID, score").Order("ID desc").Limit(3).Find(into)
		}, rowMaps)
		tw.same(t, "Select(Id, SCORE) into maps ordered by score, key to break ties", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("Id, SCORE").Order("score").Limit(2).Find(into)
		}, rowMaps)
	})
}

// scattered is sharded by its ID, on databases holding scattered shards.
type scattered struct {
	ID   int64  `shardid:""`
	Name string `gorm:"size:20"`
}

// TestAllShardsOverDatabasesHoldingScatteredShards: two databases holding
// every other logical shard (4,096 ranges each) count, read, update and
// delete over every shard, each part keeping to its database's shards: a
// row of another database's shard written on one is not read.
func TestAllShardsOverDatabasesHoldingScatteredShards(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		var even, odd []shardid.Range
		for s := 0; s < (shardid.Layout{}).ShardCount(); s += 2 {
			even = append(even, shardid.Range{From: s, To: s})
			odd = append(odd, shardid.Range{From: s + 1, To: s + 1})
		}
		db := open(t, b, dir, shardid.Config{Shards: []shardid.Shard{
			{Name: b.name + "-even", Dialector: b.physical(t, dir, 0), Logical: even},
			{Name: b.name + "-odd", Dialector: b.physical(t, dir, 1), Logical: odd},
		}})
		p := db.Config.Plugins[(&shardid.Plugin{}).Name()].(*shardid.Plugin)
		direct := direct(t, b, dir)
		for _, d := range direct[:2] {
			must(t, d.Migrator().DropTable(&scattered{}))
		}
		must(t, p.AutoMigrate(db, &scattered{}))
		rows := make([]scattered, 200)
		must(t, db.Create(&rows).Error)
		stray := p.Layout().Compose(time.Now(), 1, 7) // an odd shard's, written on the even database
		must(t, direct[0].Create(&scattered{ID: stray, Name: "stray"}).Error)
		all := db.Clauses(shardid.AllShards()).Session(&gorm.Session{})
		var n int64
		if err := all.Model(&scattered{}).Count(&n).Error; err != nil || n != 200 {
			t.Fatalf("AllShards Count: %d, %v", n, err)
		}
		var read []scattered
		if err := all.Order("id").Limit(10).Offset(150).Find(&read).Error; err != nil || len(read) != 10 {
			t.Fatalf("AllShards Find: %d rows, %v", len(read), err)
		}
		if res := all.Model(&scattered{}).Where("name = ?", "").Update("name", "x"); res.Error != nil || res.RowsAffected != 200 {
			t.Fatalf("AllShards Update: %d rows, %v", res.RowsAffected, res.Error)
		}
		if res := all.Where("name <> ?", "").Delete(&scattered{}); res.Error != nil || res.RowsAffected != 200 {
			t.Fatalf("AllShards Delete: %d rows, %v", res.RowsAffected, res.Error)
		}
		var left []scattered
		must(t, direct[0].Find(&left).Error)
		if len(left) != 1 || left[0].ID != stray {
			t.Fatalf("the even database holds %v, want only the stray row", left)
		}
	})
}
