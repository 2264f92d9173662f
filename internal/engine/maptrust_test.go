package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/shardrouter"
)

type heldUser struct {
	ID   int64 `shardid:""`
	Name string
}

func (*heldUser) BeforeCreate(*gorm.DB) error { return nil }
func (*heldUser) BeforeUpdate(*gorm.DB) error { return nil }

// TestAWriteHeldPastTheMapsTrustIsRefused: a write held while a cutover is
// announced (its model has Before hooks) goes on only by a map the process
// still trusts: one whose trust ended during the hold is refused, a Create
// as an update.
func TestAWriteHeldPastTheMapsTrustIsRefused(t *testing.T) {
	for _, write := range []struct {
		name string
		run  func(db *gorm.DB) error
	}{
		{"create", func(db *gorm.DB) error { return db.Clauses(hinted{OnShard(1)}).Create(&heldUser{Name: "held"}).Error }},
		{"update", func(db *gorm.DB) error {
			return db.Clauses(hinted{OnShard(1)}).Model(&heldUser{}).Where("name = ?", "seed").Update("name", "held").Error
		}},
	} {
		t.Run(write.name, func(t *testing.T) {
			db, e := openEngine(t, Config{MoveWait: 3 * time.Second}, true)
			must(t, e.Migrator(db).AutoMigrate(&heldUser{}))
			must(t, db.Clauses(hinted{OnShard(1)}).Create(&heldUser{Name: "seed"}).Error)
			announced := []mapstore.Freezing{{Logical: shardrouter.Range{From: 0, To: 10}, Until: time.Now().Add(1500 * time.Millisecond).UnixMilli()}}
			e.freezing.Store(&announced)
			go func() {
				time.Sleep(200 * time.Millisecond)
				e.maps.stopOnce.Do(func() { close(e.maps.stop); <-e.maps.done }) // no reading renews the map
				e.maps.trust.mu.Lock()
				e.maps.trust.until = time.Time{}
				e.maps.trust.mu.Unlock()
				e.maps.trust.expire(time.Second, "test")
			}()
			if err := write.run(db); !errors.Is(err, ErrShardUnavailable) {
				t.Errorf("a %s held past the map's trust: %v; want ErrShardUnavailable", write.name, err)
			}
		})
	}
}

// TestAReadingSlowerThanItsTrustIsNotTrusted: a reading of the map that took
// longer than the trust it gives leaves the map distrusted, at once; a
// timely one trusts it until its window ends.
func TestAReadingSlowerThanItsTrustIsNotTrusted(t *testing.T) {
	var trust mapTrust
	defer trust.stop()
	trust.readAt(time.Now().Add(-2*time.Second), time.Second, "map")
	if err := trust.usable(); !errors.Is(err, ErrShardUnavailable) || !strings.Contains(err.Error(), "its last reading took 2") {
		t.Errorf("after a reading slower than its trust: %v; want ErrShardUnavailable saying how long it took", err)
	}
	trust.readAt(time.Now(), time.Hour, "map")
	if err := trust.usable(); err != nil {
		t.Errorf("after a timely reading: %v", err)
	}
}
