package integration

import (
	"testing"

	"github.com/shardid/shardid"
)

type account struct {
	ID   int64 `shardid:""`
	Name string
}

func TestInstagramSmoke(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		db := open(t, b, t.TempDir(), shardid.Config{})
		fresh(t, db, &account{})
		rows := make([]account, 3000)
		if err := db.CreateInBatches(&rows, 1500).Error; err != nil {
			t.Fatal(err)
		}
		seen := map[int64]bool{}
		for _, r := range rows {
			if r.ID <= 0 || seen[r.ID] {
				t.Fatalf("bad id %d", r.ID)
			}
			seen[r.ID] = true
		}
		t.Log(rows[0].ID, rows[2999].ID)
	})
}
