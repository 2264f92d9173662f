package integration

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// Models of the tests of writes over several databases whose every part is
// planned before any writes.
type (
	// guarded rows that are locked are left alone by updates and deletes: a
	// condition its hooks add, as GORM's docs show.
	guarded struct {
		ID     int64 `shardid:""`
		Name   string
		Locked bool
	}
	// drifting moves to another author in its BeforeCreate hook, when told.
	drifting struct {
		ID       int64 `shardid:"colocate:AuthorID"`
		AuthorID int64
		MoveTo   int64 `gorm:"-"`
	}
	// titled has a title unique on each database.
	titled struct {
		ID    int64  `shardid:""`
		Title string `gorm:"size:64;uniqueIndex"`
	}
)

func notLocked(tx *gorm.DB) {
	tx.Statement.AddClause(clause.Where{Exprs: []clause.Expression{clause.Eq{Column: clause.Column{Name: "locked"}, Value: false}}})
}

func (g *guarded) BeforeUpdate(tx *gorm.DB) error { notLocked(tx); return nil }
func (g *guarded) BeforeDelete(tx *gorm.DB) error { notLocked(tx); return nil }

func (d *drifting) BeforeCreate(*gorm.DB) error {
	if d.MoveTo != 0 {
		d.AuthorID = d.MoveTo
	}
	return nil
}

// TestHookConditionsHoldOnEveryDatabase: the condition a BeforeUpdate or
// BeforeDelete hook adds to an update or delete over every database guards
// every database's part, not only the first's.
func TestHookConditionsHoldOnEveryDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &guarded{})
		for k := range physicalShards {
			for _, locked := range []bool{true, false} {
				must(t, r.db.Clauses(shardid.OnShard(k*r.plugin.Layout().ShardCount()/physicalShards)).Create(&guarded{Name: "x", Locked: locked}).Error)
			}
		}
		must(t, r.db.Clauses(shardid.AllShards()).Model(&guarded{}).Where("name = ?", "x").Update("name", "y").Error)
		for k, d := range r.direct {
			var rows []guarded
			must(t, d.Order("locked").Find(&rows).Error)
			if len(rows) != 2 || rows[0].Name != "y" || rows[1].Name != "x" {
				t.Fatalf("database %d after the update: %+v; want the unlocked row y, the locked one x", k, rows)
			}
		}
		must(t, r.db.Clauses(shardid.AllShards()).Where("name <> ?", "").Delete(&guarded{}).Error)
		for k, d := range r.direct {
			var rows []guarded
			must(t, d.Find(&rows).Error)
			if len(rows) != 1 || !rows[0].Locked {
				t.Fatalf("database %d after the delete: %+v; want the locked row alone", k, rows)
			}
		}
	})
}

// TestSplitCreateRefusedAfterItsHooksWritesNothing: a Create over several
// databases where a BeforeCreate hook of a row of a later part moves its
// colocate value to another database is refused before any part writes: no
// row on any database.
func TestSplitCreateRefusedAfterItsHooksWritesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &drifting{})
		authors := r.onEvery(t)
		rows := []drifting{{AuthorID: authors[0].ID}, {AuthorID: authors[1].ID, MoveTo: authors[2].ID}}
		if err := r.db.Create(&rows).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Fatalf("a split Create whose hook moves a row: %v, want ErrCrossShard", err)
		}
		if n := r.count(t, &drifting{}); n != 0 {
			t.Fatalf("the refused Create left %d rows", n)
		}
	})
}

// TestSplitCreateWhosePartFailsWritesNothing: a Create over several
// databases whose second part fails at its INSERT (a unique index) leaves
// no row of the first: as on one database, nothing is written.
func TestSplitCreateWhosePartFailsWritesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &titled{})
		layout := r.plugin.Layout()
		at := time.Now().Add(-time.Minute)
		on := func(k, seq int) int64 { return layout.Compose(at, k*layout.ShardCount()/physicalShards, seq) }
		must(t, r.direct[1].Create(&titled{ID: on(1, 1), Title: "taken"}).Error)
		rows := []titled{{ID: on(0, 2), Title: "first"}, {ID: on(1, 3), Title: "taken"}}
		err := r.db.Create(&rows).Error
		if err == nil {
			t.Fatal("a split Create whose second part breaks a unique index succeeded")
		}
		var n int64
		must(t, r.direct[0].Model(&titled{}).Count(&n).Error)
		if n != 0 {
			t.Fatalf("the failed Create left %d rows on the first database (%v)", n, err)
		}
		t.Logf("%s: %v", b.name, fmt.Sprint(err))
	})
}
