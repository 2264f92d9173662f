package shardid

import (
	"bytes"
	"log"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type rev2Owner struct {
	ID   int64     `shardid:""`
	Tags []rev2Tag `gorm:"foreignKey:OwnerID"`
}

type rev2Tag struct { // sharded on its own: an owner's tags lie on any database
	ID      int64 `shardid:""`
	OwnerID int64
}

// TestReview2NestedFanOutLineKept: a preload run from a fan-out's part that
// itself runs over several databases (tags are not colocated with their
// owner) has its parts' SQL kept in the statement's one line, as it was
// before the part's lines were kept by the last callback.
func TestReview2NestedFanOutLineKept(t *testing.T) {
	db, _, _, _ := revRoutedN(t, 3, &rev2Owner{}, &rev2Tag{})
	owners := []rev2Owner{{}, {}}
	must(t, db.Clauses(OnShard(10)).Create(&owners[0]).Error)
	must(t, db.Clauses(OnShard(6000)).Create(&owners[1]).Error)
	for i, s := range []int{20, 3000, 6001} {
		must(t, db.Clauses(OnShard(s)).Create(&rev2Tag{OwnerID: owners[i%2].ID}).Error)
	}
	var out bytes.Buffer
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info})
	var all []rev2Owner
	must(t, db.Clauses(AllShards()).Preload("Tags", func(tx *gorm.DB) *gorm.DB { return tx.Clauses(AllShards()) }).Find(&all).Error)
	tags := 0
	for _, o := range all {
		tags += len(o.Tags)
	}
	if len(all) != 2 || tags != 3 {
		t.Fatalf("%d owners, %d tags; want 2 and 3", len(all), tags)
	}
	if !strings.Contains(out.String(), "`rev2_tags`") {
		t.Errorf("the preload of tags, itself over several databases, is missing from the log:\n%s", out.String())
	}
}
