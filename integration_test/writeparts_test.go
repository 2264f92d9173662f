package integration

import (
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// Models of the write-parts suite: a sharded row whose update hook stamps it
// the way GORM's docs show (tx.Statement.SetColumn), and one whose create
// hook runs raw SQL on an author's row.
type (
	stamped struct {
		ID        int64 `shardid:""`
		Name      string
		Note      string
		UpdatedAt time.Time
	}
	scribe struct {
		ID     int64 `shardid:""`
		Target int64 // the author whose name the hook sets
		Clause bool  `gorm:"-"` // whether the hook gives its SQL a clause of its own
	}
)

func (s *stamped) BeforeUpdate(tx *gorm.DB) error {
	hooks.add("stamped.BeforeUpdate", s.ID)
	tx.Statement.SetColumn("Note", "hooked")
	return nil
}

func (s *scribe) AfterCreate(tx *gorm.DB) error {
	if s.Clause {
		tx = tx.Clauses(shardid.ByID(s.Target))
	}
	return tx.Exec("UPDATE authors SET name = 'scribed' WHERE id = ?", s.Target).Error
}

// onEvery creates authors until every physical database holds one, and
// returns one per database.
func (r *routing) onEvery(t *testing.T) []author {
	t.Helper()
	var seen [physicalShards]*author
	for i, left := 0, physicalShards; i < 400 && left > 0; i++ {
		a := author{Name: "a"}
		must(t, r.db.Create(&a).Error)
		if k := r.physicalOf(a.ID); seen[k] == nil {
			seen[k], left = &a, left-1
		}
	}
	all := make([]author, 0, physicalShards)
	for k, a := range seen {
		if a == nil {
			t.Fatalf("no author landed on database %d", k)
		}
		all = append(all, *a)
	}
	return all
}

// count is how many rows of model, matching where (a condition and its
// values) if given, the physical databases hold together.
func (r *routing) count(t *testing.T, model any, where ...any) int64 {
	t.Helper()
	var total int64
	for _, d := range r.direct {
		q := d.Model(model)
		if len(where) > 0 {
			q = q.Where(where[0], where[1:]...)
		}
		var n int64
		must(t, q.Count(&n).Error)
		total += n
	}
	return total
}

// TestRefusedWritePartsWriteNothing: a Create split over several databases,
// or an update over several, that the key check refuses for one database's
// rows writes nothing on the others: every part is checked before any runs.
func TestRefusedWritePartsWriteNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		authors := r.onEvery(t)
		books := []book{
			{AuthorID: authors[0].ID, Title: "fine"},
			{AuthorID: authors[1].ID, Title: "fine too"},
			{ID: shardid.ID(authors[3].ID), AuthorID: authors[2].ID, Title: "its ID names database 3, its author database 2"},
		}
		if err := r.db.Create(&books).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Fatalf("split Create with a disagreeing preset ID: %v, want ErrCrossShard", err)
		}
		if n := r.count(t, &book{}); n != 0 {
			t.Fatalf("the refused Create left %d books", n)
		}

		placed := make([]book, len(authors))
		ids := make([]int64, len(authors))
		for k, a := range authors {
			placed[k] = book{AuthorID: a.ID, Title: "t"}
			must(t, r.db.Create(&placed[k]).Error)
			ids[k] = int64(placed[k].ID)
		}
		// Each book may take the author of database 0 only if it is on database 0.
		err := r.db.Model(&book{}).Where("id IN ?", ids).Updates(map[string]any{"author_id": authors[0].ID, "title": "moved"}).Error
		if !errors.Is(err, shardid.ErrCrossShard) {
			t.Fatalf("update moving books to another database's author: %v, want ErrCrossShard", err)
		}
		for k, d := range r.direct {
			var got book
			must(t, d.First(&got, ids[k]).Error)
			if got.Title != "t" || got.AuthorID != authors[k].ID {
				t.Fatalf("the refused update changed the book on database %d: %+v", k, got)
			}
		}
	})
}

// TestFanOutUpdateOfOneValueWritesWhatItsHooksSet: an update of one value
// over several databases runs its model's hooks once, and every database
// writes what they set and the UpdatedAt time, as one database would.
func TestFanOutUpdateOfOneValueWritesWhatItsHooksSet(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &stamped{})
		ids := make([]int64, 0, physicalShards)
		var on [physicalShards]bool
		for i := 0; i < 400 && len(ids) < physicalShards; i++ {
			s := stamped{Name: "x"}
			must(t, r.db.Create(&s).Error)
			if k := r.physicalOf(s.ID); !on[k] {
				on[k], ids = true, append(ids, s.ID)
			}
		}
		if len(ids) < physicalShards {
			t.Fatalf("rows on %d databases, want %d", len(ids), physicalShards)
		}
		long := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, d := range r.direct {
			must(t, d.Model(&stamped{}).Where("id > 0").UpdateColumn("updated_at", long).Error)
		}
		hooks.reset()

		must(t, r.db.Model(&stamped{}).Where("id IN ?", ids).Updates(stamped{Name: "y"}).Error)
		if calls := hooks.take("stamped.BeforeUpdate"); len(calls) != 1 || calls[0] != 1 {
			t.Fatalf("BeforeUpdate of the model struct ran %v times, want once", calls)
		}
		var first stamped
		for _, id := range ids {
			var got stamped
			must(t, r.direct[r.physicalOf(id)].First(&got, id).Error)
			if got.Name != "y" || got.Note != "hooked" || !got.UpdatedAt.After(long) {
				t.Fatalf("database %d: %+v, want name y, note hooked, and a new UpdatedAt", r.physicalOf(id), got)
			}
			if first.ID == 0 {
				first = got
			} else if !got.UpdatedAt.Equal(first.UpdatedAt) {
				t.Fatalf("one update wrote UpdatedAt %v on one database and %v on another", first.UpdatedAt, got.UpdatedAt)
			}
		}
	})
}

// TestRawSQLInAHookNeedsItsOwnClause: raw SQL that a model's hook issues in
// GORM's transaction of the statement that fired it is a statement of its own:
// without a clause it is refused, with one it runs there if that is its
// shard and is refused if not; in a transaction the application began on a
// shard it is for that shard.
func TestRawSQLInAHookNeedsItsOwnClause(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &scribe{})
		authors := r.onEvery(t)
		nameOf := func(a author) string {
			var got author
			must(t, r.direct[r.physicalOf(a.ID)].First(&got, a.ID).Error)
			return got.Name
		}
		here, there := authors[0], authors[1]
		cases := []struct {
			name   string
			create func() error
			want   error // nil: the hook's SQL ran
		}{
			{"no clause", func() error { return r.db.Clauses(shardid.ByID(here.ID)).Create(&scribe{Target: here.ID}).Error }, shardid.ErrNoShard},
			{"a clause of another shard", func() error {
				return r.db.Clauses(shardid.ByID(here.ID)).Create(&scribe{Target: there.ID, Clause: true}).Error
			}, shardid.ErrCrossShard},
			{"a clause of its shard", func() error {
				return r.db.Clauses(shardid.ByID(here.ID)).Create(&scribe{Target: here.ID, Clause: true}).Error
			}, nil},
			{"the application's shard transaction", func() error {
				return r.db.Clauses(shardid.ByID(there.ID)).Transaction(func(tx *gorm.DB) error { return tx.Create(&scribe{Target: there.ID}).Error })
			}, nil},
		}
		for _, c := range cases {
			must(t, r.db.Model(&author{}).Where("id IN ?", []int64{here.ID, there.ID}).Update("name", "a").Error)
			err := c.create()
			if c.want != nil {
				if !errors.Is(err, c.want) {
					t.Fatalf("%s: %v, want %v", c.name, err, c.want)
				}
				if nameOf(here) != "a" || nameOf(there) != "a" || r.count(t, &scribe{}) != 0 {
					t.Fatalf("%s: refused, but the hook's SQL or the row was written", c.name)
				}
				continue
			}
			must(t, err)
			if nameOf(here) != "scribed" && nameOf(there) != "scribed" {
				t.Fatalf("%s: the hook's SQL changed no author", c.name)
			}
			must(t, r.db.Clauses(shardid.AllShards()).Where("id > 0").Delete(&scribe{}).Error)
		}
	})
}
