package shardid

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type metricUser struct {
	ID   int64 `shardid:""`
	Name string
}

type metricNote struct { // unsharded: on the plugin's database, not counted
	ID   int64
	Text string
}

// TestStatementStats runs a known mix of statements over three physical
// databases and finds each one counted on the database it ran on, by kind,
// with the failed ones and the fan-outs.
func TestStatementStats(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 3, &metricUser{}, &metricNote{})
	if p.StatementStats() != nil {
		t.Fatal("statements counted before CountStatements")
	}
	p.CountStatements()
	onShard := []int{10, 20, 3000, 6000} // s0, s0, s1, s2
	users := make([]metricUser, len(onShard))
	for i, s := range onShard {
		users[i].Name = "u"
		must(t, db.Clauses(OnShard(s)).Create(&users[i]).Error)
	}
	must(t, db.Create(&metricNote{Text: "unsharded"}).Error)
	var got metricUser
	must(t, db.First(&got, users[2].ID).Error) // query s1
	var missing metricUser
	if err := db.First(&missing, p.Layout().Compose(p.Layout().Epoch, 30, 0)).Error; !errors.Is(err, gorm.ErrRecordNotFound) { // query s0, not found
		t.Fatalf("a missing row: %v", err)
	}
	var all []metricUser
	must(t, db.Clauses(AllShards()).Find(&all).Error)                         // query s0, s1, s2: one fan-out
	must(t, db.Model(&metricUser{ID: users[3].ID}).Update("name", "v").Error) // update s2
	must(t, db.Delete(&metricUser{ID: users[0].ID}).Error)                    // delete s0
	var n int64
	must(t, db.Model(&metricUser{}).Clauses(OnShard(3000)).Select("count(*)").Row().Scan(&n)) // row s1
	must(t, db.Model(&metricUser{}).Clauses(AllShards()).Select("count(*)").Row().Scan(&n))   // row s0, s1, s2: one fan-out
	dry := []metricUser{{Name: "d"}, {Name: "e"}}
	dry[0].ID, dry[1].ID = p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), 20, 0), p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), 6000, 0)
	must(t, db.Session(&gorm.Session{DryRun: true}).Create(&dry).Error)                                              // built for s0 and s2, sent nowhere
	must(t, db.Clauses(OnShard(6000)).Exec("UPDATE metric_users SET name = ? WHERE id = ?", "w", users[3].ID).Error) // raw s2
	if err := db.Clauses(OnShard(3000)).Exec("UPDATE no_such_table SET x = 1").Error; err == nil {                   // raw s1, failed
		t.Fatal("an update of a missing table succeeded")
	}

	type key struct{ physical, kind string }
	want := map[key][2]uint64{ // count, errors
		{"s0", "create"}: {2, 0}, {"s1", "create"}: {1, 0}, {"s2", "create"}: {1, 0},
		{"s0", "query"}: {2, 0}, {"s1", "query"}: {2, 0}, {"s2", "query"}: {1, 0},
		{"s2", "update"}: {1, 0}, {"s0", "delete"}: {1, 0},
		{"s0", "row"}: {1, 0}, {"s1", "row"}: {2, 0}, {"s2", "row"}: {1, 0}, {"s2", "raw"}: {1, 0}, {"s1", "raw"}: {1, 1},
	}
	stats := p.StatementStats()
	if len(stats) != 3*len(StatementKinds()) {
		t.Fatalf("%d entries, want one per database and kind (%d)", len(stats), 3*len(StatementKinds()))
	}
	for _, s := range stats {
		w := want[key{s.Physical, s.Kind}]
		if s.Count != w[0] || s.Errors != w[1] {
			t.Errorf("%s %s: %d statements, %d failed; want %d, %d", s.Physical, s.Kind, s.Count, s.Errors, w[0], w[1])
		}
		var inBuckets uint64
		for _, b := range s.Buckets {
			inBuckets += b
		}
		if len(s.Buckets) != len(StatementBounds())+1 || inBuckets != s.Count || (s.Count > 0) != (s.Seconds > 0) {
			t.Errorf("%s %s: buckets %v (%d statements), %v seconds", s.Physical, s.Kind, s.Buckets, s.Count, s.Seconds)
		}
	}
	if fanOuts := p.FanOutStats(); fanOuts["query"] != 1 || fanOuts["row"] != 1 || fanOuts["create"] != 0 || fanOuts["update"] != 0 {
		t.Errorf("fan-outs: %v, want one query and one row", fanOuts)
	}
	pools := p.PoolStats()
	for _, name := range p.Physicals() {
		if _, ok := pools[name]; !ok {
			t.Errorf("no pool statistics of %s: %v", name, pools)
		}
	}
}

// TestStatementClockGivesContextBack checks that a counted statement leaves
// the statement's context as it found it, so that a chain run twice does not
// nest clocks.
func TestStatementClockGivesContextBack(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 2, &metricUser{})
	p.CountStatements()
	u := metricUser{Name: "a"}
	must(t, db.Create(&u).Error)
	chain := db.Where("id = ?", u.ID)
	before := chain.Statement.Context
	for range 3 {
		var got []metricUser
		must(t, chain.Find(&got).Error)
	}
	if chain.Statement.Context != before {
		t.Errorf("the chain's context changed: %T", chain.Statement.Context)
	}
}

type revObsUser struct {
	ID   int64 `shardid:""`
	Name string
}

// TestRefusedFanOutIsNotCounted: Row over several databases is refused
// before it is sent anywhere, so FanOutStats does not count it as a statement
// sent to more than one database.
func TestRefusedFanOutIsNotCounted(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 3, &revObsUser{})
	p.CountStatements()
	_, err := db.Model(&revObsUser{}).Clauses(AllShards()).Select("id").Rows()
	if !errors.Is(err, ErrCrossShard) {
		t.Fatalf("Row over three databases: %v, want ErrCrossShard", err)
	}
	if got := p.FanOutStats()["row"]; got != 0 {
		t.Errorf("FanOutStats counts %d row statement(s) sent to several databases; the one refused went nowhere", got)
	}
	var all revObsUser // a struct destination, refused too before any part runs
	err = db.Clauses(AllShards()).Find(all).Error
	if err == nil {
		t.Fatal("a non-pointer destination over three databases was accepted")
	}
	if got := p.FanOutStats()["query"]; got != 0 {
		t.Errorf("FanOutStats counts %d refused query(ies): %v", got, err)
	}
}

// TestStatementOnADatabaseDownSinceTheStartIsCounted: a statement that fails
// because its database never opened is counted there as failed, as one that
// fails once it opened is.
func TestStatementOnADatabaseDownSinceTheStartIsCounted(t *testing.T) {
	db, p, _ := openWithS1DownSinceTheStart(t)
	half := Layout{}.ShardCount() / 2
	p.CountStatements()
	var found []metricUser
	if err := db.Clauses(OnShard(half + 1)).Find(&found).Error; !errors.Is(err, ErrShardUnavailable) {
		t.Fatalf("a query on a database that cannot open: %v, want ErrShardUnavailable", err)
	}
	var byID metricUser
	if err := db.First(&byID, p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), half+1, 0)).Error; !errors.Is(err, ErrShardUnavailable) {
		t.Fatalf("a query by ID on a database that cannot open: %v, want ErrShardUnavailable", err)
	}
	if err := db.Clauses(OnShard(half + 1)).Create(&metricUser{Name: "a"}).Error; !errors.Is(err, ErrShardUnavailable) {
		t.Fatalf("a Create on a database that cannot open: %v, want ErrShardUnavailable", err)
	}
	if err := db.Create(&metricUser{ID: p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), half+2, 0), Name: "b"}).Error; !errors.Is(err, ErrShardUnavailable) {
		t.Fatalf("a Create of a preset ID on a database that cannot open: %v, want ErrShardUnavailable", err)
	}
	want := map[string]uint64{"query": 2, "create": 2}
	for _, s := range p.StatementStats() {
		want := want[s.Kind]
		if s.Physical != "s1" {
			want = 0
		}
		if s.Count != want || s.Errors != want {
			t.Errorf("%s %s: %d statements, %d failed; want %d, %d", s.Physical, s.Kind, s.Count, s.Errors, want, want)
		}
	}
}

type uniqueNameUser struct {
	ID   int64  `shardid:""`
	Name string `gorm:"uniqueIndex"`
}

// countsByDatabase is each database and kind's statements and errors.
func countsByDatabase(p *Plugin) map[string][2]uint64 {
	m := map[string][2]uint64{}
	for _, s := range p.StatementStats() {
		if s.Count > 0 {
			m[s.Physical+"/"+s.Kind] = [2]uint64{s.Count, s.Errors}
		}
	}
	return m
}

// TestRolledBackPartIsNotCountedAsAnErrorOnItsDatabase: a write over
// several databases that fails on one (a unique violation on s1, a missing
// table on s1) rolls back the parts of the others, which did not fail: the
// failure is counted on s1 only, not on every database of the statement.
func TestRolledBackPartIsNotCountedAsAnErrorOnItsDatabase(t *testing.T) {
	db, p, direct, _ := revRoutedN(t, 3, &uniqueNameUser{})
	p.CountStatements()
	l := p.Layout()
	at := func(shard int) int64 { return l.Compose(time.Now().Add(-time.Second), shard, 1) }
	must(t, db.Create(&uniqueNameUser{ID: at(3000), Name: "taken"}).Error)
	err := db.Create(&[]uniqueNameUser{{ID: at(10), Name: "free"}, {ID: at(3001), Name: "taken"}}).Error
	if err == nil {
		t.Fatal("a duplicate name on s1 was accepted")
	}
	got := countsByDatabase(p)
	if got["s1/create"] != [2]uint64{2, 1} || got["s0/create"] != [2]uint64{1, 0} {
		t.Errorf("a split Create that failed on s1 only (%v): s0 create %v, s1 create %v; want s0 [1 0], s1 [2 1]", err, got["s0/create"], got["s1/create"])
	}
	must(t, direct[1].Exec("DROP TABLE unique_name_users").Error)
	err = db.Model(&uniqueNameUser{}).Clauses(AllShards()).Where("1 = 1").Update("name", gorm.Expr("name")).Error
	if err == nil {
		t.Fatal("an update of a missing table on s1 succeeded")
	}
	got = countsByDatabase(p)
	for name, want := range map[string][2]uint64{"s0/update": {1, 0}, "s1/update": {1, 1}, "s2/update": {1, 0}} {
		if got[name] != want {
			t.Errorf("an update over every shard that failed on s1 only (%v): %s %v, want %v", err, name, got[name], want)
		}
	}
}

// TestFanOutPartOnADatabaseThatCannotOpenIsCountedThere: a statement over
// several databases whose part cannot reach its database (down since the
// start) fails there: each kind counts the failure on that database, as a
// statement on that one database is counted.
func TestFanOutPartOnADatabaseThatCannotOpenIsCountedThere(t *testing.T) {
	db, p, dir := openWithS1DownSinceTheStart(t)
	s0, err := gorm.Open(sqlite.Open(filepath.Join(dir, "s0.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	must(t, s0.AutoMigrate(&metricUser{}))
	p.CountStatements()
	var found []metricUser
	if err := db.Clauses(AllShards()).Find(&found).Error; !errors.Is(err, ErrShardUnavailable) {
		t.Fatalf("a query over both databases: %v, want ErrShardUnavailable", err)
	}
	if err := db.Model(&metricUser{}).Clauses(AllShards()).Where("name = ?", "a").Update("name", "b").Error; !errors.Is(err, ErrShardUnavailable) {
		t.Fatalf("an update over both databases: %v, want ErrShardUnavailable", err)
	}
	if err := db.Clauses(AllShards()).Where("name = ?", "a").Delete(&metricUser{}).Error; !errors.Is(err, ErrShardUnavailable) {
		t.Fatalf("a delete over both databases: %v, want ErrShardUnavailable", err)
	}
	var n int64
	if err := db.Model(&metricUser{}).Clauses(AllShards()).Select("count(*)").Row().Scan(&n); !errors.Is(err, ErrShardUnavailable) {
		t.Fatalf("a row over both databases: %v, want ErrShardUnavailable", err)
	}
	got := countsByDatabase(p)
	for _, kind := range []string{"query", "update", "delete", "row"} {
		if got["s1/"+kind] != [2]uint64{1, 1} {
			t.Errorf("s1 %s: %v (statements, failed), want [1 1]: the part that could not open s1 failed there", kind, got["s1/"+kind])
		}
		if got["s0/"+kind][1] != 0 {
			t.Errorf("s0 %s: %v, counted as failed on s0, which answered", kind, got["s0/"+kind])
		}
	}
}

// openWithS1DownSinceTheStart opens a plugin over two SQLite databases in
// dir, s1's in a folder that does not exist: it never opens.
func openWithS1DownSinceTheStart(t *testing.T) (*gorm.DB, *Plugin, string) {
	t.Helper()
	dir := t.TempDir()
	half := Layout{}.ShardCount() / 2
	db, err := gorm.Open(sqlite.Open(filepath.Join(dir, "main.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := New(Config{Atomic: BestEffort, Shards: []Shard{
		{Name: "s0", Dialector: sqlite.Open(filepath.Join(dir, "s0.db")), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "s1", Dialector: sqlite.Open(filepath.Join(dir, "no-such-folder", "s1.db")), Logical: []Range{{From: half, To: 2*half - 1}}},
	}})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	return db, p, dir
}

// TestStatementRefusedByThePluginIsNotCounted: a statement bound to its
// database and then refused by the plugin before anything was sent (raw SQL
// under a shard clause naming an unsharded model's table; a query whose
// select list names one, refused by the last gate) ran nowhere: it is not
// counted as a statement, nor as a failure, on that database, as a refusal
// before routing is not. One that fails on its server still is.
func TestStatementRefusedByThePluginIsNotCounted(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 2, &metricUser{}, &metricNote{})
	p.CountStatements()
	if err := db.Clauses(OnShard(10)).Exec("UPDATE metric_users SET name = (SELECT text FROM metric_notes LIMIT 1)").Error; !errors.Is(err, ErrCrossShard) {
		t.Fatalf("raw SQL on a shard naming an unsharded table: %v, want ErrCrossShard", err)
	}
	var found []metricUser
	if err := db.Clauses(OnShard(10)).Select("id, (SELECT text FROM metric_notes LIMIT 1) AS name").Find(&found).Error; !errors.Is(err, ErrCrossShard) {
		t.Fatalf("a query on a shard selecting from an unsharded table: %v, want ErrCrossShard", err)
	}
	if got := countsByDatabase(p); len(got) != 0 {
		t.Errorf("statements the plugin refused before sending them are counted as run (statements, failed): %v", got)
	}
	if err := db.Clauses(OnShard(10)).Exec("UPDATE no_such_table SET x = 1").Error; err == nil {
		t.Fatal("an update of a missing table succeeded")
	}
	if got := countsByDatabase(p); got["s0/raw"] != [2]uint64{1, 1} {
		t.Errorf("a statement that failed on s0's server: %v, want s0/raw [1 1]", got)
	}
}
