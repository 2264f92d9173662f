package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/shardrouter"
)

// writeUnroutableMap writes the next map version, which gives logical shard 1
// to "c", a database this process's Config.Shards lacks.
func writeUnroutableMap(t *testing.T, e *Engine) {
	t.Helper()
	ctx := context.Background()
	latest, err := e.maps.Latest(ctx)
	must(t, err)
	next := *latest
	next.Version = latest.Version + 1
	next.Physical = slices.Clone(latest.Physical)
	for i, p := range next.Physical {
		if p.Name == "a" {
			next.Physical[i].Logical = []shardrouter.Range{{From: 0, To: 0}, {From: 2, To: p.Logical[len(p.Logical)-1].To}}
		}
	}
	next.Physical = append(next.Physical, mapstore.Physical{Name: "c", Logical: []shardrouter.Range{{From: 1, To: 1}}})
	must(t, e.maps.Write(ctx, &next))
}

// TestAMapReadByARefusedWriteThatCannotBeRoutedByIsDistrusted: with a
// negative MapRefresh only a refused write (RefreshMap here) reads the map; a
// map read so that this process cannot route by is distrusted at once, and
// stays so while the refresh loop notes the process live.
func TestAMapReadByARefusedWriteThatCannotBeRoutedByIsDistrusted(t *testing.T) {
	db, e := openEngine(t, Config{MapRefresh: -1}, true)
	must(t, e.Migrator(db).AutoMigrate(&trustUser{}))
	writeUnroutableMap(t, e)
	if _, err := e.RefreshMap(context.Background()); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("reading the unroutable map: %v; want ErrInvalidConfig", err)
	}
	if err := e.mapUsable(); !errors.Is(err, ErrShardUnavailable) {
		t.Errorf("right after reading a map it cannot route by: %v; want ErrShardUnavailable", err)
	}
	time.Sleep(1500 * time.Millisecond) // a beat of the refresh loop
	err := db.Clauses(hinted{OnShard(1)}).Create(&trustUser{Name: "by the old map"}).Error
	if !errors.Is(err, ErrShardUnavailable) {
		t.Errorf("a write of logical shard 1, which the newest map gives to c, %v later: %v; want ErrShardUnavailable", 1500*time.Millisecond, err)
	}
}

type trustSlow struct {
	ID   int64 `shardid:""`
	Name string
}

var trustSlowHold chan struct{}

func (*trustSlow) AfterFind(*gorm.DB) error {
	if trustSlowHold != nil {
		close(trustSlowEntered)
		<-trustSlowHold
	}
	return nil
}

// trustSlowEntered is closed once a find is held in AfterFind.
var trustSlowEntered chan struct{}

// TestAMapThatCannotBeRoutedByStaysDistrustedWhenOlderStatementsEnd: the
// end of an older map version's last statement wakes the refresh loop to note
// the process live, which is no reading of the map: a map it cannot route by
// stays distrusted.
func TestAMapThatCannotBeRoutedByStaysDistrustedWhenOlderStatementsEnd(t *testing.T) {
	db, e := openEngine(t, Config{MapRefresh: 2 * time.Second}, true)
	must(t, e.Migrator(db).AutoMigrate(&trustSlow{}))
	must(t, db.Clauses(hinted{OnShard(1)}).Create(&trustSlow{Name: "seed"}).Error)
	// A statement counted in version 1, still running.
	trustSlowHold, trustSlowEntered = make(chan struct{}), make(chan struct{})
	defer func() { trustSlowHold = nil }()
	done := make(chan error, 1)
	go func() {
		var rows []trustSlow
		done <- db.Clauses(hinted{OnShard(1)}).Find(&rows).Error
	}()
	<-trustSlowEntered
	// Version 2: the same map, followed.
	ctx := context.Background()
	latest, err := e.maps.Latest(ctx)
	must(t, err)
	v2 := *latest
	v2.Version++
	must(t, e.maps.Write(ctx, &v2))
	if _, err := e.RefreshMap(ctx); err != nil {
		t.Fatal(err)
	}
	// Version 3: unroutable; wait for the refresh loop to distrust it.
	writeUnroutableMap(t, e)
	deadline := time.Now().Add(30 * time.Second)
	for e.mapUsable() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the unroutable map was never distrusted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(trustSlowHold) // the version-1 statement ends
	must(t, <-done)
	time.Sleep(300 * time.Millisecond) // well before the next refresh
	err = db.Clauses(hinted{OnShard(1)}).Create(&trustSlow{Name: "by the old map"}).Error
	if !errors.Is(err, ErrShardUnavailable) {
		t.Errorf("a write of logical shard 1, which the newest map gives to c, after an older version's statement ended: %v; want ErrShardUnavailable", err)
	}
}
