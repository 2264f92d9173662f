package integration

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// batchItem: a sharded model beside gorm.Model (soft delete), with a group
// that ties and a nullable score.
type batchItem struct {
	gorm.Model
	ID    int64  `shardid:""`
	Grp   int64  `gorm:"not null"`
	Name  string `gorm:"size:16;not null"`
	Score *int64
}

func newBatchTwin(t *testing.T, b backend, n int) *twin {
	t.Helper()
	var rows []batchItem
	for i := range n {
		r := batchItem{Grp: int64(i % 3), Name: fmt.Sprintf("n%02d", (i*7)%11)}
		if i%4 > 0 {
			s := int64(i%5 - 2)
			r.Score = &s
		}
		rows = append(rows, r)
	}
	tw := newTwin(t, b, &batchItem{}, func(db *gorm.DB) { binaryCollation(t, b, db, "batch_items", "name") }, rows, []int{0, 1, 2, 3, 2, 1, 3, 0, 0})
	// soft-delete some rows on both sides
	var all []batchItem
	must(t, tw.one.Order("id").Find(&all).Error)
	var gone []int64
	for i, r := range all {
		if i%6 == 5 {
			gone = append(gone, r.ID)
		}
	}
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	must(t, tw.one.Model(&batchItem{}).Where("id IN ?", gone).UpdateColumn("deleted_at", at).Error)
	must(t, tw.sharded.Session(&gorm.Session{NewDB: true}).Model(&batchItem{}).Where("id IN ?", gone).UpdateColumn("deleted_at", at).Error)
	return tw
}

func batchItems() any { return &[]batchItem{} }

func collectBatches(db *gorm.DB, into any, size int) *gorm.DB {
	var batch []batchItem
	all := into.(*[]batchItem)
	return db.FindInBatches(&batch, size, func(tx *gorm.DB, n int) error {
		*all = append(*all, batch...)
		return nil
	})
}

// TestBatchAndPageReadsOverDatabasesAnswerAsOneDatabase: FindInBatches
// (ordered, filtered, limited, unscoped), pages of Limit/Offset, counts,
// maps, scans into other types, plucks and First/Last/Take of a soft-delete
// model over four databases read what one database reads.
func TestBatchAndPageReadsOverDatabasesAnswerAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newBatchTwin(t, b, 31)
		m := func(db *gorm.DB) *gorm.DB { return db.Model(&batchItem{}) }
		c := func(name string, q func(db *gorm.DB, into any) *gorm.DB, into func() any) {
			t.Helper()
			check(t, tw, name, q, into)
		}
		for _, size := range []int{1, 4, 7, 100} {
			c(fmt.Sprintf("FindInBatches %d", size), func(db *gorm.DB, into any) *gorm.DB { return collectBatches(db, into, size) }, batchItems)
			c(fmt.Sprintf("FindInBatches %d ordered by grp", size), func(db *gorm.DB, into any) *gorm.DB { return collectBatches(db.Order("grp"), into, size) }, batchItems)
			c(fmt.Sprintf("FindInBatches %d ordered by score desc", size), func(db *gorm.DB, into any) *gorm.DB {
				return collectBatches(db.Order("score desc"), into, size)
			}, batchItems)
			c(fmt.Sprintf("FindInBatches %d ordered by id desc", size), func(db *gorm.DB, into any) *gorm.DB {
				return collectBatches(db.Order("id desc"), into, size)
			}, batchItems)
			c(fmt.Sprintf("FindInBatches %d where", size), func(db *gorm.DB, into any) *gorm.DB {
				return collectBatches(db.Where("grp = ? OR score IS NULL", 1), into, size)
			}, batchItems)
			c(fmt.Sprintf("FindInBatches %d unscoped", size), func(db *gorm.DB, into any) *gorm.DB { return collectBatches(db.Unscoped(), into, size) }, batchItems)
			c(fmt.Sprintf("FindInBatches %d limit 10", size), func(db *gorm.DB, into any) *gorm.DB { return collectBatches(db.Limit(10), into, size) }, batchItems)
			c(fmt.Sprintf("FindInBatches %d limit offset", size), func(db *gorm.DB, into any) *gorm.DB {
				return collectBatches(db.Order("name").Limit(9).Offset(3), into, size)
			}, batchItems)
			c(fmt.Sprintf("FindInBatches %d select", size), func(db *gorm.DB, into any) *gorm.DB {
				return collectBatches(db.Select("id", "name"), into, size)
			}, batchItems)
		}
		c("FindInBatches stopping at an error", func(db *gorm.DB, into any) *gorm.DB {
			var batch []batchItem
			all := into.(*[]batchItem)
			r := db.FindInBatches(&batch, 4, func(tx *gorm.DB, n int) error {
				*all = append(*all, batch...)
				if n == 3 {
					return errors.New("stop")
				}
				return nil
			})
			if r.Error != nil && r.Error.Error() == "stop" {
				r.Error = nil
			}
			return r
		}, batchItems)
		c("FindInBatches into pointers", func(db *gorm.DB, into any) *gorm.DB {
			var batch []*batchItem
			all := into.(*[]batchItem)
			return db.Order("grp desc").FindInBatches(&batch, 5, func(tx *gorm.DB, n int) error {
				for _, r := range batch {
					*all = append(*all, *r)
				}
				return nil
			})
		}, batchItems)
		orders := []string{"id", "id desc", "grp, id", "score, id", "score desc, name desc, id", "name, id", "created_at, id"}
		for _, o := range orders {
			for _, lim := range []int{1, 4, 10} {
				c(fmt.Sprintf("pages of %d ordered by %s", lim, o), func(db *gorm.DB, into any) *gorm.DB {
					all := into.(*[]batchItem)
					var r *gorm.DB
					for off := 0; off < 40; off += lim {
						var page []batchItem
						r = db.Session(&gorm.Session{}).Order(o).Limit(lim).Offset(off).Find(&page)
						if r.Error != nil {
							return r
						}
						*all = append(*all, page...)
					}
					return r
				}, batchItems)
			}
		}
		for _, lim := range []int{1, 2, 5} {
			c(fmt.Sprintf("pages of %d distinct rows", lim), func(db *gorm.DB, into any) *gorm.DB {
				all := into.(*[]map[string]any)
				var r *gorm.DB
				for off := 0; off < 40; off += lim {
					var page []map[string]any
					r = m(db.Session(&gorm.Session{})).Distinct("grp", "name").Order("grp desc, name").Limit(lim).Offset(off).Find(&page)
					if r.Error != nil {
						return r
					}
					*all = append(*all, page...)
				}
				return r
			}, rowMaps)
			c(fmt.Sprintf("pages of %d groups", lim), func(db *gorm.DB, into any) *gorm.DB {
				all := into.(*[]map[string]any)
				var r *gorm.DB
				for off := 0; off < 20; off += lim {
					var page []map[string]any
					r = m(db.Session(&gorm.Session{})).Select("name, count(*) AS n, max(score) AS hi").Group("name").Order("n desc, name").Limit(lim).Offset(off).Find(&page)
					if r.Error != nil {
						return r
					}
					*all = append(*all, page...)
				}
				return r
			}, rowMaps)
			c(fmt.Sprintf("pages of %d plucked distinct", lim), func(db *gorm.DB, into any) *gorm.DB {
				all := into.(*[]string)
				var r *gorm.DB
				for off := 0; off < 20; off += lim {
					var page []string
					r = m(db.Session(&gorm.Session{})).Distinct().Order("name desc").Limit(lim).Offset(off).Pluck("name", &page)
					if r.Error != nil {
						return r
					}
					*all = append(*all, page...)
				}
				return r
			}, strs)
		}
		c("Find of none into a map", func(db *gorm.DB, into any) *gorm.DB { return m(db).Where("grp = ?", 9).Find(into) }, func() any { return &map[string]any{} })
		c("Take of none into a map", func(db *gorm.DB, into any) *gorm.DB { return m(db).Where("grp = ?", 9).Take(into) }, func() any { return &map[string]any{} })
		c("Find of none into a struct", func(db *gorm.DB, into any) *gorm.DB { return db.Where("grp = ?", 9).Find(into) }, func() any { return &batchItem{} })
		c("Find of none into a filled map", func(db *gorm.DB, into any) *gorm.DB { return m(db).Where("grp = ?", 9).Find(into) }, func() any { return &map[string]any{"kept": 1} })
		c("Find into a filled map", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("id").Limit(1).Find(into) }, func() any { return &map[string]any{"kept": 1} })
		c("Find into a filled slice", func(db *gorm.DB, into any) *gorm.DB { return db.Order("id").Limit(3).Find(into) }, func() any { return &[]batchItem{{Name: "kept"}} })
		c("Find of none into a filled slice", func(db *gorm.DB, into any) *gorm.DB { return db.Where("grp = ?", 9).Find(into) }, func() any { return &[]batchItem{{Name: "kept"}} })
		c("Find into a filled struct", func(db *gorm.DB, into any) *gorm.DB { return db.Select("id", "grp").Order("id").Limit(1).Find(into) }, func() any { return &batchItem{Name: "kept"} })
		c("Find of none into a filled struct", func(db *gorm.DB, into any) *gorm.DB { return db.Where("grp = ?", 9).Find(into) }, func() any { return &batchItem{Name: "kept"} })
		c("Pluck into a filled slice", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("id").Pluck("id", into) }, func() any { return &[]int64{7} })
		c("Pluck of none into a filled slice", func(db *gorm.DB, into any) *gorm.DB { return m(db).Where("grp = ?", 9).Pluck("id", into) }, func() any { return &[]int64{7} })
		c("Count into a filled number", func(db *gorm.DB, into any) *gorm.DB { return m(db).Where("grp = ?", 9).Count(into.(*int64)) }, func() any { n := int64(5); return &n })
		c("Count Distinct name", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("name").Count(into.(*int64)) }, number)
		c("Count Distinct name unscoped", func(db *gorm.DB, into any) *gorm.DB { return m(db).Unscoped().Distinct("name").Count(into.(*int64)) }, number)
		c("Count Distinct where", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Distinct("grp").Where("score > ?", 0).Count(into.(*int64))
		}, number)
		c("Count Group name", func(db *gorm.DB, into any) *gorm.DB { return m(db).Group("name").Count(into.(*int64)) }, number)
		c("Count Group grp, name", func(db *gorm.DB, into any) *gorm.DB { return m(db).Group("grp, name").Count(into.(*int64)) }, number)
		c("Count Select count(distinct name)", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("count(distinct name)").Count(into.(*int64))
		}, number)
		c("Count Select count(distinct score)", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("count(distinct score)").Count(into.(*int64))
		}, number)
		c("Select count(distinct score) Scan", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("count(distinct score)").Scan(into)
		}, number)
		c("Select count(distinct grp) Row", func(db *gorm.DB, into any) *gorm.DB {
			db.Error = m(db).Select("count(distinct grp)").Row().Scan(into.(*int64))
			return db
		}, number)
		c("Count Distinct id", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("id").Count(into.(*int64)) }, number)
		c("Count Distinct id, name", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct("id", "name").Count(into.(*int64)) }, number)
		c("Count Distinct(*)", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct().Count(into.(*int64)) }, number)
		c("Count Group with Distinct", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Distinct("name").Group("grp").Count(into.(*int64))
		}, number)
		c("Count Limit Offset", func(db *gorm.DB, into any) *gorm.DB { return m(db).Limit(5).Offset(0).Count(into.(*int64)) }, number)
		c("Count of Select name", func(db *gorm.DB, into any) *gorm.DB { return m(db).Select("name").Count(into.(*int64)) }, number)
		c("Count of Select distinct name text", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("DISTINCT name").Count(into.(*int64))
		}, number)
		c("Count of Select distinct(name)", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("distinct(name)").Count(into.(*int64))
		}, number)
		c("Find into a map", func(db *gorm.DB, into any) *gorm.DB { return m(db).Order("id desc").Find(into) }, func() any { return &map[string]any{} })
		c("Find into a map, Limit Offset", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Order("score, id").Limit(1).Offset(4).Find(into)
		}, func() any { return &map[string]any{} })
		c("Take into a map", func(db *gorm.DB, into any) *gorm.DB { return m(db).Where("grp = ? AND score = ?", 2, 0).Take(into) }, func() any { return &map[string]any{} })
		c("First into a map", func(db *gorm.DB, into any) *gorm.DB { return m(db).First(into) }, func() any { return &map[string]any{} })
		c("Last into a map", func(db *gorm.DB, into any) *gorm.DB { return m(db).Last(into) }, func() any { return &map[string]any{} })
		c("Find into maps ordered", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Select("id, grp, name").Order("grp desc, name, id").Limit(12).Offset(2).Find(into)
		}, rowMaps)
		c("Table into maps", func(db *gorm.DB, into any) *gorm.DB {
			return db.Table("batch_items").Where("deleted_at IS NULL").Order("score desc, id").Find(into)
		}, rowMaps)
		type other struct {
			ID    int64
			Name  string
			Score *int64
			Extra string
		}
		c("Scan into another type ordered", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Order("score desc, id").Limit(8).Offset(3).Scan(into)
		}, func() any { return &[]other{} })
		c("Find into another type ordered", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Order("name desc, id").Find(into)
		}, func() any { return &[]other{} })
		c("Find into another type, one group", func(db *gorm.DB, into any) *gorm.DB {
			var rows []other
			r := m(db).Where("grp = ?", 1).Find(&rows)
			slices.SortFunc(rows, func(a, b other) int { return cmp.Compare(a.ID, b.ID) })
			*into.(*[]other) = rows
			return r
		}, func() any { return &[]other{} })
		c("Find into another type with aliases", func(db *gorm.DB, into any) *gorm.DB {
			var rows []other
			r := m(db).Select("id", "grp AS score", "name AS extra").Where("grp = ?", 2).Find(&rows)
			slices.SortFunc(rows, func(a, b other) int { return cmp.Compare(a.ID, b.ID) })
			*into.(*[]other) = rows
			return r
		}, func() any { return &[]other{} })
		c("Find one into another type", func(db *gorm.DB, into any) *gorm.DB { return m(db).Where("grp = ? AND score = ?", 2, 0).Find(into) }, func() any { return &other{} })
		c("Take into another type", func(db *gorm.DB, into any) *gorm.DB { return m(db).Where("grp = ? AND score = ?", 2, 0).Take(into) }, func() any { return &other{} })
		c("First into another type", func(db *gorm.DB, into any) *gorm.DB { return m(db).First(into) }, func() any { return &other{} })
		c("Scan into one of another type", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Order("name desc, id").Scan(into)
		}, func() any { return &other{} })
		c("Scan one row of another type", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Order("name desc, id").Limit(1).Scan(into)
		}, func() any { return &other{} })
		c("Pluck Distinct name", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct().Order("name").Pluck("name", into) }, strs)
		c("Pluck Distinct name desc offset", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Distinct().Order("name desc").Limit(3).Offset(2).Pluck("name", into)
		}, strs)
		c("Pluck Distinct(name) unordered count", func(db *gorm.DB, into any) *gorm.DB {
			var names []string
			r := m(db).Distinct("name").Pluck("name", &names)
			slices.Sort(names)
			*into.(*[]string) = names
			return r
		}, strs)
		c("Pluck Distinct score", func(db *gorm.DB, into any) *gorm.DB { return m(db).Distinct().Order("score").Pluck("score", into) }, func() any { return &[]*int64{} })
		c("Pluck Distinct grp unscoped", func(db *gorm.DB, into any) *gorm.DB {
			return m(db).Unscoped().Distinct("grp").Order("grp desc").Pluck("grp", into)
		}, func() any { return &[]int64{} })
		c("First", func(db *gorm.DB, into any) *gorm.DB { return db.First(into) }, func() any { return &batchItem{} })
		c("Last", func(db *gorm.DB, into any) *gorm.DB { return db.Last(into) }, func() any { return &batchItem{} })
		c("First where", func(db *gorm.DB, into any) *gorm.DB { return db.Where("grp = ?", 2).First(into) }, func() any { return &batchItem{} })
		c("Last where", func(db *gorm.DB, into any) *gorm.DB { return db.Where("grp = ?", 2).Last(into) }, func() any { return &batchItem{} })
		c("First ordered", func(db *gorm.DB, into any) *gorm.DB { return db.Order("score").First(into) }, func() any { return &batchItem{} })
		c("Last ordered", func(db *gorm.DB, into any) *gorm.DB { return db.Order("name").Last(into) }, func() any { return &batchItem{} })
		c("Last Unscoped", func(db *gorm.DB, into any) *gorm.DB { return db.Unscoped().Last(into) }, func() any { return &batchItem{} })
		c("First Offset", func(db *gorm.DB, into any) *gorm.DB { return db.Offset(7).First(into) }, func() any { return &batchItem{} })
		c("Last Offset", func(db *gorm.DB, into any) *gorm.DB { return db.Offset(7).Last(into) }, func() any { return &batchItem{} })
		c("Last ordered by score", func(db *gorm.DB, into any) *gorm.DB { return db.Order("score").Last(into) }, func() any { return &batchItem{} })
		c("First ordered by score desc", func(db *gorm.DB, into any) *gorm.DB { return db.Order("score desc").First(into) }, func() any { return &batchItem{} })
		c("Last ordered by score desc, Offset", func(db *gorm.DB, into any) *gorm.DB { return db.Order("score desc").Offset(5).Last(into) }, func() any { return &batchItem{} })
		c("First into a slice", func(db *gorm.DB, into any) *gorm.DB { return db.First(into) }, batchItems)
		c("Last into a slice", func(db *gorm.DB, into any) *gorm.DB { return db.Last(into) }, batchItems)
		c("Take into a slice", func(db *gorm.DB, into any) *gorm.DB { return db.Where("grp = ? AND score = ?", 2, 0).Take(into) }, batchItems)
		c("First of none", func(db *gorm.DB, into any) *gorm.DB { return db.Where("grp = ?", 9).First(into) }, func() any { return &batchItem{} })
		c("Last of none into map", func(db *gorm.DB, into any) *gorm.DB { return m(db).Where("grp = ?", 9).Last(into) }, func() any { return &map[string]any{} })
	})
}

var _ = shardid.AllShards

// TestFindInBatchesSavingEachBatchOverDatabases: the GORM documentation's
// FindInBatches that saves each batch through the callback's tx writes every
// row of every database once, as on one database; under a shard clause the
// batches read that database's rows only.
func TestFindInBatchesSavingEachBatchOverDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newBatchTwin(t, b, 23)
		run := func(db *gorm.DB) (int64, []batchItem, error) {
			var batch []batchItem
			r := db.Where("grp < ?", 2).FindInBatches(&batch, 3, func(tx *gorm.DB, n int) error {
				for i := range batch {
					batch[i].Name = fmt.Sprintf("b%d", n)
				}
				return tx.Save(&batch).Error
			})
			var all []batchItem
			if err := db.Session(&gorm.Session{}).Unscoped().Order("id").Find(&all).Error; err != nil {
				return 0, nil, err
			}
			return r.RowsAffected, all, r.Error
		}
		wn, want, werr := run(tw.one)
		gn, got, gerr := run(tw.sharded)
		if werr != nil || gerr != nil {
			t.Fatalf("one database: %v; every shard: %v", werr, gerr)
		}
		if wn != gn || len(want) != len(got) {
			t.Fatalf("one database: %d rows read, %d held; every shard: %d read, %d held", wn, len(want), gn, len(got))
		}
		for i := range want {
			if want[i].ID != got[i].ID || want[i].Name != got[i].Name || want[i].DeletedAt != got[i].DeletedAt {
				t.Errorf("row %d: one database %d %q %v; every shard %d %q %v", i, want[i].ID, want[i].Name, want[i].DeletedAt, got[i].ID, got[i].Name, got[i].DeletedAt)
			}
		}

		// Under a shard clause: that database's rows, as its own Find reads them.
		for _, id := range []int64{want[0].ID, want[len(want)-1].ID} {
			var whole []batchItem
			must(t, tw.sharded.Session(&gorm.Session{NewDB: true}).Clauses(shardid.ByID(id)).Order("id").Find(&whole).Error)
			var batched []batchItem
			var batch []batchItem
			r := tw.sharded.Session(&gorm.Session{NewDB: true}).Clauses(shardid.ByID(id)).FindInBatches(&batch, 2, func(tx *gorm.DB, n int) error {
				batched = append(batched, batch...)
				return tx.Model(&batch[0]).Update("score", n).Error
			})
			if r.Error != nil || len(whole) == 0 || len(whole) != len(batched) || r.RowsAffected != int64(len(whole)) {
				t.Fatalf("ByID FindInBatches: %v, %d rows (RowsAffected %d), Find reads %d", r.Error, len(batched), r.RowsAffected, len(whole))
			}
			for i := range whole {
				if whole[i].ID != batched[i].ID {
					t.Errorf("ByID FindInBatches row %d: %d, Find reads %d", i, batched[i].ID, whole[i].ID)
				}
			}
		}
	})
}

// TestRowsOfAMergedReadClosedEarly: Rows of a grouped read over every
// database, read in part and closed, many times over on a small pool, hands
// back every connection and leaves no statement waiting.
func TestRowsOfAMergedReadClosedEarly(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newBatchTwin(t, b, 20)
		for i := range 60 {
			rows, err := tw.sharded.Model(&batchItem{}).Select("grp, count(*) AS n, max(name) AS hi").Group("grp").Order("grp").Rows()
			if err != nil {
				t.Fatal(err)
			}
			if i%3 > 0 && rows.Next() {
				var g struct {
					Grp int64
					N   int64
					Hi  string
				}
				must(t, tw.sharded.ScanRows(rows, &g))
				if i == 1 && (g.Grp != 0 || g.N == 0) {
					t.Errorf("ScanRows read %+v", g)
				}
			}
			must(t, rows.Close())
		}
		// The pool of the plugin's database and the shards are free: a read
		// over every database and one on the plugin's database go through.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var n int64
		must(t, tw.sharded.WithContext(ctx).Model(&batchItem{}).Count(&n).Error)
		sqlDB, err := tw.sharded.DB()
		must(t, err)
		if s := sqlDB.Stats(); s.InUse != 0 {
			t.Errorf("%d connections of the plugin's database still in use", s.InUse)
		}
		var all []map[string]any
		rows, err := tw.sharded.Model(&batchItem{}).Select("grp, count(*) AS n").Group("grp").Order("grp").Rows()
		must(t, err)
		for rows.Next() {
			var m map[string]any
			must(t, tw.sharded.ScanRows(rows, &m))
			all = append(all, m)
		}
		must(t, rows.Err())
		must(t, rows.Close())
		var want []map[string]any
		must(t, tw.one.Model(&batchItem{}).Select("grp, count(*) AS n").Group("grp").Order("grp").Find(&want).Error)
		if show(&want) != show(&all) {
			t.Errorf("ScanRows into maps: %s, one database %s", show(&all), show(&want))
		}
	})
}

// TestFindOfThousandsOfIDsOverDatabases: Find of thousands of IDs over four
// databases reads each row once, ordered and paged as one database; a list
// of more IDs than one database takes in a statement fails as it fails there,
// or reads them all.
func TestFindOfThousandsOfIDsOverDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &batchItem{})
		rows := make([]batchItem, 4000)
		for i := range rows {
			rows[i] = batchItem{Grp: int64(i % 7), Name: fmt.Sprint(i % 13)}
		}
		start := time.Now()
		must(t, r.db.CreateInBatches(&rows, 500).Error)
		t.Logf("created %d rows in %v", len(rows), time.Since(start))
		ids := make([]int64, 0, len(rows)+2000)
		for i := range rows {
			ids = append(ids, rows[i].ID)
		}
		for i := range 2000 { // repeated IDs, and IDs of no row
			ids = append(ids, rows[i*2].ID)
		}
		start = time.Now()
		var got []batchItem
		must(t, r.db.Find(&got, ids).Error)
		t.Logf("Find of %d IDs: %v", len(ids), time.Since(start))
		if len(got) != len(rows) {
			t.Errorf("Find of %d IDs of %d rows read %d", len(ids), len(rows), len(got))
		}
		seen := map[int64]bool{}
		for _, g := range got {
			if seen[g.ID] {
				t.Errorf("row %d read twice", g.ID)
			}
			seen[g.ID] = true
		}
		var page []batchItem
		must(t, r.db.Where("id IN ?", ids).Order("grp desc, id").Limit(50).Offset(3000).Find(&page).Error)
		sorted := slices.Clone(rows)
		slices.SortFunc(sorted, func(a, b batchItem) int {
			if a.Grp != b.Grp {
				return int(b.Grp - a.Grp)
			}
			return cmp.Compare(a.ID, b.ID)
		})
		if len(page) != 50 {
			t.Fatalf("a page of 50 at 3000: %d rows", len(page))
		}
		for i := range page {
			if page[i].ID != sorted[3000+i].ID {
				t.Fatalf("page row %d: %d, want %d", i, page[i].ID, sorted[3000+i].ID)
			}
		}
		var n int64
		must(t, r.db.Model(&batchItem{}).Where("id IN ?", ids).Where("grp = ?", 3).Count(&n).Error)
		var want int64
		for _, row := range rows {
			if row.Grp == 3 {
				want++
			}
		}
		if n != want {
			t.Errorf("Count of %d IDs: %d, want %d", len(ids), n, want)
		}
		var grps []int64
		must(t, r.db.Model(&batchItem{}).Where("id IN ?", ids).Distinct().Order("grp").Pluck("grp", &grps).Error)
		if len(grps) != 7 {
			t.Errorf("Distinct groups of %d IDs: %v", len(ids), grps)
		}
		// Past the parameter limit of one statement on one database.
		big := slices.Clone(ids)
		for len(big) < 140000 {
			big = append(big, ids...)
		}
		start = time.Now()
		got = nil
		err := r.db.Find(&got, big).Error
		t.Logf("Find of %d IDs: %v, %d rows, %v", len(big), err, len(got), time.Since(start))
		if err == nil && len(got) != len(rows) {
			t.Errorf("Find of %d IDs read %d rows, want %d", len(big), len(got), len(rows))
		}
		var batched []batchItem
		var batch []batchItem
		err = r.db.Where("id IN ?", ids).FindInBatches(&batch, 700, func(tx *gorm.DB, n int) error {
			batched = append(batched, batch...)
			return nil
		}).Error
		if err != nil || len(batched) != len(rows) {
			t.Errorf("FindInBatches of %d IDs: %v, %d rows", len(ids), err, len(batched))
		}
	})
}

// hookedItem fails its BeforeCreate or AfterCreate on a row named so.
type hookedItem struct {
	ID   int64  `shardid:""`
	Name string `gorm:"size:16;not null"`
}

var errHookedRow = errors.New("refused by the row's hook")

func (h *hookedItem) BeforeCreate(*gorm.DB) error {
	if h.Name == "before" {
		return errHookedRow
	}
	return nil
}

func (h *hookedItem) AfterCreate(*gorm.DB) error {
	if h.Name == "after" {
		return errHookedRow
	}
	return nil
}

// TestCreateInBatchesFailingInALaterBatch: CreateInBatches of rows over
// four databases whose third batch fails (a hook before or after its
// INSERT) leaves what one database leaves: nothing in GORM's transaction,
// the batches before with SkipDefaultTransaction; the same slice, fixed,
// retried, writes each row once.
func TestCreateInBatchesFailingInALaterBatch(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &hookedItem{})
		one, err := gorm.Open(b.dialector(t, t.TempDir()), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		must(t, one.Migrator().DropTable(&hookedItem{}))
		must(t, one.AutoMigrate(&hookedItem{}))
		count := func(db *gorm.DB) int64 {
			var n int64
			must(t, db.Session(&gorm.Session{NewDB: true}).Model(&hookedItem{}).Clauses(shardid.AllShards()).Count(&n).Error)
			return n
		}
		for _, failing := range []string{"before", "after"} {
			for _, skip := range []bool{false, true} {
				name := fmt.Sprintf("%s, SkipDefaultTransaction %v", failing, skip)
				sides := map[string]*gorm.DB{"one database": one, "four databases": r.db}
				counts := map[string][2]int64{}
				affected := map[string]int64{}
				for side, db := range sides {
					must(t, db.Session(&gorm.Session{AllowGlobalUpdate: true}).Clauses(shardid.AllShards()).Delete(&hookedItem{}).Error)
					rows := make([]hookedItem, 17)
					for i := range rows {
						rows[i] = hookedItem{Name: fmt.Sprint("r", i)}
					}
					rows[12].Name = failing
					s := db.Session(&gorm.Session{SkipDefaultTransaction: skip})
					res := s.CreateInBatches(&rows, 5)
					if !errors.Is(res.Error, errHookedRow) {
						t.Errorf("%s on %s: %v, want the hook's error", name, side, res.Error)
					}
					affected[side] = res.RowsAffected
					first := count(db)
					rows[12].Name = "fixed"
					err := s.CreateInBatches(&rows, 5).Error
					retried := count(db)
					if skip && err != nil {
						retried = -1 // the batches written before are written again: the key is taken
					}
					if skip && failing == "after" && side == "four databases" {
						first += 5 // one database keeps the failed batch's INSERT; the plugin's own transaction of a batch over several databases rolls it back (routing.md)
					}
					counts[side] = [2]int64{first, retried}
				}
				if affected["one database"] != affected["four databases"] {
					t.Errorf("%s: RowsAffected: one database %d, four databases %d", name, affected["one database"], affected["four databases"])
				}
				if counts["one database"] != counts["four databases"] {
					t.Errorf("%s: rows after the failure and after the retry: one database %v, four databases %v", name, counts["one database"], counts["four databases"])
				}
			}
		}
	})
}

// TestCreateInBatchesFailingInsideTransactions: CreateInBatches whose later
// batch fails, under a shard clause, in a transaction on a shard and in one
// across shards whose callback goes on after the error, writes none of its
// rows, and the transaction's other rows commit, as on one database.
func TestCreateInBatchesFailingInsideTransactions(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &hookedItem{})
		count := func() int64 {
			var n int64
			must(t, r.db.Model(&hookedItem{}).Clauses(shardid.AllShards()).Count(&n).Error)
			return n
		}
		rows := func() []hookedItem {
			rows := make([]hookedItem, 13)
			for i := range rows {
				rows[i] = hookedItem{Name: fmt.Sprint("r", i)}
			}
			rows[11].Name = "after"
			return rows
		}
		list := rows()
		if err := r.db.Clauses(shardid.OnShard(3)).CreateInBatches(&list, 4).Error; !errors.Is(err, errHookedRow) {
			t.Errorf("OnShard CreateInBatches: %v", err)
		}
		if n := count(); n != 0 {
			t.Errorf("OnShard CreateInBatches failed, %d rows written", n)
		}
		for name, c := range map[string]clause.Expression{"OnShard": shardid.OnShard(5), "AcrossShards": shardid.AcrossShards()} {
			var inner error
			err := r.db.Clauses(c).Transaction(func(tx *gorm.DB) error {
				if err := tx.Create(&hookedItem{Name: "kept"}).Error; err != nil {
					return err
				}
				list := rows()
				inner = tx.CreateInBatches(&list, 4).Error
				return tx.Create(&hookedItem{Name: "kept too"}).Error
			})
			if err != nil || !errors.Is(inner, errHookedRow) {
				t.Errorf("%s transaction: %v, CreateInBatches: %v", name, err, inner)
			}
			if n := count(); n != 2 {
				t.Errorf("%s transaction: %d rows written, want the 2 kept", name, n)
			}
			must(t, r.db.Session(&gorm.Session{AllowGlobalUpdate: true}).Clauses(shardid.AllShards()).Delete(&hookedItem{}).Error)
		}
	})
}

// batchOwner and batchChild: children colocated with their owner, read
// with a join along the colocate column.
type batchOwner struct {
	ID   int64  `shardid:""`
	Name string `gorm:"size:16;not null"`
}

type batchChild struct {
	ID      int64 `shardid:"colocate:OwnerID"`
	OwnerID int64
	Owner   batchOwner
	N       int64
	gorm.Model
}

// TestJoinedBatchesOverDatabasesAnswerAsOneDatabase: FindInBatches, pages
// and counts of a model joined with its colocated owner over four
// databases read what one database reads.
func TestJoinedBatchesOverDatabasesAnswerAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &batchOwner{}, &batchChild{})
		one, err := gorm.Open(b.dialector(t, t.TempDir()), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		must(t, one.Migrator().DropTable(&batchOwner{}, &batchChild{}))
		must(t, one.AutoMigrate(&batchOwner{}, &batchChild{}))
		for i := range 8 {
			o := batchOwner{Name: fmt.Sprint("o", i%3)}
			must(t, r.db.Create(&o).Error)
			must(t, one.Create(&o).Error)
			for j := range i % 4 {
				c := batchChild{OwnerID: o.ID, N: int64((i + j) % 5)}
				must(t, r.db.Create(&c).Error)
				c.Owner = batchOwner{}
				must(t, one.Omit("Owner").Create(&c).Error)
			}
		}
		tw := &twin{sharded: r.db.Clauses(shardid.AllShards()).Session(&gorm.Session{}), one: one, model: &batchChild{}}
		kids := func() any { return &[]batchChild{} }
		c := func(name string, q func(db *gorm.DB, into any) *gorm.DB, into func() any) {
			t.Helper()
			check(t, tw, name, q, into)
		}
		c("Joins FindInBatches", func(db *gorm.DB, into any) *gorm.DB {
			var batch []batchChild
			all := into.(*[]batchChild)
			return db.Joins("Owner").FindInBatches(&batch, 3, func(tx *gorm.DB, n int) error {
				*all = append(*all, batch...)
				return nil
			})
		}, kids)
		c("Joins ordered pages", func(db *gorm.DB, into any) *gorm.DB {
			all := into.(*[]batchChild)
			var r *gorm.DB
			for off := 0; off < 14; off += 3 {
				var page []batchChild
				r = db.Session(&gorm.Session{}).Joins("Owner").Order("n desc").Order("batch_children.id").Limit(3).Offset(off).Find(&page)
				if r.Error != nil {
					return r
				}
				*all = append(*all, page...)
			}
			return r
		}, kids)
		c("Joins where Count", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&batchChild{}).Joins("Owner").Where("Owner.name = ?", "o1").Count(into.(*int64))
		}, number)
		c("Joins First", func(db *gorm.DB, into any) *gorm.DB { return db.Joins("Owner").First(into) }, func() any { return &batchChild{} })
		c("Joins Last", func(db *gorm.DB, into any) *gorm.DB { return db.Joins("Owner").Last(into) }, func() any { return &batchChild{} })
		c("Preload FindInBatches ordered", func(db *gorm.DB, into any) *gorm.DB {
			var batch []batchChild
			all := into.(*[]batchChild)
			return db.Preload("Owner").Order("n").FindInBatches(&batch, 4, func(tx *gorm.DB, n int) error {
				*all = append(*all, batch...)
				return nil
			})
		}, kids)
		c("InnerJoins Group", func(db *gorm.DB, into any) *gorm.DB {
			return db.Model(&batchChild{}).InnerJoins("Owner").Select("Owner.name AS name, count(*) AS n").Group("Owner.name").Order("Owner.name").Find(into)
		}, rowMaps)
	})
}

// TestFindInBatchesInATransactionAcrossShards: FindInBatches over every
// database in a transaction across shards, saving each batch through the
// callback's tx, commits every batch's rows with the transaction, or none
// when it rolls back.
func TestFindInBatchesInATransactionAcrossShards(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		tw := newBatchTwin(t, b, 19)
		var total int64
		must(t, tw.sharded.Model(&batchItem{}).Count(&total).Error)
		for _, fail := range []bool{true, false} {
			var seen int64
			err := tw.sharded.Session(&gorm.Session{NewDB: true}).Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				var batch []batchItem
				r := tx.Clauses(shardid.AllShards()).FindInBatches(&batch, 4, func(btx *gorm.DB, n int) error {
					seen += int64(len(batch))
					for i := range batch {
						batch[i].Name = fmt.Sprint("t", n)
					}
					return btx.Save(&batch).Error
				})
				if r.Error != nil {
					return r.Error
				}
				if fail {
					return errors.New("rolled back")
				}
				return nil
			})
			if fail != (err != nil) || seen != total {
				t.Fatalf("fail %v: %v, %d of %d rows seen", fail, err, seen, total)
			}
			var renamed int64
			must(t, tw.sharded.Model(&batchItem{}).Where("name LIKE ?", "t%").Count(&renamed).Error)
			if want := map[bool]int64{true: 0, false: total}[fail]; renamed != want {
				t.Errorf("fail %v: %d rows renamed, want %d", fail, renamed, want)
			}
		}
	})
}

// TestOrderByAColumnNotSelectedIsRefusedOverDatabases: rows ordered by a
// column the query does not select, which the merge cannot read (First and
// Last order by the key), are refused over several databases, naming the
// column, rather than merged out of order.
func TestOrderByAColumnNotSelectedIsRefusedOverDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newBatchTwin(t, b, 9)
		refused := func(name string, q func(db *gorm.DB, into any) *gorm.DB, into func() any) {
			t.Helper()
			tw.refused(t, name, q, into)
			if err := q(tw.one.Model(tw.model), into()).Error; err != nil {
				t.Errorf("%s on one database: %v", name, err)
			}
		}
		one := func() any { return &batchItem{} }
		refused("FindInBatches omitting the key", func(db *gorm.DB, into any) *gorm.DB { return collectBatches(db.Omit("id"), into, 40) }, batchItems)
		refused("ordered by the key not selected", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("name", "grp").Order("id desc").Limit(9).Find(into)
		}, batchItems)
		refused("into maps", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("name", "grp").Order("id desc").Limit(9).Find(into)
		}, rowMaps)
		refused("ordered by another column not selected", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("id", "name").Order("score desc, id").Find(into)
		}, batchItems)
		refused("First", func(db *gorm.DB, into any) *gorm.DB { return db.Select("name").First(into) }, one)
		refused("Last", func(db *gorm.DB, into any) *gorm.DB { return db.Select("name").Last(into) }, one)
		refused("Pluck of another column", func(db *gorm.DB, into any) *gorm.DB { return db.Order("id desc").Limit(3).Pluck("name", into) }, strs)
	})
}

// TestMapDestinationsOverDatabasesFilledAsGORMFillsThem: a read over
// several databases into a slice of maps appends to what it holds, and one
// into a map given by value fills that map, as GORM's Scan does on one
// database.
func TestMapDestinationsOverDatabasesFilledAsGORMFillsThem(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newBatchTwin(t, b, 15)
		tw.same(t, "Find into filled maps", func(db *gorm.DB, into any) *gorm.DB { return db.Order("id").Limit(2).Find(into) }, func() any { return &[]map[string]any{{"kept": 1}} })
		filledMaps := func() any { return &[]map[string]any{{"kept": 1}} }
		tw.same(t, "Find of none into filled maps", func(db *gorm.DB, into any) *gorm.DB { return db.Where("grp = ?", 9).Find(into) }, filledMaps)
		tw.same(t, "Find into filled maps, unordered", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("name").Where("grp = ? AND score = ?", 2, 0).Find(into)
		}, filledMaps)
		tw.same(t, "groups into filled maps", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("grp, count(*) AS n").Group("grp").Order("grp").Find(into)
		}, filledMaps)
		tw.same(t, "distinct into filled maps", func(db *gorm.DB, into any) *gorm.DB { return db.Distinct("grp").Order("grp").Find(into) }, filledMaps)
		tw.same(t, "Scan of groups into filled maps", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("grp, count(*) AS n").Group("grp").Order("grp").Scan(into)
		}, filledMaps)
		tw.same(t, "First into a map value", func(db *gorm.DB, into any) *gorm.DB { return db.First(*into.(*map[string]any)) }, func() any { return &map[string]any{"kept": 1} })
		tw.same(t, "Find into a map value", func(db *gorm.DB, into any) *gorm.DB {
			return db.Order("id desc").Limit(2).Find(*into.(*map[string]any))
		}, func() any { return &map[string]any{} })
		tw.same(t, "groups into a map value", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("count(*) AS n, max(name) AS hi").Find(*into.(*map[string]any))
		}, func() any { return &map[string]any{"kept": 1} })
		tw.same(t, "Find of none into a map value", func(db *gorm.DB, into any) *gorm.DB { return db.Where("grp = ?", 9).Find(*into.(*map[string]any)) }, func() any { return &map[string]any{"kept": 1} })
	})
}

// hOwner's kids are created with it, colocated; a kid named "before" fails
// its BeforeCreate.
type hOwner struct {
	ID   int64 `shardid:""`
	Name string
	Kids []hKid
}

type hKid struct {
	ID       int64 `shardid:"colocate:HOwnerID"`
	HOwnerID int64
	Name     string
}

func (k *hKid) BeforeCreate(*gorm.DB) error {
	if k.Name == "before" {
		return errHookedRow
	}
	return nil
}

// TestCreateInBatchesWithChildrenFailingInALaterBatch: CreateInBatches of
// owners over four databases with their children, a child of the third
// batch refused by its hook, writes no owner and no child, as one database.
func TestCreateInBatchesWithChildrenFailingInALaterBatch(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &hOwner{}, &hKid{})
		owners := make([]hOwner, 11)
		for i := range owners {
			owners[i] = hOwner{Name: fmt.Sprint("o", i), Kids: []hKid{{Name: "a"}, {Name: "b"}}}
		}
		owners[9].Kids[1].Name = "before"
		if err := r.db.CreateInBatches(&owners, 4).Error; !errors.Is(err, errHookedRow) {
			t.Fatalf("CreateInBatches: %v, want the hook's error", err)
		}
		if n, k := r.count(t, &hOwner{}), r.count(t, &hKid{}); n != 0 || k != 0 {
			t.Errorf("the failed CreateInBatches left %d owners and %d kids", n, k)
		}
		owners[9].Kids[1].Name = "fixed"
		must(t, r.db.CreateInBatches(&owners, 4).Error)
		var n, k int64
		must(t, r.db.Model(&hOwner{}).Clauses(shardid.AllShards()).Count(&n).Error)
		must(t, r.db.Model(&hKid{}).Clauses(shardid.AllShards()).Count(&k).Error)
		if n != 11 || k != 22 {
			t.Errorf("retried: %d owners and %d kids, want 11 and 22", n, k)
		}
		for _, o := range owners {
			for _, k := range o.Kids {
				if got := r.where(t, &hKid{}, k.ID); len(got) != 1 || got[0] != r.physicalOf(o.ID) {
					t.Errorf("kid %d of owner %d (on %d) is on %v", k.ID, o.ID, r.physicalOf(o.ID), got)
				}
			}
		}
	})
}

// TestCountDistinctBesideGroupsIsRefusedOverDatabases: COUNT(DISTINCT col)
// grouped or beside other items, which the merge does not count per group,
// is refused over several databases rather than summed.
func TestCountDistinctBesideGroupsIsRefusedOverDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newBatchTwin(t, b, 9)
		tw.refused(t, "Distinct Group Count", func(db *gorm.DB, into any) *gorm.DB { return db.Distinct("name").Group("grp").Count(into.(*int64)) }, number)
		tw.refused(t, "count distinct per group", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("grp, count(distinct name) AS n").Group("grp").Find(into)
		}, rowMaps)
		tw.refused(t, "count distinct beside count", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("count(distinct name) AS a, count(*) AS b").Find(into)
		}, rowMaps)
	})
}

// TestFindInBatchesDeletingEachBatchOverDatabases: FindInBatches whose
// callback deletes its batch (soft, then for good) leaves what one
// database leaves.
func TestFindInBatchesDeletingEachBatchOverDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		tw := newBatchTwin(t, b, 21)
		for _, unscoped := range []bool{false, true} {
			run := func(db *gorm.DB) (int64, []int64, error) {
				var batch []batchItem
				r := db.Where("grp <> ?", 1).FindInBatches(&batch, 4, func(tx *gorm.DB, n int) error {
					if unscoped {
						tx = tx.Unscoped()
					}
					return tx.Delete(&batch).Error
				})
				var ids []int64
				if err := db.Session(&gorm.Session{}).Model(&batchItem{}).Unscoped().Where("deleted_at IS NULL").Order("id").Pluck("id", &ids).Error; err != nil {
					return 0, nil, err
				}
				var all int64
				if err := db.Session(&gorm.Session{}).Model(&batchItem{}).Unscoped().Count(&all).Error; err != nil {
					return 0, nil, err
				}
				return r.RowsAffected*1000 + all, ids, r.Error
			}
			wn, want, werr := run(tw.one)
			gn, got, gerr := run(tw.sharded)
			if werr != nil || gerr != nil || wn != gn || !slices.Equal(want, got) {
				t.Errorf("unscoped %v: one database %v, %d, %v; every shard %v, %d, %v", unscoped, werr, wn, want, gerr, gn, got)
			}
		}
	})
}

// TestCreateInBatchesRefusedInALaterBatch: CreateInBatches of colocated
// rows over four databases whose third batch holds a row the plugin refuses
// (a preset ID of another shard than its owner's) writes no row.
func TestCreateInBatchesRefusedInALaterBatch(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		authors := r.onEvery(t)
		books := make([]book, 13)
		for i := range books {
			books[i] = book{AuthorID: authors[i%len(authors)].ID, Title: fmt.Sprint("b", i)}
		}
		books[10].ID = shardid.ID(r.idOfShardOf(authors[(10+1)%len(authors)].ID))
		if err := r.db.CreateInBatches(&books, 4).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Fatalf("CreateInBatches: %v, want ErrCrossShard", err)
		}
		var n int64
		must(t, r.db.Model(&book{}).Clauses(shardid.AllShards()).Count(&n).Error)
		if n != 0 {
			t.Errorf("the refused CreateInBatches left %d books", n)
		}
	})
}
