package integration

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shardid/shardid"
)

// TestAChildItsOwnerLetGoIsSavedAsOnOneDatabase: GORM's Association Delete
// and Clear set a colocated child's owner column to NULL, which GORM reads
// into an int64 field as 0; a Save of such a child read back and edited (or
// an update of the column to 0) writes that 0, as on one database: the row
// stays on its database with the column at 0, and the statement is not
// refused as moving it to another shard.
func TestAChildItsOwnerLetGoIsSavedAsOnOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		a := author{Name: "a", Books: []book{{Title: "kept"}, {Title: "deleted"}, {Title: "cleared"}, {Title: "updated"}}}
		must(t, r.db.Create(&a).Error)
		kept, deleted, cleared, updated := a.Books[0], a.Books[1], a.Books[2], a.Books[3]
		readBack := func(b *book) {
			t.Helper()
			*b = book{ID: b.ID}
			must(t, r.db.First(b).Error)
			if b.AuthorID != 0 {
				t.Fatalf("book %d read back with author %d, want the 0 of its NULL", b.ID, b.AuthorID)
			}
		}
		must(t, r.db.Model(&a).Association("Books").Delete(&deleted))
		readBack(&deleted)
		deleted.Title = "deleted, then saved"
		must(t, r.db.Save(&deleted).Error)

		must(t, r.db.Model(&a).Association("Books").Clear())
		readBack(&cleared)
		cleared.Title = "cleared, then saved"
		must(t, r.db.Save(&cleared).Error)
		must(t, r.db.Model(&updated).Updates(map[string]any{"author_id": 0, "title": "updated to 0"}).Error)
		must(t, r.db.Model(&kept).Update("author_id", a.ID).Error) // its own owner again, as Clear left it NULL

		for _, want := range []struct {
			id     int64
			author int64
			title  string
		}{{int64(deleted.ID), 0, "deleted, then saved"}, {int64(cleared.ID), 0, "cleared, then saved"}, {int64(updated.ID), 0, "updated to 0"}, {int64(kept.ID), a.ID, "kept"}} {
			r.mustBeOnItsShard(t, &book{}, want.id)
			var got book
			must(t, r.direct[r.physicalOf(want.id)].First(&got, want.id).Error)
			if got.AuthorID != want.author || got.Title != want.title {
				t.Errorf("book %d on its database: author %d, %q; want %d, %q", want.id, got.AuthorID, got.Title, want.author, want.title)
			}
		}
		// Over every database a condition on the 0 finds them all, as one
		// database does; without a clause it names no shard.
		var orphans []book
		must(t, r.db.Clauses(shardid.AllShards()).Where("author_id = ?", 0).Find(&orphans).Error)
		var n int64
		must(t, r.db.Clauses(shardid.AllShards()).Model(&book{}).Where("author_id IN ?", []int64{0, a.ID}).Count(&n).Error)
		if len(orphans) != 3 || n != 4 {
			t.Errorf("over every shard: %d books of author 0, want 3; %d of 0 or the author, want 4", len(orphans), n)
		}
		must(t, r.db.Clauses(shardid.ByID(a.ID)).Where("author_id = ?", 0).Find(&orphans).Error)
		if len(orphans) != 3 {
			t.Errorf("on the author's shard: %d books of author 0, want 3", len(orphans))
		}
		if err := r.db.Where("author_id = ?", 0).Find(&orphans).Error; !errors.Is(err, shardid.ErrNoShard) {
			t.Errorf("without a clause: %v, want ErrNoShard", err)
		}
		// Another shard's owner ID is still refused.
		var other author
		for other.ID == 0 || r.physicalOf(other.ID) == r.physicalOf(a.ID) {
			other = author{Name: fmt.Sprint("other", other.ID)}
			must(t, r.db.Create(&other).Error)
		}
		deleted.AuthorID = other.ID
		if err := r.db.Save(&deleted).Error; err == nil {
			t.Fatal("a Save handing the child to an owner on another database was not refused")
		}
		must(t, r.db.Model(&book{}).Where("author_id = ?", a.ID).Count(&n).Error)
		if n != 1 {
			t.Fatalf("%d books of the author, want the one kept", n)
		}
	})
}
