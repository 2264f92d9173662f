package integration

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shardid/shardid"
)

// What a tag's field names resolve to, and which value of the field places a
// row: the value GORM's Create writes.

type (
	tfUser struct {
		ID   int64 `shardid:""`
		Name string
	}
	tfAudit struct{ UserID int64 }
	tfNote  struct {
		ID      int64 `shardid:"colocate:UserID"`
		UserID  int64
		Created tfAudit `gorm:"embedded;embeddedPrefix:created_by_"`
		Body    string
	}
	tfContact struct{ Email string }
	tfAccount struct {
		ID     int64 `shardid:"hash:Email"`
		Email  string
		Backup tfContact `gorm:"embedded;embeddedPrefix:backup_"`
	}
)

// TestTagNamesTheFieldBesideIt: colocate:UserID and hash:Email name the
// fields beside the tagged ID, as Go's selectors do, not fields of the same
// name in an embedded struct declared after them (which GORM's FieldsByName
// keeps): the row lands beside its UserID, and is found by its Email.
func TestTagNamesTheFieldBesideIt(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &tfUser{}, &tfNote{}, &tfAccount{})
		var owner, creator tfUser
		for owner.ID == 0 || r.physicalOf(owner.ID) == r.physicalOf(creator.ID) {
			owner, creator = tfUser{Name: "owner"}, tfUser{Name: "creator"}
			must(t, r.db.Create(&owner).Error)
			must(t, r.db.Create(&creator).Error)
		}
		note := tfNote{UserID: owner.ID, Created: tfAudit{UserID: creator.ID}, Body: "b"}
		must(t, r.db.Create(&note).Error)
		if got := r.where(t, &tfNote{}, note.ID); len(got) != 1 || got[0] != r.physicalOf(owner.ID) {
			t.Errorf("a note of colocate:UserID is on %v, its UserID's row on %d", got, r.physicalOf(owner.ID))
		}
		var notes []tfNote
		if err := r.db.Where("user_id = ?", owner.ID).Find(&notes).Error; err != nil || len(notes) != 1 {
			t.Errorf("notes by user_id: %v, %d rows, want the one", err, len(notes))
		}
		for i := range 8 {
			account := tfAccount{Email: fmt.Sprintf("a%d@example.com", i), Backup: tfContact{Email: fmt.Sprintf("b%d@example.com", i)}}
			must(t, r.db.Create(&account).Error)
			var found []tfAccount
			if err := r.db.Where("email = ?", account.Email).Find(&found).Error; err != nil || len(found) != 1 {
				t.Fatalf("an account of hash:Email by its email: %v, %d rows, want the one", err, len(found))
			}
		}
	})
}

type (
	tfRegion struct {
		ID     int64 `shardid:"hash:Region"`
		Region int   `gorm:"default:7"`
		Name   string
	}
	tfCoded struct {
		ID   int64  `shardid:"hash:Code"`
		Code string `gorm:"default:fallback"`
	}
	tfStamped struct {
		ID    int64  `shardid:"hash:Stamp"`
		Stamp string `gorm:"default:(lower('SX'))"`
	}
)

// TestZeroHashKeyWithADefaultIsPlacedByTheDefault: GORM's Create writes a
// field's default in place of its zero value, so a row whose hash key is
// left zero lands on the default's shard and is found, updated and deleted
// by it; a key the database fills in (a default expression) is refused
// before anything is written.
func TestZeroHashKeyWithADefaultIsPlacedByTheDefault(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &tfRegion{}, &tfCoded{})
		region := tfRegion{Name: "zero"}
		must(t, r.db.Create(&region).Error)
		if region.Region != 7 {
			t.Fatalf("GORM wrote region %d, want its default 7", region.Region)
		}
		key, err := shardid.HashKey(7)
		must(t, err)
		want := r.physicalOfShard(int(key % uint64(r.plugin.Layout().ShardCount())))
		if got := r.where(t, &tfRegion{}, region.ID); len(got) != 1 || got[0] != want {
			t.Errorf("a row of region 7 (the default) is on %v, the hash of 7 on %d", got, want)
		}
		if res := r.db.Model(&tfRegion{}).Where("region = ?", 7).Update("name", "renamed"); res.Error != nil || res.RowsAffected != 1 {
			t.Errorf("an update of region 7: %v, %d rows, want 1", res.Error, res.RowsAffected)
		}
		coded := tfCoded{}
		must(t, r.db.Create(&coded).Error) // an empty key whose default is not empty
		var found []tfCoded
		if err := r.db.Where("code = ?", "fallback").Find(&found).Error; err != nil || len(found) != 1 {
			t.Errorf("the row of the default code: %v, %d rows, want the one", err, len(found))
		}
		fresh(t, r.db, &tfStamped{})
		if err := r.db.Create(&tfStamped{}).Error; !errors.Is(err, shardid.ErrNoShard) {
			t.Errorf("a Create whose hash key the database fills in: %v, want ErrNoShard", err)
		}
		if n := r.count(t, &tfStamped{}); n != 0 {
			t.Errorf("%d rows after the refused Create", n)
		}
	})
}
