package integration

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/strategies"
)

type closedUnderSegment struct {
	ID   int64 `shardid:"strategy:segment"`
	Name string
}

// TestACreateWaitingForAnIDWhenThePluginClosesSaysItIsClosed: a Create
// whose segment block is being reserved when the plugin is closed (a pod's
// shutdown with requests in flight) fails with ErrShardUnavailable saying
// the plugin is closed, as one begun after Close does, not with the
// cancelled context of the reservation Close stopped.
func TestACreateWaitingForAnIDWhenThePluginClosesSaysItIsClosed(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		list := shards(t, b, dir)
		db := open(t, b, dir, shardid.Config{Shards: list, Segment: strategies.SegmentOptions{InitialStep: 1, MinStep: 1, MaxStep: 1}})
		p := db.Config.Plugins["shardid"].(*shardid.Plugin)
		fresh(t, db, &closedUnderSegment{})
		must(t, db.Clauses(shardid.OnShard(0)).Create(&closedUnderSegment{Name: "first"}).Error)
		// Another session holds the counter's row: the next reservation waits.
		holder := direct(t, b, dir)[0].Begin()
		must(t, holder.Error)
		defer holder.Rollback()
		var v int64
		must(t, holder.Raw("SELECT v FROM shardid_segments WHERE name = ? FOR UPDATE", "closed_under_segments").Scan(&v).Error)
		done := make(chan error, 1)
		go func() {
			var err error
			for range 5 { // past the block, and the one prefetched before the row was held
				if err = db.Clauses(shardid.OnShard(0)).Create(&closedUnderSegment{Name: "waits"}).Error; err != nil {
					break
				}
			}
			done <- err
		}()
		time.Sleep(500 * time.Millisecond)
		closed := make(chan error, 1)
		go func() { closed <- p.Close() }()
		select {
		case err := <-done:
			if !errors.Is(err, shardid.ErrShardUnavailable) || !strings.Contains(err.Error(), "the plugin is closed") {
				t.Errorf("a Create waiting for a block when the plugin closed: %v; want ErrShardUnavailable saying the plugin is closed", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the Create still waits 20 s after Close")
		}
		must(t, holder.Rollback().Error)
		select {
		case <-closed:
		case <-time.After(20 * time.Second):
			t.Fatal("Close still runs 20 s after the row was let go")
		}
	})
}
