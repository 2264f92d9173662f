package integration

import (
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

type uniqueItem struct {
	ID    int64  `shardid:""`
	Email string `gorm:"size:64;uniqueIndex"`
}

// TestTranslateErrorReachesThroughTheShards: with GORM's TranslateError, a
// unique index violated on one shard (a Create, an Update by ID, a batch
// over several databases, an update over every shard) is
// gorm.ErrDuplicatedKey, and a read of no rows gorm.ErrRecordNotFound, as
// on one database.
func TestTranslateErrorReachesThroughTheShards(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard, TranslateError: true})
		must(t, err)
		firstStart(t, db)
		p := shardid.New(shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity()})
		must(t, db.Use(p))
		t.Cleanup(func() { _ = p.Close() })
		fresh(t, db, &uniqueItem{})
		count := p.Layout().ShardCount()
		on := func(k int) *gorm.DB { return db.Clauses(shardid.OnShard(k * count / physicalShards)) }
		must(t, on(0).Create(&uniqueItem{Email: "a"}).Error)
		must(t, on(1).Create(&uniqueItem{Email: "b"}).Error)
		if err := on(0).Create(&uniqueItem{Email: "a"}).Error; !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Errorf("a duplicate on one shard: %v, want gorm.ErrDuplicatedKey", err)
		}
		var first uniqueItem
		if err := db.Clauses(shardid.AllShards()).Where("email = ?", "none").First(&first).Error; !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Errorf("First of none over every shard: %v, want gorm.ErrRecordNotFound", err)
		}
		if err := db.First(&first, p.Layout().Compose(p.Layout().Epoch.Add(time.Hour), 0, 1)).Error; !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Errorf("First of none by ID: %v, want gorm.ErrRecordNotFound", err)
		}
		var a, bb uniqueItem
		must(t, on(0).Where("email = ?", "a").First(&a).Error)
		must(t, on(1).Where("email = ?", "b").First(&bb).Error)
		err = db.Model(&uniqueItem{}).Where("id = ?", bb.ID).Update("email", "a").Error
		t.Logf("an update to another shard's value is not a duplicate: %v", err)
		must(t, on(1).Create(&uniqueItem{Email: "c"}).Error)
		err = db.Model(&uniqueItem{}).Where("id = ?", bb.ID).Update("email", "c").Error
		if !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Errorf("an update to a duplicate on one shard: %v, want gorm.ErrDuplicatedKey", err)
		}
		if b.name == "postgres" {
			return // writes over several databases need max_prepared_transactions here
		}
		idOn := func(k int) int64 { return p.Layout().Compose(time.Now().Add(-time.Second), k*count/physicalShards, 1) }
		batch := []uniqueItem{{ID: idOn(0), Email: "x"}, {ID: idOn(1), Email: "c"}}
		err = db.Create(&batch).Error
		t.Logf("batch: %v", err)
		if !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Errorf("a batch over several databases whose part on one is a duplicate: %v, want gorm.ErrDuplicatedKey", err)
		}
		must(t, on(1).Create(&uniqueItem{Email: "d"}).Error)
		err = db.Clauses(shardid.AllShards()).Model(&uniqueItem{}).Where("email = ?", "d").Update("email", "c").Error
		if !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Errorf("an update over every shard whose part on one is a duplicate: %v, want gorm.ErrDuplicatedKey", err)
		}
	})
}
