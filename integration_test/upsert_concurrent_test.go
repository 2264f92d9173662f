package integration

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// concBadge is placed beside its owner and unique by its code: an upsert of
// it on MySQL/MariaDB reads, FOR UPDATE, the rows its code may conflict with.
type concBadge struct {
	ID      int64 `shardid:"colocate:OwnerID"`
	OwnerID int64
	Code    string `gorm:"uniqueIndex;size:32"`
	Level   int
}

// TestConcurrentUpsertsOfOneNewCodeBothRun: two goroutines upserting at
// once the same new code of one owner both succeed, as on one database
// without the plugin, though the plugin's check locks the gap where the
// code would go (two such locks deadlock the inserts: the loser runs
// again); one row per code is stored, on the owner's database only, and
// both structs hold its ID.
func TestConcurrentUpsertsOfOneNewCodeBothRun(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("PostgreSQL's upsert names its target, and refuses an UpdateAll over a code (routing.md)")
		}
		k := newKeys(t, b)
		fresh(t, k.db, &concBadge{})
		owner := k.idOfShardOf(1)
		home := k.physicalOf(owner)
		const rounds = 20
		for i := range rounds {
			var wg sync.WaitGroup
			rows := make([]concBadge, 2)
			errs := make([]error, 2)
			for g := range rows {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rows[g] = concBadge{OwnerID: owner, Code: fmt.Sprint("c", i), Level: g}
					errs[g] = k.db.Session(&gorm.Session{}).Clauses(clause.OnConflict{UpdateAll: true}).Create(&rows[g]).Error
				}()
			}
			wg.Wait()
			for g, err := range errs {
				if err != nil {
					t.Fatalf("round %d: upsert %d of two at once: %v", i, g, err)
				}
			}
			var stored []concBadge
			must(t, k.direct[home].Where("code = ?", fmt.Sprint("c", i)).Find(&stored).Error)
			if len(stored) != 1 || rows[0].ID != stored[0].ID || rows[1].ID != stored[0].ID {
				t.Fatalf("round %d: stored %+v, the structs %+v", i, stored, rows)
			}
		}
		for p, d := range k.direct {
			var n int64
			must(t, d.Model(&concBadge{}).Count(&n).Error)
			if want := map[bool]int64{true: rounds}[p == home]; n != want {
				t.Errorf("database %d holds %d badges, want %d", p, n, want)
			}
		}
	})
}

// TestConcurrentUpsertsOfAModelWithAnotherUniqueKeyRaceNothing: upserts
// over existing codes run at once from several goroutines, each checking
// the model's unique keys, share the model's schema without a data race
// (run under -race), and update their rows.
func TestConcurrentUpsertsOfAModelWithAnotherUniqueKeyRaceNothing(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("only MySQL's ON DUPLICATE KEY fires on every unique key, which the check reads")
		}
		k := newKeys(t, b)
		fresh(t, k.db, &concBadge{})
		owner := k.idOfShardOf(1)
		seed := make([]concBadge, 4)
		for g := range seed {
			seed[g] = concBadge{OwnerID: owner, Code: fmt.Sprint("s", g)}
		}
		must(t, k.db.Create(&seed).Error)
		var wg sync.WaitGroup
		errs := make([]error, len(seed))
		for g := range seed {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for level := 1; level <= 5 && errs[g] == nil; level++ {
					row := concBadge{ID: seed[g].ID, OwnerID: owner, Code: seed[g].Code, Level: level}
					errs[g] = k.db.Session(&gorm.Session{}).Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error
				}
			}()
		}
		wg.Wait()
		for g, err := range errs {
			must(t, err)
			var row concBadge
			must(t, k.direct[k.physicalOf(owner)].First(&row, seed[g].ID).Error)
			if row.Level != 5 {
				t.Errorf("badge %d: level %d, want 5", g, row.Level)
			}
		}
	})
}

// concKeeper owns badges colocated with it: GORM saves them with an
// upsert (ON DUPLICATE KEY UPDATE owner_id), which on MySQL/MariaDB may fire
// on their unique code.
type concKeeper struct {
	ID     int64 `shardid:""`
	Name   string
	Badges []concBadge `gorm:"foreignKey:OwnerID"`
}

// TestAnUpsertThatMayFireOnAnotherUniqueKeyRunsInATransactionWithoutGORMs:
// on MySQL/MariaDB the plugin checks, FOR UPDATE, that an upsert which may
// fire on another unique key rewrites no row of another shard, and the
// check's locks must last until the upsert ran. Without GORM's transaction
// (SkipDefaultTransaction, of a Session or of the config) the plugin begins
// one of its own for the statement: the upsert runs, and so does the Create
// of an owner with such children, whose association save is that upsert
// (refused, it left the owner written without its children). A code
// another owner's badge holds is still refused, nothing of that statement
// written.
func TestAnUpsertThatMayFireOnAnotherUniqueKeyRunsInATransactionWithoutGORMs(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("only MySQL's ON DUPLICATE KEY fires on every unique key, which the check reads")
		}
		k := newKeys(t, b)
		fresh(t, k.db, &concBadge{}, &concKeeper{})
		global, err := gorm.Open(b.dialector(t, ""), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
		must(t, err)
		p := shardid.New(shardid.Config{Shards: shards(t, b, ""), Atomic: b.atomicity()})
		must(t, global.Use(p))
		t.Cleanup(func() { _ = p.Close() })
		count := func(model any) int64 {
			var n int64
			must(t, k.db.Model(model).Clauses(shardid.AllShards()).Count(&n).Error)
			return n
		}
		for name, bare := range map[string]*gorm.DB{"session": k.db.Session(&gorm.Session{SkipDefaultTransaction: true}), "config": global} {
			owner := k.idOfShardOf(1)
			row := concBadge{OwnerID: owner, Code: "x-" + name}
			if err := bare.Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error; err != nil {
				t.Fatalf("%s: an upsert without GORM's transaction: %v", name, err)
			}
			var stored concBadge
			must(t, k.direct[k.physicalOf(owner)].First(&stored, row.ID).Error)
			again := concBadge{ID: row.ID, OwnerID: owner, Code: row.Code, Level: 7}
			must(t, bare.Save(&[]concBadge{again}).Error)
			must(t, k.direct[k.physicalOf(owner)].First(&stored, row.ID).Error)
			if stored.Level != 7 {
				t.Errorf("%s: Save of an existing badge: level %d, want 7", name, stored.Level)
			}

			keeper := concKeeper{Name: "k-" + name, Badges: []concBadge{{Code: "k1-" + name}, {Code: "k2-" + name}}}
			if err := bare.Create(&keeper).Error; err != nil {
				t.Fatalf("%s: an owner created with its badges without GORM's transaction: %v", name, err)
			}
			var badges []concBadge
			must(t, k.direct[k.physicalOf(keeper.ID)].Where("owner_id = ?", keeper.ID).Find(&badges).Error)
			if len(badges) != 2 {
				t.Errorf("%s: the owner's database holds %d of its 2 badges", name, len(badges))
			}

			badgesBefore := count(&concBadge{})
			other := k.plugin.Layout().Compose(time.Now().Add(-time.Second), 1, 5) // another owner on the first badge's database, where its code conflicts
			if k.physicalOf(other) != k.physicalOf(owner) {
				t.Fatal("logical shards 0 and 1 on two databases")
			}
			err := bare.Clauses(clause.OnConflict{UpdateAll: true}).Create(&[]concBadge{{OwnerID: other, Code: row.Code}}).Error
			if !errors.Is(err, shardid.ErrCrossShard) {
				t.Errorf("%s: an upsert of a code another owner's badge holds: %v, want ErrCrossShard", name, err)
			}
			if n := count(&concBadge{}); n != badgesBefore {
				t.Errorf("%s: the refused upsert left %d badges more", name, n-badgesBefore)
			}
			must(t, k.direct[k.physicalOf(owner)].First(&stored, row.ID).Error)
			if stored.OwnerID != owner {
				t.Errorf("%s: the badge's owner became %d, want %d", name, stored.OwnerID, owner)
			}
		}
	})
}

// concBadgeBefore is concBadge as a version of the application before its
// code was made unique: its processes keep running while the next version
// migrates the unique index.
type concBadgeBefore struct {
	ID      int64 `shardid:"colocate:OwnerID"`
	OwnerID int64
	Code    string `gorm:"size:32"`
	Level   int
}

func (concBadgeBefore) TableName() string { return "conc_badges" }

// TestAnUpsertThroughAModelWithoutTheTablesUniqueKeyRewritesNoRowOfAnotherShard:
// on MySQL/MariaDB, ON DUPLICATE KEY fires on every unique key of the table,
// also one the process's model does not declare (another version of it
// migrated it while this one runs). An upsert through such a model of a
// code another owner's badge holds, on the same database, is refused with
// ErrCrossShard, the held row left as it was (it took the other owner's ID
// in its owner_id, which its own ID does not place, silently); a new code
// upserts.
func TestAnUpsertThroughAModelWithoutTheTablesUniqueKeyRewritesNoRowOfAnotherShard(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("only MySQL's ON DUPLICATE KEY fires on every unique key")
		}
		k := newKeys(t, b)
		fresh(t, k.db, &concBadge{})
		l := k.plugin.Layout()
		owner, other := l.Compose(time.Now().Add(-time.Second), 0, 5), l.Compose(time.Now().Add(-time.Second), 1, 5)
		if k.physicalOf(owner) != k.physicalOf(other) {
			t.Fatal("logical shards 0 and 1 on two databases")
		}
		held := concBadge{OwnerID: owner, Code: "held"}
		must(t, k.db.Create(&held).Error)
		for name, db := range map[string]*gorm.DB{"GORM's transaction": k.db, "SkipDefaultTransaction": k.db.Session(&gorm.Session{SkipDefaultTransaction: true})} {
			err := db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&concBadgeBefore{OwnerID: other, Code: "held", Level: 3}).Error
			if !errors.Is(err, shardid.ErrCrossShard) {
				t.Errorf("%s: an upsert of a code another owner's badge holds, through a model without the unique key: %v, want ErrCrossShard", name, err)
			}
			var stored concBadge
			must(t, k.direct[k.physicalOf(owner)].First(&stored, held.ID).Error)
			if stored.OwnerID != owner || stored.Level != 0 {
				t.Fatalf("%s: the held badge became %+v, want owner %d, level 0", name, stored, owner)
			}
			fresh := concBadgeBefore{OwnerID: other, Code: "new " + name}
			must(t, db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&fresh).Error)
			var made concBadge
			must(t, k.direct[k.physicalOf(other)].First(&made, fresh.ID).Error)
		}
		dry := k.db.ToSQL(func(tx *gorm.DB) *gorm.DB { // DryRun and SkipDefaultTransaction: built, nothing written
			return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&concBadgeBefore{OwnerID: other, Code: "dry"})
		})
		if !strings.Contains(dry, "ON DUPLICATE KEY UPDATE") {
			t.Errorf("ToSQL of an upsert: %q", dry)
		}
	})
}

// concBadgeReferenced is concBadge as a later version of the application
// migrates it: a unique reference, NULL until set, which the running
// version's model (concBadgeUnreferenced) has no field for.
type concBadgeReferenced struct {
	ID      int64 `shardid:"colocate:OwnerID"`
	OwnerID int64
	Code    string  `gorm:"size:32"`
	Ref     *string `gorm:"size:32;uniqueIndex"`
	Level   int
}

func (concBadgeReferenced) TableName() string { return "conc_badge_refs" }

type concBadgeUnreferenced struct {
	ID      int64 `shardid:"colocate:OwnerID"`
	OwnerID int64
	Code    string `gorm:"size:32"`
	Level   int
}

func (concBadgeUnreferenced) TableName() string { return "conc_badge_refs" }

// TestAnUpsertThroughAModelWithoutAUniqueColumnRunsWhereItStoresNull: a
// unique key on a column the model has no field for fires on nothing when
// the INSERT stores NULL there (a nullable column of no other default), so
// the older model's upserts run; one whose column the table fills with a
// default of its own may fire, and the upsert is refused with
// ErrCrossShard naming it, nothing written.
func TestAnUpsertThroughAModelWithoutAUniqueColumnRunsWhereItStoresNull(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("only MySQL's ON DUPLICATE KEY fires on every unique key")
		}
		k := newKeys(t, b)
		fresh(t, k.db, &concBadgeReferenced{})
		owner := k.plugin.Layout().Compose(time.Now().Add(-time.Second), 0, 5)
		for j, db := range []*gorm.DB{k.db, k.db.Session(&gorm.Session{SkipDefaultTransaction: true})} {
			for i := range 2 {
				rows := []concBadgeUnreferenced{{OwnerID: owner, Code: fmt.Sprint("c", j, i)}}
				if err := db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&rows).Error; err != nil {
					t.Fatalf("an upsert through the model without the nullable unique column: %v", err)
				}
				rows[0].Level = 2
				if err := db.Save(&rows).Error; err != nil {
					t.Fatalf("a Save through the model without the nullable unique column: %v", err)
				}
			}
		}
		for _, d := range k.direct {
			must(t, d.Exec("ALTER TABLE conc_badge_refs ADD COLUMN serial VARCHAR(8) NOT NULL DEFAULT 's', ADD UNIQUE INDEX idx_conc_badge_refs_serial (owner_id, code, serial)").Error)
		}
		var before int64
		must(t, k.db.Model(&concBadgeUnreferenced{}).Clauses(shardid.AllShards()).Count(&before).Error)
		err := k.db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&[]concBadgeUnreferenced{{OwnerID: owner, Code: "d"}}).Error
		if !errors.Is(err, shardid.ErrCrossShard) || !strings.Contains(err.Error(), "serial") {
			t.Errorf("an upsert through a model without a unique column the table fills: %v, want ErrCrossShard naming it", err)
		}
		var after int64
		must(t, k.db.Model(&concBadgeUnreferenced{}).Clauses(shardid.AllShards()).Count(&after).Error)
		if after != before {
			t.Errorf("the refused upsert left %d badges more", after-before)
		}
	})
}
