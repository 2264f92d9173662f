package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// The models of the move tests: users and their colocated photos, and one
// model for each of the other strategies.
type MvUser struct {
	ID        int64 `shardid:"strategy:instagram"`
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

type MvPhoto struct {
	ID      int64 `shardid:"strategy:snowflake;colocate:UserID"`
	UserID  int64 `gorm:"index"`
	Caption string
}

type MvLedger struct {
	ID     int64 `shardid:"strategy:segment"`
	Amount int64
}

type MvDoc struct {
	ID   string `gorm:"size:36" shardid:"strategy:uuidv7"`
	Body string
}

var moveModels = []any{&MvUser{}, &MvPhoto{}, &MvLedger{}, &MvDoc{}}

// The moving range of the move tests: the top quarter of the default layout's
// 8192 logical shards.
var movingRange = shardid.Range{From: 6144, To: 8191}

// Physical databases of the move tests: the source holds every logical shard
// at first, the target none.
const (
	moveSource = 2
	moveTarget = 3
)

// moveShards is the move tests' Config.Shards on b.
func moveShards(t testing.TB, b backend, dir string) []shardid.Shard {
	count := shardid.Layout{}.ShardCount()
	return []shardid.Shard{
		{Name: b.name + "-source", Dialector: b.physical(t, dir, moveSource), Logical: []shardid.Range{{From: 0, To: count - 1}}},
		{Name: b.name + "-target", Dialector: b.physical(t, dir, moveTarget)},
	}
}

// moveRig is a plugin on the move tests' databases, and those databases
// opened directly.
type moveRig struct {
	b              backend
	dir            string
	db             *gorm.DB
	p              *shardid.Plugin
	source, target *gorm.DB
	targetServes   []shardid.Range // the target's logical shards before the move (none by default)
	names          []string        // the source's and the target's shard names, if not moveShards'

	readers, nonReaders atomic.Int32 // the other processes opened, by whether they read the shared map within a minute
}

// noteProcess counts a process opened beside the rig's own with cfg.
func (r *moveRig) noteProcess(cfg shardid.Config) {
	if r.p == nil {
		return // the rig's own: the mover, which reads each map version it writes
	}
	if cfg.MapRefresh < 0 || cfg.MapRefresh >= time.Minute {
		r.nonReaders.Add(1)
	} else {
		r.readers.Add(1)
	}
}

// announceWait is the AnnounceWait of the rig's moves: when every other
// process opened reads the shared map seldom or never, none reads a move's
// announcement in time, and the default 2 s spent waiting for them, twice
// a move, would only slow the tests.
func (r *moveRig) announceWait() time.Duration {
	if r.nonReaders.Load() > 0 && r.readers.Load() == 0 {
		return 100 * time.Millisecond
	}
	return 0
}

// newMoveRig starts from nothing: no map, no move, no triggers, empty tables.
func newMoveRig(t testing.TB, b backend, dir string) *moveRig {
	t.Helper()
	return newMoveRigServing(t, b, dir, nil)
}

// newMoveRigServing is newMoveRig with a target that serves the logical
// shards targetServes before the move, taken from the source.
func newMoveRigServing(t testing.TB, b backend, dir string, targetServes []shardid.Range) *moveRig {
	t.Helper()
	return newMoveRigWith(t, &moveRig{b: b, dir: dir, targetServes: targetServes})
}

// newMoveRigWith is newMoveRig with r's targetServes and names.
func newMoveRigWith(t testing.TB, r *moveRig) *moveRig {
	t.Helper()
	b, dir := r.b, r.dir
	phys := direct(t, b, dir)
	r.source, r.target = phys[moveSource], phys[moveTarget]
	main, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	for _, table := range []string{"shardid_shard_map", "shardid_moves", "shardid_tables", "shardid_process_maps"} {
		must(t, main.Exec("DROP TABLE IF EXISTS "+table).Error)
	}
	for _, db := range []*gorm.DB{r.source, r.target} {
		must(t, db.Migrator().DropTable(append(moveModels, "shardid_move_fence", "shardid_move_changes")...))
	}
	must(t, dropFenceTriggers(r.source, b.name))
	t.Cleanup(func() { // a sealed fence left behind would send other tests' writes that find no row looking for a move
		for _, db := range []*gorm.DB{r.source, r.target} {
			_ = db.Migrator().DropTable("shardid_move_fence", "shardid_move_changes")
			_ = dropFenceTriggers(db, b.name)
		}
		if own, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard}); err == nil {
			_ = own.Exec("DROP TABLE IF EXISTS shardid_moves").Error // a move left unfinished would refuse other tests' new tables
			if sqlDB, err := own.DB(); err == nil {
				_ = sqlDB.Close()
			}
		}
	})
	sqlDB, err := main.DB()
	must(t, err)
	must(t, sqlDB.Close())
	r.db, r.p = r.open(t, shardid.Config{})
	must(t, r.p.AutoMigrate(r.db, moveModels...))
	return r
}

// open registers a plugin with the move tests' shards on a new connection
// to the main database; a cfg that leaves Atomic at its zero value gets the
// backend's atomicity.
func (r *moveRig) open(t testing.TB, cfg shardid.Config) (*gorm.DB, *shardid.Plugin) {
	t.Helper()
	r.noteProcess(cfg)
	if cfg.Atomic == shardid.TwoPhaseCommit {
		cfg.Atomic = r.b.atomicity()
	}
	db, err := gorm.Open(r.b.dialector(t, r.dir), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Shards = moveShards(t, r.b, r.dir)
	for i, name := range r.names {
		cfg.Shards[i].Name = name
	}
	if r.targetServes != nil {
		cfg.Shards[1].Logical = r.targetServes
		cfg.Shards[0].Logical = nil
		next := 0
		for _, held := range r.targetServes { // the source keeps the rest
			if next < held.From {
				cfg.Shards[0].Logical = append(cfg.Shards[0].Logical, shardid.Range{From: next, To: held.From - 1})
			}
			next = held.To + 1
		}
		if count := (shardid.Layout{}).ShardCount(); next < count {
			cfg.Shards[0].Logical = append(cfg.Shards[0].Logical, shardid.Range{From: next, To: count - 1})
		}
	}
	p := shardid.New(cfg)
	if err := db.Use(p); err != nil {
		t.Fatalf("db.Use: %v", err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db, p
}

// dropFenceTriggers removes triggers an earlier, failed run left on the
// move tables.
func dropFenceTriggers(db *gorm.DB, backend string) error {
	var names []string
	switch backend {
	case "mariadb":
		if err := db.Raw("SELECT trigger_name FROM information_schema.triggers WHERE trigger_schema = DATABASE() AND trigger_name LIKE 'shardid_fence_%'").Scan(&names).Error; err != nil {
			return err
		}
		for _, n := range names {
			if err := db.Exec("DROP TRIGGER IF EXISTS `" + n + "`").Error; err != nil {
				return err
			}
		}
	case "postgres":
		if err := db.Raw("SELECT proname FROM pg_proc WHERE proname LIKE 'shardid_fence_%'").Scan(&names).Error; err != nil {
			return err
		}
		for _, n := range names {
			if err := db.Exec(`DROP FUNCTION IF EXISTS "` + n + `" CASCADE`).Error; err != nil {
				return err
			}
		}
	}
	return nil
}

// seedUsers writes n users of the moving range with IDs made an hour ago,
// as rows written before the move began.
func (r *moveRig) seedUsers(t testing.TB, n int) []int64 {
	t.Helper()
	layout := r.p.Layout()
	at := time.Now().Add(-time.Hour)
	width := movingRange.To - movingRange.From + 1
	users := make([]MvUser, n)
	ids := make([]int64, n)
	for i := range users {
		ids[i] = layout.Compose(at, movingRange.From+i%width, i/width)
		users[i] = MvUser{ID: ids[i], Name: "seed"}
	}
	if err := r.db.CreateInBatches(users, 2000).Error; err != nil {
		t.Fatalf("seeding: %v", err)
	}
	return ids
}

// count is how many rows of model a physical database holds, in the moving
// range or out of it.
func countIn(t testing.TB, db *gorm.DB, table string, inRange bool, layout shardid.Layout) int64 {
	t.Helper()
	var ids []int64
	if err := db.Table(table).Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, id := range ids {
		s := layout.Shard(id)
		if (s >= movingRange.From && s <= movingRange.To) == inRange {
			n++
		}
	}
	return n
}

// move runs the move of the moving range with a deadline.
func (r *moveRig) move(t testing.TB, mv shardid.Move) *shardid.MoveReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if mv.Logical == (shardid.Range{}) {
		mv.Logical = movingRange
	}
	if mv.To == "" {
		mv.To = r.b.name + "-target"
	}
	if mv.Models == nil {
		mv.Models = moveModels
	}
	if mv.AnnounceWait == 0 {
		mv.AnnounceWait = r.announceWait()
	}
	trail := &progressTrail{start: time.Now()}
	if mv.Progress == nil {
		mv.Progress = trail.note
	}
	report, err := r.p.Move(ctx, mv)
	if err != nil {
		t.Fatalf("move: %v\nits last steps:\n%s", err, trail)
	}
	return report
}

// progressTrail keeps a move's last steps other than chunks, to show where a
// failed move was.
type progressTrail struct {
	mu    sync.Mutex
	start time.Time
	steps []string
}

func (p *progressTrail) note(m shardid.MoveProgress) {
	if m.Step == "chunk" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.steps = append(p.steps, fmt.Sprintf("%7.1fs %s %s %s backlog %d", time.Since(p.start).Seconds(), m.Phase, m.Step, m.Table, m.Backlog))
	if len(p.steps) > 40 {
		p.steps = p.steps[1:]
	}
}

func (p *progressTrail) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.steps, "\n")
}

func describeReport(rep *shardid.MoveReport) string {
	return fmt.Sprintf("rows %v, %d changes replayed, frozen %s, map version %d", rep.Rows, rep.Changes, rep.Frozen, rep.MapVersion)
}
