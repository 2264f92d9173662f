package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// TestAssociationsOfASharedOwner: has-many association operations on a
// sharded owner with colocated children run on the owner's database, and a
// refused one writes nothing.
func TestAssociationsOfAShardedOwner(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		_, x, y := k.spreadAuthors(t, func() author { return author{Name: "a"} })
		owner := x
		must(t, k.db.Model(&owner).Association("Books").Append(&book{Title: "appended"}))
		if n := k.db.Model(&owner).Association("Books").Count(); n != 1 {
			t.Fatalf("Count after Append: %d", n)
		}
		var books []book
		must(t, k.db.Model(&owner).Association("Books").Find(&books))
		if len(books) != 1 || books[0].AuthorID != x.ID {
			t.Fatalf("Find: %+v", books)
		}
		k.mustBeOnItsShard(t, &book{}, int64(books[0].ID))
		if k.physicalOf(int64(books[0].ID)) != k.physicalOf(x.ID) {
			t.Fatal("the appended book is not beside its author")
		}
		must(t, k.db.Model(&owner).Association("Books").Replace(&book{Title: "replacing"}))
		books = nil
		must(t, k.db.Model(&owner).Association("Books").Find(&books))
		if len(books) != 1 || books[0].Title != "replacing" {
			t.Fatalf("Find after Replace: %+v", books)
		}
		// A book of another author's shard cannot join this one.
		other := book{AuthorID: y.ID, Title: "elsewhere"}
		must(t, k.db.Create(&other).Error)
		k.refused(t, shardid.ErrCrossShard, []any{&author{}, &book{}}, map[string]func() error{
			"Replace with a book of another shard": func() error {
				return k.db.Model(&owner).Association("Books").Replace(&book{Title: "new"}, &other)
			},
			"Append of a book of another shard": func() error { return k.db.Model(&owner).Association("Books").Append(&other) },
		})
		must(t, k.db.Model(&owner).Association("Books").Delete(&books[0]))
		must(t, k.db.Model(&owner).Association("Books").Clear())
		if n := k.db.Model(&owner).Association("Books").Count(); n != 0 {
			t.Fatalf("Count after Clear: %d", n)
		}
		if err := k.db.Model(&owner).Association("Books").Append(&other); err == nil || !errors.Is(err, shardid.ErrCrossShard) {
			t.Fatalf("Append across shards: %v", err)
		}
	})
}

// Models of the many2many suite: a sharded reader has unsharded tags; the
// join rows live beside the reader, the tags on the plugin's database.
type (
	tag struct {
		ID   int64
		Name string
	}
	reader struct {
		ID   int64 `shardid:""`
		Name string
		Tags []tag `gorm:"many2many:reader_tags"`
	}
)

func TestManyToManyOfAShardedOwner(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		for _, d := range k.direct {
			must(t, d.Migrator().DropTable("reader_tags"))
		}
		fresh(t, k.db, &tag{}, &reader{})
		tags := []tag{{Name: "go"}, {Name: "sql"}, {Name: "db"}}
		must(t, k.db.Create(&tags).Error)
		readers := make([]reader, 12)
		must(t, k.db.Create(&readers).Error)
		x := readers[0]
		y := readers[slices.IndexFunc(readers, func(r reader) bool { return k.physicalOf(r.ID) != k.physicalOf(x.ID) })]
		joinRows := func() []int64 { // per physical database
			t.Helper()
			counts := make([]int64, len(k.direct))
			for i, d := range k.direct {
				must(t, d.Table("reader_tags").Count(&counts[i]).Error)
			}
			return counts
		}
		onlyOn := func(what string, physical int, want int64) {
			t.Helper()
			for i, n := range joinRows() {
				if i == physical && n != want || i != physical && n != 0 {
					t.Fatalf("%s: %v join rows per database, want %d on %d only", what, joinRows(), want, physical)
				}
			}
		}
		// Existing tags are linked with Omit("Tags.*"): the join rows go beside the reader.
		must(t, k.db.Model(&x).Omit("Tags.*").Association("Tags").Append(&tags[0], &tags[1]))
		onlyOn("Append", k.physicalOf(x.ID), 2)
		var back reader
		must(t, k.db.Preload("Tags").First(&back, x.ID).Error)
		if len(back.Tags) != 2 {
			t.Fatalf("Preload of the tags: %+v", back.Tags)
		}
		var all []reader
		must(t, k.db.Clauses(shardid.AllShards()).Preload("Tags").Find(&all).Error)
		if i := slices.IndexFunc(all, func(r reader) bool { return r.ID == x.ID }); i < 0 || len(all[i].Tags) != 2 {
			t.Fatalf("Preload of the tags from a fan-out")
		}
		must(t, k.db.Model(&x).Association("Tags").Delete(&tags[0]))
		onlyOn("Delete", k.physicalOf(x.ID), 1)
		must(t, k.db.Model(&x).Omit("Tags.*").Association("Tags").Replace(&tags[2]))
		onlyOn("Replace", k.physicalOf(x.ID), 1)
		back = reader{}
		must(t, k.db.Preload("Tags").First(&back, x.ID).Error)
		if len(back.Tags) != 1 || back.Tags[0].Name != "db" {
			t.Fatalf("after Replace: %+v", back.Tags)
		}
		// Reading the tags through the join table would join across databases: refused.
		association := k.db.Model(&x).Association("Tags")
		var found []tag
		if err := association.Find(&found); !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("Association Find: got %v, want ErrCrossShard", err)
		}
		if n := association.Count(); n != 0 || !errors.Is(association.Error, shardid.ErrCrossShard) {
			t.Errorf("Association Count: %d, %v; want ErrCrossShard", n, association.Error)
		}
		if err := k.db.Joins("JOIN reader_tags ON reader_tags.tag_id = tags.id").Find(&found).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("an unsharded query joining the join rows in SQL: got %v, want ErrCrossShard", err)
		}
		// The owner's own join rows are beside it: a join of them runs there.
		var linked []reader
		must(t, k.db.Joins("JOIN reader_tags ON reader_tags.reader_id = readers.id").Where("readers.id = ?", x.ID).Find(&linked).Error)
		if len(linked) != 1 {
			t.Fatalf("a join of the owner's join rows: %d rows, want 1", len(linked))
		}
		// New tags saved with a sharded reader would be written in the reader's
		// transaction, on its shard: refused, and nothing written.
		k.refused(t, shardid.ErrCrossShard, []any{&tag{}, &reader{}}, map[string]func() error{
			"Append of a new tag":          func() error { return k.db.Model(&y).Association("Tags").Append(&tag{Name: "new"}) },
			"Create of a reader with tags": func() error { return k.db.Create(&reader{Tags: []tag{{Name: "new"}}}).Error },
		})
		onlyOn("after the refusals", k.physicalOf(x.ID), 1)
		// A reader created with existing tags gets its join rows on its shard.
		z := reader{Name: "z", Tags: []tag{tags[0]}}
		must(t, k.db.Omit("Tags.*").Create(&z).Error)
		var n int64
		must(t, k.direct[k.physicalOf(z.ID)].Table("reader_tags").Where("reader_id = ?", z.ID).Count(&n).Error)
		if n != 1 {
			t.Fatalf("the new reader's join row is not on its shard")
		}
		must(t, k.db.Model(&x).Association("Tags").Clear())
		must(t, k.direct[k.physicalOf(x.ID)].Table("reader_tags").Where("reader_id = ?", x.ID).Count(&n).Error)
		if n != 0 {
			t.Fatalf("Clear left %d join rows", n)
		}
	})
}

// Models of the many2many of sharded targets: a shelf and the volumes it
// lists, each volume on a shard of its own.
type (
	shelf struct {
		ID      int64    `shardid:""`
		Volumes []volume `gorm:"many2many:shelf_volumes"`
	}
	volume struct {
		ID    int64 `shardid:""`
		Title string
	}
)

// A many2many whose targets are sharded too keeps its join rows beside the
// owner, whichever database each target is on: linking, preloading and
// unlinking a target of another database works as for one of the owner's.
func TestManyToManyOfShardedTargets(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		for _, d := range k.direct {
			must(t, d.Migrator().DropTable("shelf_volumes"))
		}
		fresh(t, k.db, &volume{}, &shelf{})
		owner := shelf{}
		must(t, k.db.Create(&owner).Error)
		home := k.physicalOf(owner.ID)
		var volumes []volume
		onHome := func(v volume) bool { return k.physicalOf(v.ID) == home }
		for i := 0; i < 400 && (!slices.ContainsFunc(volumes, onHome) || !slices.ContainsFunc(volumes, func(v volume) bool { return !onHome(v) })); i++ {
			v := volume{Title: fmt.Sprint("v", i)} // until one is on the owner's database and one on another
			must(t, k.db.Create(&v).Error)
			volumes = append(volumes, v)
		}
		near := volumes[slices.IndexFunc(volumes, onHome)]
		far := volumes[slices.IndexFunc(volumes, func(v volume) bool { return !onHome(v) })]
		joinRowsOf := func(id int64) []int64 { // per physical database
			t.Helper()
			counts := make([]int64, len(k.direct))
			for i, d := range k.direct {
				must(t, d.Table("shelf_volumes").Where("shelf_id = ?", id).Count(&counts[i]).Error)
			}
			return counts
		}
		besideOwner := func(what string, id int64, want int64) {
			t.Helper()
			for i, n := range joinRowsOf(id) {
				if i == k.physicalOf(id) && n != want || i != k.physicalOf(id) && n != 0 {
					t.Fatalf("%s: %v join rows per database, want %d on %d only", what, joinRowsOf(id), want, k.physicalOf(id))
				}
			}
		}
		must(t, k.db.Model(&owner).Omit("Volumes.*").Association("Volumes").Append(&near, &far))
		besideOwner("Append of a near and a far volume", owner.ID, 2)
		var back shelf
		must(t, k.db.Preload("Volumes").First(&back, owner.ID).Error)
		titles := []string{}
		for _, v := range back.Volumes {
			titles = append(titles, v.Title)
		}
		slices.Sort(titles)
		if want := []string{near.Title, far.Title}; !slices.Equal(titles, want) && !slices.Equal(titles, []string{far.Title, near.Title}) {
			t.Fatalf("Preload of the volumes: %v, want %v", titles, want)
		}
		must(t, k.db.Model(&owner).Association("Volumes").Delete(&far))
		besideOwner("Delete of the far volume", owner.ID, 1)
		created := shelf{Volumes: []volume{near, far}}
		must(t, k.db.Omit("Volumes.*").Create(&created).Error)
		besideOwner("Create of a shelf with existing volumes", created.ID, 2)
	})
}

// Models of the has-one suite: a badgeCard colocated with its holder.
type (
	holder struct {
		ID   int64 `shardid:""`
		Card *badgeCard
	}
	badgeCard struct {
		ID       int64 `shardid:"colocate:HolderID"`
		HolderID int64
		Number   string
	}
)

func TestHasOneAndBelongsToOfAShardedModel(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		fresh(t, k.db, &holder{}, &badgeCard{}, &imprint{}, &pseudonym{})
		holders := make([]holder, 12)
		must(t, k.db.Create(&holders).Error)
		h := holders[0]
		far := holders[slices.IndexFunc(holders, func(o holder) bool { return k.physicalOf(o.ID) != k.physicalOf(h.ID) })]
		// has-one: Append is Replace; the replaced badgeCard keeps its row, orphaned (NULL names no shard).
		must(t, k.db.Model(&h).Association("Card").Append(&badgeCard{Number: "1"}))
		must(t, k.db.Model(&h).Association("Card").Replace(&badgeCard{Number: "2"}))
		if n := k.db.Model(&h).Association("Card").Count(); n != 1 {
			t.Fatalf("has-one Count: %d", n)
		}
		var c badgeCard
		must(t, k.db.Model(&h).Association("Card").Find(&c))
		if c.Number != "2" || k.physicalOf(c.ID) != k.physicalOf(h.ID) {
			t.Fatalf("has-one Find: %+v", c)
		}
		var cards int64
		must(t, k.direct[k.physicalOf(h.ID)].Model(&badgeCard{}).Count(&cards).Error)
		if cards != 2 {
			t.Fatalf("the holder's database has %d cards, want 2 (one orphaned)", cards)
		}
		farCard := badgeCard{HolderID: far.ID, Number: "far"}
		must(t, k.db.Create(&farCard).Error)
		k.refused(t, shardid.ErrCrossShard, []any{&holder{}, &badgeCard{}}, map[string]func() error{
			"has-one Replace with a badgeCard of another shard": func() error { return k.db.Model(&h).Association("Card").Replace(&farCard) },
		})
		must(t, k.db.Model(&h).Association("Card").Delete(&c))
		must(t, k.db.Model(&h).Association("Card").Clear())
		if n := k.db.Model(&h).Association("Card").Count(); n != 0 {
			t.Fatalf("has-one Count after Clear: %d", n)
		}

		// belongs-to an unsharded model: read on the plugin's database; a new
		// parent saved through the sharded child would be written in the child's
		// transaction on its shard: refused, and nothing written.
		im := imprint{Name: "first"}
		must(t, k.db.Create(&im).Error)
		ps := pseudonym{Name: "p", ImprintID: im.ID}
		must(t, k.db.Create(&ps).Error)
		var got imprint
		must(t, k.db.Model(&ps).Association("Imprint").Find(&got))
		if got.Name != "first" {
			t.Fatalf("belongs-to Find: %+v", got)
		}
		if n := k.db.Model(&ps).Association("Imprint").Count(); n != 1 {
			t.Fatalf("belongs-to Count: %d", n)
		}
		k.refused(t, shardid.ErrCrossShard, []any{&imprint{}, &pseudonym{}}, map[string]func() error{
			"belongs-to Replace with a new unsharded parent": func() error {
				return k.db.Model(&ps).Association("Imprint").Replace(&imprint{Name: "new"})
			},
		})
	})
}

// Models of the preload-everything suite: an unsharded crew has many sharded
// sailors, so GORM gives sailor a relation back to crew's has-many, which
// Preload(clause.Associations) leaves out.
type (
	crew struct {
		ID      int64
		Name    string
		Sailors []sailor `gorm:"foreignKey:CrewID"`
	}
	sailor struct {
		ID     int64 `shardid:""`
		Name   string
		CrewID int64
		Crew   crew
	}
)

// TestPreloadAssociationsOverSeveralDatabases: Preload(clause.Associations)
// over several databases preloads the relations GORM's expansion names, as
// on one database, and no back-relation another model's has-many adds.
func TestPreloadAssociationsOverSeveralDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		fresh(t, k.db, &crew{}, &sailor{})
		c := crew{Name: "blue"}
		must(t, k.db.Create(&c).Error)
		sailors := make([]sailor, 8)
		shards := shardid.Layout{}.ShardCount()
		for i := range sailors { // spread over the logical shards, so over every database
			sailors[i] = sailor{Name: "s", CrewID: c.ID}
			must(t, k.db.Clauses(shardid.OnShard(i*shards/len(sailors))).Create(&sailors[i]).Error)
		}
		if k.physicalOf(sailors[0].ID) == k.physicalOf(sailors[len(sailors)-1].ID) {
			t.Fatal("the sailors are on one database")
		}
		var got []sailor
		must(t, k.db.Clauses(shardid.AllShards()).Preload(clause.Associations).Find(&got).Error)
		if len(got) != len(sailors) {
			t.Fatalf("%d sailors, want %d", len(got), len(sailors))
		}
		for _, s := range got {
			if s.Crew.Name != "blue" {
				t.Fatalf("sailor %d preloaded crew %+v, want blue", s.ID, s.Crew)
			}
		}
	})
}

// Models of a many2many between two sharded models.
type (
	voyage struct {
		ID    int64  `shardid:""`
		Ports []port `gorm:"many2many:voyage_ports"`
	}
	port struct {
		ID   int64 `shardid:""`
		Name string
	}
)

// TestAssociationFindBetweenShardedModelsSaysUsePreload: Association Find and
// Count of a many2many whose target is sharded join the target with the join
// rows, which are on the owner's database while the targets may be on
// others: refused with ErrCrossShard pointing to Preload, which works.
func TestAssociationFindBetweenShardedModelsSaysUsePreload(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		fresh(t, k.db, &voyage{}, &port{})
		v, p := voyage{}, port{Name: "lisbon"}
		must(t, k.db.Clauses(shardid.OnShard(0)).Create(&v).Error)
		must(t, k.db.Clauses(shardid.OnShard(0)).Create(&p).Error)
		must(t, k.db.Model(&v).Omit("Ports.*").Association("Ports").Append(&p))
		var ports []port
		if err := k.db.Model(&v).Association("Ports").Find(&ports); !errors.Is(err, shardid.ErrCrossShard) || !strings.Contains(err.Error(), "Preload") {
			t.Errorf("Association Find: %v, want ErrCrossShard pointing to Preload", err)
		}
		a := k.db.Model(&v).Association("Ports")
		if a.Count(); !errors.Is(a.Error, shardid.ErrCrossShard) {
			t.Errorf("Association Count: %v, want ErrCrossShard", a.Error)
		}
		var back voyage
		must(t, k.db.Preload("Ports").First(&back, v.ID).Error)
		if len(back.Ports) != 1 || back.Ports[0].Name != "lisbon" {
			t.Fatalf("Preload: %+v", back.Ports)
		}
	})
}

// TestAssociationsOfOwnersOnSeveralDatabases: Find, Count, Append and Clear of
// a slice of owners on two databases read and write each owner's children
// beside it; an Append whose second owner is refused leaves the first saved
// (GORM saves one owner at a time), and in a transaction across shards
// nothing.
func TestAssociationsOfOwnersOnSeveralDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		_, x, y := k.spreadAuthors(t, func() author { return author{Name: "a"} })
		booksOf := func(a author) int64 { return k.count(t, &book{}, "author_id = ?", a.ID) }
		owners := func() []author { return []author{{ID: x.ID}, {ID: y.ID}} }
		two := owners()
		must(t, k.db.Model(&two).Association("Books").Append(&book{Title: "x1"}, &book{Title: "y1"}))
		for _, a := range []author{x, y} {
			var bk book
			must(t, k.db.Where("author_id = ?", a.ID).First(&bk).Error)
			k.mustBeOnItsShard(t, &book{}, int64(bk.ID))
			if k.physicalOf(int64(bk.ID)) != k.physicalOf(a.ID) {
				t.Fatalf("the book of author %d is not beside it", a.ID)
			}
		}
		var found []book
		must(t, k.db.Model(&two).Association("Books").Find(&found))
		if n := k.db.Model(&two).Association("Books").Count(); len(found) != 2 || n != 2 {
			t.Fatalf("Find %d books, Count %d; want 2", len(found), n)
		}
		// y is given a book whose ID is of x's shard: refused.
		wrong := func() *book { return &book{ID: shardid.ID(k.idOfShardOf(x.ID)), Title: "wrong"} }
		if b.atomicity() == shardid.TwoPhaseCommit {
			err := k.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				two := owners()
				return tx.Model(&two).Association("Books").Append(&book{Title: "x2"}, wrong())
			})
			if !errors.Is(err, shardid.ErrCrossShard) || booksOf(x) != 1 || booksOf(y) != 1 {
				t.Fatalf("Append across shards: %v, %d and %d books; want ErrCrossShard, 1 and 1", err, booksOf(x), booksOf(y))
			}
		}
		two = owners()
		if err := k.db.Model(&two).Association("Books").Append(&book{Title: "x3"}, wrong()); !errors.Is(err, shardid.ErrCrossShard) || booksOf(x) != 2 || booksOf(y) != 1 {
			t.Fatalf("Append: %v, %d and %d books; want ErrCrossShard, x's saved (2) and y's not (1)", err, booksOf(x), booksOf(y))
		}
		two = owners()
		must(t, k.db.Model(&two).Association("Books").Clear())
		if booksOf(x) != 0 || booksOf(y) != 0 || k.count(t, &book{}, "author_id IS NULL") != 3 {
			t.Fatalf("Clear left books linked")
		}
	})
}
