package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWithoutShardsThereIsNoSharedMapToTrust(t *testing.T) {
	for _, refresh := range []time.Duration{0, -1} {
		db, e := openEngine(t, Config{MapRefresh: refresh}, false)
		must(t, e.Migrator(db).AutoMigrate(&trustUser{}))
		u := trustUser{Name: "x"}
		must(t, db.Create(&u).Error)
		must(t, db.First(&trustUser{}, u.ID).Error)
		must(t, db.Exec("UPDATE trust_users SET name = 'y'").Error)
		if e.MapVersion() != 0 || e.mapUsable() != nil {
			t.Errorf("no shards: version %d, usable %v", e.MapVersion(), e.mapUsable())
		}
		if _, err := e.RefreshMap(context.Background()); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("RefreshMap without shards: %v", err)
		}
	}
}

// TestANegativeMapRefreshKeepsTheMapTrustedWhileTheProcessLives: a negative MapRefresh keeps the
// map trusted past its window while the process notes itself live.
func TestANegativeMapRefreshKeepsTheMapTrustedWhileTheProcessLives(t *testing.T) {
	db, e := openEngine(t, Config{MapRefresh: -1}, true)
	must(t, e.Migrator(db).AutoMigrate(&trustUser{}))
	if w := e.maps.trustWindow(); w != 4*time.Second {
		t.Errorf("trust window %v; want 4s", w)
	}
	time.Sleep(4500 * time.Millisecond)
	if err := db.Clauses(hinted{OnShard(1)}).Create(&trustUser{Name: "x"}).Error; err != nil {
		t.Errorf("negative MapRefresh, after 4.5s: %v", err)
	}
}
