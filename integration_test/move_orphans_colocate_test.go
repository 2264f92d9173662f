package integration

import (
	"testing"

	"github.com/shardid/shardid"
)

// Colocated models whose rows the plugin wrote and then let go of their
// owner: an int64 colocate column set to 0, a text UUID one set to "".
type (
	OmItem struct {
		ID     int64 `shardid:"strategy:snowflake;colocate:UserID"`
		UserID int64 `gorm:"index"`
		Title  string
	}
	OmFolder struct {
		ID   string `gorm:"size:36" shardid:"strategy:uuidv4"`
		Name string
	}
	OmFile struct {
		ID       string `gorm:"size:36" shardid:"strategy:uuidv4;colocate:FolderID"`
		FolderID string `gorm:"size:36;index"`
		Name     string
	}
)

// TestMoveCarriesColocatedRowsWhoseOwnerWasLetGo: on MariaDB and PostgreSQL,
// rows the plugin created beside their owner in the moving range, whose
// colocate column an update then set to the zero value that names no shard
// (0, ""), are carried by a move of a range without logical shard 0, not
// refused as rows of another shard than their colocate column's.
func TestMoveCarriesColocatedRowsWhoseOwnerWasLetGo(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		for _, db := range direct(t, b, dir)[moveSource : moveTarget+1] {
			must(t, db.Migrator().DropTable(&OmItem{}, &OmFolder{}, &OmFile{}))
		}
		r := newMoveRig(t, b, dir)
		models := []any{&OmItem{}, &OmFolder{}, &OmFile{}}
		must(t, r.p.AutoMigrate(r.db, models...))
		t.Cleanup(func() {
			_ = r.source.Migrator().DropTable(models...)
			_ = r.target.Migrator().DropTable(models...)
		})
		owner := MvUser{Name: "owner"}
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From+5)).Create(&owner).Error)
		item := OmItem{UserID: owner.ID, Title: "item"}
		must(t, r.db.Create(&item).Error)
		must(t, r.db.Model(&item).Update("user_id", 0).Error)
		folder := OmFolder{Name: "folder"}
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From+5)).Create(&folder).Error)
		file := OmFile{FolderID: folder.ID, Name: "file"}
		must(t, r.db.Create(&file).Error)
		must(t, r.db.Model(&file).Update("folder_id", "").Error)

		r.move(t, shardid.Move{Models: append(append([]any{}, moveModels...), models...)})
		var items []OmItem
		must(t, r.target.Where("id = ?", item.ID).Find(&items).Error)
		if len(items) != 1 || items[0].UserID != 0 {
			t.Fatalf("the let-go item on the target: %+v", items)
		}
		var files []OmFile
		must(t, r.target.Where("id = ?", file.ID).Find(&files).Error)
		if len(files) != 1 || files[0].FolderID != "" {
			t.Fatalf("the let-go file on the target: %+v", files)
		}
	})
}
