package integration

import (
	"errors"
	"fmt"
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
