package shardid

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// stuckDialector never finishes opening until the test ends, as a server
// that takes the connection and never answers.
type stuckDialector struct {
	gorm.Dialector
	release chan struct{}
}

func (d stuckDialector) Initialize(*gorm.DB) error {
	<-d.release
	return errors.New("released at the end of the test")
}

func stuck(t *testing.T) gorm.Dialector {
	d := stuckDialector{Dialector: sqlite.Open(":memory:"), release: make(chan struct{})}
	t.Cleanup(func() { close(d.release) })
	return d
}

// pingShards spreads the logical shards over one SQLite file per name, or the
// dialector given for it.
func pingShards(t *testing.T, names []string, given map[string]Shard) []Shard {
	count := Layout{}.ShardCount()
	dir := t.TempDir()
	shards := make([]Shard, len(names))
	for i, name := range names {
		s, ok := given[name]
		if !ok {
			s.Dialector = sqlite.Open("file:" + filepath.Join(dir, name+".db"))
		}
		s.Name, s.Logical = name, []Range{{From: i * count / len(names), To: (i+1)*count/len(names) - 1}}
		shards[i] = s
	}
	return shards
}

func pingOf(t *testing.T, p *Plugin, ctx context.Context) []PingResult {
	t.Helper()
	results, err := p.Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return results
}

func TestPingAllUp(t *testing.T) {
	_, p := testDB(t, Config{Shards: pingShards(t, []string{"c", "a", "b"}, nil)})
	results := pingOf(t, p, context.Background())
	if len(results) != 3 {
		t.Fatalf("%d results for 3 physical databases: %+v", len(results), results)
	}
	for i, name := range []string{"c", "a", "b"} { // the map's order, not the names'
		r := results[i]
		if r.Name != name || r.Kind != KindPhysical || r.Err != nil || r.RTT <= 0 {
			t.Errorf("result %d: %+v, want %s up with a round trip", i, r, name)
		}
	}

	_, own := testDB(t, Config{})
	if results := pingOf(t, own, context.Background()); len(results) != 1 || results[0].Name != "default" || results[0].Err != nil {
		t.Errorf("without Config.Shards, Ping gave %+v, want the plugin's own database up", results)
	}
}

// A closed database and one that never opens are reported down, the others
// up, within Config.ConnectTimeout.
func TestPingReportsDownDatabases(t *testing.T) {
	closed, err := gorm.Open(sqlite.Open("file:"+filepath.Join(t.TempDir(), "closed.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	shards := pingShards(t, []string{"a", "closed", "stuck", "d"}, map[string]Shard{"closed": {DB: closed}, "stuck": {Dialector: stuck(t)}})
	_, p := testDB(t, Config{Shards: shards, ConnectTimeout: 3 * time.Second}) // the healthy ones answer within it on a busy machine
	sqlDB, err := closed.DB()
	must(t, err)
	must(t, sqlDB.Close())

	start := time.Now()
	results := pingOf(t, p, context.Background())
	if elapsed := time.Since(start); elapsed > 30*time.Second { // generous: it returns after the timeout, or never
		t.Fatalf("Ping took %v with a 3s ConnectTimeout", elapsed)
	}
	want := map[string]string{"closed": "database is closed", "stuck": "did not answer within"}
	for i, name := range []string{"a", "closed", "stuck", "d"} {
		r := results[i]
		if r.Name != name {
			t.Fatalf("result %d is %s, want %s: %+v", i, r.Name, name, results)
		}
		if want[name] == "" {
			if r.Err != nil || r.RTT <= 0 {
				t.Errorf("%s: %+v, want up with a round trip", name, r)
			}
			continue
		}
		if !errors.Is(r.Err, ErrShardUnavailable) || !strings.Contains(r.Err.Error(), name) || !strings.Contains(r.Err.Error(), want[name]) || r.RTT != 0 {
			t.Errorf("%s: %+v, want down with ErrShardUnavailable naming it and saying %q", name, r, want[name])
		}
	}
}

// The ctx deadline bounds Ping when it comes before Config.ConnectTimeout.
func TestPingKeepsTheContextDeadline(t *testing.T) {
	shards := pingShards(t, []string{"a", "stuck"}, map[string]Shard{"stuck": {Dialector: stuck(t)}})
	_, p := testDB(t, Config{Shards: shards, ConnectTimeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // a's answer comes within it on a busy machine
	defer cancel()
	done := make(chan []PingResult, 1)
	go func() { results, _ := p.Ping(ctx); done <- results }()
	select {
	case results := <-done:
		if results[0].Err != nil || results[1].Err == nil || !strings.Contains(results[1].Err.Error(), "did not answer") {
			t.Fatalf("Ping gave %+v, want a up and stuck down", results)
		}
	case <-time.After(time.Minute): // generous: the deadline is 3s, the ConnectTimeout an hour
		t.Fatal("Ping waited past its context's deadline")
	}
}

func TestPingOfAPluginNotOpen(t *testing.T) {
	var none *Plugin
	_, closed := testDB(t, Config{})
	must(t, closed.Close())
	for name, c := range map[string]struct {
		p    *Plugin
		want string
	}{
		"nil":            {none, "nil *Plugin"},
		"not registered": {New(Config{}), "not registered with db.Use"},
		"closed":         {closed, "closed"},
	} {
		results, err := c.p.Ping(context.Background())
		if !errors.Is(err, ErrPluginNotOpen) || !strings.Contains(err.Error(), c.want) || results != nil {
			t.Errorf("%s: Ping gave %v, %v; want ErrPluginNotOpen saying %q", name, results, err, c.want)
		}
	}
}
