package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// Models of the routing suite.
type (
	author struct {
		ID    int64 `shardid:""`
		Name  string
		Books []book
	}
	book struct {
		ID       shardid.ID `shardid:"colocate:AuthorID"`
		AuthorID int64
		Title    string
	}
	tenant struct {
		ID   int64 `shardid:"strategy:snowflake;hash:Code"`
		Code string
	}
	setting struct { // unsharded: lives on the plugin's own database
		ID    int64
		Value string
	}
)

// routing is one backend set up with physicalShards physical databases.
type routing struct {
	b      backend
	db     *gorm.DB   // with the plugin
	direct []*gorm.DB // the physical databases, without the plugin
	plugin *shardid.Plugin
}

func newRouting(t *testing.T, b backend) *routing {
	t.Helper()
	return newRoutingWith(t, b, shardid.Config{})
}

// newRoutingWith is newRouting with cfg, its Shards and Atomic the rig's.
func newRoutingWith(t *testing.T, b backend, cfg shardid.Config) *routing {
	t.Helper()
	dir := t.TempDir()
	main, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Shards, cfg.Atomic = shards(t, b, dir), b.atomicity()
	p := shardid.New(cfg)
	firstStart(t, main)
	if err := main.Use(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	r := &routing{b: b, db: main, direct: direct(t, b, dir), plugin: p}
	fresh(t, main, &author{}, &book{}, &tenant{}, &setting{})
	return r
}

// physicalOf is where an ID's row must be: the map in shards() gives each
// physical database an equal run of logical shards.
func (r *routing) physicalOf(id int64) int {
	return r.plugin.Layout().Shard(id) * physicalShards / r.plugin.Layout().ShardCount()
}

// where returns the physical databases holding a row of model with id.
func (r *routing) where(t *testing.T, model any, id int64) []int {
	t.Helper()
	var found []int
	for i, db := range r.direct {
		var n int64
		if err := db.Model(model).Where("id = ?", id).Count(&n).Error; err != nil {
			t.Fatalf("physical %d: %v", i, err)
		}
		if n > 0 {
			found = append(found, i)
		}
	}
	return found
}

// spreadAuthors creates 40 authors made by newAuthor, spread over the
// physical databases, and returns them with two that are on different ones.
func (r *routing) spreadAuthors(t *testing.T, newAuthor func() author) (all []author, x, y author) {
	t.Helper()
	all = make([]author, 40)
	for i := range all {
		all[i] = newAuthor()
	}
	if err := r.db.Create(&all).Error; err != nil {
		t.Fatal(err)
	}
	x = all[0]
	y = all[slices.IndexFunc(all, func(a author) bool { return r.physicalOf(a.ID) != r.physicalOf(x.ID) })]
	return all, x, y
}

// mustBeOnItsShard fails unless the row with id is on exactly the physical
// database its shard bits name.
func (r *routing) mustBeOnItsShard(t *testing.T, model any, id int64) {
	t.Helper()
	if got, want := r.where(t, model, id), []int{r.physicalOf(id)}; !slices.Equal(got, want) {
		t.Fatalf("%T %d is on physical %v, want %v", model, id, got, want)
	}
}

func TestRoutingWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		a := author{Name: "one", Books: []book{{Title: "b1"}, {Title: "b2"}}}
		if err := r.db.Create(&a).Error; err != nil {
			t.Fatal(err)
		}
		r.mustBeOnItsShard(t, &author{}, a.ID)
		for _, bk := range a.Books {
			r.mustBeOnItsShard(t, &book{}, int64(bk.ID))
			if r.physicalOf(int64(bk.ID)) != r.physicalOf(a.ID) {
				t.Fatal("a colocated book is not beside its author")
			}
		}

		// 1,000 rows spread over the four databases: each on its own, none lost, none twice.
		many := make([]author, 1000)
		for i := range many {
			many[i].Name = "many"
		}
		if err := r.db.Create(&many).Error; err != nil {
			t.Fatal(err)
		}
		perPhysical := make([]int64, physicalShards)
		for _, m := range many {
			perPhysical[r.physicalOf(m.ID)]++
		}
		for i, db := range r.direct {
			var n int64
			db.Model(&author{}).Where("name = ?", "many").Count(&n)
			if n != perPhysical[i] || n == 0 {
				t.Fatalf("physical %d holds %d rows, want %d", i, n, perPhysical[i])
			}
		}
		var ids []int64
		for _, db := range r.direct {
			var part []int64
			db.Model(&author{}).Where("name = ?", "many").Pluck("id", &part)
			for _, id := range part {
				if r.physicalOf(id) != slices.Index(r.direct, db) {
					t.Fatalf("row %d is on the wrong physical database", id)
				}
			}
			ids = append(ids, part...)
		}
		slices.Sort(ids)
		if len(slices.Compact(ids)) != 1000 {
			t.Fatalf("%d distinct rows, want 1000", len(ids))
		}

		// CreateInBatches splits every batch: with GORM's default transactions
		// (and the transaction GORM opens around its batches), without them,
		// and in one batch.
		batches := make([]author, 90)
		if err := r.db.CreateInBatches(&batches, 40).Error; err != nil {
			t.Fatal(err)
		}
		unwrapped := make([]author, 90)
		if err := r.db.Session(&gorm.Session{SkipDefaultTransaction: true}).CreateInBatches(&unwrapped, 40).Error; err != nil {
			t.Fatal(err)
		}
		one := make([]author, 30)
		if err := r.db.CreateInBatches(&one, 40).Error; err != nil {
			t.Fatal(err)
		}
		batches = append(append(batches, unwrapped...), one...)
		for _, bt := range batches {
			r.mustBeOnItsShard(t, &author{}, bt.ID)
		}

		// Unsharded models stay on the plugin's own database.
		if err := r.db.Create(&setting{Value: "v"}).Error; err != nil {
			t.Fatal(err)
		}
		var settings int64
		r.db.Model(&setting{}).Count(&settings)
		if settings != 1 {
			t.Fatalf("%d settings on the plugin's database", settings)
		}
	})
}

func TestRoutingReadsUpdatesDeletes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		authors, x, y := r.spreadAuthors(t, func() author { return author{Name: "a", Books: []book{{Title: "t"}}} })

		mustRead := func(form string, query func(got *author) *gorm.DB, want int64) {
			t.Helper()
			var got author
			if err := query(&got).Error; err != nil {
				t.Fatalf("%s: %v", form, err)
			}
			if got.ID != want {
				t.Fatalf("%s: read %d, want %d", form, got.ID, want)
			}
		}
		mustRead("First(&x, id)", func(got *author) *gorm.DB { return r.db.First(got, x.ID) }, x.ID)
		mustRead(`Where("id = ?")`, func(got *author) *gorm.DB { return r.db.Where("id = ?", y.ID).First(got) }, y.ID)
		mustRead("Where(&T{ID})", func(got *author) *gorm.DB { return r.db.Where(&author{ID: y.ID}).First(got) }, y.ID)
		got := author{ID: x.ID}
		if err := r.db.First(&got).Error; err != nil || got.Name != "a" {
			t.Fatalf("First(&T{ID}): %v %+v", err, got)
		}
		mustRead("ByID", func(got *author) *gorm.DB {
			return r.db.Clauses(shardid.ByID(y.ID)).Where("name = ?", "a").Order("id").First(got)
		}, firstOn(authors, r, r.physicalOf(y.ID)))
		mustRead("OnShard", func(got *author) *gorm.DB {
			return r.db.Clauses(shardid.OnShard(r.plugin.Layout().Shard(x.ID))).Where("id = ?", x.ID).First(got)
		}, x.ID)

		// IN lists across databases fan out and come back whole.
		var two []author
		if err := r.db.Find(&two, []int64{x.ID, y.ID}).Error; err != nil || len(two) != 2 {
			t.Fatalf("Find(&xs, ids): %v, %d rows", err, len(two))
		}
		two = nil
		if err := r.db.Where("id IN ?", []int64{x.ID, y.ID}).Find(&two).Error; err != nil || len(two) != 2 {
			t.Fatalf(`Where("id IN ?"): %v, %d rows`, err, len(two))
		}

		// Preload follows each author's shard to its colocated books.
		var withBooks author
		if err := r.db.Preload("Books").First(&withBooks, y.ID).Error; err != nil || len(withBooks.Books) != 1 {
			t.Fatalf("Preload: %v, %+v", err, withBooks)
		}

		// AllShards: counts summed, ordered pages merged.
		var total int64
		if err := r.db.Model(&author{}).Clauses(shardid.AllShards()).Count(&total).Error; err != nil || total != 40 {
			t.Fatalf("AllShards Count = %d, %v; want 40", total, err)
		}
		sorted := slices.Clone(authors)
		slices.SortFunc(sorted, func(a, b author) int { return cmpInt(a.ID, b.ID) })
		var page []author
		if err := r.db.Clauses(shardid.AllShards()).Order("id").Limit(5).Offset(10).Find(&page).Error; err != nil {
			t.Fatal(err)
		}
		if len(page) != 5 || page[0].ID != sorted[10].ID || page[4].ID != sorted[14].ID {
			t.Fatalf("AllShards Order/Limit/Offset: got %d rows from %d, want from %d", len(page), page[0].ID, sorted[10].ID)
		}
		var last author
		if err := r.db.Clauses(shardid.AllShards()).Last(&last).Error; err != nil || last.ID != sorted[39].ID {
			t.Fatalf("AllShards Last = %d, %v; want %d", last.ID, err, sorted[39].ID)
		}

		// Updates and deletes land where the row is.
		if err := r.db.Model(&author{ID: x.ID}).Update("name", "renamed").Error; err != nil {
			t.Fatal(err)
		}
		var name string
		r.direct[r.physicalOf(x.ID)].Model(&author{}).Where("id = ?", x.ID).Pluck("name", &name)
		if name != "renamed" {
			t.Fatalf("Model(&x).Update: the row on its shard is named %q", name)
		}
		y.Name = "saved"
		if err := r.db.Save(&y).Error; err != nil {
			t.Fatal(err)
		}
		r.direct[r.physicalOf(y.ID)].Model(&author{}).Where("id = ?", y.ID).Pluck("name", &name)
		if name != "saved" {
			t.Fatalf("Save: the row on its shard is named %q", name)
		}
		if err := r.db.Where("id IN ?", []int64{x.ID, y.ID}).Updates(&author{Name: "both"}).Error; err != nil {
			t.Fatal(err)
		}
		// A condition on the colocate column routes too.
		if err := r.db.Where("author_id IN ?", []int64{x.ID, y.ID}).Delete(&book{}).Error; err != nil {
			t.Fatal(err)
		}
		if err := r.db.Delete(&author{}, x.ID).Error; err != nil {
			t.Fatal(err)
		}
		if found := r.where(t, &author{}, x.ID); len(found) != 0 {
			t.Fatalf("Delete(&T{}, id): the row is still on %v", found)
		}
		if err := r.db.Delete(&y).Error; err != nil {
			t.Fatal(err)
		}
		if found := r.where(t, &author{}, y.ID); len(found) != 0 {
			t.Fatalf("Delete(&x): the row is still on %v", found)
		}

		// ByKey and the hash rule agree.
		tn := tenant{Code: "acme"}
		if err := r.db.Create(&tn).Error; err != nil {
			t.Fatal(err)
		}
		var byKey tenant
		if err := r.db.Clauses(shardid.ByKey("acme")).Where("code = ?", "acme").First(&byKey).Error; err != nil || byKey.ID != tn.ID {
			t.Fatalf("ByKey: %v, %d", err, byKey.ID)
		}
		byKey = tenant{}
		if err := r.db.Where("code = ?", "acme").First(&byKey).Error; err != nil || byKey.ID != tn.ID {
			t.Fatalf("a condition on the hash column routes: %v, %d", err, byKey.ID)
		}
	})
}

// firstOn returns the smallest author ID on physical database k.
func firstOn(authors []author, r *routing, k int) int64 {
	best := int64(0)
	for _, a := range authors {
		if r.physicalOf(a.ID) == k && (best == 0 || a.ID < best) {
			best = a.ID
		}
	}
	return best
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestRoutingRefusesWhatItCannotPlace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		a := author{Name: "x"}
		if err := r.db.Create(&a).Error; err != nil {
			t.Fatal(err)
		}
		var all []author
		for form, tx := range map[string]*gorm.DB{
			"Find without a condition":      r.db.Find(&all),
			"a condition on another column": r.db.Where("name = ?", "x").Find(&all),
			"Update without a condition":    r.db.Model(&author{}).Where("name = ?", "x").Update("name", "y"),
			"Delete without a condition":    r.db.Where("name = ?", "x").Delete(&author{}),
			"raw SQL on a sharded table":    r.db.Raw("SELECT * FROM authors").Scan(&all),
			"Exec on a sharded table":       r.db.Exec("UPDATE authors SET name = 'z'"),
		} {
			if !errors.Is(tx.Error, shardid.ErrNoShard) {
				t.Errorf("%s: got %v, want ErrNoShard", form, tx.Error)
			}
		}
		// Raw SQL with a clause goes to that shard.
		var n int64
		if err := r.db.Clauses(shardid.ByID(a.ID)).Raw("SELECT count(*) FROM authors").Scan(&n).Error; err != nil || n != 1 {
			t.Fatalf("raw SQL with ByID: %v, %d rows", err, n)
		}
	})
}

func TestRoutingTransactions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		a := author{Name: "owner"}
		if err := r.db.Create(&a).Error; err != nil {
			t.Fatal(err)
		}
		home := r.physicalOf(a.ID)
		// A transaction bound to the author's shard: the book lands beside it.
		var inTx book
		err := r.db.Clauses(shardid.ByID(a.ID)).Transaction(func(tx *gorm.DB) error {
			inTx = book{AuthorID: a.ID, Title: "in a transaction"}
			if err := tx.Create(&inTx).Error; err != nil {
				return err
			}
			var back author
			return tx.First(&back, a.ID).Error
		})
		if err != nil {
			t.Fatal(err)
		}
		r.mustBeOnItsShard(t, &book{}, int64(inTx.ID))

		// Rolled back: nothing is left on the shard.
		rolled := book{AuthorID: a.ID, Title: "rolled back"}
		_ = r.db.Clauses(shardid.ByID(a.ID)).Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&rolled).Error; err != nil {
				return err
			}
			return errors.New("roll back")
		})
		if found := r.where(t, &book{}, int64(rolled.ID)); len(found) != 0 {
			t.Fatalf("a rolled-back row is on %v", found)
		}

		// A statement for another physical database fails inside the transaction.
		other := author{Name: "elsewhere"}
		for other.ID == 0 || r.physicalOf(other.ID) == home {
			other = author{Name: "elsewhere"}
			if err := r.db.Create(&other).Error; err != nil {
				t.Fatal(err)
			}
		}
		err = r.db.Clauses(shardid.ByID(a.ID)).Transaction(func(tx *gorm.DB) error {
			var x author
			return tx.First(&x, other.ID).Error
		})
		if !errors.Is(err, shardid.ErrCrossShard) {
			t.Fatalf("reading another shard in a transaction: got %v, want ErrCrossShard", err)
		}
		err = r.db.Clauses(shardid.ByID(a.ID)).Transaction(func(tx *gorm.DB) error {
			return tx.Create(&book{AuthorID: other.ID, Title: "astray"}).Error
		})
		if !errors.Is(err, shardid.ErrCrossShard) {
			t.Fatalf("writing to another shard in a transaction: got %v, want ErrCrossShard", err)
		}
		// A transaction on the plugin's own database holds no shard: a Create
		// in it commits with it, on its rows' shards, where two phases are
		// used; with BestEffort (SQLite) it is refused, and CreateInBatches
		// inside it does not escape it.
		created := author{Name: "with the plugin's transaction"}
		batch := []author{{}, {}, {}}
		errOne := r.db.Transaction(func(tx *gorm.DB) error { return tx.Create(&created).Error })
		errBatch := r.db.Transaction(func(tx *gorm.DB) error { return tx.CreateInBatches(&batch, 2).Error })
		if b.name == "sqlite" {
			if !errors.Is(errOne, shardid.ErrCrossShard) || !errors.Is(errBatch, shardid.ErrCrossShard) {
				t.Fatalf("sharded rows in a transaction on the plugin's database, best effort: got %v and %v, want ErrCrossShard", errOne, errBatch)
			}
		} else {
			if errOne != nil || errBatch != nil {
				t.Fatalf("sharded rows in a transaction on the plugin's database: %v, %v", errOne, errBatch)
			}
			for _, a := range append(batch, created) {
				var got author // the process reads what it wrote at once; others once its branches commit, a round trip later
				must(t, r.db.First(&got, a.ID).Error)
				r.mustBeOnItsShard(t, &author{}, a.ID)
			}
		}
	})
}

func TestRoutingMigratesEveryDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		for i, db := range r.direct {
			if !db.Migrator().HasTable(&author{}) || !db.Migrator().HasTable(&book{}) {
				t.Fatalf("physical %d lacks the sharded tables", i)
			}
			if db.Migrator().HasTable(&setting{}) {
				t.Fatalf("physical %d has the unsharded table", i)
			}
		}
		if !r.db.Migrator().HasTable(&setting{}) || !migrator(r.db).HasTable(&author{}) || r.db.Migrator().HasTable(&author{}) {
			t.Fatal("the plugin's database lacks the unsharded table")
		}
	})
}

// TestRoutingRefusesAcrossDatabases covers the remaining ErrCrossShard and
// ErrNoShard paths.
func TestRoutingRefusesAcrossDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		_, x, y := r.spreadAuthors(t, func() author { return author{} })
		inTx := func(fn func(tx *gorm.DB) error) error { return r.db.Clauses(shardid.ByID(x.ID)).Transaction(fn) }
		for form, err := range map[string]error{
			"rows for two databases in a transaction": inTx(func(tx *gorm.DB) error {
				return tx.Create(&[]author{{ID: x.ID + 1}, {ID: y.ID + 1}}).Error
			}),
			"an IN list over two databases in a transaction": inTx(func(tx *gorm.DB) error {
				var found []author
				return tx.Find(&found, []int64{x.ID, y.ID}).Error
			}),
			"Rows over two databases": func() error {
				rows, err := r.db.Model(&author{}).Where("id IN ?", []int64{x.ID, y.ID}).Rows()
				if rows != nil {
					rows.Close()
				}
				return err
			}(),
			"a clause and a condition that disagree": r.db.Clauses(shardid.ByID(x.ID)).First(&author{}, y.ID).Error,
			"a clause and a new row's preset ID":     r.db.Clauses(shardid.ByID(x.ID)).Create(&author{ID: y.ID + 2}).Error,
			"a clause and a new row's colocate":      r.db.Clauses(shardid.ByID(x.ID)).Create(&book{AuthorID: y.ID, Title: "elsewhere"}).Error,
		} {
			if !errors.Is(err, shardid.ErrCrossShard) {
				t.Errorf("%s: got %v, want ErrCrossShard", form, err)
			}
		}
		if got := r.where(t, &author{}, y.ID+2); len(got) != 0 {
			t.Errorf("a refused Create wrote its author on %v", got)
		}
		if strays := r.count(t, &book{}, "title = ?", "elsewhere"); strays != 0 {
			t.Errorf("a refused Create wrote %d books", strays)
		}
		beside := book{AuthorID: x.ID, Title: "beside"}
		must(t, r.db.Clauses(shardid.ByID(x.ID)).Create(&beside).Error) // the clause's own database
		r.mustBeOnItsShard(t, &book{}, int64(beside.ID))
		var found []author
		for form, err := range map[string]error{
			"ByID(0)":                       r.db.Clauses(shardid.ByID(0)).Find(&found).Error,
			"OnShard(-1)":                   r.db.Clauses(shardid.OnShard(-1)).Find(&found).Error,
			"OnShard(8192)":                 r.db.Clauses(shardid.OnShard(8192)).Find(&found).Error,
			"ByKey(nil)":                    r.db.Clauses(shardid.ByKey(nil)).Find(&found).Error,
			"AllShards on raw SQL":          r.db.Clauses(shardid.AllShards()).Exec("DELETE FROM authors").Error,
			"a condition that is not an ID": r.db.Where("id = ?", "abc").Find(&found).Error,
		} {
			if !errors.Is(err, shardid.ErrNoShard) {
				t.Errorf("%s: got %v, want ErrNoShard", form, err)
			}
		}
	})
}

// TestContradictoryConditionsFindNothing: conditions naming rows of two
// databases, which no row satisfies at once, find nothing and change
// nothing, as on one database (First into a row holding another ID among
// them), rather than being refused.
func TestContradictoryConditionsFindNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		_, x, y := r.spreadAuthors(t, func() author { return author{Name: "before"} })
		held := author{ID: x.ID}
		if err := r.db.First(&held, y.ID).Error; !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Errorf("First into a row of one database by the ID of another: %v, want gorm.ErrRecordNotFound", err)
		}
		var found []author
		must(t, r.db.Where("id = ?", x.ID).Where("id = ?", y.ID).Find(&found).Error)
		if len(found) != 0 {
			t.Errorf("two IDs of two databases found %v", found)
		}
		update := r.db.Model(&author{ID: x.ID}).Where("id = ?", y.ID).Update("name", "after")
		must(t, update.Error)
		if update.RowsAffected != 0 || r.count(t, &author{}, "name = ?", "after") != 0 {
			t.Errorf("an update by two IDs of two databases changed %d rows", update.RowsAffected)
		}
	})
}

// TestRoutingWithADatabaseDown: a physical database that cannot be reached
// fails the statements that need it, naming it, and no other; a batch over
// it and a database that is up writes on neither.
func TestRoutingWithADatabaseDown(t *testing.T) {
	dir := t.TempDir()
	b := backends[0]
	list := shards(t, b, dir)
	third, err := gorm.Open(list[2].Dialector, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	list[2].Dialector, list[2].DB = nil, third
	db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	p := shardid.New(shardid.Config{Shards: list, Atomic: b.atomicity()})
	firstStart(t, db)
	if err := db.Use(p); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	must(t, p.AutoMigrate(db, &author{}))
	// The third database goes down.
	thirdPool, _ := third.DB()
	must(t, thirdPool.Close())
	count := shardid.Layout{}.ShardCount()
	up, down := shardid.Layout{}.Compose(time.Now(), 0, 1), shardid.Layout{}.Compose(time.Now(), count/2+1, 1)
	if err := db.Create(&author{ID: up, Name: "up"}).Error; err != nil {
		t.Fatalf("a row for a database that is up: %v", err)
	}
	err = db.Create(&author{ID: down, Name: "down"}).Error
	if err == nil {
		t.Fatal("a row for the database that is down was accepted")
	}
	rows := []author{{ID: up + 1, Name: "up"}, {ID: down + 1, Name: "down"}}
	err = db.Create(&rows).Error
	if err == nil || !strings.Contains(err.Error(), "sqlite-2") || strings.Contains(err.Error(), "sqlite-0") {
		t.Fatalf("a batch over both: got %v, want an error naming sqlite-2 alone", err)
	}
	var back author
	if err := db.First(&back, up+1).Error; !errors.Is(err, gorm.ErrRecordNotFound) {
		t.Fatalf("the row of the failed batch for the database that is up: %v; want none written, as on one database", err)
	}
}

// TestRoutingTrickyForms covers statements whose shard is easy to misread:
// OR, another table's column, a model beside another destination, a clause on
// Create, Table() and raw SQL, and hash keys of another Go type.
func TestRoutingTrickyForms(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		_, x, y := r.spreadAuthors(t, func() author { return author{Name: "a"} })
		var found []author
		for form, tx := range map[string]*gorm.DB{
			"Where(id).Or(name)":          r.db.Where("id = ?", x.ID).Or("name = ?", "a").Find(&found),
			"a grouped OR with a name":    r.db.Where(r.db.Where("id = ?", x.ID).Or("name = ?", "a")).Find(&found),
			"another table's id":          r.db.Where("other.id = ?", x.ID).Find(&found),
			"Model(&x) with another dest": r.db.Model(&x).Where("name = ?", "a").Find(&found),
			"Table without its model":     r.db.Table("authors").Where("name = ?", "a").Find(&found),
			"an update with OR of a name": r.db.Model(&author{}).Where("id = ?", x.ID).Or("name = ?", "a").Update("name", "b"),
		} {
			if !errors.Is(tx.Error, shardid.ErrNoShard) {
				t.Errorf("%s: got %v, want ErrNoShard", form, tx.Error)
			}
		}
		err := r.db.Transaction(func(tx *gorm.DB) error { return tx.Exec("DELETE FROM authors").Error })
		if !errors.Is(err, shardid.ErrNoShard) {
			t.Errorf("raw SQL in a transaction on the plugin's database: got %v, want ErrNoShard", err)
		}
		// IDs joined by OR name the databases of each side's IDs.
		for form, find := range map[string]func() *gorm.DB{
			"Where(id).Or(id)": func() *gorm.DB { return r.db.Where("id = ?", x.ID).Or("id = ?", y.ID).Find(&found) },
			"a grouped OR":     func() *gorm.DB { return r.db.Where(r.db.Where("id = ?", x.ID).Or("id = ?", y.ID)).Find(&found) },
		} {
			found = nil
			if err := find().Error; err != nil || len(found) != 2 {
				t.Errorf("%s over two databases: %v, %d rows; want both rows", form, err, len(found))
			}
		}
		if res := r.db.Model(&author{}).Where("id = ?", x.ID).Or("id = ?", y.ID).Update("name", "b"); res.Error != nil || res.RowsAffected != 2 {
			t.Errorf("an update of IDs joined by OR: %v, %d rows; want both rows", res.Error, res.RowsAffected)
		}
		must(t, r.db.Model(&author{}).Where("id IN ?", []int64{x.ID, y.ID}).Update("name", "a").Error)
		// With AllShards the OR reaches every database and finds both rows.
		found = nil
		if err := r.db.Clauses(shardid.AllShards()).Where("id = ?", x.ID).Or("id = ?", y.ID).Find(&found).Error; err != nil || len(found) != 2 {
			t.Fatalf("AllShards with OR: %v, %d rows", err, len(found))
		}
		// GORM deletes the rows of the Model beside the value's: x, on its database, and no other.
		if res := r.db.Model(&x).Where("name = ?", "a").Delete(&author{}); res.Error != nil || res.RowsAffected != 1 {
			t.Fatalf("Model(&x) deleting by name: %v, %d rows; want x deleted", res.Error, res.RowsAffected)
		}
		found = nil
		if err := r.db.Where("id IN ?", []int64{x.ID, y.ID}).Find(&found).Error; err != nil || len(found) != 1 || found[0].ID != y.ID {
			t.Fatalf("after Model(&x).Delete: %v, %+v; want y alone", err, found)
		}
		// An empty IN list matches nothing, without an error.
		found = nil
		if err := r.db.Where("id IN ?", []int64{}).Find(&found).Error; err != nil || len(found) != 0 {
			t.Fatalf("IN (): %v, %d rows", err, len(found))
		}

		// A shard clause places new rows; so does a transaction begun with one.
		for range 10 {
			a := author{Name: "placed"}
			must(t, r.db.Clauses(shardid.OnShard(3)).Create(&a).Error)
			if r.plugin.Layout().Shard(a.ID) != 3 {
				t.Fatalf("Clauses(OnShard(3)).Create: shard %d", r.plugin.Layout().Shard(a.ID))
			}
			r.mustBeOnItsShard(t, &author{}, a.ID)
		}
		err = r.db.Clauses(shardid.ByID(y.ID)).Transaction(func(tx *gorm.DB) error {
			for range 20 {
				a := author{Name: "in the transaction"}
				if err := tx.Create(&a).Error; err != nil {
					return err
				}
				if r.physicalOf(a.ID) != r.physicalOf(y.ID) {
					return fmt.Errorf("a new row in the transaction went to physical %d", r.physicalOf(a.ID))
				}
			}
			return nil
		})
		must(t, err)

		// A number for a text hash key is refused: MySQL compares '042' = 42
		// as numbers, so no one key's hash names the rows it matches.
		tn := tenant{Code: "42"}
		must(t, r.db.Create(&tn).Error)
		var back tenant
		if err := r.db.Where("code = ?", 42).First(&back).Error; !errors.Is(err, shardid.ErrNoShard) {
			t.Fatalf(`Where("code = ?", 42) on a string key: got %v, want ErrNoShard`, err)
		}
	})
}

// TestRoutingFanOutMerges: rows made one at a time, so that the databases'
// IDs interleave, come back merged in primary-key order, either way, with
// LIMIT and OFFSET over the whole; what cannot be merged is refused.
func TestRoutingFanOutMerges(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		var ids []int64
		for range 30 {
			a := author{Name: "one at a time"}
			must(t, r.db.Create(&a).Error)
			ids = append(ids, a.ID)
		}
		slices.Sort(ids)
		all := r.db.Clauses(shardid.AllShards()).Session(&gorm.Session{}) // reusable: each statement starts from here
		var page []author
		must(t, all.Order("id").Limit(5).Offset(7).Find(&page).Error)
		if len(page) != 5 || page[0].ID != ids[7] || page[4].ID != ids[11] {
			t.Fatalf("ascending page: %v", page)
		}
		page = nil
		must(t, all.Order("id desc").Limit(4).Find(&page).Error)
		if len(page) != 4 || page[0].ID != ids[29] || page[3].ID != ids[26] {
			t.Fatalf("descending page: %v", page)
		}
		var maps []map[string]any
		must(t, all.Model(&author{}).Order("id").Limit(3).Find(&maps).Error)
		if len(maps) != 3 {
			t.Fatalf("maps: %v", maps)
		}
		if first, _ := maps[0]["id"].(int64); first != ids[0] {
			t.Fatalf("maps are not in primary-key order: first %v, want %d", maps[0]["id"], ids[0])
		}
		var plucked []int64
		must(t, all.Model(&author{}).Pluck("id", &plucked).Error)
		if len(plucked) != 30 {
			t.Fatalf("Pluck: %d ids", len(plucked))
		}
		page = nil
		must(t, all.Limit(-1).Find(&page).Error)
		if len(page) != 30 {
			t.Fatalf("Limit(-1): %d rows", len(page))
		}
		var n int64
		plucked = nil // Pluck of the column it is ordered by: its values are merged
		must(t, all.Model(&author{}).Order("id desc").Limit(3).Pluck("id", &plucked).Error)
		if !slices.Equal(plucked, []int64{ids[29], ids[28], ids[27]}) {
			t.Errorf("Pluck with an ordered limit: %v, want the last three ids descending", plucked)
		}
		// Rows without their key, ordered by another column: ties come in
		// the parts' order.
		var owners []int64
		for _, id := range ids[:8] {
			must(t, r.db.Create(&[]book{{AuthorID: id, Title: "a"}, {AuthorID: id, Title: "b"}}).Error)
			owners = append(owners, id, id)
		}
		slices.Reverse(owners)
		// Counts over a join name the model's column with its table, as the
		// parts must too.
		joined := all.Model(&author{}).Joins("JOIN books ON books.author_id = authors.id").Session(&gorm.Session{})
		for form, count := range map[string]func(*int64) error{
			"Group(authors.id).Count":    func(n *int64) error { return joined.Group("authors.id").Count(n).Error },
			"Distinct(authors.id).Count": func(n *int64) error { return joined.Distinct("authors.id").Count(n).Error },
		} {
			var n int64
			if err := count(&n); err != nil || n != 8 {
				t.Errorf("%s over a join: %d, %v; want the 8 authors with books", form, n, err)
			}
		}
		var books []book
		must(t, all.Select("author_id", "title").Order("author_id desc").Limit(5).Find(&books).Error)
		var got []int64
		for _, bk := range books {
			got = append(got, bk.AuthorID)
		}
		if !slices.Equal(got, owners[:5]) {
			t.Errorf("books without their key, ordered by author: %v, want %v", got, owners[:5])
		}
		var names []string
		if err := all.Model(&author{}).Order("id").Limit(3).Pluck("name", &names).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("Pluck of another column than the order's: got %v, want ErrCrossShard", err)
		}
		// Text compares by its collation: ordered in Go only where it
		// compares bytes (SQLite's BINARY, PostgreSQL's C.UTF-8), grouped also
		// where equal strings are equal bytes (PostgreSQL's deterministic
		// defaults); MariaDB's default is case-insensitive.
		for form, c := range map[string]struct {
			err     error
			refused []string
		}{
			"another order with a limit": {all.Order("name").Limit(3).Find(&page).Error, r.textOrderRefused(t)},
			"Count with GROUP BY":        {all.Model(&author{}).Group("name").Count(&n).Error, []string{"mariadb"}},
			"Count of DISTINCT":          {all.Model(&author{}).Distinct("name").Count(&n).Error, []string{"mariadb"}},
		} {
			if errors.Is(c.err, shardid.ErrCrossShard) != slices.Contains(c.refused, b.name) {
				t.Errorf("%s: got %v, want ErrCrossShard on %v", form, c.err, c.refused)
			}
		}
	})
}

// Models for the unsharded-parent cases: a sharded pseudonym belongs to an
// unsharded imprint, which lives on the plugin's own database.
type (
	imprint struct {
		ID   int64
		Name string
	}
	pseudonym struct {
		ID        int64 `shardid:""`
		ImprintID int64
		Imprint   *imprint
		Name      string
	}
	badge struct {
		ID  int64     `shardid:"strategy:snowflake;hash:UID"`
		UID uuid.UUID `gorm:"type:varchar(36)"`
	}
)

// TestRoutingCornerCases: unsharded rows must not follow a sharded parent
// onto its shard, merges that cannot be right are refused, uuid hash keys
// route as on Create, Table() aliases and Table().Create are checked, an
// update cannot move a row off its shard, and IDs handed out in a rolled-back
// SQLite transaction are not handed out again.
func TestRoutingCornerCases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &imprint{}, &pseudonym{}, &badge{})

		// An unsharded parent saved with its sharded child would land on the shard.
		if err := r.db.Create(&pseudonym{Name: "p", Imprint: &imprint{Name: "i"}}).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Fatalf("an unsharded parent created with a sharded child: got %v, want ErrCrossShard", err)
		}
		im := imprint{Name: "saved apart"}
		must(t, r.db.Create(&im).Error)
		ps := pseudonym{Name: "p", ImprintID: im.ID}
		must(t, r.db.Create(&ps).Error)
		var back pseudonym
		if err := r.db.Preload("Imprint").First(&back, ps.ID).Error; err != nil || back.Imprint == nil || back.Imprint.Name != "saved apart" {
			t.Fatalf("Preload of an unsharded parent from a shard: %v %+v", err, back)
		}
		var onMain imprint
		if err := r.db.First(&onMain, im.ID).Error; err != nil {
			t.Fatalf("the unsharded row is not on the plugin's database: %v", err)
		}

		// Merges that cannot be right over several databases.
		_, x, y := r.spreadAuthors(t, func() author { return author{Name: "dup"} })
		all := r.db.Clauses(shardid.AllShards()).Session(&gorm.Session{})
		var groups []struct {
			Name string
			N    int
		}
		var names []string
		var page []author
		for form, c := range map[string]struct {
			err     error
			refused []string
		}{
			"GROUP BY text into structs": {all.Model(&author{}).Select("name, count(*) as n").Group("name").Find(&groups).Error, []string{"mariadb"}},
			"DISTINCT Pluck of text":     {all.Model(&author{}).Distinct("name").Pluck("name", &names).Error, []string{"mariadb"}},
			"an order on text":           {all.Order("name").Find(&page).Error, r.textOrderRefused(t)},
		} {
			if errors.Is(c.err, shardid.ErrCrossShard) != slices.Contains(c.refused, b.name) {
				t.Errorf("%s: got %v, want ErrCrossShard on %v", form, c.err, c.refused)
			}
		}
		// Aggregates merge whatever the destination.
		var total int64
		must(t, all.Model(&author{}).Count(&total).Error)
		var counted struct{ N int64 }
		must(t, all.Model(&author{}).Select("count(*) as n").Take(&counted).Error)
		var last author
		must(t, all.Order("id desc").First(&last).Error)
		var maxIDs []int64
		must(t, all.Model(&author{}).Pluck("max(id)", &maxIDs).Error)
		if counted.N != total || len(maxIDs) != 1 || maxIDs[0] != last.ID {
			t.Errorf("count(*) into a row: %d of %d; Pluck of max(id): %v, want [%d]", counted.N, total, maxIDs, last.ID)
		}
		var first author
		if err := all.Order("id").First(&first).Error; err != nil || first.ID == 0 {
			t.Fatalf(`AllShards().Order("id").First: %v`, err)
		}

		// A uuid hash key routes as the row's [16]byte did on Create.
		for range 10 {
			bg := badge{UID: uuid.New()}
			must(t, r.db.Create(&bg).Error)
			var got badge
			if err := r.db.Where("uid = ?", bg.UID).First(&got).Error; err != nil || got.ID != bg.ID {
				t.Fatalf("Where(uid) with a uuid.UUID: %v", err)
			}
			got = badge{}
			if err := r.db.Where("uid = ?", bg.UID.String()).First(&got).Error; err != nil || got.ID != bg.ID {
				t.Fatalf("Where(uid) with the uuid's text: %v", err)
			}
		}

		// Table() with an alias, and Table().Create, are checked too.
		var rows []map[string]any
		if err := r.db.Table("authors AS a").Find(&rows).Error; !errors.Is(err, shardid.ErrNoShard) {
			t.Errorf("Table with an alias: got %v, want ErrNoShard", err)
		}
		if err := r.db.Table("authors").Create(map[string]any{"id": x.ID + 7, "name": "m"}).Error; !errors.Is(err, shardid.ErrNoShard) {
			t.Errorf("Table().Create(map): got %v, want ErrNoShard", err)
		}

		// An update cannot set what places a row to a value of another shard.
		bk := book{AuthorID: x.ID, Title: "t"}
		must(t, r.db.Create(&bk).Error)
		type bookPatch struct{ AuthorID int64 }
		moved := bk
		moved.AuthorID = y.ID
		for form, err := range map[string]error{
			"Update of the colocate column":     r.db.Model(&book{}).Where("id = ?", bk.ID).Update("author_id", y.ID).Error,
			"Updates with another struct type":  r.db.Model(&book{}).Where("id = ?", bk.ID).Updates(bookPatch{AuthorID: y.ID}).Error,
			"Save with a moved colocate value":  r.db.Save(&moved).Error,
			"Updates with another primary key":  r.db.Model(&x).Updates(author{ID: y.ID, Name: "moved"}).Error,
			"a new primary key on its shard":    r.db.Model(&author{}).Where("id = ?", x.ID).Update("id", x.ID+1).Error,
			"a new primary key in other case":   r.db.Model(&author{}).Where("id = ?", x.ID).Updates(map[string]any{"Id": x.ID + 1000}).Error,
			"the colocate column in other case": r.db.Model(&book{}).Where("id = ?", bk.ID).Update("Author_id", y.ID).Error,
			"the colocate column qualified":     r.db.Model(&book{}).Where("id = ?", bk.ID).Update("books.author_id", y.ID).Error,
			"Update of a column by IN list":     r.db.Model(&book{}).Where("id IN ?", []int64{int64(bk.ID), 1}).Update("author_id", x.ID).Error,
		} {
			if !errors.Is(err, shardid.ErrCrossShard) {
				t.Errorf("%s: got %v, want ErrCrossShard", form, err)
			}
		}
		// Within the row's own shard the colocate column may change.
		sameShard := x.ID + 1 // another ID of x's shard
		if err := r.db.Model(&book{}).Where("id = ?", bk.ID).Update("author_id", sameShard).Error; err != nil {
			t.Errorf("an update within the row's shard: %v", err)
		}

		// An unsharded row inside a transaction begun on a shard is refused,
		// and CreateInBatches cannot escape an application's transaction when
		// nested transactions set no savepoint.
		err := r.db.Clauses(shardid.OnShard(1)).Transaction(func(tx *gorm.DB) error { return tx.Create(&setting{Value: "astray"}).Error })
		if !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("an unsharded row in a shard's transaction: got %v, want ErrCrossShard", err)
		}
		noSavepoints := r.db.Session(&gorm.Session{DisableNestedTransaction: true})
		err = noSavepoints.Transaction(func(tx *gorm.DB) error { return tx.CreateInBatches(&[]author{{}, {}, {}}, 2).Error })
		if b.name == "sqlite" && !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("CreateInBatches in a transaction without savepoints, best effort: got %v, want ErrCrossShard", err)
		}
		if b.name != "sqlite" && err != nil {
			t.Errorf("CreateInBatches in a transaction without savepoints: %v, want it to commit with the transaction", err)
		}
		// Raw SQL that names a sharded table only as an alias or in a string runs.
		var values []string
		if err := r.db.Raw("SELECT value AS authors FROM settings WHERE value <> 'authors'").Scan(&values).Error; err != nil {
			t.Errorf("raw SQL on an unsharded table: %v", err)
		}

		// SQLite runs the clock in the caller's transaction: after a rollback
		// this process does not hand the same IDs out again.
		if b.name != "sqlite" {
			return
		}
		var rolledBack []author
		_ = r.db.Clauses(shardid.OnShard(5)).Transaction(func(tx *gorm.DB) error {
			rolledBack = make([]author, 200)
			if err := tx.Create(&rolledBack).Error; err != nil {
				return err
			}
			return errors.New("roll back")
		})
		again := make([]author, 200)
		must(t, r.db.Clauses(shardid.OnShard(5)).Create(&again).Error)
		seen := map[int64]bool{}
		for _, a := range rolledBack {
			seen[a.ID] = true
		}
		for _, a := range again {
			if seen[a.ID] {
				t.Fatalf("ID %d was handed out in the rolled-back transaction and again after it", a.ID)
			}
		}
	})
}

// textOrderRefused lists the backends on which an order on text of the
// default collation is refused: MariaDB's compares case-insensitively, and
// PostgreSQL's does not compare bytes unless it is libc's C or C.UTF-8.
func (r *routing) textOrderRefused(t *testing.T) []string {
	t.Helper()
	var collation, provider string
	if r.b.name == "postgres" {
		must(t, r.direct[0].Raw("SELECT datcollate, COALESCE(to_jsonb(d)->>'datlocprovider', 'c') FROM pg_database d WHERE datname = current_database()").Row().Scan(&collation, &provider))
	}
	if provider == "c" && slices.Contains([]string{"C", "POSIX", "C.UTF-8", "C.utf8"}, collation) {
		return []string{"mariadb"}
	}
	return []string{"mariadb", "postgres"}
}
