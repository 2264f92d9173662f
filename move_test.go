package shardid

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/mover"
)

// TestPhasesAreTheMovers: the phases Moves and MoveStats report are the
// words the mover records, each under its documented name.
func TestPhasesAreTheMovers(t *testing.T) {
	for _, c := range []struct{ plugin, mover string }{
		{PhasePrepare, mover.PhasePrepare},
		{PhaseCopy, mover.PhaseCopy},
		{PhaseCatchUp, mover.PhaseCatchUp},
		{PhaseCutover, mover.PhaseCutover},
		{PhaseServing, mover.PhaseServing},
		{PhaseCancelled, mover.PhaseCancelled},
		{PhaseCleaned, mover.PhaseCleaned},
	} {
		if c.plugin != c.mover {
			t.Errorf("phase %q is %q in the mover", c.plugin, c.mover)
		}
	}
}

// TestAuditWithNoShardedTables: before any sharded model is migrated through
// the plugin Audit knows no table to read: it says so, not that a move is
// invalid, and reports no row.
func TestAuditWithNoShardedTables(t *testing.T) {
	dir := t.TempDir()
	count := Layout{}.ShardCount()
	db, _ := testDB(t, Config{Shards: []Shard{
		{Name: "a", Dialector: sqlite.Open(filepath.Join(dir, "a.db")), Logical: []Range{{From: 0, To: count/2 - 1}}},
		{Name: "b", Dialector: sqlite.Open(filepath.Join(dir, "b.db")), Logical: []Range{{From: count / 2, To: count - 1}}},
	}})
	p := db.Config.Plugins[pluginName].(*Plugin)
	misplaced, err := p.Audit(context.Background())
	if err == nil || !strings.Contains(err.Error(), "lists no sharded tables") || strings.Contains(err.Error(), "invalid move") || len(misplaced) != 0 {
		t.Fatalf("Audit with no sharded tables: %v, %v; want an error saying no table is recorded, not an invalid move", misplaced, err)
	}
}

// TestAProcessThatCannotFollowTheMapRefusesShardedStatements: in a rolling
// restart, a process whose config lacks a move's target cannot route by the
// map that names it. It refuses statements on sharded models, reads of the
// source's frozen copy among them, naming why; it is still live, so the
// move's cleanup waits for it, naming it.
func TestAProcessThatCannotFollowTheMapRefusesShardedStatements(t *testing.T) {
	ps := processes{t, t.TempDir()}
	open := func(shards ...Shard) (*gorm.DB, *Plugin) {
		db, p, err := ps.open(Config{MapRefresh: 100 * time.Millisecond, Shards: shards})
		must(t, err)
		return db, p
	}
	every := []Range{{From: 0, To: Layout{}.ShardCount() - 1}}
	oldDB, old := open(Shard{Name: "a", Dialector: ps.file("a.db"), Logical: every})
	must(t, old.AutoMigrate(oldDB, &revUser{}))
	newDB, current := open(Shard{Name: "a", Dialector: ps.file("a.db"), Logical: every}, Shard{Name: "b", Dialector: ps.file("b.db")})
	must(t, current.AutoMigrate(newDB, &revUser{}))
	moved := Range{From: 0, To: 4095}
	_, err := current.Move(context.Background(), Move{Logical: moved, To: "b"})
	must(t, err)
	// Past the time a silent process counts as gone, with room for the
	// cleanup's other steps on a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := current.CleanupMove(ctx, moved); err == nil || !strings.Contains(err.Error(), "still route by a map before version") {
		t.Fatalf("cleanup with a live process on the old map: %v; want it to wait for it, naming it", err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrShardUnavailable) || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "Config.Shards does not list") || strings.Contains(err.Error(), "on a:") {
			t.Errorf("the old process's %s: %v; want ErrShardUnavailable naming the database its config lacks, and no database", what, err)
		}
	}
	refused("write to a moved shard", oldDB.Clauses(OnShard(100)).Create(&revUser{Name: "late"}).Error)
	refused("read of the moved shards' frozen copy", oldDB.Clauses(OnShard(100)).Find(&[]revUser{}).Error)
	refused("read of shards that did not move", oldDB.Clauses(OnShard(5000)).Find(&[]revUser{}).Error)
	refused("count over all shards", oldDB.Clauses(AllShards()).Model(&revUser{}).Count(new(int64)).Error)
	must(t, oldDB.Exec("SELECT 1").Error) // the plugin's own database is the application's still
}

// TestProcessesOfOneMapShareTheirLayout: a process (an operator's plugin,
// the command) whose ID layout differs from the one the shared map was made
// with would read other shards out of the same IDs, and move the wrong
// rows: it does not start. One that spells the same layout otherwise does.
func TestProcessesOfOneMapShareTheirLayout(t *testing.T) {
	ps := processes{t, t.TempDir()}
	open := func(layout Layout) error {
		_, _, err := ps.open(Config{Layout: layout, Shards: []Shard{
			{Name: "a", Dialector: ps.file("a.db"), Logical: []Range{{From: 0, To: layout.Normalized().ShardCount() - 1}}},
			{Name: "b", Dialector: ps.file("b.db")},
		}})
		return err
	}
	must(t, open(Layout{}))
	for _, other := range []Layout{
		{TimeBits: 41, ShardBits: 13, SequenceBits: 9},
		{WorkerBits: 5},
		{Epoch: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)},
		{TimeUnit: 10 * time.Millisecond},
	} {
		if err := open(other); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "one layout") {
			t.Errorf("a process with layout %+v beside the map's: %v; want ErrInvalidConfig", other, err)
		}
	}
	must(t, open(Layout{TimeBits: 40, ShardBits: 13, SequenceBits: 10}))
}

// TestMoveToATargetNotMigratedSaysToMigrate: a move with no models to a
// database added to Config.Shards after the models were migrated is refused
// before it changes anything, saying to migrate them; it leaves no move to
// cancel in the way of the next, which goes through once they are migrated.
// A move stuck in such a prepare by an earlier version is cancelled.
func TestMoveToATargetNotMigratedSaysToMigrate(t *testing.T) {
	ps := processes{t, t.TempDir()}
	open := func(shards ...Shard) (*gorm.DB, *Plugin) {
		db, p, err := ps.open(Config{Shards: shards})
		must(t, err)
		return db, p
	}
	a := Shard{Name: "a", Dialector: ps.file("a.db"), Logical: []Range{{From: 0, To: Layout{}.ShardCount() - 1}}}
	oldDB, old := open(a)
	must(t, old.AutoMigrate(oldDB, &revUser{}))
	must(t, oldDB.Clauses(OnShard(100)).Create(&revUser{Name: "moving"}).Error)
	must(t, old.Close())
	db, p := open(a, Shard{Name: "b", Dialector: ps.file("b.db")})
	ctx := context.Background()
	moved := Range{From: 0, To: 4095}
	_, err := p.Move(ctx, Move{Logical: moved, To: "b"})
	if !errors.Is(err, ErrMoveInvalid) || !strings.Contains(err.Error(), "migrate the models with b in Config.Shards") {
		t.Fatalf("a move to a database without the tables: %v; want ErrMoveInvalid saying to migrate the models with b", err)
	}
	moves, err := p.Moves(ctx)
	must(t, err)
	if len(moves) != 0 {
		t.Errorf("the refused move is recorded: %+v", moves)
	}
	// As an earlier version left it: recorded, its prepare failed.
	stuck, err := json.Marshal(mapstore.MoveState{Logical: moved, From: "a", To: "b", Phase: PhasePrepare, Tables: []string{"rev_users"}})
	must(t, err)
	must(t, db.Exec("INSERT INTO shardid_moves (from_shard, to_shard, phase, state, updated_ms) VALUES (?, ?, ?, ?, 0)", moved.From, moved.To, PhasePrepare, string(stuck)).Error)
	must(t, p.CancelMove(ctx, moved))
	must(t, p.AutoMigrate(db, &revUser{}))
	report, err := p.Move(ctx, Move{Logical: moved, To: "b"})
	must(t, err)
	if report.Rows["rev_users"] != 1 {
		t.Errorf("the move after the migration copied %v, want the one user", report.Rows)
	}
}

// TestAuditOfANewEmptyTargetFindsNothing: a database added to Config.Shards
// to move shards onto, with no logical shards and none of the tables yet
// (docs/command.md: an empty file made first), holds no rows, so none is
// misplaced: Audit (shardid verify) reports nothing and does not call the
// database unread.
func TestAuditOfANewEmptyTargetFindsNothing(t *testing.T) {
	ps := processes{t, t.TempDir()}
	a := Shard{Name: "a", Dialector: ps.file("a.db"), Logical: []Range{{From: 0, To: Layout{}.ShardCount() - 1}}}
	oldDB, old, err := ps.open(Config{Shards: []Shard{a}})
	must(t, err)
	must(t, old.AutoMigrate(oldDB, &revUser{}, &revPhoto{}))
	must(t, oldDB.Clauses(OnShard(100)).Create(&revUser{Name: "stays"}).Error)
	must(t, old.Close())
	_, p, err := ps.open(Config{Shards: []Shard{a, {Name: "b", Dialector: ps.file("b.db")}}})
	must(t, err)
	misplaced, err := p.Audit(context.Background())
	if err != nil || len(misplaced) != 0 {
		t.Fatalf("Audit with a new, empty target: %v, %v; want nothing misplaced and no database unread", misplaced, err)
	}
}

// processes opens processes of one shared map on SQLite files in dir: the
// plugin's database main.db and the physical databases named file(name).
type processes struct {
	t   *testing.T
	dir string
}

func (ps processes) file(name string) gorm.Dialector {
	return sqlite.Open("file:" + filepath.Join(ps.dir, name) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
}

// open starts a process with cfg, closed when the test ends.
func (ps processes) open(cfg Config) (*gorm.DB, *Plugin, error) {
	db, err := gorm.Open(ps.file("main.db"), &gorm.Config{Logger: logger.Discard})
	must(ps.t, err)
	if cfg.Log == nil {
		cfg.Log = quiet
	}
	cfg.Atomic = BestEffort
	p := New(cfg)
	ps.t.Cleanup(func() { _ = p.Close() })
	return db, p, db.Use(p)
}

// TestAMapNeverReadKeepsShardedStatementsRefused: a process that could not
// read the shared map at db.Use (here a version it cannot parse) refuses
// statements on sharded models, and goes on refusing them while it only
// notes itself live (MapRefresh negative): Config.Shards may be older than
// the table.
func TestAMapNeverReadKeepsShardedStatementsRefused(t *testing.T) {
	ps := processes{t, t.TempDir()}
	main, err := gorm.Open(ps.file("main.db"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	must(t, main.Exec("CREATE TABLE shardid_shard_map (version BIGINT NOT NULL PRIMARY KEY, map TEXT NOT NULL, created_ms BIGINT NOT NULL)").Error)
	must(t, main.Exec("INSERT INTO shardid_shard_map VALUES (7, '{not json', 0)").Error)
	db, _, err := ps.open(Config{MapRefresh: -1, Shards: []Shard{{Name: "a", Dialector: ps.file("a.db"), Logical: []Range{{From: 0, To: Layout{}.ShardCount() - 1}}}}})
	must(t, err)
	for _, when := range []string{"at once", "after the process noted itself live"} {
		if err := db.Clauses(OnShard(1)).Find(&[]revUser{}).Error; !errors.Is(err, ErrShardUnavailable) {
			t.Errorf("%s: %v; want ErrShardUnavailable", when, err)
		}
		time.Sleep(2500 * time.Millisecond) // past its first heartbeats, of a second each
	}
}

// TestAMapRefreshTooLongToCountStillRoutes: a MapRefresh whose trust window
// does not fit in a time.Duration is trusted for good, not refused for a
// window gone negative.
func TestAMapRefreshTooLongToCountStillRoutes(t *testing.T) {
	ps := processes{t, t.TempDir()}
	db, p, err := ps.open(Config{MapRefresh: 1 << 62, Shards: []Shard{{Name: "a", Dialector: ps.file("a.db"), Logical: []Range{{From: 0, To: Layout{}.ShardCount() - 1}}}}})
	must(t, err)
	must(t, p.AutoMigrate(db, &revUser{}))
	if err := db.Clauses(OnShard(1)).Find(&[]revUser{}).Error; err != nil {
		t.Errorf("a read with MapRefresh %v: %v", time.Duration(1<<62), err)
	}
}

// TestAMovesRunIsSeenByAnotherPluginOfItsFiles: a second plugin over the same
// SQLite files (the command line's, beside the application's mover) sees the
// move running while the mover holds it.
func TestAMovesRunIsSeenByAnotherPluginOfItsFiles(t *testing.T) {
	ps := processes{t, t.TempDir()}
	shards := []Shard{
		{Name: "a", Dialector: ps.file("a.db"), Logical: []Range{{From: 0, To: Layout{}.ShardCount() - 1}}},
		{Name: "b", Dialector: ps.file("b.db")},
	}
	db, app, err := ps.open(Config{Shards: shards})
	must(t, err)
	must(t, app.AutoMigrate(db, &revUser{}))
	must(t, db.Clauses(OnShard(1)).Create(&revUser{Name: "moving"}).Error)
	_, other, err := ps.open(Config{Shards: shards})
	must(t, err)
	inCopy, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	moved := make(chan error, 1)
	go func() {
		_, err := app.Move(context.Background(), Move{Logical: Range{From: 0, To: 9}, To: "b", Progress: func(MoveProgress) {
			once.Do(func() { close(inCopy); <-release })
		}})
		moved <- err
	}()
	<-inCopy
	seen, err := other.Moves(context.Background())
	close(release)
	must(t, err)
	must(t, <-moved)
	if len(seen) != 1 || !seen[0].Running {
		t.Errorf("another plugin of the same files sees the move as %+v; want it running", seen)
	}
}

// TestAMovesAnnouncementsWaitForAProcessThatDoesNotReadThemUpToAnnounceWait:
// a live process that does not read the shared map (a MapRefresh of an
// hour) is waited for at the creation of the triggers and at the cutover,
// each up to the move's AnnounceWait: 2 s by default, so at least 4 s a
// move, and far less when the move asks for 50 ms.
func TestAMovesAnnouncementsWaitForAProcessThatDoesNotReadThemUpToAnnounceWait(t *testing.T) {
	ps := processes{t, t.TempDir()}
	half := Layout{}.ShardCount() / 2
	shards := []Shard{ // a move off a source waits to be cleaned up before the next: two sources
		{Name: "a", Dialector: ps.file("a.db"), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "c", Dialector: ps.file("c.db"), Logical: []Range{{From: half, To: 2*half - 1}}},
		{Name: "b", Dialector: ps.file("b.db")},
	}
	db, mover, err := ps.open(Config{Shards: shards})
	must(t, err)
	must(t, mover.AutoMigrate(db, &revUser{}))
	must(t, db.Clauses(OnShard(1)).Create(&revUser{Name: "moving"}).Error)
	_, _, err = ps.open(Config{Shards: shards, MapRefresh: time.Hour})
	must(t, err)
	moveTook := func(req Move) time.Duration {
		start := time.Now()
		_, err := mover.Move(t.Context(), req)
		must(t, err)
		return time.Since(start)
	}
	if took := moveTook(Move{Logical: Range{From: 0, To: 9}, To: "b"}); took < 4*time.Second {
		t.Errorf("a move with the default AnnounceWait took %v; want at least two waits of 2 s", took)
	}
	if took := moveTook(Move{Logical: Range{From: half, To: half + 9}, To: "b", AnnounceWait: 50 * time.Millisecond}); took >= 2*time.Second {
		t.Errorf("a move with AnnounceWait 50ms took %v; want well under the default's single wait of 2 s", took)
	}
}

type dryRunMoved struct {
	ID   int64 `shardid:""`
	Name string
}

// TestAMovesDryRunRefusesWhatItsPrepareWould: a range whose target already
// holds a row of it (left there, not copied by a move) is refused by the
// move's prepare (ErrMoveInvalid), and by its dry run too, with the models
// given or not.
func TestAMovesDryRunRefusesWhatItsPrepareWould(t *testing.T) {
	for _, models := range [][]any{nil, {&dryRunMoved{}}} {
		db, p, direct := revRouted(t, &dryRunMoved{})
		l := p.Layout()
		const shard = 7 // on s0
		must(t, db.Create(&dryRunMoved{ID: l.Compose(time.Now(), shard, 1), Name: "on the source"}).Error)
		must(t, direct[1].Create(&dryRunMoved{ID: l.Compose(time.Now(), shard, 2), Name: "stray on the target"}).Error)
		move := Move{Logical: Range{From: shard, To: shard}, To: "s1", Models: models}

		move.DryRun = true
		_, dryErr := p.Move(t.Context(), move)
		move.DryRun = false
		_, err := p.Move(t.Context(), move)
		if !errors.Is(err, ErrMoveInvalid) {
			t.Fatalf("models %v: the move itself: %v, want ErrMoveInvalid (the target holds a row of the range)", models, err)
		}
		if n := strings.Count(err.Error(), "shardid:"); n != 1 {
			t.Errorf("models %v: the refusal says shardid: %d times, want once: %v", models, n, err)
		}
		if dryErr == nil {
			t.Errorf("models %v: the dry run reported a plan; the move it plans is refused: %v", models, err)
		}
	}
}

// TestMapTablesSharingThePluginDatabaseKeepApart: two sets of shards share
// one plugin database by Config.MapTable, with the same shard names for
// other databases. Each set opens its own databases, moves and cleans up
// with its own models, and lists its own moves; the other set's processes,
// at a version of their own map, do not hold back its cleanup.
func TestMapTablesSharingThePluginDatabaseKeepApart(t *testing.T) {
	type setAUser struct {
		ID   int64 `shardid:""`
		Name string
	}
	type setBOrder struct {
		ID   int64 `shardid:""`
		Item string
	}
	dir := t.TempDir()
	dsn := func(name string) string {
		return "file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	}
	count := Layout{}.ShardCount()
	open := func(mapTable, prefix string) (*gorm.DB, *Plugin) {
		db, err := gorm.Open(sqlite.Open(dsn("main.db")), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		p := New(Config{MapTable: mapTable, Atomic: BestEffort, Shards: []Shard{
			{Name: "s0", Dialector: sqlite.Open(dsn(prefix + "0.db")), Logical: []Range{{From: 0, To: count - 1}}},
			{Name: "s1", Dialector: sqlite.Open(dsn(prefix + "1.db"))},
		}})
		must(t, db.Use(p))
		t.Cleanup(func() {
			_ = p.Close()
			if sqlDB, err := db.DB(); err == nil {
				_ = sqlDB.Close()
			}
		})
		return db, p
	}
	dbA, pA := open("app_a_map", "a")
	dbB, pB := open("app_b_map", "b")
	must(t, pA.AutoMigrate(dbA, &setAUser{}))
	must(t, pB.AutoMigrate(dbB, &setBOrder{}))
	user, order := setAUser{Name: "ada"}, setBOrder{Item: "tea"}
	must(t, dbA.Clauses(OnShard(10)).Create(&user).Error)
	must(t, dbB.Clauses(OnShard(10)).Create(&order).Error)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	move := Range{From: 0, To: count/2 - 1}
	if _, err := pA.Move(ctx, Move{Logical: move, To: "s1", Models: []any{&setAUser{}}}); err != nil {
		t.Fatalf("set A's move of its own model: %v", err)
	}
	if err := pA.CleanupMove(ctx, move); err != nil {
		t.Fatalf("set A's cleanup, set B's process live at its own map's version: %v", err)
	}
	if moves, err := pB.Moves(ctx); err != nil || len(moves) != 0 {
		t.Fatalf("set B lists moves %+v, %v; want none: set A's move is not its", moves, err)
	}
	if v := pB.MapVersion(); v != 1 {
		t.Fatalf("set B routes by version %d of its map; want 1", v)
	}
	for _, c := range []struct {
		file  string
		table string
		want  int64
	}{{"a0.db", "set_a_users", 0}, {"a1.db", "set_a_users", 1}, {"b0.db", "set_b_orders", 1}, {"b1.db", "set_b_orders", 0}} {
		direct, err := gorm.Open(sqlite.Open(dsn(c.file)), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		var n int64
		err = direct.Table(c.table).Count(&n).Error
		if sqlDB, e := direct.DB(); e == nil {
			_ = sqlDB.Close()
		}
		if c.want > 0 && err != nil || n != c.want {
			t.Errorf("%s holds %d rows of %s (%v); want %d", c.file, n, c.table, err, c.want)
		}
	}
	var back setBOrder
	must(t, dbB.First(&back, order.ID).Error)
}

// Processes lists each live process of the map with the version it routes
// by (one whose config cannot follow a move stays on the old one), not the
// processes of another MapTable in the same database, and none that closed.
func TestProcessesListsTheVersionEachProcessRoutesBy(t *testing.T) {
	ps := processes{t, t.TempDir()}
	every := []Range{{From: 0, To: Layout{}.ShardCount() - 1}}
	open := func(cfg Config) (*gorm.DB, *Plugin) {
		cfg.MapRefresh = 100 * time.Millisecond
		db, p, err := ps.open(cfg)
		must(t, err)
		return db, p
	}
	oldDB, old := open(Config{Shards: []Shard{{Name: "a", Dialector: ps.file("a.db"), Logical: every}}})
	must(t, old.AutoMigrate(oldDB, &revUser{}))
	newDB, current := open(Config{Shards: []Shard{{Name: "a", Dialector: ps.file("a.db"), Logical: every}, {Name: "b", Dialector: ps.file("b.db")}}})
	must(t, current.AutoMigrate(newDB, &revUser{}))
	_, other := open(Config{MapTable: "other_map", Shards: []Shard{{Name: "a", Dialector: ps.file("other.db"), Logical: every}}})
	_, err := current.Move(context.Background(), Move{Logical: Range{From: 0, To: 4095}, To: "b"})
	must(t, err)
	// Each process notes its version at its next refresh.
	var list []Process
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if list, err = current.Processes(context.Background()); err == nil && len(list) == 2 && list[0].MapVersion != list[1].MapVersion {
			break
		}
	}
	must(t, err)
	versions := map[int64]bool{}
	for _, pr := range list {
		versions[pr.MapVersion] = pr.Live
	}
	if len(list) != 2 || !versions[old.MapVersion()] || !versions[current.MapVersion()] || old.MapVersion() == current.MapVersion() {
		t.Fatalf("Processes: %+v; want two live processes, at versions %d and %d", list, old.MapVersion(), current.MapVersion())
	}
	if others, err := other.Processes(context.Background()); err != nil || len(others) != 1 {
		t.Fatalf("Processes of another MapTable: %+v, %v; want its own process only", others, err)
	}
	must(t, old.Close())
	if list, err = current.Processes(context.Background()); err != nil || len(list) != 1 || list[0].MapVersion != current.MapVersion() {
		t.Fatalf("Processes after the old one closed: %+v, %v; want the current process only", list, err)
	}
}

// TestAMoveThatCannotRecordItsPhaseNamesIt: a move whose state the plugin's
// database refuses to record between two phases fails with an error naming
// the move and the table, not only the database's words.
func TestAMoveThatCannotRecordItsPhaseNamesIt(t *testing.T) {
	db, p := eventsRig(t, quiet)
	must(t, db.Clauses(OnShard(7000)).Create(&eventUser{Name: "ada"}).Error)
	_, err := p.Moves(context.Background()) // the moves table
	must(t, err)
	must(t, db.Exec("CREATE TRIGGER refuse_catch_up BEFORE UPDATE ON shardid_moves WHEN NEW.phase = 'catch-up' BEGIN SELECT RAISE(ABORT, 'the disk is full'); END").Error)
	_, err = p.Move(context.Background(), Move{Logical: Range{From: 6144, To: 8191}, To: "b", Models: []any{&eventUser{}}})
	if err == nil || !strings.Contains(err.Error(), "the disk is full") || !strings.Contains(err.Error(), "6144-8191") || !strings.Contains(err.Error(), "shardid_moves") {
		t.Fatalf("a move whose phase cannot be recorded: %v; want the error naming the move (6144-8191) and shardid_moves", err)
	}
}

// TestAMovesBadTuningIsRefusedBeforeItStarts: a Move whose ChunkSize,
// CatchUpBelow, Throttle or FreezeLease is negative, or whose FreezeLease is
// a few nanoseconds (an untyped 3 meant as seconds, which froze the range
// for a lease its renewer's ticker of lease/3 panicked on, killing the
// process), fails with ErrMoveInvalid naming the field before anything
// changes: the range stays on its database, and no move is recorded.
func TestAMovesBadTuningIsRefusedBeforeItStarts(t *testing.T) {
	db, p, direct, _ := routedOverN(t, 2, Config{Log: quiet}, &revUser{})
	l := p.Layout()
	for i := range 20 {
		must(t, db.Create(&revUser{ID: l.Compose(time.Now().Add(-time.Second), i%4, i), Name: "m"}).Error)
	}
	cases := map[string]Move{
		"ChunkSize -1":        {ChunkSize: -1},
		"CatchUpBelow -1":     {CatchUpBelow: -1},
		"Throttle -1s":        {Throttle: -time.Second},
		"FreezeLease -1s":     {FreezeLease: -time.Second},
		"FreezeLease 3ns":     {FreezeLease: 3},
		"FreezeLease 1ns":     {FreezeLease: 1},
		"FreezeLease 29ms is": {FreezeLease: 29 * time.Millisecond},
		"AnnounceWait -1s":    {AnnounceWait: -time.Second},
	}
	for name, req := range cases {
		req.Logical, req.To = Range{From: 0, To: 3}, "s1"
		field, _, _ := strings.Cut(name, " ")
		if _, err := p.Move(t.Context(), req); !errors.Is(err, ErrMoveInvalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("Move with %s: %v; want ErrMoveInvalid naming %s", name, err, field)
		}
	}
	if moves, err := p.Moves(t.Context()); err != nil || len(moves) != 0 {
		t.Fatalf("moves recorded: %+v, %v; want none", moves, err)
	}
	if p.ShardMap().Physical(0) != 0 {
		t.Fatal("the range left s0")
	}
	var n int64
	must(t, direct[1].Model(&revUser{}).Count(&n).Error)
	if n != 0 {
		t.Fatalf("%d rows copied to s1", n)
	}
}
