package integration

import (
	"errors"
	"fmt"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// A Create that wrote nothing gives back every ID it made, as GORM leaves an
// auto-increment key unset: a row retried with another hash key gets an ID
// of its new shard.

type (
	rbFamily struct {
		ID    int64 `shardid:"hash:Email"`
		Email string
		Fails bool // its AfterCreate fails, once its row is written
		Kids  []rbKid
	}
	rbKid struct {
		ID         int64 `shardid:"colocate:RbFamilyID"`
		RbFamilyID int64
		Name       string
		Fails      bool // its AfterCreate fails, once its row is written
	}
)

var errRefusedAfterWriting = errors.New("refused after the INSERT")

func (f *rbFamily) AfterCreate(*gorm.DB) error {
	if f.Fails {
		return errRefusedAfterWriting
	}
	return nil
}

func (k *rbKid) AfterCreate(*gorm.DB) error {
	if k.Fails {
		return errRefusedAfterWriting
	}
	return nil
}

// TestACreateRolledBackAfterItsInsertGivesBackItsIDs: a Create whose row, or
// a child's, was written and then rolled back (an After hook failed), alone
// or split over several databases, leaves no ID in any of its rows, children
// included; retried with another key, each row is written on its key's shard.
// In the application's transaction the failed Create's rows stay written
// there, and keep their IDs.
func TestACreateRolledBackAfterItsInsertGivesBackItsIDs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &rbFamily{}, &rbKid{})
		families := func(n int, fails func(i int) (family, kid bool)) []rbFamily {
			list := make([]rbFamily, n)
			for i := range list {
				family, kid := fails(i)
				list[i] = rbFamily{Email: fmt.Sprintf("%s-%d@example.com", t.Name(), i), Fails: family,
					Kids: []rbKid{{Name: "first"}, {Name: "second", Fails: kid}}}
			}
			return list
		}
		for _, c := range []struct {
			what string
			rows []rbFamily
		}{
			{"a family whose AfterCreate fails", families(1, func(int) (bool, bool) { return true, false })},
			{"a family whose second kid's AfterCreate fails", families(1, func(int) (bool, bool) { return false, true })},
			{"eight families split over the databases, the last one's AfterCreate failing", families(8, func(i int) (bool, bool) { return i == 7, false })},
			{"eight families split over the databases, the last one's kid failing", families(8, func(i int) (bool, bool) { return false, i == 7 })},
		} {
			fresh(t, r.db, &rbFamily{}, &rbKid{})
			if err := r.db.Create(&c.rows).Error; !errors.Is(err, errRefusedAfterWriting) {
				t.Fatalf("%s: %v, want the hook's error", c.what, err)
			}
			if n := r.count(t, &rbFamily{}) + r.count(t, &rbKid{}); n != 0 {
				t.Fatalf("%s: %d rows written", c.what, n)
			}
			for i := range c.rows {
				row := &c.rows[i]
				if row.ID != 0 || row.Kids[0].ID != 0 || row.Kids[1].ID != 0 {
					t.Errorf("%s: wrote nothing, and left the IDs family %d, kids %d and %d", c.what, row.ID, row.Kids[0].ID, row.Kids[1].ID)
				}
				row.Email, row.Fails, row.Kids[1].Fails = "retried-"+row.Email, false, false
			}
			must(t, r.db.Create(&c.rows).Error)
			for _, row := range c.rows {
				key, err := shardid.HashKey(row.Email)
				must(t, err)
				if shard := r.plugin.Layout().Shard(row.ID); shard != int(key%uint64(r.plugin.Layout().ShardCount())) {
					t.Errorf("%s: retried with another email, the family is in shard %d, not its email's", c.what, shard)
				}
				if got := r.where(t, &rbKid{}, row.Kids[1].ID); len(got) != 1 || got[0] != r.physicalOf(row.ID) {
					t.Errorf("%s: retried, a kid is on %v, its family on %d", c.what, got, r.physicalOf(row.ID))
				}
			}
		}
		inTransaction := rbFamily{Email: "in-a-transaction@example.com", Fails: true}
		key, err := shardid.HashKey(inTransaction.Email)
		must(t, err)
		tx := r.db.Clauses(shardid.OnShard(int(key % uint64(r.plugin.Layout().ShardCount())))).Begin()
		must(t, tx.Error)
		if err := tx.Create(&inTransaction).Error; !errors.Is(err, errRefusedAfterWriting) || inTransaction.ID == 0 {
			t.Fatalf("a Create failing after its INSERT in the application's transaction: %v, ID %d, want the hook's error and the ID kept", err, inTransaction.ID)
		}
		must(t, tx.Commit().Error)
		if got := r.where(t, &rbFamily{}, inTransaction.ID); len(got) != 1 {
			t.Errorf("the row the application's transaction committed, by its ID: on %v", got)
		}
	})
}

var errAfterTheCommit = errors.New("a step after the commit failed")

// TestACreateCommittedThenFailedKeepsItsIDs: an application's callback after
// GORM's commit (registered before db.Use, so it runs before the plugin's
// last one) fails a Create whose rows are committed: the row and its child
// keep their IDs, as their rows hold them.
func TestACreateCommittedThenFailedKeepsItsIDs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		main, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		must(t, main.Callback().Create().After("gorm:commit_or_rollback_transaction").Register("app:after_commit", func(db *gorm.DB) {
			if db.Statement.Schema != nil && db.Statement.Schema.Table == "rb_families" && db.Error == nil {
				db.AddError(errAfterTheCommit)
			}
		}))
		p := shardid.New(shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity()})
		firstStart(t, main)
		must(t, main.Use(p))
		t.Cleanup(func() { _ = p.Close() })
		r := &routing{b: b, db: main, direct: direct(t, b, dir), plugin: p}
		fresh(t, main, &rbFamily{}, &rbKid{})
		family := rbFamily{Email: "committed@example.com", Kids: []rbKid{{Name: "kid"}}}
		if err := main.Create(&family).Error; !errors.Is(err, errAfterTheCommit) {
			t.Fatalf("a Create failed after its commit: %v, want the callback's error", err)
		}
		if family.ID == 0 || family.Kids[0].ID == 0 {
			t.Fatalf("a Create committed, then failed: IDs family %d, kid %d, want both kept", family.ID, family.Kids[0].ID)
		}
		if got := r.where(t, &rbFamily{}, family.ID); len(got) != 1 {
			t.Errorf("the committed family, by its ID: on %v", got)
		}
		if got := r.where(t, &rbKid{}, family.Kids[0].ID); len(got) != 1 {
			t.Errorf("the committed kid, by its ID: on %v", got)
		}
	})
}
