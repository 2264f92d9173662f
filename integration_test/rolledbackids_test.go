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

// A Create in the application's transaction on the plugin's own database
// (its rows anchored to it, committed with it) that fails after its INSERT
// takes its rows back at once, and gives back its IDs: retried with another
// hash key in another transaction, the row goes to its new key's shard.
// CreateInBatches, which runs its batches in such a transaction, gives back
// the IDs of the batch that failed; those before it keep theirs, as GORM
// keeps the keys an auto-increment gave the batches before a failed one.
func TestACreateInATransactionOnThePluginsDatabaseRolledBackGivesBackItsIDs(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &rbFamily{}, &rbKid{})
		f := rbFamily{Email: "anchored@example.com", Fails: true}
		var createErr error
		must(t, r.db.Transaction(func(tx *gorm.DB) error {
			createErr = tx.Create(&f).Error
			return nil // the application commits all the same
		}))
		if !errors.Is(createErr, errRefusedAfterWriting) || f.ID != 0 {
			t.Fatalf("a Create failing after its INSERT: %v, ID %d; want the hook's error and no ID", createErr, f.ID)
		}
		if n := r.count(t, &rbFamily{}); n != 0 {
			t.Fatalf("%d families written", n)
		}
		f.Email, f.Fails = "anchored-retried@example.com", false
		must(t, r.db.Transaction(func(tx *gorm.DB) error { return tx.Create(&f).Error }))
		key, err := shardid.HashKey(f.Email)
		must(t, err)
		if shard, want := r.plugin.Layout().Shard(f.ID), int(key%uint64(r.plugin.Layout().ShardCount())); shard != want {
			t.Errorf("retried with another email, the row is in shard %d, not its email's %d", shard, want)
		}

		fresh(t, r.db, &rbFamily{}, &rbKid{})
		rows := make([]rbFamily, 4)
		for i := range rows {
			rows[i] = rbFamily{Email: fmt.Sprintf("batch-%d@example.com", i), Fails: i == 3}
		}
		if err := r.db.CreateInBatches(&rows, 2).Error; !errors.Is(err, errRefusedAfterWriting) {
			t.Fatalf("CreateInBatches: %v, want the hook's error", err)
		}
		if n := r.count(t, &rbFamily{}); n != 0 {
			t.Fatalf("CreateInBatches failed, and %d families are written", n)
		}
		if rows[2].ID != 0 || rows[3].ID != 0 {
			t.Errorf("the failed batch keeps IDs %d, %d", rows[2].ID, rows[3].ID)
		}
	})
}

// The IDs a write's Creates made (Save of a row with a new child) are given
// back when the write's transaction rolls back: its After hook failed.
func TestASaveRolledBackGivesBackTheIDsOfTheChildrenItCreated(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &RbSaved{}, &RbSavedKid{})
		saved := RbSaved{Email: "save@example.com"}
		must(t, r.db.Create(&saved).Error)
		saved.Fails, saved.Note = true, "changed"
		saved.Kids = []RbSavedKid{{Name: "new"}}
		if err := r.db.Save(&saved).Error; !errors.Is(err, errRefusedAfterWriting) {
			t.Fatalf("Save: %v, want the hook's error", err)
		}
		if n := r.count(t, &RbSavedKid{}); n != 0 {
			t.Fatalf("%d children written", n)
		}
		if saved.Kids[0].ID != 0 {
			t.Errorf("the child's Create was rolled back with the Save, and kept ID %d", saved.Kids[0].ID)
		}
	})
}

type (
	RbSaved struct {
		ID    int64 `shardid:"hash:Email"`
		Email string
		Note  string
		Fails bool `gorm:"-"` // its AfterUpdate fails
		Kids  []RbSavedKid
	}
	RbSavedKid struct {
		ID        int64 `shardid:"colocate:RbSavedID"`
		RbSavedID int64
		Name      string
	}
)

func (s *RbSaved) AfterUpdate(*gorm.DB) error {
	if s.Fails {
		return errRefusedAfterWriting
	}
	return nil
}

// With BestEffort, a Create split over two databases whose first part's
// commit answer is lost keeps that part's IDs: its row may be, and here is,
// written.
func TestACreateWhosePartsCommitAnswerIsLostKeepsThatPartsIDs(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		for proxied := range 2 {
			t.Run(fmt.Sprint("lost-on-", proxied), func(t *testing.T) {
				dir := t.TempDir()
				list := shards(t, b, dir)[:2]
				count := shardid.Layout{}.ShardCount()
				list[0].Logical = []shardid.Range{{From: 0, To: count/2 - 1}}
				list[1].Logical = []shardid.Range{{From: count / 2, To: count - 1}}
				dialector, proxy := physicalViaChaos(t, b, proxied)
				list[proxied].Dialector = dialector
				db := open(t, b, dir, shardid.Config{Shards: list, Atomic: shardid.BestEffort})
				direct := direct(t, b, dir)[:2]
				fresh(t, db, &rbFamily{}, &rbKid{})
				var families []rbFamily
				var on [2]bool
				for i := 0; len(families) < 2; i++ {
					email := fmt.Sprintf("lost-%d@example.com", i)
					key, err := shardid.HashKey(email)
					must(t, err)
					k := 0
					if int(key%uint64(count)) >= count/2 {
						k = 1
					}
					if !on[k] {
						on[k] = true
						families = append(families, rbFamily{Email: email})
					}
				}
				proxy.arm(map[string]string{"mariadb": "COMMIT", "postgres": "commit"}[b.name], true, 0)
				err := db.Create(&families).Error
				proxy.calm()
				for _, f := range families {
					var rows int64
					for _, d := range direct {
						var n int64
						must(t, d.Model(&rbFamily{}).Where("email = ?", f.Email).Count(&n).Error)
						rows += n
					}
					if rows > 0 && f.ID == 0 {
						t.Errorf("family %s is written, and its ID was given back (the Create: %v)", f.Email, err)
					}
				}
			})
		}
	})
}
