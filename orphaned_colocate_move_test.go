package shardid

import (
	"context"
	"testing"
)

// Models whose colocated rows the plugin wrote and then let go of their
// owner: an int64 colocate column set to 0, a text UUID one set to "".
type (
	orphanOwner struct {
		ID   int64 `shardid:""`
		Name string
	}
	orphanItem struct {
		ID      int64 `shardid:"colocate:OwnerID"`
		OwnerID int64
		Title   string
	}
	orphanFolder struct {
		ID   string `gorm:"size:36" shardid:"strategy:uuidv4"`
		Name string
	}
	orphanFile struct {
		ID       string `gorm:"size:36" shardid:"strategy:uuidv4;colocate:FolderID"`
		FolderID string `gorm:"size:36"`
		Name     string
	}
)

// TestMoveTakesRowsWhoseColocateNamesNoShard: on SQLite, rows the plugin
// created beside their owner and whose colocate column an update then set
// to the zero value that names no shard (0, "": GORM leaves it in the
// orphans it holds, and the plugin takes it) do not make a move of their
// shard, a range without logical shard 0, refuse them as rows of another
// shard than their colocate column's: 0 and "" name none.
func TestMoveTakesRowsWhoseColocateNamesNoShard(t *testing.T) {
	db, p, _ := adoptedRig(t, true, &orphanOwner{}, &orphanItem{}, &orphanFolder{}, &orphanFile{})
	owner := orphanOwner{Name: "owner"}
	must(t, db.Clauses(OnShard(7)).Create(&owner).Error)
	item := orphanItem{OwnerID: owner.ID, Title: "item"}
	must(t, db.Create(&item).Error)
	must(t, db.Model(&item).Update("owner_id", 0).Error)
	folder := orphanFolder{Name: "folder"}
	must(t, db.Clauses(OnShard(7)).Create(&folder).Error)
	file := orphanFile{FolderID: folder.ID, Name: "file"}
	must(t, db.Create(&file).Error)
	must(t, db.Model(&file).Update("folder_id", "").Error)

	ctx := context.Background()
	if _, err := p.Move(ctx, Move{Logical: Range{From: 4, To: 9}, To: "b"}); err != nil {
		t.Fatalf("a move of the orphans' shard: %v", err)
	}
	must(t, p.CleanupMove(ctx, Range{From: 4, To: 9}))
	var items []orphanItem
	must(t, db.Where("id = ?", item.ID).Find(&items).Error)
	if len(items) != 1 || items[0].OwnerID != 0 {
		t.Fatalf("the orphaned item after the move: %+v", items)
	}
	var files []orphanFile
	must(t, db.Where("id = ?", file.ID).Find(&files).Error)
	if len(files) != 1 || files[0].FolderID != "" {
		t.Fatalf("the orphaned file after the move: %+v", files)
	}
}
