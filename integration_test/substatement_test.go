package integration

import (
	"errors"
	"slices"
	"testing"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// Models of the sub-statement suite.
type (
	lookup struct { // unsharded: on the plugin's own database
		ID   int64
		Name string
	}
	staffer struct {
		ID       int64 `shardid:""`
		Name     string
		LookupID int64
		Lookup   *lookup
		BossID   *int64
		Boss     *staffer  `gorm:"foreignKey:BossID"`
		Reports  []staffer `gorm:"foreignKey:BossID"`
	}
	// chapter is colocated with its author: a join of the two is on one database.
	chapter struct {
		ID       int64 `shardid:"colocate:AuthorID"`
		AuthorID int64
		Author   *author
		Title    string
	}
	// watcher opens statements in its hooks: raw SQL and a query on an
	// unsharded model after it is read, an unsharded row after it is created.
	watcher struct {
		ID       int64 `shardid:""`
		LookupID int64
		Astray   bool
		lookups  int64
		found    string
	}
)

func (w *watcher) AfterFind(tx *gorm.DB) error {
	if err := tx.Raw("SELECT count(*) FROM lookups").Scan(&w.lookups).Error; err != nil {
		return err
	}
	var l lookup
	if err := tx.First(&l, w.LookupID).Error; err != nil {
		return err
	}
	w.found = l.Name
	return nil
}

func (w *watcher) AfterCreate(tx *gorm.DB) error {
	if w.Astray {
		return tx.Create(&lookup{Name: "astray"}).Error
	}
	// An unsharded read in the shard's transaction is made where its rows are.
	var l lookup
	if err := tx.First(&l, w.LookupID).Error; err != nil {
		return err
	}
	w.found = l.Name
	return nil
}

func TestSubStatementsRouteOnTheirOwnModel(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		fresh(t, k.db, &lookup{}, &staffer{}, &watcher{}, &chapter{})
		lk := lookup{Name: "main"}
		must(t, k.db.Create(&lk).Error)
		staff := make([]staffer, 24)
		for i := range staff {
			staff[i] = staffer{Name: "s", LookupID: lk.ID}
		}
		must(t, k.db.Create(&staff).Error)
		boss := staff[0]
		for i := range staff[1:] { // every other staffer reports to the boss, wherever each lives
			must(t, k.db.Model(&staff[i+1]).Update("boss_id", boss.ID).Error)
		}
		far := staff[slices.IndexFunc(staff, func(s staffer) bool { return k.physicalOf(s.ID) != k.physicalOf(boss.ID) })]

		// A shard clause is for the statement given it, not its preload of an unsharded model.
		var got staffer
		must(t, k.db.Clauses(shardid.ByID(far.ID)).Preload("Lookup").First(&got, far.ID).Error)
		if got.Lookup == nil || got.Lookup.Name != "main" {
			t.Fatalf("Preload of an unsharded model under a shard clause: %+v", got.Lookup)
		}
		// Given to an unsharded statement itself, it does not move it off the plugin's database.
		var lookups []lookup
		must(t, k.db.Clauses(shardid.ByID(far.ID)).Find(&lookups).Error)
		if len(lookups) != 1 {
			t.Fatalf("an unsharded query under a shard clause read %d rows", len(lookups))
		}
		// Nor does the connection a clause chose, carried by Session(NewDB), move raw SQL or unsharded reads.
		fresh := k.db.Clauses(shardid.ByID(far.ID)).Session(&gorm.Session{NewDB: true})
		lookups = nil
		must(t, fresh.Find(&lookups).Error)
		var n int64
		must(t, fresh.Raw("SELECT count(*) FROM lookups").Scan(&n).Error)
		if len(lookups) != 1 || n != 1 {
			t.Fatalf("a NewDB session of a shard clause read %d lookups, counted %d", len(lookups), n)
		}
		// Nested preloads, and preloads with conditions, are routed on their own too.
		got = staffer{}
		must(t, k.db.Clauses(shardid.ByID(boss.ID)).Preload("Reports", "name = ?", "s", func(tx *gorm.DB) *gorm.DB { return tx.Clauses(shardid.AllShards()) }).
			Preload("Reports.Lookup").Preload("Lookup").First(&got, boss.ID).Error)
		if len(got.Reports) != len(staff)-1 || got.Lookup == nil || slices.ContainsFunc(got.Reports, func(s staffer) bool { return s.Lookup == nil }) {
			t.Fatalf("nested preloads: %d reports, want %d, each with its lookup", len(got.Reports), len(staff)-1)
		}
		// Nor is a fan-out part's pin.
		var all []staffer
		must(t, k.db.Clauses(shardid.AllShards()).Preload("Lookup").Find(&all).Error)
		if len(all) != len(staff) || slices.ContainsFunc(all, func(s staffer) bool { return s.Lookup == nil || s.Lookup.Name != "main" }) {
			t.Fatalf("Preload of an unsharded model from a fan-out: %d rows, some without their lookup", len(all))
		}
		// A self-referencing preload from a fan-out part reads every database,
		// or is refused: never only the part's one.
		all = nil
		err := k.db.Clauses(shardid.AllShards()).Preload("Reports").Find(&all).Error
		if err != nil && !errors.Is(err, shardid.ErrNoShard) {
			t.Fatalf("self-referencing Preload from a fan-out: %v", err)
		}
		if err == nil {
			for _, s := range all {
				if s.ID == boss.ID && len(s.Reports) != len(staff)-1 {
					t.Fatalf("the boss has %d reports, want %d", len(s.Reports), len(staff)-1)
				}
			}
		}
		all = nil
		must(t, k.db.Clauses(shardid.AllShards()).Preload("Reports", func(tx *gorm.DB) *gorm.DB { return tx.Clauses(shardid.AllShards()) }).Find(&all).Error)
		for _, s := range all {
			if s.ID == boss.ID && len(s.Reports) != len(staff)-1 {
				t.Fatalf("a preload given its own AllShards: the boss has %d reports, want %d", len(s.Reports), len(staff)-1)
			}
		}

		// A join of an unsharded model into a sharded query would read the shard's (absent or empty) copy.
		got = staffer{}
		if err := k.db.Joins("Lookup").First(&got, far.ID).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("Joins of an unsharded model: got %v, want ErrCrossShard", err)
		}
		if err := k.db.Joins("Lookup").Preload("Reports").First(&got, boss.ID).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("Joins of an unsharded model with a preload: got %v, want ErrCrossShard", err)
		}
		if err := k.db.Joins("JOIN lookups ON lookups.id = staffers.lookup_id").First(&got, far.ID).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("Joins of an unsharded table in SQL: got %v, want ErrCrossShard", err)
		}
		// Nor a join of a sharded model that is not colocated along the join.
		if err := k.db.Joins("Boss").First(&got, far.ID).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("Joins of a sharded model not colocated: got %v, want ErrCrossShard", err)
		}
		// A colocated one is on the same database: it runs.
		writer := author{Name: "writer"}
		must(t, k.db.Create(&writer).Error)
		ch := chapter{AuthorID: writer.ID, Title: "one"}
		must(t, k.db.Create(&ch).Error)
		var joined chapter
		must(t, k.db.Joins("Author").First(&joined, ch.ID).Error)
		if joined.Author == nil || joined.Author.Name != "writer" {
			t.Fatalf("Joins of a colocated model: %+v", joined.Author)
		}

		// Statements a hook opens are routed on their own: raw SQL and an
		// unsharded query read the plugin's database, not the row's shard.
		w := watcher{LookupID: lk.ID}
		must(t, k.db.Create(&w).Error)
		if w.found != "main" {
			t.Fatalf("an unsharded read in AfterCreate found %q", w.found)
		}
		var back watcher
		must(t, k.db.First(&back, w.ID).Error)
		if back.lookups != 1 || back.found != "main" {
			t.Fatalf("statements in AfterFind: %d lookups, found %q; want 1, main", back.lookups, back.found)
		}
		// An unsharded row created in the hook of a sharded one cannot join
		// its transaction on the shard: refused, and nothing written.
		k.refused(t, shardid.ErrCrossShard, []any{&watcher{}, &lookup{}}, map[string]func() error{
			"an unsharded row created in AfterCreate": func() error { return k.db.Create(&watcher{LookupID: lk.ID, Astray: true}).Error },
		})
	})
}
