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
	snowflakesOfAMoveAreNotMadeAgain(t, func(v int) *floorReading { return &floorReading{V: v} }, func(r *floorReading) int64 { return r.ID })
}

// snowflakesOfAMoveAreNotMadeAgain writes rows of T from a process whose
// clock is 3 s ahead, moves their range and cleans the move up, then makes
// rows from a process on the clock behind them: none may hold a snowflake
// (the one snowflakeOf reads) a copied row holds.
func snowflakesOfAMoveAreNotMadeAgain[T any](t *testing.T, newRow func(v int) *T, snowflakeOf func(*T) int64) {
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
			Log:        quiet,
			clock:      clock,
		})
		must(t, db.Use(p))
		t.Cleanup(func() { _ = p.Close() })
		return db, p
	}
	mover, p := start(nil) // worker 0 on both databases
	must(t, p.AutoMigrate(mover, newRow(0)))
	ahead, aheadPlugin := start(aheadClock{3 * time.Second}) // worker 1 on a
	written := map[int64]bool{}
	for until := time.Now().Add(2 * time.Second); time.Now().Before(until); {
		r := newRow(1)
		must(t, ahead.Clauses(OnShard(shard)).Create(r).Error)
		written[snowflakeOf(r)] = true
	}
	must(t, aheadPlugin.Close())
	report, err := p.Move(context.Background(), Move{Logical: Range{From: 6144, To: 8191}, To: "b", Models: []any{newRow(0)}})
	must(t, err)
	must(t, p.CleanupMove(context.Background(), report.Logical, newRow(0)))

	later, _ := start(nil) // worker 1 on b, on a clock behind the copied rows'
	for until := time.Now().Add(time.Second); time.Now().Before(until); {
		r := newRow(2)
		must(t, later.Clauses(OnShard(shard)).Create(r).Error)
		if written[snowflakeOf(r)] {
			t.Fatalf("snowflake %d, made after the move's cleanup, is a copied row's", snowflakeOf(r))
		}
	}
}

// Models with an ID column beside the key, of another strategy than the
// key's: a move advances that column's ID source too.
type (
	floorInvoice struct {
		ID     int64 `shardid:""`
		Number int64 `shardid:"strategy:segment;colocate:ID"`
	}
	floorTagged struct {
		ID  int64 `shardid:""`
		Ref int64 `shardid:"strategy:snowflake;colocate:ID"`
	}
)

// After a move, the target's segment counter of the table issues, for the
// moved shards, numbers above those the source's issued to a column beside
// the key.
func TestAMoveAdvancesTheSegmentCounterOfAColumnBesideTheKey(t *testing.T) {
	db, p, _ := floorInvoicesRig(t)
	numbersStayUniqueAcrossAMove(t, db, p)
}

// The snowflake floor of a move covers a snowflake column beside the key:
// a process behind the clock that wrote the copied rows makes none of their
// values on the target.
func TestAMovesSnowflakeFloorCoversAColumnBesideTheKey(t *testing.T) {
	snowflakesOfAMoveAreNotMadeAgain(t, func(int) *floorTagged { return &floorTagged{} }, func(r *floorTagged) int64 { return r.Ref })
}

// A list of sharded tables made before it kept their other ID columns gains
// the column, and a migration fills it.
func TestARecordOfShardedTablesMadeBeforeItKeptIDColumnsKeepsThem(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) gorm.Dialector { return sqlite.Open(filepath.Join(dir, name+".db")) }
	db, err := gorm.Open(open("main"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	must(t, db.Exec("CREATE TABLE shardid_tables (name VARCHAR(191) NOT NULL PRIMARY KEY, key_column VARCHAR(191) NOT NULL, key_kind INT NOT NULL, strategy VARCHAR(32) NOT NULL)").Error)
	p := New(Config{Shards: []Shard{{Name: "a", Dialector: open("a"), Logical: []Range{{From: 0, To: 8191}}}}, Log: quiet})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	must(t, p.AutoMigrate(db, &floorInvoice{}))
	var columns string
	must(t, db.Raw("SELECT id_columns FROM shardid_tables WHERE name = ?", "floor_invoices").Scan(&columns).Error)
	if columns != "number:segment" {
		t.Errorf("id_columns %q, want number:segment", columns)
	}
}

// floorInvoiceV1 is the model of floor_invoices of an older version of the
// application, before its Number column was tagged: it declares no field
// of that column.
type floorInvoiceV1 struct {
	ID int64 `shardid:""`
}

func (floorInvoiceV1) TableName() string { return "floor_invoices" }

// In a rolling restart, a process of the version before the Number column
// was tagged migrates its model of the table after the new version did: the
// record keeps the column's strategy, which its model does not know of, so
// that a move advances the column's segment counter still and the target
// issues no number twice.
func TestAnOlderModelsMigrationKeepsTheRecordOfAColumnItDoesNotDeclare(t *testing.T) {
	db, p, v1 := floorInvoicesRig(t)
	older, err := gorm.Open(db.Dialector, &gorm.Config{Logger: logger.Discard})
	must(t, err)
	must(t, older.Use(v1))
	t.Cleanup(func() { _ = v1.Close() })
	must(t, v1.AutoMigrate(older, &floorInvoiceV1{}))
	var columns string
	must(t, db.Raw("SELECT id_columns FROM shardid_tables WHERE name = ?", "floor_invoices").Scan(&columns).Error)
	if columns != "number:segment" {
		t.Errorf("id_columns %q after the older model's migration, want number:segment", columns)
	}

	numbersStayUniqueAcrossAMove(t, db, p)
}

// A column the record lists as filled by a strategy, dropped since by a
// version whose model has no field of it (whose migration keeps the
// record): a move of the table goes on, with no ID source of it to
// advance.
func TestAMoveOfATableThatDroppedARecordedIDColumnGoesOn(t *testing.T) {
	db, p, _ := floorInvoicesRig(t)
	must(t, db.Clauses(OnShard(7000)).Create(&floorInvoice{}).Error)
	must(t, p.Migrator(db).DropColumn(&floorInvoiceV1{}, "number"))
	must(t, p.AutoMigrate(db, &floorInvoiceV1{}))
	_, err := p.Move(context.Background(), Move{Logical: Range{From: 6144, To: 8191}, To: "b"})
	must(t, err)
	var n int64
	must(t, db.Model(&floorInvoiceV1{}).Clauses(OnShard(7000)).Count(&n).Error)
	if n != 1 {
		t.Fatalf("%d invoices of shard 7000 after the move, want 1", n)
	}
}

// numbersStayUniqueAcrossAMove creates invoices of a shard of "a" before
// and after moving it to "b" (every recorded table, as shardid_tables lists
// it), failing on a Number issued twice.
func numbersStayUniqueAcrossAMove(t *testing.T, db *gorm.DB, p *Plugin) {
	t.Helper()
	const shard = 7000
	seen := map[int64]bool{}
	create := func(n int) {
		for range n {
			inv := floorInvoice{}
			must(t, db.Clauses(OnShard(shard)).Create(&inv).Error)
			if seen[inv.Number] {
				t.Fatalf("number %d issued twice in one table", inv.Number)
			}
			seen[inv.Number] = true
		}
	}
	create(5)
	_, err := p.Move(context.Background(), Move{Logical: Range{From: 6144, To: 8191}, To: "b"})
	must(t, err)
	create(5)
}

// floorInvoicesRig opens the plugin's SQLite database and shards "a" (every
// logical shard) and "b" (none), with floor_invoices migrated; older is a
// second plugin on the same files, for a process of another version, not
// registered yet.
func floorInvoicesRig(t *testing.T) (db *gorm.DB, p, older *Plugin) {
	t.Helper()
	dir := t.TempDir()
	open := func(name string) gorm.Dialector { return sqlite.Open(filepath.Join(dir, name+".db")) }
	shards := []Shard{
		{Name: "a", Dialector: open("a"), Logical: []Range{{From: 0, To: 8191}}},
		{Name: "b", Dialector: open("b")},
	}
	db, err := gorm.Open(open("main"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p = New(Config{Shards: shards, Log: quiet})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	must(t, p.AutoMigrate(db, &floorInvoice{}))
	return db, p, New(Config{Shards: shards, Log: quiet})
}
