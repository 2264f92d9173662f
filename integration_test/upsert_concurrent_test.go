package integration

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

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

// TestAnUpsertThatMayFireOnAnotherUniqueKeyNeedsATransaction: on
// MySQL/MariaDB the plugin checks, FOR UPDATE, that an upsert which may fire
// on another unique key rewrites no row of another shard; outside any
// transaction (SkipDefaultTransaction) the check's locks end with it, and
// another owner's row could take the code before the upsert runs, so the
// upsert is refused and writes nothing. In a transaction it runs.
func TestAnUpsertThatMayFireOnAnotherUniqueKeyNeedsATransaction(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("only MySQL's ON DUPLICATE KEY fires on every unique key, which the check reads")
		}
		k := newKeys(t, b)
		fresh(t, k.db, &concBadge{})
		owner := k.idOfShardOf(1)
		bare := k.db.Session(&gorm.Session{SkipDefaultTransaction: true})
		err := bare.Clauses(clause.OnConflict{UpdateAll: true}).Create(&concBadge{OwnerID: owner, Code: "x"}).Error
		if !errors.Is(err, shardid.ErrCrossShard) || !strings.Contains(err.Error(), "transaction") {
			t.Fatalf("an upsert outside a transaction: %v, want ErrCrossShard asking for a transaction", err)
		}
		for p, d := range k.direct {
			var n int64
			must(t, d.Model(&concBadge{}).Count(&n).Error)
			if n != 0 {
				t.Errorf("the refused upsert left %d badges on database %d", n, p)
			}
		}
		row := concBadge{OwnerID: owner, Code: "x"}
		must(t, bare.Transaction(func(tx *gorm.DB) error {
			return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error
		}))
		var stored concBadge
		must(t, k.db.First(&stored, row.ID).Error) // waits for the transaction's branches (routing.md)
		must(t, k.direct[k.physicalOf(owner)].First(&stored, row.ID).Error)
	})
}
