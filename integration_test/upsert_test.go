package integration

import (
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// Models of the upsert tests.
type (
	// upPlayer has no unique key but its own.
	upPlayer struct {
		ID    int64 `shardid:""`
		Name  string
		Score int
	}
	// upBadge is colocated with a player, and unique by its code as well.
	upBadge struct {
		ID       int64 `shardid:"colocate:PlayerID"`
		PlayerID int64
		Code     string `gorm:"uniqueIndex;size:64"`
		Level    int
	}
)

// TestUpsertRowsAffectedAsWithoutThePlugin: an upsert that inserts, updates
// or leaves rows reports the rows affected that the same statement reports
// on one database without the plugin (on MySQL, 2 for an updated row), split
// over databases or not; and Save of an unchanged row, which GORM turns into
// an upsert when the server reports no row changed, runs.
func TestUpsertRowsAffectedAsWithoutThePlugin(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		fresh(t, k.db, &upPlayer{}, &upBadge{})
		must(t, k.main.Migrator().DropTable(&upPlayer{}, &upBadge{}))
		must(t, k.main.AutoMigrate(&upPlayer{}, &upBadge{}))
		// Preset IDs spread the players evenly over the logical shards, so
		// over every database; older than any ID idOfShardOf makes.
		l := k.plugin.Layout()
		players := make([]upPlayer, 6)
		for i := range players {
			shard := i * l.ShardCount() / len(players)
			players[i] = upPlayer{ID: l.Compose(time.Now().Add(-2*time.Second), shard, l.IDsPerTick()-1), Name: "p", Score: i}
		}
		must(t, k.db.Create(&players).Error)
		must(t, k.main.Create(&players).Error) // the reference, with the same IDs
		databases := map[int]bool{}
		for _, p := range players {
			databases[k.physicalOf(p.ID)] = true
		}
		if len(databases) < 2 {
			t.Fatal("the players share a database: the test shows nothing")
		}
		same := func(name string, run func(db *gorm.DB) *gorm.DB) {
			t.Helper()
			got, want := run(k.db), run(k.main)
			if (got.Error != nil) != (want.Error != nil) {
				t.Fatalf("%s: %v with the plugin, %v without", name, got.Error, want.Error)
			}
			if got.RowsAffected != want.RowsAffected {
				t.Errorf("%s: %d rows affected with the plugin, %d without", name, got.RowsAffected, want.RowsAffected)
			}
		}
		same("UpdateAll of a changed row", func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&upPlayer{ID: players[0].ID, Name: "changed"})
		})
		same("UpdateAll of an unchanged row", func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&upPlayer{ID: players[0].ID, Name: "changed"})
		})
		same("DoUpdates on the key", func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.Assignments(map[string]any{"score": 99})}).
				Create(&upPlayer{ID: players[1].ID, Name: "p"})
		})
		batch := []upPlayer{
			{ID: players[2].ID, Name: "changed"}, {ID: players[3].ID, Name: "changed"},
			{ID: players[4].ID, Name: "p", Score: 4}, // unchanged
			{ID: k.idOfShardOf(players[5].ID), Name: "new"},
		}
		same("UpdateAll of a batch over several databases", func(db *gorm.DB) *gorm.DB {
			rows := append([]upPlayer(nil), batch...)
			return db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&rows)
		})
		saved := []upPlayer{{ID: players[5].ID, Name: "saved"}, {ID: k.idOfShardOf(players[0].ID), Name: "new"}}
		same("Save of a slice of new and changed rows", func(db *gorm.DB) *gorm.DB {
			rows := append([]upPlayer(nil), saved...)
			return db.Save(&rows)
		})

		badge := upBadge{PlayerID: players[0].ID, Code: "gold", Level: 1}
		must(t, k.db.Create(&badge).Error)
		must(t, k.main.Create(&badge).Error)
		same("Save of an unchanged row of a table with another unique key", func(db *gorm.DB) *gorm.DB {
			row := badge
			return db.Save(&row)
		})
		same("Save of a changed row of a table with another unique key", func(db *gorm.DB) *gorm.DB {
			row := badge
			row.Level = 2
			return db.Save(&row)
		})
		// On MySQL a new ID conflicting by the code updates the player's own
		// row, which keeps its player; elsewhere the key is the target, and
		// the code's unique index fails it, as without the plugin.
		newID := k.idOfShardOf(players[0].ID)
		same("UpdateAll of a new row over the same player's row by another unique key", func(db *gorm.DB) *gorm.DB {
			return db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&upBadge{ID: newID, PlayerID: players[0].ID, Code: "gold", Level: 3})
		})
	})
}

// TestSaveOfASliceWithAnotherUniqueKey: Save of a slice of rows colocated
// with their owner, whose table has another unique key, upserts on the
// primary key (GORM's target): no row can take another's colocate value, so
// it runs, on one database or over several.
func TestSaveOfASliceWithAnotherUniqueKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &upBadge{})
		owners := r.onEvery(t) // authors: any ID places a badge beside it
		badges := []upBadge{{PlayerID: owners[0].ID, Code: "a"}, {PlayerID: owners[0].ID, Code: "b"}}
		if b.name != "sqlite" { // SQLite writes over several databases with ErrNotAtomic
			badges = append(badges, upBadge{PlayerID: owners[1].ID, Code: "c"})
		}
		must(t, r.db.Create(&badges).Error)
		for i := range badges {
			badges[i].Level = i + 1
		}
		must(t, r.db.Save(&badges).Error)
		var levels []int
		must(t, r.db.Model(&upBadge{}).Clauses(shardid.AllShards()).Order("level").Pluck("level", &levels).Error)
		if len(levels) != len(badges) || levels[0] != 1 || levels[len(levels)-1] != len(badges) {
			t.Fatalf("levels after Save: %v", levels)
		}
	})
}

// TestUpsertWithAWhereReadsBackTheStoredKey: a one-row upsert with a WHERE,
// conflicting on a unique column other than the key, reads back the key of
// the row it updated (where the dialect has RETURNING, as GORM does for an
// auto-increment key), not the ID the plugin made, which is stored nowhere;
// one its WHERE skips keeps the key it was given (a zero key stays zero) and
// reports no row affected.
func TestUpsertWithAWhereReadsBackTheStoredKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if b.name == "mariadb" {
			t.Skip("ON DUPLICATE KEY UPDATE has no WHERE")
		}
		k := newKeys(t, b)
		fresh(t, k.db, &upBadge{})
		owner := k.idOfShardOf(1)
		stored := upBadge{PlayerID: owner, Code: "gold", Level: 1}
		must(t, k.db.Create(&stored).Error)
		upsert := func(where string, row *upBadge) *gorm.DB {
			return k.db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "code"}}, Where: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: where}}},
				DoUpdates: clause.AssignmentColumns([]string{"level"})}).Create(row)
		}
		row := upBadge{PlayerID: owner, Code: "gold", Level: 2}
		res := upsert("1 = 1", &row)
		must(t, res.Error)
		if row.ID != stored.ID || res.RowsAffected != 1 {
			t.Errorf("updated over the code: ID %d (%d rows), want the stored row's %d (1 row)", row.ID, res.RowsAffected, stored.ID)
		}
		skipped := upBadge{PlayerID: owner, Code: "gold", Level: 3}
		res = upsert("1 = 0", &skipped)
		must(t, res.Error)
		if skipped.ID != 0 || res.RowsAffected != 0 {
			t.Errorf("skipped by its WHERE: ID %d (%d rows), want 0 (0 rows)", skipped.ID, res.RowsAffected)
		}
		var levels []int
		must(t, k.db.Model(&upBadge{}).Clauses(shardid.AllShards()).Order("level").Pluck("level", &levels).Error)
		if !slices.Equal(levels, []int{2}) {
			t.Errorf("levels stored: %v, want [2]", levels)
		}
	})
}
