package integration

import (
	"testing"

	"github.com/google/uuid"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/strategies"
)

// Models whose colocate column is a uuid.UUID, which GORM reads a NULL into
// as uuid.Nil.
type (
	folder struct {
		ID    uuid.UUID `gorm:"type:varchar(36)" shardid:"strategy:uuidv7"`
		Name  string
		Slips []slip
	}
	slip struct {
		ID       uuid.UUID `gorm:"type:varchar(36)" shardid:"strategy:uuidv4;colocate:FolderID"`
		FolderID uuid.UUID `gorm:"type:varchar(36)"`
		Text     string
	}
)

// TestAChildOfANilUUIDOwnerIsSavedAndFoundAsOnOneDatabase: a child whose
// owner let it go (Association Clear sets its UUID column to NULL, read
// back as uuid.Nil) is saved where it is, and a condition on uuid.Nil over
// every shard finds every such child, on whichever database it is.
func TestAChildOfANilUUIDOwnerIsSavedAndFoundAsOnOneDatabase(t *testing.T) {
	uuids, _ := strategies.NewUUIDs(strategies.Layout{})
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &folder{}, &slip{})
		physicalOf := func(id uuid.UUID) int {
			return uuids.Shard(id) * physicalShards / r.plugin.Layout().ShardCount()
		}
		// Owners on at least two databases, each with a child let go.
		var let []slip
		onDatabase := map[int]bool{}
		for len(onDatabase) < 2 {
			f := folder{Name: "f", Slips: []slip{{Text: "kept"}, {Text: "let go"}}}
			must(t, r.db.Create(&f).Error)
			letGo := f.Slips[1]
			must(t, r.db.Model(&f).Association("Slips").Delete(&letGo))
			onDatabase[physicalOf(f.ID)] = true
			let = append(let, letGo)
		}
		for i := range let {
			c := slip{ID: let[i].ID}
			must(t, r.db.First(&c).Error)
			if c.FolderID != uuid.Nil {
				t.Fatalf("slip %s read back with folder %s, want uuid.Nil", c.ID, c.FolderID)
			}
			c.Text = "saved"
			must(t, r.db.Save(&c).Error)
			var got slip
			must(t, r.direct[physicalOf(c.ID)].Where("id = ?", c.ID.String()).First(&got).Error)
			if got.Text != "saved" {
				t.Errorf("slip %s on its database: %q, want the saved text", c.ID, got.Text)
			}
		}
		var found []slip
		must(t, r.db.Clauses(shardid.AllShards()).Where("folder_id = ?", uuid.Nil).Find(&found).Error)
		if len(found) != len(let) {
			t.Errorf("over every shard: %d slips of uuid.Nil, want %d", len(found), len(let))
		}
	})
}
