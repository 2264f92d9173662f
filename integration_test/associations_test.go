package integration

import (
	"errors"
	"testing"

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
