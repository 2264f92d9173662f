package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// openEngineOver is openEngine with the logical shards spread over n SQLite
// databases, s0 to s(n-1), each holding one row per two shards of its
// range; it returns their files' DSNs too.
func openEngineOver(t *testing.T, cfg Config, n int) (*gorm.DB, *Engine, []string) {
	t.Helper()
	dir := t.TempDir()
	count := cfg.Layout.Normalized().ShardCount()
	var dsns []string
	for i := range n {
		dsns = append(dsns, "file:"+filepath.Join(dir, fmt.Sprintf("s%d.db", i))+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
		cfg.Shards = append(cfg.Shards, Shard{Name: fmt.Sprintf("s%d", i), Dialector: sqlite.Open(dsns[i]), Logical: []Range{{From: i * count / n, To: (i+1)*count/n - 1}}})
	}
	db, e := openEngine(t, cfg, false)
	must(t, e.Migrator(db).AutoMigrate(&gateRow{}))
	for i := range 2 * n {
		must(t, db.Clauses(hinted{OnShard(i * count / (2 * n))}).Create(&gateRow{Name: fmt.Sprint(i)}).Error)
	}
	e.handOff = 0 // every part is slower than a hand-off: none runs in turn
	return db, e, dsns
}

// partCounter counts the parts of statements running at once, in the
// plugin's tracer of each part, which begins before the part takes its
// connection and ends once it has read its rows.
type partCounter struct {
	begun, running, most atomic.Int64
	// barrier, when set, holds the first parts until that many began: the
	// parts that may run at once all do.
	barrier int64
	ready   chan struct{}
	// before, when set, runs as each part begins, before its query.
	before func(TracedPart, context.Context) (context.Context, func(error))
}

func (c *partCounter) trace(t *testing.T) PartTracer {
	var once sync.Once
	return func(ctx context.Context, part TracedPart) (context.Context, func(string, error)) {
		begun := c.begun.Add(1)
		now := c.running.Add(1)
		for m := c.most.Load(); now > m && !c.most.CompareAndSwap(m, now); m = c.most.Load() {
		}
		if c.barrier > 0 {
			if begun == c.barrier {
				once.Do(func() { close(c.ready) })
			}
			wait(t, c.ready)
		}
		end := func(error) {}
		if c.before != nil {
			ctx, end = c.before(part, ctx)
		}
		return ctx, func(_ string, err error) { c.running.Add(-1); end(err) }
	}
}

// wait waits for ready, failing t after 10 s.
func wait(t *testing.T, ready <-chan struct{}) {
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Error("a part waited 10 s")
	}
}

// lingering makes each part stay a while before its query, for others to
// begin meanwhile.
func lingering(_ TracedPart, ctx context.Context) (context.Context, func(error)) {
	time.Sleep(5 * time.Millisecond)
	return ctx, func(error) {}
}

// TestAStatementRunsAtMostPartsAtOnceOfItsParts: over 64 databases, an
// AllShards Find, Count and max run at most Config.PartsAtOnce (4) parts at
// once, each lingering so that more would overlap, and all 4 do; they give
// what the same statements give with all 64 parts at once, where more than
// 4 run together.
func TestAStatementRunsAtMostPartsAtOnceOfItsParts(t *testing.T) {
	const databases, atOnce = 64, 4
	db, e, _ := openEngineOver(t, Config{PartsAtOnce: atOnce}, databases)
	c := &partCounter{before: lingering}
	e.TraceParts(c.trace(t))
	type answer struct {
		rows  []gateRow
		count int64
		most  int64
	}
	read := func() (a answer) {
		t.Helper()
		must(t, db.Clauses(hinted{AllShards()}).Order("id").Find(&a.rows).Error)
		must(t, db.Model(&gateRow{}).Clauses(hinted{AllShards()}).Count(&a.count).Error)
		must(t, db.Model(&gateRow{}).Clauses(hinted{AllShards()}).Select("max(id)").Scan(&a.most).Error)
		return a
	}

	c.barrier, c.ready = atOnce, make(chan struct{})
	bounded := read()
	if most := c.most.Load(); most != atOnce {
		t.Errorf("with PartsAtOnce %d: at most %d parts ran at once", atOnce, most)
	}
	if got := c.begun.Load(); got != 3*databases {
		t.Errorf("%d parts ran, want %d", got, 3*databases)
	}

	c.barrier, c.most = 0, atomic.Int64{}
	e.config.PartsAtOnce = databases // every part at once, as without a bound
	all := read()
	if most := c.most.Load(); most <= atOnce {
		t.Errorf("with every part at once: at most %d parts ran at once, so the counter shows nothing", most)
	}
	if len(bounded.rows) != 2*databases || bounded.count != 2*databases || !slices.Equal(bounded.rows, all.rows) || bounded.count != all.count || bounded.most != all.most || bounded.most != all.rows[len(all.rows)-1].ID {
		t.Errorf("bounded: %d rows, count %d, max %d; all at once: %d rows, count %d, max %d", len(bounded.rows), bounded.count, bounded.most, len(all.rows), all.count, all.most)
	}
}

// TestACancelledStatementRunsNoPartItHadNotBegun: the context of a statement
// over 64 databases, 4 parts at once, is cancelled as its first part
// begins; it fails with context.Canceled, and no part that had not begun
// then runs.
func TestACancelledStatementRunsNoPartItHadNotBegun(t *testing.T) {
	const databases, atOnce = 64, 4
	db, e, _ := openEngineOver(t, Config{PartsAtOnce: atOnce}, databases)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &partCounter{before: func(_ TracedPart, ctx context.Context) (context.Context, func(error)) {
		cancel()
		return ctx, func(error) {}
	}}
	e.TraceParts(c.trace(t))
	var rows []gateRow
	err := db.WithContext(ctx).Clauses(hinted{AllShards()}).Find(&rows).Error
	if !errors.Is(err, context.Canceled) || !strings.Contains(fmt.Sprint(err), "parts not run") {
		t.Errorf("error %v, want the parts not run for context.Canceled", err)
	}
	if begun := c.begun.Load(); begun > atOnce {
		t.Errorf("%d parts ran, want at most the %d begun before the cancel", begun, atOnce)
	}
}

// TestAFailedPartStopsThePartsNotBegun: over 64 databases, 2 parts at once,
// the part on s0, which lost the table, fails, while the other part running
// waits for it to end; the statement fails naming s0, and no part begins
// after. So it is with parts that run in turn (their databases answered
// faster than a hand-off), s0's first.
func TestAFailedPartStopsThePartsNotBegun(t *testing.T) {
	const databases, atOnce = 64, 2
	for _, inTurn := range []bool{false, true} {
		t.Run(fmt.Sprint("in turn ", inTurn), func(t *testing.T) {
			db, e, dsns := openEngineOver(t, Config{PartsAtOnce: atOnce}, databases)
			if inTurn {
				var rows []gateRow
				must(t, db.Clauses(hinted{AllShards()}).Find(&rows).Error) // each database's time per part noted
				e.handOff = time.Hour
			}
			direct, err := gorm.Open(sqlite.Open(dsns[0]), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			must(t, direct.Migrator().DropTable(&gateRow{}))
			if sqlDB, err := direct.DB(); err == nil {
				_ = sqlDB.Close()
			}
			failed := make(chan struct{})
			c := &partCounter{before: func(p TracedPart, ctx context.Context) (context.Context, func(error)) {
				if p.Physical == "s0" {
					return ctx, func(error) { close(failed) }
				}
				wait(t, failed)
				time.Sleep(20 * time.Millisecond) // for its lane to note the failure
				return ctx, func(error) {}
			}}
			e.TraceParts(c.trace(t))
			var rows []gateRow
			err = db.Clauses(hinted{AllShards()}).Find(&rows).Error
			if err == nil || !strings.Contains(err.Error(), "on s0") || !strings.Contains(err.Error(), "parts not run: another part failed") {
				t.Errorf("error %v, want s0's and the parts not run", err)
			}
			want := int64(atOnce)
			if inTurn {
				want = 1
			}
			if begun := c.begun.Load(); begun > want {
				t.Errorf("%d parts ran, want the %d begun before the failure", begun, want)
			}
		})
	}
}
