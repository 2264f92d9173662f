package shardid_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// manyUser lives on one of 1,024 physical databases.
type manyUser struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Name string
}

// manyShards returns n SQLite files as physical databases of the default
// layout's 8,192 logical shards, the same number of logical shards each;
// without syncs to disk, which a thousand files would wait for.
func manyShards(dir string, n int) []shardid.Shard {
	shards := make([]shardid.Shard, n)
	per := 8192 / n
	for k := range shards {
		shards[k] = shardid.Shard{
			Name:      fmt.Sprintf("p%04d", k),
			Dialector: sqlite.Open("file:" + filepath.Join(dir, fmt.Sprintf("p%04d.db", k)) + "?_pragma=synchronous(OFF)&_pragma=journal_mode(MEMORY)"),
			Logical:   []shardid.Range{{From: k * per, To: k*per + per - 1}},
		}
	}
	return shards
}

// TestThousandPhysicalDatabases routes over 1,024 SQLite files: a batch split
// over all of them, every row where its shard's database is (read from the
// files directly), an AllShards count over all of them, a one-shard First,
// and idle connections closed after Config.PoolIdleTimeout.
func TestThousandPhysicalDatabases(t *testing.T) {
	const databases, rows = 1024, 3000
	dir := t.TempDir()
	db, err := gorm.Open(sqlite.Open(filepath.Join(dir, "main.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ids := shardid.New(shardid.Config{
		Shards:          manyShards(dir, databases),
		Snowflake:       shardid.SnowflakeConfig{FixedWorker: true},
		Atomic:          shardid.BestEffort, // SQLite: its AllShards update is written part by part
		PoolIdleTimeout: time.Millisecond,
		MapRefresh:      -1,
	})
	if err := db.Use(ids); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ids.Close() })
	if err := ids.AutoMigrate(db, &manyUser{}); err != nil {
		t.Fatal(err)
	}
	users := make([]manyUser, rows)
	for i := range users {
		users[i].Name = fmt.Sprint("u", i)
	}
	if err := db.Create(&users).Error; err != nil {
		t.Fatal(err)
	}

	var count int64
	if err := db.Clauses(shardid.AllShards()).Model(&manyUser{}).Count(&count).Error; err != nil || count != rows {
		t.Fatalf("AllShards count: %d, %v; want %d", count, err, rows)
	}
	var found manyUser
	last := users[len(users)-1]
	if err := db.First(&found, last.ID).Error; err != nil || found.Name != last.Name {
		t.Fatalf("First(%d): %+v, %v", last.ID, found, err)
	}

	// Where every row is, read from each file without the plugin.
	want := map[int64]string{}
	for _, u := range users {
		want[u.ID] = ids.ShardMap().Name(ids.ShardMap().Physical(ids.Layout().Shard(u.ID)))
	}
	seen, used := 0, 0
	for k := range databases {
		name := fmt.Sprintf("p%04d", k)
		file, err := sql.Open("sqlite", filepath.Join(dir, name+".db"))
		if err != nil {
			t.Fatal(err)
		}
		onFile, err := file.Query("SELECT id FROM many_users")
		if err != nil {
			t.Fatal(err)
		}
		before := seen
		for onFile.Next() {
			var id int64
			if err := onFile.Scan(&id); err != nil {
				t.Fatal(err)
			}
			if want[id] != name {
				t.Fatalf("row %d is on %s, its shard's database is %q", id, name, want[id])
			}
			seen++
		}
		if seen > before {
			used++
		}
		_ = onFile.Close()
		_ = file.Close()
	}
	if seen != rows {
		t.Fatalf("%d rows on the files, want %d", seen, rows)
	}
	if used < databases/2 {
		t.Fatalf("the rows are on %d databases only; the batch should spread over most of %d", used, databases)
	}

	// database/sql closes idle connections once a second at the most: give it room.
	deadline := time.Now().Add(30 * time.Second)
	for {
		open := 0
		for _, stats := range ids.PoolStats() {
			open += stats.OpenConnections
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open 30s after their statements, with PoolIdleTimeout 1ms", open)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(ids.PoolStats()) != databases {
		t.Fatalf("%d pools open, want all %d (each was used)", len(ids.PoolStats()), databases)
	}
}

// BenchmarkIdlePhysicalMemory reports what a physical database costs the
// process once used and idle (its connections closed by PoolIdleTimeout):
// the heap held per database, over 256 SQLite files. Run it with
// -benchtime 1x: each iteration opens its own databases.
func BenchmarkIdlePhysicalMemory(b *testing.B) {
	const databases = 256
	for b.Loop() {
		dir := b.TempDir()
		db, err := gorm.Open(sqlite.Open(filepath.Join(dir, "main.db")), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ids := shardid.New(shardid.Config{Shards: manyShards(dir, databases), Snowflake: shardid.SnowflakeConfig{FixedWorker: true},
			PoolIdleTimeout: time.Millisecond, MapRefresh: -1})
		if err := db.Use(ids); err != nil {
			b.Fatal(err)
		}
		if err := ids.AutoMigrate(db, &manyUser{}); err != nil {
			b.Fatal(err)
		}
		for open := -1; open != 0; {
			time.Sleep(200 * time.Millisecond) // database/sql closes idle connections once a second
			open = 0
			for _, stats := range ids.PoolStats() {
				open += stats.OpenConnections
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/databases, "heap-bytes/idle-database")
		_ = ids.Close()
	}
}

// TestAllShardsLeavesOutADatabaseServingNothing: a physical database the map
// gives no range (added for a move, or emptied by one) gets no part of a
// read over every shard, so that it being down fails none of them.
func TestAllShardsLeavesOutADatabaseServingNothing(t *testing.T) {
	dir := t.TempDir()
	dsn := func(name string) string { return "file:" + filepath.Join(dir, name) }
	half := shardid.Layout{}.ShardCount() / 2
	db, err := gorm.Open(sqlite.Open(dsn("main.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	p := shardid.New(shardid.Config{Shards: []shardid.Shard{
		{Name: "s0", Dialector: sqlite.Open(dsn("s0.db")), Logical: []shardid.Range{{From: 0, To: half - 1}}},
		{Name: "s1", Dialector: sqlite.Open(dsn("s1.db")), Logical: []shardid.Range{{From: half, To: 2*half - 1}}},
		{Name: "spare", Dialector: sqlite.Open(dsn("no/such/folder/spare.db"))}, // cannot be opened
	}})
	if err := db.Use(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	at := p.Layout().Epoch.AddDate(1, 0, 0)
	for k, name := range []string{"s0.db", "s1.db"} { // one user on each serving database, written directly
		direct, err := gorm.Open(sqlite.Open(dsn(name)), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		if err := direct.AutoMigrate(&manyUser{}); err != nil {
			t.Fatal(err)
		}
		if err := direct.Create(&manyUser{ID: p.Layout().Compose(at, k*half, 1), Name: name}).Error; err != nil {
			t.Fatal(err)
		}
	}
	var users []manyUser
	if err := db.Clauses(shardid.AllShards()).Order("id").Find(&users).Error; err != nil || len(users) != 2 {
		t.Fatalf("AllShards Find: %d users, %v", len(users), err)
	}
	var n int64
	if err := db.Clauses(shardid.AllShards()).Model(&manyUser{}).Count(&n).Error; err != nil || n != 2 {
		t.Fatalf("AllShards Count: %d, %v", n, err)
	}
	if err := db.Where("id IN ?", []int64{}).Find(&users).Error; err != nil {
		t.Fatalf("a read naming no row: %v", err)
	}
}

// An SQLite shard in memory lives only while a connection to it is open:
// PoolIdleTimeout leaves its idle connections open, and its rows with them.
func TestAnInMemorySQLiteShardKeepsItsIdleConnections(t *testing.T) {
	dir := t.TempDir()
	db, err := gorm.Open(sqlite.Open(filepath.Join(dir, "main.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	memory := fmt.Sprintf("file:idle_memory_%d?mode=memory&cache=shared", time.Now().UnixNano())
	p := shardid.New(shardid.Config{Shards: []shardid.Shard{{Name: "memory", Dialector: sqlite.Open(memory), Logical: []shardid.Range{{From: 0, To: shardid.Layout{}.ShardCount() - 1}}}},
		PoolIdleTimeout: 10 * time.Millisecond, MapRefresh: -1})
	if err := db.Use(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.AutoMigrate(db, &manyUser{}); err != nil {
		t.Fatal(err)
	}
	u := manyUser{Name: "kept"}
	if err := db.Create(&u).Error; err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // database/sql closes connections idle too long about once a second
	var got manyUser
	if err := db.First(&got, u.ID).Error; err != nil || got.Name != "kept" {
		t.Fatalf("the row written before the shard went idle: %+v, %v", got, err)
	}
}

// TestAllShardsOverDatabasesHoldingScatteredShards: two databases holding
// every other logical shard (4,096 ranges each) count, read, update and
// delete over every shard; each part keeps to its database's ranges by a
// condition SQLite must parse (it refuses an expression over 1,000 deep).
func TestAllShardsOverDatabasesHoldingScatteredShards(t *testing.T) {
	dir := t.TempDir()
	dsn := func(name string) string { return "file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)" }
	var even, odd []shardid.Range
	for s := 0; s < (shardid.Layout{}).ShardCount(); s += 2 {
		even = append(even, shardid.Range{From: s, To: s})
		odd = append(odd, shardid.Range{From: s + 1, To: s + 1})
	}
	db, err := gorm.Open(sqlite.Open(dsn("main.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	p := shardid.New(shardid.Config{Atomic: shardid.BestEffort, Snowflake: shardid.SnowflakeConfig{FixedWorker: true}, Shards: []shardid.Shard{
		{Name: "even", Dialector: sqlite.Open(dsn("even.db")), Logical: even},
		{Name: "odd", Dialector: sqlite.Open(dsn("odd.db")), Logical: odd},
	}})
	if err := db.Use(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.AutoMigrate(db, &manyUser{}); err != nil {
		t.Fatal(err)
	}
	users := make([]manyUser, 200)
	if err := db.Create(&users).Error; err != nil {
		t.Fatal(err)
	}
	all := db.Clauses(shardid.AllShards()).Session(&gorm.Session{})
	var n int64
	if err := all.Model(&manyUser{}).Count(&n).Error; err != nil || n != 200 {
		t.Fatalf("AllShards Count: %d, %v", n, err)
	}
	var read []manyUser
	if err := all.Order("id").Limit(10).Offset(150).Find(&read).Error; err != nil || len(read) != 10 {
		t.Fatalf("AllShards Find: %d users, %v", len(read), err)
	}
	if res := all.Model(&manyUser{}).Where("name = ?", "").Update("name", "x"); res.Error != nil || res.RowsAffected != 200 {
		t.Fatalf("AllShards Update: %d rows, %v", res.RowsAffected, res.Error)
	}
	if res := all.Where("name = ?", "x").Delete(&manyUser{}); res.Error != nil || res.RowsAffected != 200 {
		t.Fatalf("AllShards Delete: %d rows, %v", res.RowsAffected, res.Error)
	}
}
