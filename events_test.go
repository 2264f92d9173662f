package shardid

import (
	"bytes"
	"context"
	"encoding/json"
	"log"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type eventUser struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Name string
}

// lockedBuffer is a log destination several goroutines write to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// events returns the messages logged, each with its attributes.
func (b *lockedBuffer) events(t *testing.T) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var events []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b.buf.Bytes()))
	for dec.More() {
		var e map[string]any
		must(t, dec.Decode(&e))
		events = append(events, e)
	}
	return events
}

// eventsRig is a plugin logging to log over two SQLite databases, a
// holding every logical shard and b none, with eventUser migrated.
func eventsRig(t *testing.T, log *slog.Logger) (*gorm.DB, *Plugin) {
	t.Helper()
	dir := t.TempDir()
	open := func(name string) gorm.Dialector { return sqlite.Open(filepath.Join(dir, name)) }
	db, err := gorm.Open(open("main.db"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := New(Config{Log: log, Shards: []Shard{
		{Name: "a", Dialector: open("a.db"), Logical: []Range{{From: 0, To: 8191}}},
		{Name: "b", Dialector: open("b.db")},
	}})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	must(t, p.AutoMigrate(db, &eventUser{}))
	return db, p
}

// TestEventsLogged moves a range between two SQLite databases with a
// snowflake model and finds, in Config.Log, the lease taken on each
// database, every phase of the move and the new map version; MoveStats
// shows the move while it runs.
func TestEventsLogged(t *testing.T) {
	var out lockedBuffer
	db, p := eventsRig(t, slog.New(slog.NewJSONHandler(&out, nil)))
	must(t, db.Clauses(OnShard(7000)).Create(&eventUser{Name: "ada"}).Error)
	var during []MoveStats
	sample := func(pr MoveProgress) {
		if pr.Step == "verified" {
			during = p.MoveStats()
		}
	}
	_, err := p.Move(context.Background(), Move{Logical: Range{From: 6144, To: 8191}, To: "b", Models: []any{&eventUser{}}, Progress: sample})
	must(t, err)
	if len(during) != 1 || during[0].To != "b" || during[0].Copied["event_users"] != 1 || during[0].Frozen <= 0 || during[0].Phase != PhaseCutover {
		t.Errorf("MoveStats while frozen: %+v", during)
	}
	if after := p.MoveStats(); len(after) != 0 {
		t.Errorf("MoveStats after the move: %+v", after)
	}
	must(t, db.Clauses(OnShard(7000)).Create(&eventUser{Name: "bob"}).Error) // takes a lease on b

	leases := map[string]bool{}
	var phases []string
	versions := 0
	for _, e := range out.events(t) {
		switch e["msg"] {
		case "shardid: snowflake worker lease taken":
			leases[e["database"].(string)] = true
		case "shardid: move phase":
			phases = append(phases, e["phase"].(string))
		case "shardid: map version changed":
			if e["from"].(float64) == 1 && e["to"].(float64) == 2 {
				versions++
			}
		}
	}
	if !leases["a"] || !leases["b"] {
		t.Errorf("leases logged on %v, want a and b", leases)
	}
	want := []string{PhasePrepare, PhaseCopy, PhaseCatchUp, PhaseCutover, PhaseServing}
	if len(phases) != len(want) {
		t.Errorf("phases logged: %v, want %v", phases, want)
	}
	for i := range min(len(phases), len(want)) {
		if phases[i] != want[i] {
			t.Errorf("phases logged: %v, want %v", phases, want)
			break
		}
	}
	if versions != 1 {
		t.Errorf("the change from map version 1 to 2 logged %d times", versions)
	}
}

// TestMapDifferenceIsAnEvent: a process whose Config.Shards disagrees with
// the shared map says so in Config.Log, and nothing of it in GORM's log,
// which is the statements'.
func TestMapDifferenceIsAnEvent(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) gorm.Dialector { return sqlite.Open(filepath.Join(dir, name)) }
	shards := func(split int) []Shard {
		return []Shard{
			{Name: "a", Dialector: open("a.db"), Logical: []Range{{From: 0, To: split - 1}}},
			{Name: "b", Dialector: open("b.db"), Logical: []Range{{From: split, To: 8191}}},
		}
	}
	first, err := gorm.Open(open("main.db"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	seeding := New(Config{Shards: shards(4096)})
	must(t, first.Use(seeding)) // seeds the shared map from its Config.Shards
	must(t, seeding.Close())

	var events lockedBuffer
	var statements bytes.Buffer
	db, err := gorm.Open(open("main.db"), &gorm.Config{Logger: logger.New(log.New(&statements, "", 0), logger.Config{LogLevel: logger.Info})})
	must(t, err)
	p := New(Config{Shards: shards(2048), Log: slog.New(slog.NewJSONHandler(&events, nil))})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	found := false
	for _, e := range events.events(t) {
		if e["msg"] == "shardid: the shared map differs from Config.Shards, and is followed" && e["level"] == "WARN" {
			found = e["version"].(float64) == 1 && strings.Contains(e["differences"].(string), "a holds 0-4095 (Config.Shards: 0-2047)")
		}
	}
	if !found {
		t.Errorf("no warning of the difference in Config.Log: %s", events.buf.String())
	}
	if strings.Contains(statements.String(), "differs") {
		t.Errorf("the difference is in GORM's log: %s", statements.String())
	}
}

// TestAMoveWarningNamesItsMove: the warning that processes did not read a
// move's announcement in time names the move (its range and target), as
// the move's other events do: a process may run several moves at once.
func TestAMoveWarningNamesItsMove(t *testing.T) {
	var out lockedBuffer
	db, p := eventsRig(t, slog.New(slog.NewJSONHandler(&out, nil)))
	// A process that says it is live for an hour and never reads a new map.
	must(t, db.Exec("INSERT INTO shardid_process_maps (owner, map_version, seen_ms, refresh_ms, map_table) VALUES ('stuck', 0, ?, 1000, '')",
		time.Now().Add(time.Hour).UnixMilli()).Error)
	_, err := p.Move(context.Background(), Move{Logical: Range{From: 6144, To: 8191}, To: "b", Models: []any{&eventUser{}}})
	must(t, err)
	warned := 0
	for _, e := range out.events(t) {
		if msg, _ := e["msg"].(string); strings.Contains(msg, "announcement") {
			warned++
			if e["from"] != float64(6144) || e["through"] != float64(8191) || e["to"] != "b" {
				t.Errorf("%q names from=%v through=%v to=%v; want the move, 6144-8191 to b", msg, e["from"], e["through"], e["to"])
			}
		}
	}
	if warned == 0 {
		t.Fatalf("no warning of the process that did not read the announcement; logged:\n%s", out.buf.String())
	}
}
