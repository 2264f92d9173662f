// Package fence_test runs the fence on SQLite, MariaDB and PostgreSQL; it
// lives in the integration module, which has the drivers, not the library.
package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/glebarez/go-sqlite"
	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/shardid/shardid/integration_test/internal/testdb"
	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/strategies"
)

var dialects = []string{"mysql", "postgres", "sqlite"}

// The fence's own tables (SQLite's list of installed tables among them).
const (
	fenceTable   = "shardid_move_fence"
	changesTable = "shardid_move_changes"
	tablesTable  = "shardid_move_tables"
)

var layout = strategies.Layout{}.Normalized() // 40/13/10

func newFence(dialect string) fence.Fence {
	return fence.Fence{Dialect: dialect, ShardBits: layout.ShardBits, SequenceBits: layout.SequenceBits}
}

// openDB opens the dialect's test database with no fence tables left from an
// earlier test.
func openDB(t *testing.T, dialect string) *sql.DB {
	t.Helper()
	return openDBSuffixed(t, dialect, "")
}

// openDBSuffixed is openDB of the package's database named with suffix
// (_0 is the first extra one, on the same server), SQLite's file aside.
func openDBSuffixed(t *testing.T, dialect, suffix string) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	switch dialect {
	case "mysql":
		cfg, perr := mysql.ParseDSN(testdb.Require(t, testdb.MySQLVar))
		if perr != nil {
			t.Fatal(perr)
		}
		cfg.DBName += suffix
		db, err = sql.Open("mysql", cfg.FormatDSN())
	case "postgres":
		u, perr := url.Parse(testdb.Require(t, testdb.PostgresVar))
		if perr != nil {
			t.Fatal(perr)
		}
		u.Path += suffix
		db, err = sql.Open("pgx", u.String())
	default:
		db, err = sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "fence.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	for _, table := range []string{fenceTable, changesTable, tablesTable} {
		mustExec(t, db, "DROP TABLE IF EXISTS "+table)
	}
	return db
}

func mustExec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// fixture is a prepared database with an int64-keyed and a UUID-keyed table
// under triggers.
type fixture struct {
	db            *sql.DB
	f             fence.Fence
	ints, uuids   fence.Table
	uuidMaker     *strategies.UUIDs
	dialect, ph   string
	placeholderAt func(int) string
}

func newFixture(t *testing.T, dialect string) *fixture {
	t.Helper()
	db := openDB(t, dialect)
	fx := &fixture{db: db, f: newFence(dialect), dialect: dialect,
		ints:  fence.Table{Name: "fence_ints", Key: "id", Kind: fence.KeyInt64},
		uuids: fence.Table{Name: "fence_uuids", Key: "id", Kind: fence.KeyUUIDText}}
	fx.placeholderAt = func(n int) string {
		if dialect == "postgres" {
			return fmt.Sprintf("$%d", n)
		}
		return "?"
	}
	var err error
	if fx.uuidMaker, err = strategies.NewUUIDs(layout); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{fx.ints.Name, fx.uuids.Name} {
		mustExec(t, db, "DROP TABLE IF EXISTS "+table)
	}
	mustExec(t, db, "CREATE TABLE fence_ints (id BIGINT PRIMARY KEY, note VARCHAR(20))")
	mustExec(t, db, "CREATE TABLE fence_uuids (id VARCHAR(36) PRIMARY KEY, note VARCHAR(20))")
	ctx := context.Background()
	for range 2 { // idempotent
		if err := fx.f.Prepare(ctx, db); err != nil {
			t.Fatal(err)
		}
		for _, table := range []fence.Table{fx.ints, fx.uuids} {
			if err := fx.f.Install(ctx, db, table); err != nil {
				t.Fatal(err)
			}
		}
	}
	return fx
}

// openFixture is a fixture with moveRange fenced towards "pg-c".
func openFixture(t *testing.T, dialect string) *fixture {
	t.Helper()
	fx := newFixture(t, dialect)
	if err := fx.f.Open(context.Background(), fx.db, moveRange, "pg-c"); err != nil {
		t.Fatal(err)
	}
	return fx
}

// intID is a random ID of logical shard shard.
func intID(shard int) int64 {
	return rand.Int64N(1<<layout.TimeBits)<<(layout.ShardBits+layout.SequenceBits) | int64(shard)<<layout.SequenceBits | rand.Int64N(1<<layout.SequenceBits)
}

func (fx *fixture) uuidKey(t *testing.T, shard int) string {
	t.Helper()
	id, err := fx.uuidMaker.New(7, shard)
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

func (fx *fixture) exec(query string, args ...any) error {
	_, err := fx.db.Exec(query, args...)
	return err
}

func (fx *fixture) insert(table string, key any) error {
	return fx.exec("INSERT INTO "+table+" (id, note) VALUES ("+fx.placeholderAt(1)+", 'a')", key)
}

func (fx *fixture) changes(t *testing.T) []fence.Change {
	t.Helper()
	changes, err := fx.f.Changes(context.Background(), fx.db, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return changes
}

func TestShardSQLMatchesStrategies(t *testing.T) {
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			fx := newFixture(t, dialect)
			ints, err := fx.f.ShardSQL(fx.ints, "t")
			if err != nil {
				t.Fatal(err)
			}
			uuids, err := fx.f.ShardSQL(fx.uuids, "t")
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int{}
			for i := range 300 {
				id := rand.Int64N(1 << 62)
				if err := fx.insert("fence_ints", id); err != nil {
					t.Fatal(err)
				}
				want[fmt.Sprint(id)] = layout.Shard(id)
				key := uuid.NewString() // every bit random, not only the shard's
				if i%2 == 1 {
					key = strings.ToUpper(key)
				}
				if err := fx.insert("fence_uuids", key); err != nil {
					t.Fatal(err)
				}
				want[key] = fx.uuidMaker.Shard(mustUUID(t, key))
			}
			checkShards(t, fx.db, "SELECT t.id, "+ints+" FROM fence_ints t", want)
			checkShards(t, fx.db, "SELECT t.id, "+uuids+" FROM fence_uuids t", want)
			if dialect == "postgres" {
				mustExec(t, fx.db, "DROP TABLE IF EXISTS fence_pguuids")
				mustExec(t, fx.db, "CREATE TABLE fence_pguuids (id uuid PRIMARY KEY)")
				native, err := fx.f.ShardSQL(fence.Table{Name: "fence_pguuids", Key: "id", Kind: fence.KeyUUIDText}, "t")
				if err != nil {
					t.Fatal(err)
				}
				for range 300 {
					key := fx.uuidKey(t, rand.IntN(layout.ShardCount()))
					mustExec(t, fx.db, "INSERT INTO fence_pguuids (id) VALUES ($1)", key)
					want[key] = fx.uuidMaker.Shard(mustUUID(t, key))
				}
				checkShards(t, fx.db, "SELECT t.id::text, "+native+" FROM fence_pguuids t", want)
			}
		})
	}
}

func checkShards(t *testing.T, db *sql.DB, query string, want map[string]int) {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var key string
		var shard int
		if err := rows.Scan(&key, &shard); err != nil {
			t.Fatal(err)
		}
		if shard != want[key] {
			t.Errorf("%s: shard %d, strategies say %d", key, shard, want[key])
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 300 {
		t.Fatalf("%d rows checked", n)
	}
}

func mustUUID(t *testing.T, key string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

var moveRange = fence.Range{From: 5, To: 6}

func TestCaptureLogsTheRangeOnly(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			fx := newFixture(t, dialect)
			for range 2 { // idempotent
				if err := fx.f.Open(ctx, fx.db, moveRange, "pg-c"); err != nil {
					t.Fatal(err)
				}
			}
			p1, p2 := fx.placeholderAt(1), fx.placeholderAt(2)
			in5, in6, out9, out4 := intID(5), intID(6), intID(9), intID(4)
			uIn, uOut := strings.ToUpper(fx.uuidKey(t, 6)), fx.uuidKey(t, 7)
			moved := intID(5) // updated from shard 9 to 5: logged under its new key
			for _, step := range []struct {
				query string
				args  []any
			}{
				{"INSERT INTO fence_ints (id, note) VALUES (" + p1 + ", 'a')", []any{in5}},
				{"INSERT INTO fence_ints (id, note) VALUES (" + p1 + ", 'a')", []any{in6}},
				{"INSERT INTO fence_ints (id, note) VALUES (" + p1 + ", 'a')", []any{out9}},
				{"INSERT INTO fence_ints (id, note) VALUES (" + p1 + ", 'a')", []any{out4}},
				{"INSERT INTO fence_uuids (id, note) VALUES (" + p1 + ", 'a')", []any{uIn}},
				{"INSERT INTO fence_uuids (id, note) VALUES (" + p1 + ", 'a')", []any{uOut}},
				{"UPDATE fence_ints SET note = 'b' WHERE id = " + p1, []any{in6}},
				{"UPDATE fence_ints SET note = 'b' WHERE id = " + p1, []any{out9}},
				{"UPDATE fence_uuids SET note = 'b' WHERE id = " + p1, []any{uIn}},
				{"UPDATE fence_uuids SET note = 'b' WHERE id = " + p1, []any{uOut}},
				{"DELETE FROM fence_ints WHERE id = " + p1, []any{in5}},
				{"DELETE FROM fence_ints WHERE id = " + p1, []any{out4}},
				{"DELETE FROM fence_uuids WHERE id = " + p1, []any{uIn}},
				{"UPDATE fence_ints SET id = " + p1 + " WHERE id = " + p2, []any{moved, out9}},
			} {
				if err := fx.exec(step.query, step.args...); err != nil {
					t.Fatalf("%s %v: %v", step.query, step.args, err)
				}
			}
			var got []string
			var seqs []int64
			for _, c := range fx.changes(t) {
				got = append(got, fmt.Sprintf("%s %v", c.Table, c.Key))
				seqs = append(seqs, c.Seq)
			}
			want := []string{
				fmt.Sprintf("fence_ints %d", in5), fmt.Sprintf("fence_ints %d", in6), "fence_uuids " + uIn,
				fmt.Sprintf("fence_ints %d", in6), "fence_uuids " + uIn,
				fmt.Sprintf("fence_ints %d", in5), "fence_uuids " + uIn, fmt.Sprintf("fence_ints %d", moved),
			}
			if !slices.Equal(got, want) {
				t.Fatalf("changes\n%q\nwant\n%q", got, want)
			}
			if c := fx.changes(t)[0]; fmt.Sprintf("%T", c.Key) != "int64" || fmt.Sprintf("%T", fx.changes(t)[2].Key) != "string" {
				t.Fatalf("key types %T %T, want int64 and string", c.Key, fx.changes(t)[2].Key)
			}
			if n, err := fx.f.Backlog(ctx, fx.db); err != nil || n != int64(len(want)) {
				t.Fatalf("backlog %d, %v; want %d", n, err, len(want))
			}
			if err := fx.f.Forget(ctx, fx.db, seqs[:3]); err != nil {
				t.Fatal(err)
			}
			if left := fx.changes(t); len(left) != len(want)-3 || left[0].Seq != seqs[3] {
				t.Fatalf("after Forget: %v", left)
			}
		})
	}
}

// TestForgetDeletesTheSeqsGivenOnly forgets every other change of 600, in
// more statements than one (each takes 250 runs of consecutive seqs), and
// then a run of consecutive ones: what is left is exactly the rest.
func TestForgetDeletesTheSeqsGivenOnly(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			fx := openFixture(t, dialect)
			tx, err := fx.db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			for range 600 {
				if _, err := tx.Exec("INSERT INTO fence_ints (id, note) VALUES ("+fx.placeholderAt(1)+", 'a')", intID(5)); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			logged := fx.changes(t)
			if len(logged) != 600 {
				t.Fatalf("%d changes logged, want 600", len(logged))
			}
			var forget, keep []int64
			for i, c := range logged {
				if i%2 == 0 {
					forget = append(forget, c.Seq)
				} else {
					keep = append(keep, c.Seq)
				}
			}
			if err := fx.f.Forget(ctx, fx.db, forget); err != nil {
				t.Fatal(err)
			}
			seqsLeft := func() []int64 {
				var seqs []int64
				for _, c := range fx.changes(t) {
					seqs = append(seqs, c.Seq)
				}
				return seqs
			}
			if left := seqsLeft(); !slices.Equal(left, keep) {
				t.Fatalf("after forgetting every other change, %d left (first %v), want %d", len(left), left[:min(4, len(left))], len(keep))
			}
			if err := fx.f.Forget(ctx, fx.db, keep[:100]); err != nil {
				t.Fatal(err)
			}
			if left := seqsLeft(); !slices.Equal(left, keep[100:]) {
				t.Fatalf("after forgetting 100 more, %d left, want %d", len(left), len(keep)-100)
			}
		})
	}
}

// refused asserts err is the fence's refusal of shard towards target.
func refused(t *testing.T, dialect string, err error, shard int, target string) {
	t.Helper()
	gotShard, gotTarget, ok := fence.MovedShard(err)
	if dialect == "sqlite" {
		shard = -1
	}
	if !ok || gotShard != shard || gotTarget != target {
		t.Fatalf("error %v: MovedShard = %d, %q, %v; want %d, %q", err, gotShard, gotTarget, ok, shard, target)
	}
}

func TestFreezeRefusesTheRangeThawAndCloseLetThrough(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			fx := newFixture(t, dialect)
			if err := fx.f.Freeze(ctx, fx.db, moveRange); !errors.Is(err, fence.ErrNotOpen) {
				t.Fatalf("Freeze before Open: %v, want ErrNotOpen", err)
			}
			if err := fx.f.Open(ctx, fx.db, moveRange, "pg-c"); err != nil {
				t.Fatal(err)
			}
			if err := fx.f.Open(ctx, fx.db, fence.Range{From: 6, To: 9}, "pg-d"); !errors.Is(err, fence.ErrOverlap) {
				t.Fatalf("overlapping Open: %v, want ErrOverlap", err)
			}
			p1, p2 := fx.placeholderAt(1), fx.placeholderAt(2)
			in5, in6, uIn, out9 := intID(5), intID(6), fx.uuidKey(t, 6), intID(9)
			for _, key := range []int64{in5, in6, out9} {
				if err := fx.insert("fence_ints", key); err != nil {
					t.Fatal(err)
				}
			}
			if err := fx.insert("fence_uuids", uIn); err != nil {
				t.Fatal(err)
			}
			before := len(fx.changes(t))
			for range 2 { // idempotent
				if err := fx.f.Freeze(ctx, fx.db, moveRange); err != nil {
					t.Fatal(err)
				}
			}
			refused(t, dialect, fx.insert("fence_ints", intID(6)), 6, "pg-c")
			refused(t, dialect, fx.insert("fence_uuids", fx.uuidKey(t, 5)), 5, "pg-c")
			refused(t, dialect, fx.exec("UPDATE fence_ints SET note = 'b' WHERE id = "+p1, in5), 5, "pg-c")
			refused(t, dialect, fx.exec("UPDATE fence_uuids SET note = 'b' WHERE id = "+p1, uIn), 6, "pg-c")
			refused(t, dialect, fx.exec("DELETE FROM fence_ints WHERE id = "+p1, in6), 6, "pg-c")
			refused(t, dialect, fx.exec("UPDATE fence_ints SET id = "+p1+" WHERE id = "+p2, intID(9), in5), 5, "pg-c")  // the old key's shard
			refused(t, dialect, fx.exec("UPDATE fence_ints SET id = "+p1+" WHERE id = "+p2, intID(5), out9), 5, "pg-c") // the new key's shard
			for _, q := range []string{"INSERT INTO fence_ints (id, note) VALUES (" + p1 + ", 'a')", "UPDATE fence_ints SET note = 'c' WHERE id = " + p1} {
				key := intID(10)
				if strings.HasPrefix(q, "UPDATE") {
					key = out9
				}
				if err := fx.exec(q, key); err != nil {
					t.Fatalf("another shard's write: %v", err)
				}
			}
			if got := len(fx.changes(t)); got != before {
				t.Fatalf("%d changes after the refused writes, want %d", got, before)
			}
			for range 2 {
				if err := fx.f.Thaw(ctx, fx.db, moveRange); err != nil {
					t.Fatal(err)
				}
			}
			if err := fx.exec("UPDATE fence_ints SET note = 'd' WHERE id = "+p1, in5); err != nil {
				t.Fatalf("after Thaw: %v", err)
			}
			if got := len(fx.changes(t)); got != before+1 {
				t.Fatalf("%d changes after Thaw's write, want %d", got, before+1)
			}
			for range 2 {
				if err := fx.f.Close(ctx, fx.db, moveRange); err != nil {
					t.Fatal(err)
				}
			}
			if err := fx.exec("DELETE FROM fence_ints WHERE id = "+p1, in5); err != nil {
				t.Fatalf("after Close: %v", err)
			}
			if got := len(fx.changes(t)); got != before+1 {
				t.Fatalf("%d changes after Close's write, want %d (not logged)", got, before+1)
			}
		})
	}
}

func TestUninstallRemovesTheTriggers(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			fx := openFixture(t, dialect)
			if err := fx.f.Freeze(ctx, fx.db, moveRange); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := fx.f.Uninstall(ctx, fx.db, fx.ints); err != nil {
					t.Fatal(err)
				}
			}
			if err := fx.insert("fence_ints", intID(5)); err != nil {
				t.Fatalf("insert after Uninstall: %v", err)
			}
			refused(t, dialect, fx.insert("fence_uuids", fx.uuidKey(t, 5)), 5, "pg-c") // still installed
		})
	}
}

func TestInstallRejectsBinaryUUIDs(t *testing.T) {
	column := map[string]string{"mysql": "BINARY(16)", "postgres": "BYTEA", "sqlite": "BLOB"}
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			fx := newFixture(t, dialect)
			mustExec(t, fx.db, "DROP TABLE IF EXISTS fence_binary")
			mustExec(t, fx.db, "CREATE TABLE fence_binary (id "+column[dialect]+" PRIMARY KEY)")
			err := fx.f.Install(context.Background(), fx.db, fence.Table{Name: "fence_binary", Key: "id", Kind: fence.KeyUUIDText})
			if !errors.Is(err, fence.ErrUnsupportedKey) {
				t.Fatalf("Install on a binary UUID: %v, want ErrUnsupportedKey", err)
			}
		})
	}
}

func TestBypassLetsOneConnectionThrough(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			fx := newFixture(t, dialect)
			in5, in6 := intID(5), intID(6)
			for _, key := range []int64{in5, in6} {
				if err := fx.insert("fence_ints", key); err != nil {
					t.Fatal(err)
				}
			}
			if err := fx.f.Open(ctx, fx.db, moveRange, "pg-c"); err != nil {
				t.Fatal(err)
			}
			if err := fx.f.Freeze(ctx, fx.db, moveRange); err != nil {
				t.Fatal(err)
			}
			conn, err := fx.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			err = fx.f.Bypass(ctx, conn)
			if dialect == "sqlite" {
				if !errors.Is(err, fence.ErrBypassUnsupported) {
					t.Fatalf("Bypass on SQLite: %v, want ErrBypassUnsupported", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(ctx, "DELETE FROM fence_ints WHERE id = "+fx.placeholderAt(1), in5); err != nil {
				t.Fatalf("bypassed delete: %v", err)
			}
			refused(t, dialect, fx.exec("DELETE FROM fence_ints WHERE id = "+fx.placeholderAt(1), in6), 6, "pg-c")
		})
	}
}

func TestMovedShardIgnoresOtherErrors(t *testing.T) {
	for _, err := range []error{nil, errors.New("duplicate key"), &mysql.MySQLError{Number: 1062, Message: "Duplicate entry"},
		&pgconn.PgError{Code: "23505", Message: "duplicate key value"}} {
		if _, _, ok := fence.MovedShard(err); ok {
			t.Errorf("MovedShard(%v) recognised a refusal", err)
		}
	}
	wrapped := fmt.Errorf("create: %w", &mysql.MySQLError{Number: 1644, SQLState: [5]byte{'4', '5', '0', '0', '0'}, Message: "shardid: logical shard 42 moved to pg-c"})
	if shard, target, ok := fence.MovedShard(wrapped); !ok || shard != 42 || target != "pg-c" {
		t.Errorf("MovedShard(%v) = %d, %q, %v", wrapped, shard, target, ok)
	}
}

func TestLongTableNamesGetShortTriggerNames(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			fx := newFixture(t, dialect)
			long := fence.Table{Name: "fence_" + strings.Repeat("long", 13), Key: "id", Kind: fence.KeyInt64} // 58 characters
			mustExec(t, fx.db, "DROP TABLE IF EXISTS "+long.Name)
			mustExec(t, fx.db, "CREATE TABLE "+long.Name+" (id BIGINT PRIMARY KEY, note VARCHAR(20))")
			if err := fx.f.Install(ctx, fx.db, long); err != nil {
				t.Fatal(err)
			}
			if err := fx.f.Open(ctx, fx.db, moveRange, "pg-c"); err != nil {
				t.Fatal(err)
			}
			if err := fx.f.Freeze(ctx, fx.db, moveRange); err != nil {
				t.Fatal(err)
			}
			refused(t, dialect, fx.insert(long.Name, intID(5)), 5, "pg-c")
			if err := fx.f.Uninstall(ctx, fx.db, long); err != nil {
				t.Fatal(err)
			}
			if err := fx.insert(long.Name, intID(5)); err != nil {
				t.Fatalf("after Uninstall: %v", err)
			}
		})
	}
}

// TestCloseOnADatabaseNeverFenced: closing a range on a database the fence
// was never installed on (a move that failed before its prepare reached it)
// has nothing to close, and is no error.
func TestCloseOnADatabaseNeverFenced(t *testing.T) {
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			if err := newFence(dialect).Close(context.Background(), openDB(t, dialect), moveRange); err != nil {
				t.Fatalf("Close where no fence was installed: %v", err)
			}
		})
	}
}
