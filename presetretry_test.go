package shardid

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"
)

// TestAPresetInstagramIDRetriedOnItsShardsNewDatabaseIsNotMadeAgain: a
// Create of a row whose instagram ID is preset ahead of the clock, sent by a
// process that has not yet read a move of its shard, is refused by the old
// database and run on the new one; that database's clock-sequence is moved
// past the ID too, so the rows it numbers later in that shard never get it,
// whether the row was given by pointer or by value.
func TestAPresetInstagramIDRetriedOnItsShardsNewDatabaseIsNotMadeAgain(t *testing.T) {
	for _, form := range []struct {
		name   string
		create func(db *gorm.DB, row revUser) error
	}{
		{"pointer", func(db *gorm.DB, row revUser) error { return db.Create(&row).Error }},
		{"value", func(db *gorm.DB, row revUser) error { return db.Create(row).Error }}, // its fields cannot be set
	} {
		t.Run(form.name, func(t *testing.T) {
			ps := processes{t, t.TempDir()}
			layout := Layout{TimeUnit: time.Second} // a tick long enough to make rows in, one by one
			half := layout.ShardCount() / 2
			shards := []Shard{
				{Name: "a", Dialector: ps.file("a.db"), Logical: []Range{{From: 0, To: half - 1}}},
				{Name: "b", Dialector: ps.file("b.db"), Logical: []Range{{From: half, To: 2*half - 1}}},
			}
			mover, p, err := ps.open(Config{Layout: layout, Shards: shards})
			must(t, err)
			must(t, p.AutoMigrate(mover, &revUser{}))
			stale, _, err := ps.open(Config{Layout: layout, Shards: shards, MapRefresh: -1}) // follows the map only when a write is refused as moved
			must(t, err)
			_, err = p.Move(context.Background(), Move{Logical: Range{From: 0, To: half - 1}, To: "b"})
			must(t, err)

			next := time.Now().Truncate(time.Second).Add(time.Second)
			preset := p.Layout().Compose(next, 1, 0) // the first ID of the next tick in shard 1
			must(t, form.create(stale, revUser{ID: preset, Name: "restored"}))

			for time.Now().Before(next.Add(1500 * time.Millisecond)) {
				row := revUser{Name: "new"}
				if err := mover.Clauses(OnShard(1)).Create(&row).Error; err != nil {
					t.Fatalf("a new row of shard 1 on its new database: %v (the preset ID was %d)", err, preset)
				}
				if row.ID == preset {
					t.Fatalf("a new row got the preset ID %d", preset)
				}
			}
		})
	}
}
