package integration

import (
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// hookedEntry's AfterCreate runs a nested Transaction that writes an entry
// beside it and one on another author's database, then fails: the nested
// transaction's writes are undone, as on one database.
type hookedEntry struct {
	ID       shardid.ID `shardid:"colocate:AuthorID"`
	AuthorID int64
	Ref      string
	Other    int64 `gorm:"-"`
}

func (h *hookedEntry) AfterCreate(tx *gorm.DB) error {
	if h.Other == 0 {
		return nil
	}
	_ = tx.Transaction(func(t2 *gorm.DB) error {
		if err := t2.Create(&entry{AuthorID: h.AuthorID, Ref: h.Ref + "-same"}).Error; err != nil {
			return err
		}
		if err := t2.Create(&entry{AuthorID: h.Other, Ref: h.Ref + "-other"}).Error; err != nil {
			return err
		}
		return errors.New("undo the nested transaction")
	})
	return nil
}

// TestNestedTransactionInAHookOfATransactionAcrossShardsUndoesEveryDatabase:
// a nested Transaction run by a hook inside a transaction across shards
// sets its savepoint on every branch: its failure undoes its writes on the
// hook's database and on the other it wrote, as a savepoint does on one
// database; only the hooked row commits.
func TestNestedTransactionInAHookOfATransactionAcrossShardsUndoesEveryDatabase(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		fresh(t, r.db, &hookedEntry{})
		err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			return tx.Create(&hookedEntry{AuthorID: authors[0].ID, Ref: "h", Other: authors[1].ID}).Error
		})
		must(t, err)
		got := r.refsOn(t)
		var hooked int64
		for _, d := range r.direct {
			var n int64
			must(t, d.Model(&hookedEntry{}).Count(&n).Error)
			hooked += n
		}
		if len(got) != 0 || hooked != 1 {
			t.Fatalf("entries %v and %d hooked rows committed; want none of the nested transaction's entries, and the hooked row", got, hooked)
		}
		r.noPrepared(t)
	})
}
