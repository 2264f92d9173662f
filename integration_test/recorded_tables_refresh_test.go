package integration

import (
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

type rfEvent struct {
	ID    int64  `shardid:""`
	Title string `gorm:"size:64"`
}

type rfReading struct {
	ID    int64 `shardid:""` // instagram, the default
	Value int
}

// rfReadingSnowflake is the next deploy's model of rf_readings.
type rfReadingSnowflake struct {
	ID    int64 `shardid:"strategy:snowflake"`
	Value int
}

func (rfReadingSnowflake) TableName() string { return "rf_readings" }

// TestWhatAnotherProcessRecordsOfTablesIsFollowedAtTheNextRefresh: two
// processes on one set of databases (two pods). A table the second shards
// after the first started, by its model's name or another
// (Migrator(db.Table(name))), is sharded in the first after its next
// refresh of the map: SQL naming it without the model is refused, not run
// on the plugin's database, and the model reads it by that name. The
// strategy one records for a table refuses the other's Creates by another
// strategy after the other's next refresh, until the other's migration
// records its own.
func TestWhatAnotherProcessRecordsOfTablesIsFollowedAtTheNextRefresh(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		process := func(first bool) (*gorm.DB, *shardid.Plugin) {
			db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			if first {
				firstStart(t, db) // an earlier test's map names other databases
			}
			p := shardid.New(shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity(), MapRefresh: time.Hour}) // refreshed by RefreshMap alone
			must(t, db.Use(p))
			t.Cleanup(func() { _ = p.Close() })
			return db, p
		}
		admin, adminPlugin := process(true)
		for _, table := range []string{"rf_events", "rf_events_2027", "rf_readings"} { // an earlier run's
			must(t, adminPlugin.Migrator(admin).DropTable(table))
		}
		a, pa := process(false)
		b2, pb := process(false)

		must(t, pb.AutoMigrate(b2, &rfEvent{}))
		must(t, pb.Migrator(b2.Table("rf_events_2027")).AutoMigrate(&rfEvent{}))
		event := rfEvent{Title: "sharded"}
		must(t, b2.Table("rf_events_2027").Create(&event).Error)
		_, err := pa.RefreshMap(t.Context())
		must(t, err)
		var n int64
		if err := a.Raw("SELECT count(*) FROM rf_events").Scan(&n).Error; !errors.Is(err, shardid.ErrNoShard) {
			t.Fatalf("raw SQL on a table another process sharded, after a refresh: %v (count %d); want ErrNoShard", err, n)
		}
		if err := a.Table("rf_events_2027").Count(&n).Error; !errors.Is(err, shardid.ErrNoShard) {
			t.Fatalf("Table(name) without a model, of a table another process sharded by that name, after a refresh: %v (count %d); want ErrNoShard", err, n)
		}
		var found rfEvent
		must(t, a.Table("rf_events_2027").First(&found, event.ID).Error)
		if found.Title != "sharded" {
			t.Fatalf("read through the model by the table's name: %+v; want the other process's row", found)
		}

		must(t, pa.AutoMigrate(a, &rfReading{}))
		old := rfReading{Value: 1}
		must(t, a.Create(&old).Error)
		_, err = pb.RefreshMap(t.Context())
		must(t, err)
		if err := b2.Create(&rfReadingSnowflake{Value: 2}).Error; !errors.Is(err, shardid.ErrInvalidTag) {
			t.Fatalf("a Create by snowflake on a table recorded as instagram's: %v; want ErrInvalidTag", err)
		}
		must(t, pb.AutoMigrate(b2, &rfReadingSnowflake{}))
		must(t, b2.Create(&rfReadingSnowflake{Value: 2}).Error)
		_, err = pa.RefreshMap(t.Context())
		must(t, err)
		if err := a.Create(&rfReading{Value: 3}).Error; !errors.Is(err, shardid.ErrInvalidTag) {
			t.Fatalf("a Create by instagram after another process recorded snowflake, after a refresh: %v; want ErrInvalidTag", err)
		}
		var read rfReading
		must(t, a.First(&read, old.ID).Error)
	})
}
