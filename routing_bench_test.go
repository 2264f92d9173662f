package shardid

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid/strategies"
)

// benchPlain is the baseline model: no shardid tag, a preset ID.
type benchPlain struct {
	ID   int64 `gorm:"primaryKey;autoIncrement:false"`
	Name string
}

// benchSharded gets its ID in-process and is routed to one of four
// physical databases.
type benchSharded struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Name string
}

// The two tables' names are as long as each other: GORM quotes a name a
// byte at a time, several times a statement.
func (benchPlain) TableName() string   { return "bench_rows_plain" }
func (benchSharded) TableName() string { return "bench_rows_shard" }

// openMain opens the plugin's own database of a benchmark over fake
// physical databases: an SQLite file, as the shared map needs a database
// that keeps what is written. No statement of a sharded model runs on it.
func openMain(b *testing.B) *gorm.DB {
	db, err := gorm.Open(sqlite.Open(filepath.Join(b.TempDir(), "main.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

func openFake(b *testing.B) *gorm.DB {
	pool, _ := newFakeDB()
	db, err := gorm.Open(sqlite.Dialector{Conn: pool}, &gorm.Config{Logger: logger.Discard, DisableAutomaticPing: true})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkRoutingCost measures what the plugin adds to a statement, on
// connections that answer without I/O: a plain GORM Create with a preset ID,
// First by ID and Find by an IN list of ten IDs, against the same on a
// sharded model routed over four physical databases (IDs from snowflake, so
// no round trip is involved; the ten IDs need all four databases).
func BenchmarkRoutingCost(b *testing.B) {
	plain := openFake(b)
	routed := openMain(b)
	var shards []Shard
	for i := range 4 {
		shards = append(shards, Shard{Name: fmt.Sprintf("fake-%d", i), DB: openFake(b), Logical: []Range{{From: i * 2048, To: i*2048 + 2047}}})
	}
	p := New(Config{Shards: shards, Snowflake: SnowflakeConfig{FixedWorker: true}, MapRefresh: -1, Log: quiet})
	if err := routed.Use(p); err != nil {
		b.Fatal(err)
	}
	id := p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), 3000, 1)
	// Ten IDs on the four physical databases (2048 logical shards each).
	var ids []int64
	for i := range 10 {
		ids = append(ids, p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), i*819, 1))
	}
	least := leastSharding(b, p.Layout())
	// The floor of any fan-out that sends one GORM query per database: four
	// plain Finds, each of one database's IDs, on four databases.
	floorDBs := make([]*gorm.DB, 4)
	idsOn := make([][]int64, 4)
	for k := range floorDBs {
		floorDBs[k] = openFake(b)
	}
	for _, id := range ids {
		k := p.Layout().Shard(id) / 2048
		idsOn[k] = append(idsOn[k], id)
	}
	floor := func() error {
		for k, db := range floorDBs {
			var rows []benchPlain
			if err := db.Find(&rows, idsOn[k]).Error; err != nil {
				return err
			}
		}
		return nil
	}
	// The floor of running them at once, as a fan-out does for databases
	// that take time to answer: the first in this goroutine, the others on
	// goroutines of their own, joined.
	floorAtOnce := func() error {
		errs := make([]error, len(floorDBs))
		var wg sync.WaitGroup
		for k := 1; k < len(floorDBs); k++ {
			wg.Go(func() {
				var rows []benchPlain
				errs[k] = floorDBs[k].Find(&rows, idsOn[k]).Error
			})
		}
		var rows []benchPlain
		errs[0] = floorDBs[0].Find(&rows, idsOn[0]).Error
		wg.Wait()
		return errors.Join(errs...)
	}
	// Each pair alternates within every iteration, so the drift of a shared
	// machine hits both alike; allocations are counted by the sub-benchmarks
	// below.
	pairs := []struct {
		name           string
		plain, sharded func() error
	}{
		{"create",
			func() error { return plain.Create(&benchPlain{ID: id, Name: "n"}).Error },
			func() error { return routed.Create(&benchSharded{Name: "n"}).Error }},
		{"first",
			func() error { var row benchPlain; return plain.First(&row, id).Error },
			func() error { var row benchSharded; return routed.First(&row, id).Error }},
		{"find-in-10",
			func() error { var rows []benchPlain; return plain.Find(&rows, ids).Error },
			func() error { var rows []benchSharded; return routed.Find(&rows, ids).Error }},
		{"find-in-10-vs-four-plain-finds", floor, // the "plain" side is the floor here
			func() error { var rows []benchSharded; return routed.Find(&rows, ids).Error }},
		{"find-in-10-vs-four-plain-finds-at-once", floorAtOnce,
			func() error { var rows []benchSharded; return routed.Find(&rows, ids).Error }},
		// The floors of the first two: what the least plugin that shards
		// adds to plain GORM (leastSharding below).
		{"create-least-plugin",
			func() error { return plain.Create(&benchPlain{ID: id, Name: "n"}).Error },
			func() error { return least.Create(&benchLeast{Name: "n"}).Error }},
		{"first-least-plugin",
			func() error { var row benchPlain; return plain.First(&row, id).Error },
			func() error { var row benchLeast; return least.First(&row, id).Error }},
	}
	for _, pair := range pairs {
		b.Run(pair.name, func(b *testing.B) {
			plainNs, shardedNs := interleaved(b, pair.plain, pair.sharded)
			b.ReportMetric(plainNs, "plain-ns/op")
			b.ReportMetric(shardedNs, "shardid-ns/op")
			b.ReportMetric(shardedNs-plainNs, "added-ns/op")
			b.ReportMetric(shardedNs/plainNs, "shardid/plain")
		})
		b.Run(pair.name+"/plain", allocations(pair.plain))
		b.Run(pair.name+"/shardid", allocations(pair.sharded))
	}
}

// benchLeast is the model of leastSharding: an ID its callback sets.
type benchLeast struct {
	ID   int64 `gorm:"primaryKey;autoIncrement:false"`
	Name string
}

func (benchLeast) TableName() string { return "bench_rows_least" }

// leastSharding is plain GORM with the least a sharding plugin must add:
// before a Create, a time-ordered ID in a random one of 8,192 logical shards
// (a snowflake), set on the row, and the statement bound to the pool of one
// of four databases by that shard; before a query, the pool of the shard of
// its first condition's ID. Nothing is checked: it is the floor that
// BenchmarkRoutingCost's create and first are measured against.
func leastSharding(b *testing.B, layout Layout) *gorm.DB {
	db := openFake(b)
	pools := make([]gorm.ConnPool, 4)
	for i := range pools {
		pools[i] = openFake(b).ConnPool
	}
	ids, err := strategies.NewSnowflake(layout, 1)
	if err != nil {
		b.Fatal(err)
	}
	poolOf := func(shard int) gorm.ConnPool { return pools[shard*len(pools)>>layout.Normalized().ShardBits] }
	err = errors.Join(
		db.Callback().Create().Before("gorm:begin_transaction").Register("least:id", func(db *gorm.DB) {
			shard := rand.IntN(1 << layout.Normalized().ShardBits)
			id, err := ids.Next(shard)
			db.AddError(err)
			db.AddError(db.Statement.Schema.PrioritizedPrimaryField.Set(db.Statement.Context, db.Statement.ReflectValue, id))
			db.Statement.ConnPool = poolOf(shard)
		}),
		db.Callback().Query().Before("gorm:query").Register("least:route", func(db *gorm.DB) {
			where, _ := db.Statement.Clauses["WHERE"].Expression.(clause.Where)
			if in, ok := where.Exprs[0].(clause.IN); ok && len(in.Values) == 1 {
				if id, ok := in.Values[0].(int64); ok {
					db.Statement.ConnPool = poolOf(layout.Shard(id))
					return
				}
			}
			db.AddError(errors.New("least:route: not a First by ID"))
		}))
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// allocations is a benchmark of run alone, to count its allocations.
func allocations(run func() error) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := run(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// interleaved runs a and c alternately, each first every other iteration,
// so that the drift of a shared machine hits both alike, and returns the
// nanoseconds each took per iteration.
func interleaved(b *testing.B, a, c func() error) (aNs, cNs float64) {
	var spent [2]time.Duration
	runs := [2]func() error{a, c}
	i := 0
	for b.Loop() {
		i++
		for j := range 2 {
			k := (j + i) % 2
			start := time.Now()
			if err := runs[k](); err != nil {
				b.Fatal(err)
			}
			spent[k] += time.Since(start)
		}
	}
	return float64(spent[0].Nanoseconds()) / float64(b.N), float64(spent[1].Nanoseconds()) / float64(b.N)
}

// orderedConnector is a fake database whose connections answer a query with
// as many rows (id, name) as its LIMIT asks, keys descending; the four
// databases' keys interleave. Only the CPU the client spends is measured.
type orderedConnector struct{ part int64 }

func (c orderedConnector) Connect(context.Context) (driver.Conn, error) { return orderedConn(c), nil }
func (c orderedConnector) Driver() driver.Driver                        { return orderedDriver(c) }

type orderedDriver orderedConnector

func (d orderedDriver) Open(string) (driver.Conn, error) { return orderedConn(d), nil }

type orderedConn orderedConnector

var limitInSQL = regexp.MustCompile(`LIMIT (\d+)`)

func (orderedConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (orderedConn) Close() error                        { return nil }
func (orderedConn) Begin() (driver.Tx, error)           { return fakeTx{}, nil }
func (orderedConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(0), nil // the plugin's token table, made when the database opens
}
func (c orderedConn) QueryContext(_ context.Context, query string, _ []driver.NamedValue) (driver.Rows, error) {
	if rows, ok := setupAnswer(query, func() string { return fmt.Sprintf("ordered-%d", c.part) }); ok {
		return rows, nil
	}
	n := 1
	if m := limitInSQL.FindStringSubmatch(query); m != nil {
		n, _ = strconv.Atoi(m[1])
	}
	return &orderedRows{part: c.part, left: n}, nil
}

type orderedRows struct {
	part int64
	next int64
	left int
}

func (*orderedRows) Columns() []string { return []string{"id", "name"} }
func (*orderedRows) Close() error      { return nil }
func (r *orderedRows) Next(dest []driver.Value) error {
	if r.left == 0 {
		return io.EOF
	}
	r.left--
	dest[0], dest[1] = int64(1<<50)-r.next*4-r.part, "n"
	r.next++
	return nil
}

// BenchmarkFanOutMerge: AllShards().Order("id desc").Offset(n).Limit(20)
// over four databases: each part fetches n+20 rows, the merge reads them
// k-way and stops after n+20. Client CPU per fetched row stays the same
// when n quadruples: linear in the rows fetched.
func BenchmarkFanOutMerge(b *testing.B) {
	db := openMain(b)
	var shards []Shard
	for i := range 4 {
		part, err := gorm.Open(sqlite.Dialector{Conn: sql.OpenDB(orderedConnector{part: int64(i)})}, &gorm.Config{Logger: logger.Discard, DisableAutomaticPing: true})
		if err != nil {
			b.Fatal(err)
		}
		shards = append(shards, Shard{Name: fmt.Sprintf("ordered-%d", i), DB: part, Logical: []Range{{From: i * 2048, To: i*2048 + 2047}}})
	}
	if err := db.Use(New(Config{Shards: shards, Snowflake: SnowflakeConfig{FixedWorker: true}, MapRefresh: -1, Log: quiet})); err != nil {
		b.Fatal(err)
	}
	all := db.Clauses(AllShards()).Session(&gorm.Session{})
	for _, offset := range []int{1000, 4000} {
		b.Run(fmt.Sprintf("offset-%d", offset), func(b *testing.B) {
			b.ReportAllocs()
			fetched := 4 * (offset + 20)
			for b.Loop() {
				var rows []benchSharded
				if err := all.Order("id desc").Offset(offset).Limit(20).Find(&rows).Error; err != nil {
					b.Fatal(err)
				}
				if len(rows) != 20 {
					b.Fatalf("%d rows", len(rows))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(fetched), "ns/fetched-row")
		})
	}
}

// routedOver returns a database whose sharded statements are routed over n
// fake physical databases, the logical shards spread evenly.
func routedOver(b *testing.B, n int) (*gorm.DB, *Plugin) {
	db := openMain(b)
	shards := make([]Shard, n)
	per := 8192 / n
	for k := range shards {
		shards[k] = Shard{Name: fmt.Sprintf("fake-%d", k), DB: openFake(b), Logical: []Range{{From: k * per, To: k*per + per - 1}}}
	}
	p := New(Config{Shards: shards, Snowflake: SnowflakeConfig{FixedWorker: true}, MapRefresh: -1, Log: quiet})
	if err := db.Use(p); err != nil {
		b.Fatal(err)
	}
	for k := range shards { // each opened, its token checked, before anything is timed
		if err := db.Clauses(OnShard(k * per)).Exec("SELECT 1").Error; err != nil {
			b.Fatal(err)
		}
	}
	return db, p
}

// BenchmarkRoutingCostByDatabases: a one-shard Create and First routed over
// 1,024 physical databases against the same over 4, interleaved. The
// routing of a one-shard statement does not depend on how many there are.
func BenchmarkRoutingCostByDatabases(b *testing.B) {
	few, fewPlugin := routedOver(b, 4)
	many, manyPlugin := routedOver(b, 1024)
	at := fewPlugin.Layout().Epoch.AddDate(1, 0, 0)
	fewID, manyID := fewPlugin.Layout().Compose(at, 7000, 1), manyPlugin.Layout().Compose(at, 7000, 1)
	// The floor of writing to a random one of many databases: plain GORM,
	// no plugin, creating on the pool of a random one of 4 and of 1,024
	// databases, whose pools a CPU cache holds fewer of.
	plain := openFake(b)
	pools := make([]gorm.ConnPool, 1024)
	for i := range pools {
		pools[i] = openFake(b).ConnPool
	}
	createOn := func(pool gorm.ConnPool, id int64) error {
		tx := plain.Session(&gorm.Session{})
		tx.Statement.ConnPool = pool
		return tx.Create(&benchPlain{ID: id, Name: "n"}).Error
	}
	pairs := []struct {
		name      string
		few, many func() error
	}{
		{"create",
			func() error { return few.Create(&benchSharded{Name: "n"}).Error },
			func() error { return many.Create(&benchSharded{Name: "n"}).Error }},
		{"first",
			func() error { var row benchSharded; return few.First(&row, fewID).Error },
			func() error { var row benchSharded; return many.First(&row, manyID).Error }},
		{"create-without-the-plugin",
			func() error { return createOn(pools[rand.IntN(4)], fewID) },
			func() error { return createOn(pools[rand.IntN(1024)], manyID) }},
	}
	for _, pair := range pairs {
		b.Run(pair.name, func(b *testing.B) {
			fewNs, manyNs := interleaved(b, pair.few, pair.many)
			b.ReportMetric(fewNs, "4-ns/op")
			b.ReportMetric(manyNs, "1024-ns/op")
			b.ReportMetric(manyNs/fewNs, "1024/4")
		})
		b.Run(pair.name+"/4", allocations(pair.few))
		b.Run(pair.name+"/1024", allocations(pair.many))
	}
}

// BenchmarkStatementMix: ten kinds of one-shard statements, those the
// differential test draws most, on a plain model and on a sharded model
// routed over four physical databases, both with preset IDs (making IDs is
// the strategies' benchmarks'), interleaved: each kind alone, then the ten in
// turn, what the plugin adds to a typical mix.
func BenchmarkStatementMix(b *testing.B) {
	plain := openFake(b)
	routed, p := routedOver(b, 4)
	at := p.Layout().Epoch.AddDate(1, 0, 0)
	id, other := p.Layout().Compose(at, 3000, 1), p.Layout().Compose(at, 3001, 1) // one database
	type side struct {
		db          *gorm.DB
		model, rows func() any
		batch       func() any
	}
	plainSide := side{plain,
		func() any { return &benchPlain{ID: id, Name: "n"} },
		func() any { return &[]benchPlain{} },
		func() any { return &[]benchPlain{{ID: id, Name: "a"}, {ID: other, Name: "b"}} }}
	shardedSide := side{routed,
		func() any { return &benchSharded{ID: id, Name: "n"} },
		func() any { return &[]benchSharded{} },
		func() any { return &[]benchSharded{{ID: id, Name: "a"}, {ID: other, Name: "b"}} }}
	kinds := []struct {
		name string
		run  func(s side) error
	}{
		{"create", func(s side) error { return s.db.Create(s.model()).Error }},
		{"create-batch", func(s side) error { return s.db.Create(s.batch()).Error }},
		{"first", func(s side) error { return s.db.First(s.model(), id).Error }},
		{"find-in", func(s side) error { return s.db.Find(s.rows(), []int64{id, other}).Error }},
		{"find-where", func(s side) error { return s.db.Where("name = ?", "n").Where("id = ?", id).Find(s.rows()).Error }},
		{"update", func(s side) error { return s.db.Model(s.model()).Where("id = ?", id).Update("name", "u").Error }},
		{"updates-map", func(s side) error {
			return s.db.Model(s.model()).Where("id = ?", id).Updates(map[string]any{"name": "v"}).Error
		}},
		{"delete", func(s side) error { return s.db.Where("id = ?", id).Delete(s.model()).Error }},
		{"take-by-clause", func(s side) error { return s.db.Clauses(ByID(id)).Where("name = ?", "n").Take(s.model()).Error }},
		{"save", func(s side) error { return s.db.Save(s.model()).Error }},
	}
	mix := func(s side) func() error {
		return func() error {
			for _, k := range kinds {
				if err := k.run(s); err != nil {
					return fmt.Errorf("%s: %w", k.name, err)
				}
			}
			return nil
		}
	}
	ratio := func(b *testing.B, plain, sharded func() error) {
		plainNs, shardedNs := interleaved(b, plain, sharded)
		b.ReportMetric(plainNs, "plain-ns/op")
		b.ReportMetric(shardedNs, "shardid-ns/op")
		b.ReportMetric(shardedNs/plainNs, "shardid/plain")
	}
	for _, k := range kinds {
		plain, sharded := func() error { return k.run(plainSide) }, func() error { return k.run(shardedSide) }
		b.Run(k.name, func(b *testing.B) { ratio(b, plain, sharded) })
		b.Run(k.name+"/plain", allocations(plain))
		b.Run(k.name+"/shardid", allocations(sharded))
	}
	b.Run("mix", func(b *testing.B) { ratio(b, mix(plainSide), mix(shardedSide)) })
	b.Run("mix/plain", allocations(mix(plainSide)))
	b.Run("mix/shardid", allocations(mix(shardedSide)))
}
