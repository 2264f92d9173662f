package integration

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// formItem is the model of the GORM forms compared over every shard with
// one database: a group, a nullable score, byte-ordered text, a time and a
// soft delete.
type formItem struct {
	ID        int64  `shardid:""`
	Grp       int64  `gorm:"not null"`
	Score     *int64 // NULL in some rows
	Name      string `gorm:"size:16;not null"` // byte-ordered on every dialect (binaryCollation)
	At        time.Time
	DeletedAt gorm.DeletedAt
}

func newFormTwin(t *testing.T, b backend) *twin {
	t.Helper()
	base := time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
	var rows []formItem
	for i := range 14 {
		r := formItem{Grp: int64(i % 4), Name: []string{"b", "a", "B", "c", "a "}[i%5], At: base.Add(time.Duration(i%6) * time.Minute)}
		if i%3 > 0 {
			s := int64(i%5 - 2)
			r.Score = &s
		}
		if i%7 == 6 { // soft-deleted, at times of their own
			r.DeletedAt = gorm.DeletedAt{Time: base.Add(time.Duration(i) * time.Hour), Valid: true}
		}
		rows = append(rows, r)
	}
	return newTwin(t, b, &formItem{}, func(db *gorm.DB) { binaryCollation(t, b, db, "form_items", "name") }, rows, []int{0, 1, 2, 3, 2, 1, 0})
}

// check runs query on one database and over every shard: both must give
// the same error kind, values and RowsAffected, or the plugin refuse it
// with a named error.
func check(t *testing.T, tw *twin, name string, query func(db *gorm.DB, into any) *gorm.DB, into func() any) {
	t.Helper()
	want, got := into(), into()
	g := query(tw.sharded.Session(&gorm.Session{}), got)
	if errors.Is(g.Error, shardid.ErrCrossShard) || errors.Is(g.Error, shardid.ErrNoShard) || errors.Is(g.Error, shardid.ErrNotAtomic) {
		t.Logf("%s: refused: %v", name, g.Error)
		return
	}
	w := query(tw.one.Session(&gorm.Session{}), want)
	switch {
	case (w.Error == nil) != (g.Error == nil) || w.Error != nil && !errors.Is(g.Error, w.Error) && !strings.Contains(g.Error.Error(), w.Error.Error()):
		t.Errorf("%s: one database: %v; every shard: %v", name, w.Error, g.Error)
	case w.Error == nil && (!reflect.DeepEqual(want, got) || w.RowsAffected != g.RowsAffected): // what GORM filled in before an error is no answer
		t.Errorf("%s:\none database: %s (%d rows)\nevery shard:  %s (%d rows)", name, show(want), w.RowsAffected, show(got), g.RowsAffected)
	}
}

func items() any { return &[]formItem{} }
func item() any  { return &formItem{} }

// TestGORMFormsOverEveryShardAnswerAsOneDatabase: a table of GORM reads
// (First, Last, Take, Order, Limit, Offset, Distinct, Group, Having, Count
// in its shapes, Pluck, Scan, Rows, FindInBatches, FirstOrInit, aggregates
// of no rows and of NULLs, times, padded text) run with AllShards over four
// databases and on one database without the plugin give the same values,
// RowsAffected and error, or are refused with a named error.
func TestGORMFormsOverEveryShardAnswerAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newFormTwin(t, b)
		m := func(db *gorm.DB) *gorm.DB { return db.Model(&formItem{}) }
		c := func(name string, q func(db *gorm.DB, into any) *gorm.DB, into func() any) {
			check(t, tw, name, q, into)
		}
		c("First", func(db *gorm.DB, into any) *gorm.DB { return db.First(into) }, item)
		c("Last", func(db *gorm.DB, into any) *gorm.DB { return db.Last(into) }, item)
		c("First where none", func(db *gorm.DB, into any) *gorm.DB { return db.Where("grp = ?", 99).First(into) }, item)
		c("Take where none", func(db *gorm.DB, into any) *gorm.DB { return db.Where("grp = ?", 99).Take(into) }, item)
		c("First ordered by score", func(db *gorm.DB, into any) *gorm.DB { return db.Order("score desc").First(into) }, item)
		c("Last ordered by grp", func(db *gorm.DB, into any) *gorm.DB { return db.Order("grp").Last(into) }, item)
		c("Order(id).Offset(5)", func(db *gorm.DB, into any) *gorm.DB { return db.Order("id").Offset(5).Find(into) }, items)
		c("Order(id).Limit(0)", func(db *gorm.DB, into any) *gorm.DB { return db.Order("id").Limit(0).Find(into) }, items)
		c("Limit(0)", func(db *gorm.DB, into any) *gorm.DB { return db.Limit(0).Find(into) }, items)
		c("Order(id desc).Limit(3).Offset(20)", func(db *gorm.DB, into any) *gorm.DB { return db.Order("id desc").Limit(3).Offset(20).Find(into) }, items)
		c("Order(score, id)", func(db *gorm.DB, into any) *gorm.DB { return db.Order("score, id").Find(into) }, items)
		c("Order(score desc, name, id)", func(db *gorm.DB, into any) *gorm.DB { return db.Order("score desc, name, id").Find(into) }, items)
		c("Order(at desc, id).Limit(4)", func(db *gorm.DB, into any) *gorm.DB { return db.Order("at desc, id").Limit(4).Find(into) }, items)
		c("Order(name, id) padded", func(db *gorm.DB, into any) *gorm.DB { return db.Order("name, id").Find(into) }, items)
		c("Distinct(grp)", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("grp").Order("grp").Pluck("grp", into) }, func() any { return &[]int64{} })
		c("Distinct(name)", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("name").Order("name").Find(into) }, strs)
		c("Distinct(score) nulls", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("score").Order("score desc").Find(into) }, func() any { return &[]*int64{} })
		c("Group.Having", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) AS n, sum(score) AS s").Group("grp").Having("count(*) > ?", 3).Order("grp").Find(into)
		}, rowMaps)
		c("Group.Having none", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) AS n").Group("grp").Having("count(*) > ?", 30).Find(into)
		}, rowMaps)
		c("Group by score", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("score, count(*) AS n, max(name) AS hi").Group("score").Find(into)
		}, rowMaps)
		c("Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Count(into.(*int64)) }, number)
		c("Count where", func(db *gorm.DB, into any) *gorm.DB { return m(db).Where("score > ?", 0).Count(into.(*int64)) }, number)
		c("Select(score).Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("score").Count(into.(*int64)) }, number)
		c("Distinct(score).Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("score").Count(into.(*int64)) }, number)
		c("Group(grp).Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Group("grp").Count(into.(*int64)) }, number)
		c("Order(id).Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("id").Count(into.(*int64)) }, number)
		c("Unscoped.Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Unscoped().Count(into.(*int64)) }, number)
		c("Pluck(name) ordered", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("name, id").Pluck("name", into) }, strs)
		c("Pluck(id) desc limit", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("id desc").Limit(3).Pluck("id", into) }, func() any { return &[]int64{} })
		c("Scan into []int64", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("id").Order("id").Scan(into) }, func() any { return &[]int64{} })
		c("Scan into a struct", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("count(*) AS n, max(at) AS last").Scan(into)
		}, func() any {
			return &struct {
				N    int64
				Last time.Time
			}{}
		})
		c("aggregates of nothing into a map", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("count(*) AS n, sum(score) AS s, min(score) AS lo, max(name) AS hi, avg(score) AS mean").Where("grp = ?", 99).Find(into)
		}, rowMaps)
		c("aggregates of nothing into a struct", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("count(*) AS n, sum(score) AS s, min(score) AS lo").Where("grp = ?", 99).Scan(into)
		}, func() any {
			return &struct {
				N     int64
				S, Lo *int64
			}{}
		})
		c("sum of nothing into an int64", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("sum(score)").Where("grp = ?", 99).Scan(into)
		}, number)
		c("sum of nothing into NullInt64", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("sum(score)").Where("grp = ?", 99).Scan(into)
		}, func() any { return &sql.NullInt64{} })
		c("max of NULLs", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("max(score) AS hi, count(score) AS n").Where("score IS NULL").Find(into)
		}, rowMaps)
		c("Group of nothing", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) AS n").Where("grp = ?", 99).Group("grp").Find(into)
		}, rowMaps)
		c("Group of nothing, Count", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Where("grp = ?", 99).Group("grp").Count(into.(*int64))
		}, number)
		c("avg per group", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, avg(score) AS mean, min(at) AS first").Group("grp").Order("grp desc").Find(into)
		}, rowMaps)
		c("FindInBatches", func(db *gorm.DB, into any) *gorm.DB {
			var batch []formItem
			all := into.(*[]formItem)
			return db.Where("grp < ?", 3).FindInBatches(&batch, 4, func(tx *gorm.DB, _ int) error {
				*all = append(*all, batch...)
				return nil
			})
		}, items)
		c("FirstOrInit found with Assign", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where("grp = ? AND name = ?", 1, "a").Assign(formItem{Grp: 7}).FirstOrInit(into)
		}, item)
		c("FirstOrInit none with Attrs", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where(formItem{Grp: 42}).Attrs(formItem{Name: "new"}).FirstOrInit(into)
		}, item)
		c("Group.Having.Count", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Group("grp").Having("count(*) > ?", 3).Count(into.(*int64))
		}, number)
		c("Group.Order.Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Group("grp").Order("grp").Count(into.(*int64)) }, number)
		c("Distinct(grp, name).Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("grp", "name").Count(into.(*int64)) }, number)
		c("Select(grp, name).Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("grp", "name").Count(into.(*int64)) }, number)
		c("Select(count(distinct name)).Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("count(distinct name)").Count(into.(*int64)) }, number)
		c("Select(count(*) AS n, grp).Group.Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("grp").Group("grp").Count(into.(*int64)) }, number)
		c("Distinct(grp).Limit.Offset", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Distinct("grp").Order("grp desc").Limit(2).Offset(1).Find(into)
		}, func() any { return &[]int64{} })
		c("Distinct().Limit.Pluck", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Distinct().Order("name").Limit(2).Pluck("name", into)
		}, strs)
		c("Having alias", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) AS n").Group("grp").Having("n > ?", 3).Order("grp").Find(into)
		}, rowMaps)
		c("Having sum", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, sum(score) AS s").Group("grp").Having("sum(score) >= ?", 0).Order("s, grp").Find(into)
		}, rowMaps)
		c("Group two columns", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, name, count(*) AS n").Group("grp, name").Order("grp, name").Find(into)
		}, rowMaps)
		c("Group by name padded", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("name, count(*) AS n").Group("name").Order("name").Find(into)
		}, rowMaps)
		c("expression select", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("id, grp * 2 AS g2").Order("id").Find(into) }, rowMaps)
		c("Omit.Order", func(db *gorm.DB, into any) *gorm.DB { return db.Omit("name").Order("id desc").Find(into) }, items)
		c("Order column struct", func(db *gorm.DB, into any) *gorm.DB {
			return db.Order(clause.OrderByColumn{Column: clause.Column{Name: "score"}, Desc: true}).Order("id").Find(into)
		}, items)
		c("Order expression", func(db *gorm.DB, into any) *gorm.DB { return db.Order("score IS NULL, score, id").Find(into) }, items)
		c("Where.Or over every shard", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where("grp = ?", 1).Or("score IS NULL").Order("id").Find(into)
		}, items)
		c("Not", func(db *gorm.DB, into any) *gorm.DB { return db.Not("grp = ?", 1).Order("id").Find(into) }, items)
		c("Find into maps ordered by time", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("id, at").Order("at, id").Find(into) }, rowMaps)
		c("Row aggregate", func(db *gorm.DB, into any) *gorm.DB {
			db.Error = m(db).Select("count(*), min(id)").Row().Scan(new(int64), into.(*int64))
			return db
		}, number)
		c("Table without a model", func(db *gorm.DB, into any) *gorm.DB {
			return db.Table("form_items").Select("grp").Order("grp").Find(into)
		}, rowMaps)
		c("Table with a model", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&formItem{}).Table("form_items AS f").Where("f.grp = ?", 2).Order("f.id").Find(into)
		}, items)
		c("max(at) into time", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("max(at)").Scan(into) }, func() any { return new(time.Time) })
		c("count into int", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("count(*)").Scan(into) }, func() any { return new(int) })
		c("avg into float", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("avg(score)").Scan(into) }, func() any { return new(float64) })
		c("min(name) into string", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("min(name)").Scan(into) }, func() any { return new(string) })
		c("Find one into a struct, no order", func(db *gorm.DB, into any) *gorm.DB { return db.Where("id < 0").Find(into) }, item)
		c("Take one row", func(db *gorm.DB, into any) *gorm.DB { return m(db).Where("grp = ? AND name = ?", 3, "B").Take(into) }, item)
		c("Order ordinal", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("id, score").Order("2 desc, 1").Find(into) }, rowMaps)
		c("Group ordinal", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) AS n").Group("1").Order("1").Find(into)
		}, rowMaps)
		if b.name == "postgres" {
			c("Order NULLS LAST", func(db *gorm.DB, into any) *gorm.DB { return db.Order("score NULLS LAST, id").Find(into) }, items)
			c("Order desc NULLS LAST", func(db *gorm.DB, into any) *gorm.DB { return db.Order("score desc nulls last, id").Find(into) }, items)
			c("Group Order NULLS FIRST", func(db *gorm.DB, into any) *gorm.DB {
				return m(db).Select("score, count(*) AS n").Group("score").Order("score nulls first").Find(into)
			}, rowMaps)
		}
		c("Order qualified DESC", func(db *gorm.DB, into any) *gorm.DB {
			return db.Order("form_items.score  DESC ,  form_items.id ASC").Find(into)
		}, items)
		c("Order COLLATE", func(db *gorm.DB, into any) *gorm.DB {
			return db.Order("name COLLATE " + map[string]string{"sqlite": "NOCASE", "mariadb": "utf8mb4_general_ci", "postgres": `"und-x-icu"`}[b.name] + ", id").Find(into)
		}, items)
		c("Having string var", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) AS n").Group("grp").Having("count(*) > ?", "3").Order("grp").Find(into)
		}, rowMaps)
		c("Having negative", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, sum(score) AS s").Group("grp").Having("sum(score) > -1").Order("grp").Find(into)
		}, rowMaps)
		c("Having IS NULL", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, sum(score) AS s").Group("grp").Having("sum(score) IS NULL").Order("grp").Find(into)
		}, rowMaps)
		c("Having BETWEEN", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) AS n").Group("grp").Having("count(*) BETWEEN 3 AND 4").Order("grp").Find(into)
		}, rowMaps)
		c("Having <>", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) AS n").Group("grp").Having("count(*) <> ?", 4).Order("grp").Find(into)
		}, rowMaps)
		c("Having text", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, max(name) AS hi").Group("grp").Having("max(name) > ?", "a").Order("grp").Find(into)
		}, rowMaps)
		c("Having NULL value", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, min(score) AS lo").Group("grp").Having("min(score) > ?", nil).Order("grp").Find(into)
		}, rowMaps)
		c("Having time", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, max(at) AS last").Group("grp").Having("max(at) > ?", time.Date(2026, 4, 1, 8, 3, 0, 0, time.UTC)).Order("grp").Find(into)
		}, rowMaps)
		c("Having IN", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) AS n").Group("grp").Having("count(*) IN ?", []int{3, 4}).Order("grp").Find(into)
		}, rowMaps)
		c("Having parenthesised", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) AS n").Group("grp").Having("(count(*) > ?)", 3).Order("grp").Find(into)
		}, rowMaps)
		c("Having reversed", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) AS n").Group("grp").Having("? < count(*)", 3).Order("grp").Find(into)
		}, rowMaps)
		c("Having two", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) AS n").Group("grp").Having("count(*) > ?", 1).Having("grp < ?", 3).Order("grp").Find(into)
		}, rowMaps)
		c("Group alias same as a column", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp AS score, count(*) AS n").Group("grp").Order("score").Find(into)
		}, rowMaps)
		c("count(score) alias n ordered", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(score) AS n").Group("grp").Order("n desc, grp").Find(into)
		}, rowMaps)
		c("Find into an array", func(db *gorm.DB, into any) *gorm.DB { return db.Order("id").Find(into) }, func() any { return &[3]formItem{} })
		c("Find into pointers", func(db *gorm.DB, into any) *gorm.DB { return db.Order("score, id").Limit(5).Find(into) }, func() any { return &[]*formItem{} })
		c("Find into a map", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("id").Find(into) }, func() any { return &map[string]any{} })
		c("Pluck into []any", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("id").Pluck("id", into) }, func() any { return &[]any{} })
		c("Having without Group, Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Having("count(*) > ?", 100).Count(into.(*int64)) }, number)
		c("Having without Group", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("count(*) AS n").Having("count(*) > ?", 100).Find(into)
		}, rowMaps)
		c("Having without Group kept", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("max(score) AS hi").Having("max(score) > ?", 0).Find(into)
		}, rowMaps)
		c("aggregate Limit(0)", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("count(*) AS n").Limit(0).Find(into) }, rowMaps)
		c("aggregate Offset(1)", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("count(*) AS n, sum(score) AS s").Limit(5).Offset(1).Find(into)
		}, rowMaps)
		c("Group Limit Offset Count", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Group("grp").Order("grp").Limit(2).Offset(1).Count(into.(*int64))
		}, number)
		c("Distinct Group Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("grp").Group("grp").Count(into.(*int64)) }, number)
		c("Find into int64", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("count(*)").Find(into) }, number)
		c("Distinct with the key, ordered by another", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("id", "grp").Order("grp, id").Find(into) }, rowMaps)
		c("Distinct(grp) ordered by id", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("grp").Order("id").Find(into) }, rowMaps)
		c("Select(*) Distinct", func(db *gorm.DB, into any) *gorm.DB { return db.Distinct("*").Order("id").Limit(5).Find(into) }, items)
		c("Group having on a column not selected", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("count(*) AS n").Group("grp").Having("grp > ?", 0).Order("n").Find(into)
		}, rowMaps)
		c("Group by grp, order by count desc, limit", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(score) AS n").Group("grp").Order("count(score) desc, grp").Limit(2).Find(into)
		}, rowMaps)
		c("aggregate aliased like a column", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("max(score) AS score, min(grp) AS grp").Find(into)
		}, items)
		c("aggregate into a model", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("max(score) AS score").Scan(into) }, item)
		c("sum of a bool expression", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("sum(grp) AS s, count(*) AS n").Where("grp IN ?", []int{1, 2}).Find(into)
		}, rowMaps)
		c("Where in a subquery of itself", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where("grp IN (?)", db.Session(&gorm.Session{NewDB: true}).Model(&formItem{}).Select("grp").Where("score > 0")).Order("id").Find(into)
		}, items)
		c("alias without AS", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) n, sum(score) total").Group("grp").Order("grp").Find(into)
		}, rowMaps)
		c("alias upper case", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp AS G, COUNT(*) AS N").Group("grp").Order("N desc, G").Find(into)
		}, rowMaps)
		c("alias quoted", func(db *gorm.DB, into any) *gorm.DB {
			q := map[string]string{"mariadb": "`"}[b.name]
			if q == "" {
				q = `"`
			}
			return m(db).Select("grp, count(*) AS " + q + "the n" + q).Group("grp").Order(q + "the n" + q + ", grp").Find(into)
		}, rowMaps)
		c("Group by an alias", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp AS g, count(*) AS n").Group("g").Order("g").Find(into)
		}, rowMaps)
		c("a column twice", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, grp AS g2, count(*) AS n").Group("grp").Order("grp").Find(into)
		}, rowMaps)
		c("an aggregate twice", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("count(*) AS a, count(*) AS b, count(score) AS c").Find(into)
		}, rowMaps)
		c("spaces in an aggregate", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("COUNT( * ) AS a, MAX( score ) AS b").Find(into)
		}, rowMaps)
		c("qualified aggregate", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("form_items.grp, sum(form_items.score) AS s").Group("form_items.grp").Order("form_items.grp").Find(into)
		}, rowMaps)
		c("Select slice", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select([]string{"grp", "count(*) as n"}).Group("grp").Order("n, grp").Find(into)
		}, rowMaps)
		c("Select Expr", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("?", clause.Expr{SQL: "count(*)"}).Find(into)
		}, rowMaps)
		c("count(id) and count(1)", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("count(id) AS a, count(1) AS b, count(0) AS c").Find(into)
		}, rowMaps)
		c("count of NULL", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("count(NULL) AS a").Find(into) }, rowMaps)
		c("sum of a constant", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("sum(1) AS a, max(1) AS b").Find(into) }, rowMaps)
		c("min of the key", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("min(id) AS a, max(id) AS b").Where("grp = ?", 2).Find(into)
		}, rowMaps)
		c("distinct count of two", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("count(distinct grp) AS a, count(distinct score) AS b").Find(into)
		}, rowMaps)
		c("count distinct with group", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(distinct name) AS a").Group("grp").Order("grp").Find(into)
		}, rowMaps)
		c("Pluck NULLs into int64", func(db *gorm.DB, into any) *gorm.DB { return nullKind(m(db).Pluck("score", into)) }, func() any { return &[]int64{} })
		c("Pluck NULLs into int64 ordered", func(db *gorm.DB, into any) *gorm.DB { return nullKind(m(db).Order("score").Pluck("score", into)) }, func() any { return &[]int64{} })
		c("Pluck NULLs into int64 distinct", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct().Order("score").Pluck("score", into) }, func() any { return &[]int64{} })
		c("max of NULLs into int64", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("max(score)").Where("score IS NULL").Scan(into)
		}, number)
		c("Group NULLs into int64 struct", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("score, count(*) AS n").Group("score").Order("score").Scan(into)
		}, func() any {
			return &[]struct{ Score, N int64 }{}
		})
		c("cancelled context", func(db *gorm.DB, into any) *gorm.DB {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			db = db.WithContext(ctx).Order("id").Find(into)
			if errors.Is(db.Error, context.Canceled) {
				db.Error = context.Canceled // the kind, whoever wrapped it
			}
			return db
		}, items)
		c("Limit cancelled", func(db *gorm.DB, into any) *gorm.DB { return db.Order("id").Limit(5).Limit(-1).Find(into) }, items)
		c("Limit(-1).Offset", func(db *gorm.DB, into any) *gorm.DB { return db.Order("id desc").Limit(-1).Offset(3).Find(into) }, items)
		c("Offset cancelled", func(db *gorm.DB, into any) *gorm.DB { return db.Order("id").Limit(3).Offset(4).Offset(-1).Find(into) }, items)
		c("Limit clause", func(db *gorm.DB, into any) *gorm.DB {
			n := 3
			return db.Clauses(clause.Limit{Limit: &n, Offset: 2}).Order("id").Find(into)
		}, items)
		c("Limit twice", func(db *gorm.DB, into any) *gorm.DB { return db.Order("id").Limit(9).Offset(1).Limit(2).Find(into) }, items)
		c("Count Limit(-1)", func(db *gorm.DB, into any) *gorm.DB { return m(db).Limit(-1).Count(into.(*int64)) }, number)
		c("Group Limit cancelled", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp, count(*) AS n").Group("grp").Order("grp").Limit(1).Limit(-1).Find(into)
		}, rowMaps)
		c("Distinct Limit cancelled", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Distinct("grp").Order("grp").Limit(1).Limit(-1).Offset(1).Pluck("grp", into)
		}, func() any { return &[]int64{} })
		c("First after Limit", func(db *gorm.DB, into any) *gorm.DB { return db.Limit(5).Offset(2).First(into) }, item)
		c("Last with Offset", func(db *gorm.DB, into any) *gorm.DB { return db.Offset(3).Limit(10).Last(into) }, item)
		c("ordered into a struct without the column", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("score, id").Find(into) }, func() any {
			return &[]struct {
				ID   int64
				Name string
			}{}
		})
		c("ordered into a struct naming the column otherwise", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("score desc, id").Find(into) }, func() any {
			return &[]struct {
				ID int64
				S  *int64 `gorm:"column:score"`
			}{}
		})
		c("ordered into a struct with a field of the column's name from another column", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("id, grp AS score, score AS grp").Order("score, id").Find(into)
		}, func() any {
			return &[]struct {
				ID    int64
				Score int64
				Grp   *int64
			}{}
		})
		c("ordered by an alias of another column", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("id, score AS grp").Order("grp, id").Find(into)
		}, rowMaps)
		c("ordered into an embedded struct", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("at desc, id").Limit(6).Find(into) }, func() any {
			type inner struct {
				At time.Time
			}
			return &[]struct {
				ID int64
				inner
			}{}
		})
		c("ordered into a struct, Scan", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("grp desc, id").Limit(4).Scan(into) }, func() any {
			return &[]struct {
				ID  int64
				Grp int64
			}{}
		})
		c("ordered by a column the struct ignores", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("grp, id").Find(into) }, func() any {
			return &[]struct {
				ID  int64
				Grp int64 `gorm:"-"`
			}{}
		})
		c("ordered by a column read-only in the struct", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("grp, id").Find(into) }, func() any {
			return &[]struct {
				ID  int64
				Grp int64 `gorm:"->:false;<-"`
			}{}
		})
		c("model ordered by an alias of a nullable column", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("id, score AS grp, grp AS score").Order("grp desc, id").Limit(9).Find(into)
		}, items)
		c("model ordered by the key aliased", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("grp AS id, id AS grp").Order("grp desc").Limit(5).Find(into)
		}, items)
		c("model ordered by a table-qualified column named as an alias", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("id, score AS grp").Order("form_items.grp, id").Limit(7).Find(into)
		}, items)
		c("Row of no groups", func(db *gorm.DB, into any) *gorm.DB {
			db.Error = m(db).Select("grp, count(*)").Group("grp").Having("count(*) > ?", 100).Row().Scan(into, new(int64))
			return db
		}, number)
		c("Row of an aggregate of nothing", func(db *gorm.DB, into any) *gorm.DB {
			db.Error = m(db).Select("sum(score)").Where("grp = ?", 99).Row().Scan(into)
			return db
		}, func() any { return &sql.NullInt64{} })
		c("Row of the first group", func(db *gorm.DB, into any) *gorm.DB {
			db.Error = m(db).Select("grp, count(*)").Group("grp").Order("count(*) desc, grp desc").Row().Scan(into, new(int64))
			return db
		}, number)
		c("Unscoped ordered by the deletion", func(db *gorm.DB, into any) *gorm.DB {
			return db.Unscoped().Order("deleted_at desc, id").Limit(4).Find(into)
		}, items)
		c("Unscoped Count", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Unscoped().Where("deleted_at IS NOT NULL").Count(into.(*int64))
		}, number)
		c("max of the deletion", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Unscoped().Select("max(deleted_at) AS d, count(deleted_at) AS n").Find(into)
		}, rowMaps)
		c("Rows", func(db *gorm.DB, into any) *gorm.DB {
			rows, err := m(db).Select("grp, count(*)").Group("grp").Order("grp").Rows()
			if err != nil {
				db.Error = err
				return db
			}
			defer rows.Close()
			out := into.(*[]string)
			for rows.Next() {
				var g, n int64
				if err := rows.Scan(&g, &n); err != nil {
					db.Error = err
					return db
				}
				*out = append(*out, fmt.Sprint(g, n))
			}
			db.Error = rows.Err()
			return db
		}, strs)
	})
}

// sameRows fails unless both sides hold the same rows, deleted or not.
func sameRows(t *testing.T, tw *twin, name string) {
	t.Helper()
	read := func(db *gorm.DB) string {
		var rows []formItem
		must(t, db.Session(&gorm.Session{}).Unscoped().Order("id").Find(&rows).Error)
		out := ""
		for _, r := range rows {
			score := "NULL"
			if r.Score != nil {
				score = fmt.Sprint(*r.Score)
			}
			out += fmt.Sprintf("{%d %d %s %q %s deleted:%v}\n", r.ID, r.Grp, score, r.Name, r.At.UTC().Format(time.RFC3339), r.DeletedAt.Valid)
		}
		return out
	}
	if w, g := read(tw.one), read(tw.sharded); w != g {
		t.Errorf("after %s:\none database:\n%severy shard:\n%s", name, w, g)
	}
}

// TestGORMWritesOverEveryShardAnswerAsOneDatabase: updates (maps,
// structs, gorm.Expr, soft-deleted rows), deletes (soft, Unscoped, of a
// slice, of none), FirstOrCreate with Assign and RETURNING, run with
// AllShards over four databases, report what one database reports and
// leave the same rows, deleted or not; or are refused and change nothing.
func TestGORMWritesOverEveryShardAnswerAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newFormTwin(t, b)
		m := func(db *gorm.DB) *gorm.DB { return db.Model(&formItem{}) }
		var all []formItem
		must(t, tw.one.Unscoped().Order("id").Find(&all).Error)
		ids := []int64{all[0].ID, all[1].ID, all[2].ID, all[3].ID}
		none := func() any { return new(int) }
		w := func(name string, q func(db *gorm.DB, into any) *gorm.DB, into func() any) {
			t.Helper()
			check(t, tw, name, q, into)
			sameRows(t, tw, name)
		}
		w("Updates map with an expression", func(db *gorm.DB, _ any) *gorm.DB {
			return m(db).Where("grp = ?", 1).Updates(map[string]any{"score": gorm.Expr("score + ?", 10)})
		}, none)
		w("Update a column to its own value", func(db *gorm.DB, _ any) *gorm.DB { return m(db).Where("grp = ?", 2).Update("grp", 2) }, none)
		w("Updates struct", func(db *gorm.DB, _ any) *gorm.DB { return m(db).Where("grp = ?", 2).Updates(formItem{Name: "q"}) }, none)
		w("Update IN ids", func(db *gorm.DB, _ any) *gorm.DB { return m(db).Where("id IN ?", ids).Update("name", "ids") }, none)
		w("Delete soft where", func(db *gorm.DB, _ any) *gorm.DB { return db.Where("score IS NULL AND grp = ?", 0).Delete(&formItem{}) }, none)
		w("Update soft-deleted", func(db *gorm.DB, _ any) *gorm.DB { return m(db).Where("grp = ?", 0).Update("name", "gone") }, none)
		w("Unscoped Update", func(db *gorm.DB, _ any) *gorm.DB { return m(db).Unscoped().Where("grp = ?", 0).Update("name", "back") }, none)
		w("Delete slice", func(db *gorm.DB, _ any) *gorm.DB { return db.Delete(&[]formItem{{ID: ids[0]}, {ID: ids[1]}}) }, none)
		w("Delete by ids", func(db *gorm.DB, _ any) *gorm.DB { return db.Unscoped().Delete(&formItem{}, ids[2:]) }, none)
		w("Delete none", func(db *gorm.DB, _ any) *gorm.DB { return db.Where("grp = ?", 99).Delete(&formItem{}) }, none)
		w("UpdateColumn", func(db *gorm.DB, _ any) *gorm.DB {
			return m(db).Where("grp = ?", 3).UpdateColumn("score", gorm.Expr("coalesce(score, 0) * 2"))
		}, none)
		w("First into a row holding its ID", func(db *gorm.DB, into any) *gorm.DB {
			into.(*formItem).ID = all[5].ID
			return db.First(into)
		}, item)
		w("First into a row holding another row's ID", func(db *gorm.DB, into any) *gorm.DB {
			into.(*formItem).ID = all[6].ID
			return db.Where("grp = ?", all[7].Grp).First(into)
		}, item)
		w("Model with an ID, Update", func(db *gorm.DB, _ any) *gorm.DB {
			return db.Model(&formItem{ID: all[8].ID}).Where("grp >= ?", 0).Update("name", "m")
		}, none)
		w("Save an existing row", func(db *gorm.DB, _ any) *gorm.DB {
			row := all[9]
			row.Name = "saved"
			return db.Save(&row)
		}, none)
		w("Delete a row holding its ID, with a condition", func(db *gorm.DB, _ any) *gorm.DB {
			return db.Where("grp = ?", all[10].Grp+1).Delete(&formItem{ID: all[10].ID})
		}, none)
		w("Updates of rows holding IDs", func(db *gorm.DB, _ any) *gorm.DB {
			return db.Model(&[]formItem{{ID: all[11].ID}, {ID: all[12].ID}}).Update("name", "both")
		}, none)
		w("FirstOrCreate found", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where(formItem{Grp: 3, Name: "B"}).FirstOrCreate(into)
		}, item)
		w("FirstOrCreate found with Assign", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where(formItem{Grp: 3}).Assign(map[string]any{"name": "assigned"}).FirstOrCreate(into)
		}, item)
		w("FirstOrInit found with Assign", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where(formItem{Grp: 2}).Assign(formItem{Name: "init"}).FirstOrInit(into)
		}, item)
		if b.name != "mariadb" {
			w("Update Returning", func(db *gorm.DB, into any) *gorm.DB {
				db = db.Model(into).Clauses(clause.Returning{}).Where("grp = ?", 3).Update("grp", 5)
				slices.SortFunc(*into.(*[]formItem), func(a, b formItem) int { return cmp.Compare(a.ID, b.ID) }) // RETURNING has no order
				return db
			}, items)
		}
	})
}

// wideItem: an unsigned key, an unsigned column past int64's range on
// MariaDB, and text of a case-blind collation.
type wideItem struct {
	ID   uint64 `shardid:""`
	Big  uint64
	Tag  string `gorm:"size:16;not null"`
	Flag bool
}

// TestGORMFormsOfWideValues: an unsigned key, MariaDB's unsigned values
// past int64's range, booleans and text of a case-blind collation (SQLite's
// NOCASE, MariaDB's default) order, group and count over four databases as
// on one, or are refused naming the collation; FindInBatches with a Limit
// or an Offset reads the rows one database reads.
func TestGORMFormsOfWideValues(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		var rows []wideItem
		for i := range 12 {
			big := uint64(i * 1000)
			if b.name == "mariadb" && i%2 == 0 {
				big = 1<<63 + uint64(i)
			}
			rows = append(rows, wideItem{Big: big, Tag: []string{"a", "B", "b", "A", "c"}[i%5], Flag: i%3 == 0})
		}
		alter := func(db *gorm.DB) {
			switch b.name {
			case "sqlite":
				must(t, db.Exec("DROP TABLE wide_items").Error)
				must(t, db.Exec("CREATE TABLE wide_items (id integer PRIMARY KEY, big integer, tag text COLLATE NOCASE NOT NULL, flag numeric)").Error)
			case "mariadb":
				must(t, db.Exec("ALTER TABLE wide_items MODIFY big bigint unsigned").Error)
			}
		}
		tw := newTwin(t, b, &wideItem{}, alter, rows, []int{0, 1, 2, 3})
		m := func(db *gorm.DB) *gorm.DB { return db.Model(&wideItem{}) }
		c := func(name string, q func(db *gorm.DB, into any) *gorm.DB, into func() any) {
			check(t, tw, name, q, into)
		}
		wides := func() any { return &[]wideItem{} }
		c("Order(big desc)", func(db *gorm.DB, into any) *gorm.DB { return db.Order("big desc, id").Find(into) }, wides)
		c("max and min of big", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("max(big) AS hi, min(big) AS lo").Find(into) }, rowMaps)
		c("Group by big", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("big, count(*) AS n").Group("big").Order("big").Find(into)
		}, rowMaps)
		c("Order(tag)", func(db *gorm.DB, into any) *gorm.DB { return db.Order("tag, id").Find(into) }, wides)
		c("Distinct(tag)", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("tag").Order("tag").Find(into) }, strs)
		c("Group by tag", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("tag, count(*) AS n").Group("tag").Order("tag").Find(into)
		}, rowMaps)
		c("min(tag)", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("min(tag)").Scan(into) }, func() any { return new(string) })
		c("Count(distinct tag)", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("tag").Count(into.(*int64)) }, number)
		c("Order(flag)", func(db *gorm.DB, into any) *gorm.DB { return db.Order("flag desc, id").Find(into) }, wides)
		c("Group by flag", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("flag, count(*) AS n").Group("flag").Order("flag").Find(into)
		}, rowMaps)
		c("First", func(db *gorm.DB, into any) *gorm.DB { return db.First(into) }, func() any { return &wideItem{} })
		c("Last", func(db *gorm.DB, into any) *gorm.DB { return db.Last(into) }, func() any { return &wideItem{} })
		c("Pluck(id) into uint64", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("id desc").Pluck("id", into) }, func() any { return &[]uint64{} })
		c("FindInBatches with Limit", func(db *gorm.DB, into any) *gorm.DB {
			var batch []wideItem
			all := into.(*[]wideItem)
			return db.Limit(7).FindInBatches(&batch, 3, func(tx *gorm.DB, _ int) error {
				*all = append(*all, batch...)
				return nil
			})
		}, wides)
		c("FindInBatches with Offset", func(db *gorm.DB, into any) *gorm.DB {
			var batch []wideItem
			all := into.(*[]wideItem)
			return db.Offset(2).Limit(20).FindInBatches(&batch, 4, func(tx *gorm.DB, _ int) error {
				*all = append(*all, batch...)
				return nil
			})
		}, wides)
		c("Distinct qualified Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("wide_items.tag").Count(into.(*int64)) }, number)
		c("Offset.Count", func(db *gorm.DB, into any) *gorm.DB { return m(db).Offset(1).Count(into.(*int64)) }, number)
	})
}

// TestKeyConditionsRouteAsOneDatabaseAnswers: a condition that mentions the
// key without pinning it (NOT IN, <>, ranges, = … = FALSE, IS NOT TRUE,
// XOR, ||, arithmetic on the value, COALESCE, CASE, Not, clause.Neq) is
// refused with ErrNoShard rather than sent to the databases of its values;
// those that do pin it (IN lists over several databases, intersections)
// read what one database reads.
func TestKeyConditionsRouteAsOneDatabaseAnswers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newFormTwin(t, b)
		var all []formItem
		must(t, tw.one.Order("id").Find(&all).Error)
		a, z := all[0].ID, all[len(all)-1].ID
		ids := []int64{a, all[1].ID}
		keyed := &twin{sharded: tw.sharded.Session(&gorm.Session{NewDB: true}).Model(&formItem{}), one: tw.one.Model(&formItem{}), model: tw.model} // a statement of its own: Session(NewDB) alone keeps the AllShards one for a later Session
		for _, where := range []struct {
			text string
			vars []any
		}{
			{"id NOT IN ?", []any{ids}},
			{"id <> ?", []any{a}},
			{"id != ?", []any{a}},
			{"id > ?", []any{a}},
			{"NOT id = ?", []any{a}},
			{"NOT (id = ?)", []any{a}},
			{"id = ? = FALSE", []any{a}},
			{"id = ? IS FALSE", []any{a}},
			{"id = ? IS NOT TRUE", []any{a}},
			{"id IN ? = FALSE", []any{ids}},
			{"id = ? < 1", []any{a}},
			{"(id = ?) = (grp = 99)", []any{a}},
			{"id = ? XOR grp = 1", []any{a}},
			{"id = ? || grp = 1", []any{a}},
			{"id = ? OR grp = 1", []any{a}},
			{"id BETWEEN ? AND ?", []any{a, z}},
			{"id = ? + 0", []any{a}},
			{"id = ? - ?", []any{z, z - a}},
			{"id = ? * 1", []any{a}},
			{"id = -?", []any{-a}},
			{"id IN (?, ?) = 0", []any{a, z}},
			{"id = ? AND grp >= 0 OR grp = 2", []any{a}},
			{"id = COALESCE(?, id)", []any{nil}},
			{"id = CASE WHEN grp = 1 THEN ? ELSE id END", []any{a}},
			{"id = ? COLLATE \"C\"", []any{fmt.Sprint(a)}},
			{"id IN ? AND id IN ?", []any{ids, []int64{all[1].ID, z}}},
			{"id = ? AND id = ?", []any{a, z}},
			{"id = ?", []any{fmt.Sprint(a)}},
			{"id = ?", []any{fmt.Sprint(a) + ".0"}},
			{"id = ?", []any{float64(a)}},
			{"id = ?", []any{nil}},
			{"id IN ?", []any{[]any{a, nil, fmt.Sprint(z)}}},
		} {
			check(t, keyed, "Where("+where.text+")", func(db *gorm.DB, into any) *gorm.DB {
				return db.Where(where.text, where.vars...).Order("id").Find(into)
			}, items)
		}
		check(t, keyed, "Where(id).Not(id)", func(db *gorm.DB, into any) *gorm.DB { return db.Where("id IN ?", ids).Not("id = ?", a).Find(into) }, items)
		check(t, keyed, "Not(id IN)", func(db *gorm.DB, into any) *gorm.DB { return db.Not("id IN ?", ids).Order("id").Find(into) }, items)
		check(t, keyed, "Not(map id)", func(db *gorm.DB, into any) *gorm.DB { return db.Not(map[string]any{"id": ids}).Order("id").Find(into) }, items)
		check(t, keyed, "Not(struct id)", func(db *gorm.DB, into any) *gorm.DB { return db.Not(formItem{ID: a}).Order("id").Find(into) }, items)
		check(t, keyed, "Not(ids)", func(db *gorm.DB, into any) *gorm.DB { return db.Not(ids).Order("id").Find(into) }, items)
		check(t, keyed, "Where(id).Or(grp)", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where("id = ?", a).Or("grp = ?", 1).Order("id").Find(into)
		}, items)
		check(t, keyed, "clause.Neq", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where(clause.Neq{Column: "id", Value: a}).Order("id").Find(into)
		}, items)
		check(t, keyed, "clause.Not(IN)", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where(clause.Not(clause.IN{Column: "id", Values: []any{a}})).Order("id").Find(into)
		}, items)
		check(t, keyed, "clause.Gt", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where(clause.Gt{Column: "id", Value: a}).Order("id").Find(into)
		}, items)
		check(t, keyed, "clause.Eq of another table", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where(clause.Eq{Column: clause.Column{Table: "x", Name: "id"}, Value: a}).Find(into)
		}, items)
		check(t, keyed, "IN ordered by another column, limited", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where("id IN ?", []int64{all[0].ID, all[1].ID, all[2].ID, all[3].ID, z}).Order("score desc, id").Limit(3).Offset(1).Find(into)
		}, items)
		check(t, keyed, "IN distinct", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where("id IN ?", []int64{all[0].ID, all[1].ID, all[2].ID, all[3].ID}).Distinct("grp").Order("grp").Find(into)
		}, func() any { return &[]int64{} })
		check(t, keyed, "IN Or IN", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where("id IN ?", ids).Or("id = ?", z).Order("id desc").Limit(2).Find(into)
		}, items)
		check(t, keyed, "Count IN", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&formItem{}).Where("id IN ?", ids).Count(into.(*int64))
		}, number)
		check(t, keyed, "Group IN", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&formItem{}).Select("grp, count(*) AS n").Where("id IN ?", ids).Group("grp").Order("grp").Find(into)
		}, rowMaps)
	})
}

type formOwner struct {
	ID    int64 `shardid:""`
	Name  string
	Notes []formNote `gorm:"foreignKey:OwnerID"`
}

type formNote struct {
	ID      int64 `shardid:"colocate:OwnerID"`
	OwnerID int64 `gorm:"not null"`
	Rank    int64 `gorm:"not null"`
	Owner   *formOwner
}

// TestGORMFormsOfColocatedModels: Preload with its own Order and Limit,
// Joins and InnerJoins of a colocated owner, and a read by the colocate
// column over several databases answer as one database, or are refused.
func TestGORMFormsOfColocatedModels(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		var owners []formOwner
		for i := range 8 {
			owners = append(owners, formOwner{Name: fmt.Sprint("o", i%3)})
		}
		tw := newTwin(t, b, &formOwner{}, nil, owners, []int{0, 1, 2, 3})
		var made []formOwner
		must(t, tw.one.Order("id").Find(&made).Error)
		sharded := tw.sharded.Session(&gorm.Session{NewDB: true}).Model(&formNote{})
		must(t, migrator(sharded).DropTable(&formNote{}))
		must(t, migrator(sharded).AutoMigrate(&formNote{}))
		noFK := tw.one.Session(&gorm.Session{})
		noFK.Config.DisableForeignKeyConstraintWhenMigrating = true
		must(t, noFK.Migrator().DropTable(&formNote{}))
		must(t, noFK.AutoMigrate(&formNote{}))
		for i, o := range made {
			for j := range i % 3 {
				n := formNote{OwnerID: o.ID, Rank: int64((i + j) % 4)}
				must(t, sharded.Create(&n).Error)
				must(t, tw.one.Create(&n).Error)
			}
		}
		c := func(name string, q func(db *gorm.DB, into any) *gorm.DB, into func() any) {
			check(t, tw, name, q, into)
		}
		ownersOf := func() any { return &[]formOwner{} }
		notes := func() any { return &[]formNote{} }
		c("Preload ordered, limited", func(db *gorm.DB, into any) *gorm.DB {
			return db.Preload("Notes", func(tx *gorm.DB) *gorm.DB { return tx.Clauses(shardid.AllShards()).Order("rank desc, id") }).Order("id desc").Limit(5).Find(into)
		}, ownersOf)
		c("Preload limited", func(db *gorm.DB, into any) *gorm.DB {
			return db.Preload("Notes", func(tx *gorm.DB) *gorm.DB { return tx.Order("id").Limit(3) }).Order("id").Find(into)
		}, ownersOf)
		c("Joins Owner ordered", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&formNote{}).Joins("Owner").Order("form_notes.id").Limit(4).Find(into)
		}, notes)
		c("Joins Owner Count", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&formNote{}).Joins("Owner").Where("Owner.name = ?", "o1").Count(into.(*int64))
		}, number)
		c("Joins Owner grouped", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&formNote{}).Joins("Owner").Select("Owner.name AS name, count(*) AS n").Group("Owner.name").Order("name").Find(into)
		}, rowMaps)
		c("InnerJoins filtered", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&formNote{}).InnerJoins("Owner", db.Session(&gorm.Session{NewDB: true}).Where(&formOwner{Name: "o2"})).Order("form_notes.id").Find(into)
		}, notes)
		c("Notes by owners IN", func(db *gorm.DB, into any) *gorm.DB {
			return db.Session(&gorm.Session{NewDB: true}).Model(&formNote{}).Where("owner_id IN ?", []int64{made[1].ID, made[2].ID, made[5].ID}).Order("rank, id").Find(into)
		}, notes)
		c("Owners with notes, subquery on the colocate", func(db *gorm.DB, into any) *gorm.DB {
			return db.Where("EXISTS (SELECT 1 FROM form_notes WHERE form_notes.owner_id = form_owners.id AND rank > ?)", 1).Order("id").Find(into)
		}, ownersOf)
	})
}

// nullKind names the error of a NULL scanned into a type that cannot hold it
// by its kind alone: one per row, on one database or per part.
func nullKind(db *gorm.DB) *gorm.DB {
	if db.Error != nil && strings.Contains(db.Error.Error(), "converting NULL to int64 is unsupported") {
		db.Error = errors.New("NULL into int64")
	}
	return db
}

type avgRow struct {
	ID    int64 `shardid:""`
	G     int64 `gorm:"not null"`
	Units int64 `gorm:"not null"`
}

// TestAveragesRoundAsTheDatabaseRounds: averages of integers merged from
// each part's SUM and COUNT round at the dialect's scale as one database
// does: halves away from zero on MariaDB, negative values, exact values, and
// sums past 2^53.
func TestAveragesRoundAsTheDatabaseRounds(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		var rows []avgRow
		add := func(g int64, units ...int64) {
			for _, u := range units {
				rows = append(rows, avgRow{G: g, Units: u})
			}
		}
		zeros := func(n int) []int64 { return make([]int64, n) }
		add(1, append(zeros(31), 1)...)
		add(2, append(zeros(31), -1)...)
		add(3, -5, 0, 0)
		add(4, 1, 0, 0)
		add(5, 1<<62, 1<<62-1, 3)
		add(6, -(1 << 62), 1<<53+1, 7, 7, 7, 7, 7)
		add(7, 2, 2, 2, 2, 2, 2, 1)
		add(8, 1e15, 2e15+1, 3)
		tw := newTwin(t, b, &avgRow{}, nil, rows, []int{0, 1, 2, 3, 1, 2, 3})
		for _, sel := range []string{"g, avg(units) AS a", "g, avg(units) AS a, sum(units) AS s, count(*) AS n"} {
			check(t, tw, sel, func(db *gorm.DB, into any) *gorm.DB {
				return db.Model(&avgRow{}).Select(sel).Group("g").Order("g").Find(into)
			}, rowMaps)
		}
		check(t, tw, "avg of every row", func(db *gorm.DB, into any) *gorm.DB { return db.Model(&avgRow{}).Select("avg(units) AS a").Find(into) }, rowMaps)
		check(t, tw, "avg of a group", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&avgRow{}).Select("avg(units) AS a").Where("g = ?", 6).Find(into)
		}, rowMaps)
		check(t, tw, "ordered by avg", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&avgRow{}).Select("g, avg(units) AS a").Group("g").Order("a, g").Find(into)
		}, rowMaps)
		check(t, tw, "HAVING avg", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&avgRow{}).Select("g, avg(units) AS a").Group("g").Having("avg(units) > ?", 0).Order("g").Find(into)
		}, rowMaps)
	})
}

// TestGenericsFormsOverEveryShardAnswerAsOneDatabase: gorm.G's Find, First,
// Count, Take, Last, Scan and its updates and deletes, given AllShards as an
// option, answer as gorm.G on one database without the plugin.
func TestGenericsFormsOverEveryShardAnswerAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newFormTwin(t, b)
		ctx := context.Background()
		plain := tw.sharded.Session(&gorm.Session{NewDB: true}).Model(&formItem{})
		g := func(db *gorm.DB) gorm.Interface[formItem] {
			if db == tw.one {
				return gorm.G[formItem](db)
			}
			return gorm.G[formItem](plain, shardid.AllShards())
		}
		res := func(db *gorm.DB, err error) *gorm.DB {
			db = db.Session(&gorm.Session{})
			db.Error = err
			return db
		}
		side := func(db *gorm.DB) *gorm.DB {
			if db.Statement.ConnPool == tw.one.Statement.ConnPool {
				return tw.one
			}
			return plain
		}
		c := func(name string, q func(db *gorm.DB, into any) *gorm.DB, into func() any) {
			check(t, tw, name, q, into)
		}
		c("G Find ordered", func(db *gorm.DB, into any) *gorm.DB {
			rows, err := g(side(db)).Where("grp > ?", 0).Order("score desc, id").Limit(5).Offset(1).Find(ctx)
			*into.(*[]formItem) = rows
			return res(db, err)
		}, items)
		c("G First", func(db *gorm.DB, into any) *gorm.DB {
			row, err := g(side(db)).Where("grp = ?", 2).First(ctx)
			*into.(*formItem) = row
			return res(db, err)
		}, item)
		c("G Last", func(db *gorm.DB, into any) *gorm.DB {
			row, err := g(side(db)).Last(ctx)
			*into.(*formItem) = row
			return res(db, err)
		}, item)
		c("G First none", func(db *gorm.DB, into any) *gorm.DB {
			row, err := g(side(db)).Where("grp = ?", 99).First(ctx)
			*into.(*formItem) = row
			return res(db, err)
		}, item)
		c("G Count", func(db *gorm.DB, into any) *gorm.DB {
			n, err := g(side(db)).Where("score IS NOT NULL").Count(ctx, "*")
			*into.(*int64) = n
			return res(db, err)
		}, number)
		c("G Count column", func(db *gorm.DB, into any) *gorm.DB {
			n, err := g(side(db)).Count(ctx, "score")
			*into.(*int64) = n
			return res(db, err)
		}, number)
		c("G Select Scan", func(db *gorm.DB, into any) *gorm.DB {
			return res(db, g(side(db)).Select("grp, count(*) AS n").Group("grp").Order("grp").Scan(ctx, into))
		}, rowMaps)
		c("G Update", func(db *gorm.DB, into any) *gorm.DB {
			n, err := g(side(db)).Where("grp = ?", 3).Update(ctx, "name", "g")
			*into.(*int64) = int64(n)
			return res(db, err)
		}, number)
		c("G Delete", func(db *gorm.DB, into any) *gorm.DB {
			n, err := g(side(db)).Where("grp = ?", 0).Delete(ctx)
			*into.(*int64) = int64(n)
			return res(db, err)
		}, number)
		sameRows(t, tw, "G writes")
	})
}

type uniRow struct {
	ID  int64  `shardid:""`
	Tag string `gorm:"size:32;not null"`
}

// TestUnicodeTextMergesAsTheDatabaseOrders: text beyond ASCII (accents,
// ligatures, non-breaking space, supplementary characters, the replacement
// character) in a column of a byte-ordered collation (SQLite's BINARY,
// MariaDB's utf8mb4_bin, PostgreSQL's database default where it orders by
// code point) orders, is distinct and has its MIN and MAX over four
// databases as on one; a default that does not is refused.
func TestUnicodeTextMergesAsTheDatabaseOrders(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		var rows []uniRow
		for _, s := range []string{"é", "z", "Z", "ä", "😀", "\u00a0", "\uFFFD", "a", "a b", "ab", "\U00010000", "Ω", "\u212B", "\u00C5", "ﬀ", "ß", "ss", "\t", "-", "_"} {
			rows = append(rows, uniRow{Tag: s})
		}
		alter := func(db *gorm.DB) {
			if b.name == "mariadb" {
				must(t, db.Exec("ALTER TABLE uni_rows MODIFY tag varchar(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL").Error)
			}
		}
		tw := newTwin(t, b, &uniRow{}, alter, rows, []int{0, 1, 2, 3, 2})
		check(t, tw, "ordered", func(db *gorm.DB, into any) *gorm.DB { return db.Model(&uniRow{}).Order("tag, id").Find(into) }, func() any { return &[]uniRow{} })
		check(t, tw, "distinct", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&uniRow{}).Distinct("tag").Order("tag desc").Find(into)
		}, strs)
		check(t, tw, "MIN and MAX", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&uniRow{}).Select("min(tag) AS lo, max(tag) AS hi").Find(into)
		}, rowMaps)
	})
}

// TestDistinctWrittenInTheSelectListMergesOverEveryShard: a DISTINCT
// written at the head of a select list given as text (Select("DISTINCT
// grp"), Pluck("DISTINCT name")), which the database reads as GORM's
// Distinct, gives over four databases (Find, Pluck, Scan) the distinct rows
// one database gives, not each database's own; a Count beside it counts
// every row, as GORM's count(*) does.
func TestDistinctWrittenInTheSelectListMergesOverEveryShard(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newFormTwin(t, b)
		int64s := func() any { return &[]int64{} }
		tw.same(t, "Select(DISTINCT grp)", func(db *gorm.DB, into any) *gorm.DB { return db.Select("DISTINCT grp").Order("grp desc").Find(into) }, int64s)
		tw.same(t, "Select(distinct grp, name), limited", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("distinct grp, name").Order("grp, name").Limit(4).Offset(1).Find(into)
		}, rowMaps)
		tw.same(t, "Select(DISTINCT id, grp)", func(db *gorm.DB, into any) *gorm.DB { return db.Select("DISTINCT id, grp").Order("id").Find(into) }, rowMaps)
		tw.same(t, "Pluck(DISTINCT name)", func(db *gorm.DB, into any) *gorm.DB { return db.Order("name").Pluck("DISTINCT name", into) }, strs)
		tw.same(t, "Pluck(DISTINCT grp), unordered", func(db *gorm.DB, into any) *gorm.DB {
			db = db.Pluck("DISTINCT grp", into)
			slices.Sort(*into.(*[]int64)) // no ORDER BY: the set, in any order
			return db
		}, int64s)
		tw.same(t, "Select(DISTINCT name).Scan", func(db *gorm.DB, into any) *gorm.DB { return db.Select("DISTINCT name").Order("name").Scan(into) }, strs)
		tw.same(t, "Select(DISTINCT grp).Count", func(db *gorm.DB, into any) *gorm.DB { return db.Select("DISTINCT grp").Count(into.(*int64)) }, number)
	})
}
