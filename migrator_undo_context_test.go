package shardid

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gorm.io/gorm"
)

type undoTag struct { // unsharded: made on the plugin's database first
	ID   uint
	Name string
}

type undoOwner struct {
	ID   int64     `shardid:""`
	Tags []undoTag `gorm:"many2many:undo_owner_tags"`
}

// TestAMigrationWhoseContextEndsDropsWhatItCreated: a migration whose
// context ends part way (its deadline, a cancel) still drops the tables it
// created: the undo runs on a context of its own, where on the ended one
// it found no table and left them, saying they were dropped.
func TestAMigrationWhoseContextEndsDropsWhatItCreated(t *testing.T) {
	db, p, _ := twoSQLiteShards(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	must(t, db.Callback().Raw().After("gorm:raw").Register("test:cancel_after_undo_tags", func(d *gorm.DB) {
		if strings.Contains(d.Statement.SQL.String(), "CREATE TABLE `undo_tags`") {
			cancel() // the tag's table is made: the migration goes on with its context ended
		}
	}))
	err := p.AutoMigrate(db.WithContext(ctx), &undoOwner{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("AutoMigrate with its context cancelled part way: %v", err)
	}
	if db.Migrator().HasTable("undo_tags") {
		t.Errorf("the plugin's database keeps undo_tags, which the failed migration created: %v", err)
	}
}
