package shardid

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid/strategies"
)

// aheadClock is the system clock shifted ahead: a machine whose clock leads
// the others' within the lease tolerance.
type aheadClock struct{ by time.Duration }

func (c aheadClock) Now() time.Time                  { return time.Now().Add(c.by) }
func (c aheadClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c aheadClock) Sleep(d time.Duration)           { strategies.SystemClock.Sleep(d) }

type floorReading struct {
	ID int64 `shardid:"strategy:snowflake"`
	V  int
}

// The snowflake floor a move sets holds in every later map version: a
// process that starts after the move's cleanup (and so never reads the
// move's own version), with the worker and clock of a machine behind the one
// that wrote the copied rows, makes no ID those rows hold.
func TestSnowflakeFloorOfAMoveHoldsInLaterMapVersions(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) gorm.Dialector { return sqlite.Open(filepath.Join(dir, name+".db")) }
	const shard = 7000
	start := func(clock strategies.Clock) (*gorm.DB, *Plugin) {
		t.Helper()
		db, err := gorm.Open(open("main"), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		p := New(Config{
			Shards: []Shard{
				{Name: "a", Dialector: open("a"), Logical: []Range{{From: 0, To: 8191}}},
				{Name: "b", Dialector: open("b")},
			},
			MapRefresh: 100 * time.Millisecond,
			Snowflake:  SnowflakeConfig{Lease: strategies.LeaseOptions{ClockTolerance: 10 * time.Second}},
			clock:      clock,
		})
		must(t, db.Use(p))
		t.Cleanup(func() { _ = p.Close() })
		return db, p
	}
	mover, p := start(nil) // worker 0 on both databases
	must(t, p.AutoMigrate(mover, &floorReading{}))
	ahead, aheadPlugin := start(aheadClock{3 * time.Second}) // worker 1 on a
	written := map[int64]bool{}
	for until := time.Now().Add(2 * time.Second); time.Now().Before(until); {
		r := floorReading{V: 1}
		must(t, ahead.Clauses(OnShard(shard)).Create(&r).Error)
		written[r.ID] = true
	}
	must(t, aheadPlugin.Close())
	report, err := p.Move(context.Background(), Move{Logical: Range{From: 6144, To: 8191}, To: "b", Models: []any{&floorReading{}}})
	must(t, err)
	must(t, p.CleanupMove(context.Background(), report.Logical, &floorReading{}))

	later, _ := start(nil) // worker 1 on b, on a clock behind the copied rows'
	for until := time.Now().Add(time.Second); time.Now().Before(until); {
		r := floorReading{V: 2}
		must(t, later.Clauses(OnShard(shard)).Create(&r).Error)
		if written[r.ID] {
			t.Fatalf("ID %d, made after the move's cleanup, is a copied row's", r.ID)
		}
	}
}
