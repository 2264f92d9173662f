package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/shardid/shardid/internal/sqlerr"

	"github.com/shardid/shardid/shardrouter"
)

var (
	// ErrUnsupportedDialect is returned for a Fence whose Dialect is not
	// "mysql", "postgres" or "sqlite".
	ErrUnsupportedDialect = errors.New("fence: unsupported database dialect")
	// ErrInvalid is returned for a Fence, Table, Range or target that cannot
	// work: widths out of bounds, a range outside the shards, an empty name.
	ErrInvalid = errors.New("fence: invalid argument")
	// ErrUnsupportedKey is returned by Install for a key column whose type the
	// triggers cannot read the shard from (binary UUIDs among them).
	ErrUnsupportedKey = errors.New("fence: unsupported key column")
	// ErrOverlap is returned by Open for a range that overlaps another fenced
	// range, or that is fenced already towards another target.
	ErrOverlap = errors.New("fence: range overlaps a fenced range")
	// ErrNotOpen is returned by Freeze and Thaw for a range Open has not
	// recorded.
	ErrNotOpen = errors.New("fence: range is not open")
	// ErrBypassUnsupported is returned by Bypass on SQLite, whose triggers
	// cannot see per-connection state.
	ErrBypassUnsupported = errors.New("fence: bypass is not supported on this dialect")
)

// KeyKind says how a table's key column carries the logical shard.
type KeyKind int

const (
	// KeyInt64 is a 64-bit ID whose shard field sits above SequenceBits.
	KeyInt64 KeyKind = iota
	// KeyUUIDText is a UUID stored as canonical text (or PostgreSQL's uuid
	// type) whose last hex digits carry the shard.
	KeyUUIDText
)

// Table is a sharded table and its key column (its primary key).
type Table struct {
	Name, Key string
	Kind      KeyKind
}

// Fence runs the fence of one source database. ShardBits (1 to 16) and
// SequenceBits are the widths of the ID layout (strategies.Layout,
// normalized). A Fence is a plain value, safe for concurrent use.
type Fence struct {
	Dialect                 string
	ShardBits, SequenceBits int
}

// Range is a range of logical shards, both ends included.
type Range = shardrouter.Range

// Change is one logged write: the table and key of a row to copy again.
type Change struct {
	Seq   int64
	Table string
	Key   any // int64 for KeyInt64, string for KeyUUIDText
}

// Object names; the trigger's refusal message is matched by MovedShard.
const (
	fenceTable   = "shardid_move_fence"
	changesTable = "shardid_move_changes"
	tablesTable  = "shardid_move_tables" // SQLite only: the installed tables, to regenerate their triggers
	maxTarget    = 64                    // fits MySQL's 128-character MESSAGE_TEXT with the shard
)

// pollEvery is how often Open looks again for transactions older than it.
var pollEvery = 20 * time.Millisecond

var targetPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)

// dialect is what differs between the databases.
type dialect interface {
	prepare(ctx context.Context, db *sql.DB) error
	install(ctx context.Context, db *sql.DB, f Fence, t Table) error
	checkKey(ctx context.Context, db *sql.DB, t Table) error
	uninstall(ctx context.Context, db *sql.DB, t Table) error
	// locked runs fn in a transaction that no other fence change runs beside.
	// waitSnapshots waits for the transactions whose snapshot is older than
	// the call, where a snapshot could miss the fence row.
	waitSnapshots(ctx context.Context, db *sql.DB) error
	locked(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error
	// frozenChanged lets a dialect whose triggers bake in the fence state renew them.
	frozenChanged(ctx context.Context, tx Execer, f Fence) error
	bypass(ctx context.Context, conn *sql.Conn) error
	placeholder(n int) string
	forUpdate() string // locks the rows a SELECT reads, where locked has not
	missingTable(err error) bool
	// holders names the sessions that may hold table against a trigger.
	holders(ctx context.Context, db *sql.DB, table string) ([]string, error)
}

func (f Fence) dialect() (dialect, error) {
	if f.ShardBits < 1 || f.ShardBits > 16 || f.SequenceBits < 0 || f.ShardBits+f.SequenceBits > 63 {
		return nil, fmt.Errorf("%w: ShardBits %d (1 to 16) and SequenceBits %d (ShardBits+SequenceBits at most 63)", ErrInvalid, f.ShardBits, f.SequenceBits)
	}
	switch f.Dialect {
	case "mysql":
		return mysqlDialect{}, nil
	case "postgres":
		return postgresDialect{}, nil
	case "sqlite":
		return sqliteDialect{}, nil
	}
	return nil, fmt.Errorf("%w: %q (mysql, postgres or sqlite)", ErrUnsupportedDialect, f.Dialect)
}

func (f Fence) checkRange(r Range) error {
	if r.From < 0 || r.To < r.From || r.To >= 1<<f.ShardBits {
		return fmt.Errorf("%w: range %d-%d (0 <= From <= To < %d)", ErrInvalid, r.From, r.To, 1<<f.ShardBits)
	}
	return nil
}

func checkTable(t Table) error {
	if t.Name == "" || t.Key == "" || (t.Kind != KeyInt64 && t.Kind != KeyUUIDText) {
		return fmt.Errorf("%w: table %q key %q kind %d", ErrInvalid, t.Name, t.Key, t.Kind)
	}
	return nil
}

// Prepare creates the fence and change-log tables (on SQLite also the list
// of installed tables) if they are missing. It is idempotent and safe from
// several processes at once; Install and Open need it first.
func (f Fence) Prepare(ctx context.Context, db *sql.DB) error {
	d, err := f.dialect()
	if err != nil {
		return err
	}
	if err := d.prepare(ctx, db); err != nil {
		return fmt.Errorf("fence: prepare: %w", err)
	}
	return nil
}

// CheckKey returns ErrUnsupportedKey, as Install would, for t's key column
// on db of another type than Kind says, changing nothing.
func (f Fence) CheckKey(ctx context.Context, db *sql.DB, t Table) error {
	d, err := f.dialect()
	if err != nil {
		return err
	}
	if err := checkTable(t); err != nil {
		return err
	}
	return d.checkKey(ctx, db, t)
}

// Install creates t's BEFORE INSERT, UPDATE and DELETE row triggers, or
// replaces them. It returns ErrUnsupportedKey for a key column of another
// type than Kind says (a binary UUID column among them).
func (f Fence) Install(ctx context.Context, db *sql.DB, t Table) error {
	d, err := f.dialect()
	if err != nil {
		return err
	}
	if err := checkTable(t); err != nil {
		return err
	}
	var holders []string
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		err := d.install(ctx, db, f, t)
		if err == nil {
			return nil
		}
		if !lockTimedOut(err) && ctx.Err() == nil {
			return fmt.Errorf("fence: install triggers on %s: %w", t.Name, err)
		}
		asking, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second) // ctx may have ended the wait
		if found, err := d.holders(asking, db, t.Name); err == nil && len(found) > 0 {
			holders = found // who to name if the wait never ends
		}
		cancel()
		select { // a long transaction holds the table: let the queue behind us run, then try again
		case <-ctx.Done():
			return fmt.Errorf("fence: install triggers on %s: a transaction kept the table locked (last seen holding it: %s): %w",
				t.Name, strings.Join(holders, "; "), errors.Join(err, ctx.Err()))
		case <-time.After(wait):
		}
	}
}

// installLockWait is how long, in seconds, one attempt to create a trigger
// waits for its table.
const installLockWait = "1"

// lockTimedOut reports a lock wait that ran out: MySQL's 1205, PostgreSQL's 55P03.
func lockTimedOut(err error) bool {
	number, _, isMySQL := sqlerr.MySQL(err)
	code, _, isPostgres := sqlerr.Postgres(err)
	return isMySQL && number == 1205 || isPostgres && code == "55P03"
}

// Uninstall drops t's triggers; those missing already are no error.
func (f Fence) Uninstall(ctx context.Context, db *sql.DB, t Table) error {
	d, err := f.dialect()
	if err != nil {
		return err
	}
	if err := checkTable(t); err != nil {
		return err
	}
	if err := d.uninstall(ctx, db, t); err != nil {
		return fmt.Errorf("fence: uninstall triggers on %s: %w", t.Name, err)
	}
	return nil
}

// CheckTarget returns ErrInvalid for a target name Open refuses: the
// triggers write it into their refusal, which MovedShard reads back.
func CheckTarget(target string) error {
	if len(target) > maxTarget || !targetPattern.MatchString(target) {
		return fmt.Errorf("%w: target %q (1 to %d of A-Z a-z 0-9 _ . : -)", ErrInvalid, target, maxTarget)
	}
	return nil
}

// Open records r as capturing towards target: writes of it go on and are
// logged by the triggers Install creates after it. Creating a trigger waits
// for the transactions that wrote the table before (MySQL's metadata lock,
// PostgreSQL's table lock), and every write after it reads the fence row, so
// a copy started once the triggers exist misses no write of the range; on
// PostgreSQL Open also waits for the transactions of the database holding an
// older snapshot, which could not see the row. It
// returns ErrOverlap for a range overlapping another fenced range or fenced
// towards another target; opening the same range again is a no-op.
func (f Fence) Open(ctx context.Context, db *sql.DB, r Range, target string) error {
	d, err := f.dialect()
	if err != nil {
		return err
	}
	if err := f.checkRange(r); err != nil {
		return err
	}
	if err := CheckTarget(target); err != nil {
		return err
	}
	err = d.locked(ctx, db, func(tx *sql.Tx) error {
		p1, p2 := d.placeholder(1), d.placeholder(2)
		rows, err := tx.QueryContext(ctx, "SELECT range_from, range_to, target FROM "+fenceTable+
			" WHERE range_from <= "+p1+" AND range_to >= "+p2, r.To, r.From)
		if err != nil {
			return err
		}
		var same bool
		for rows.Next() {
			var from, to int
			var t string
			if err := rows.Scan(&from, &to, &t); err != nil {
				_ = rows.Close()
				return err
			}
			if (Range{From: from, To: to}) != r || t != target {
				_ = rows.Close()
				return fmt.Errorf("%w: %d-%d to %s overlaps %d-%d to %s", ErrOverlap, r.From, r.To, target, from, to, t)
			}
			same = true
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if same {
			return nil
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO "+fenceTable+" (range_from, range_to, target, frozen) VALUES ("+
			p1+", "+p2+", "+d.placeholder(3)+", "+falseSQL(f.Dialect)+")", r.From, r.To, target)
		return err
	})
	if err != nil {
		return fmt.Errorf("fence: open %d-%d: %w", r.From, r.To, err)
	}
	if err := d.waitSnapshots(ctx, db); err != nil {
		return fmt.Errorf("fence: open %d-%d: waiting for older snapshots: %w", r.From, r.To, err)
	}
	return nil
}

// Freeze makes every insert, update and delete of a row of r on a fenced
// table fail, until Thaw. Its update of the fence row waits for the writers
// that read it before, so when it returns, each write of r that committed is
// in the log and no transaction can commit one any more. A PostgreSQL
// REPEATABLE READ transaction begun before Freeze fails its next write of r
// with a serialization error (SQLSTATE 40001) rather than the refusal. On
// MySQL under REPEATABLE READ the triggers' reads lock the fence rows they
// pass, so Freeze also waits for writers of shards above r. It returns
// ErrNotOpen for a range Open has not recorded.
func (f Fence) Freeze(ctx context.Context, db *sql.DB, r Range) error {
	return f.setFrozen(ctx, db, r, trueSQL(f.Dialect), "NULL")
}

// FreezeFor is Freeze until lease has passed by the database's clock: the
// triggers then let writes through again (and log them) unless Renew or
// Seal came first. A mover that dies while frozen stalls writers no longer.
func (f Fence) FreezeFor(ctx context.Context, db *sql.DB, r Range, lease time.Duration) error {
	return f.setFrozen(ctx, db, r, trueSQL(f.Dialect), deadlineSQL(f.Dialect, lease))
}

// Thaw makes r capturing again (a move cancelled before cutover).
func (f Fence) Thaw(ctx context.Context, db *sql.DB, r Range) error {
	return f.setFrozen(ctx, db, r, falseSQL(f.Dialect), "NULL")
}

func (f Fence) setFrozen(ctx context.Context, db *sql.DB, r Range, frozen, until string) error {
	d, err := f.dialect()
	if err != nil {
		return err
	}
	if err := f.checkRange(r); err != nil {
		return err
	}
	err = d.locked(ctx, db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "UPDATE "+fenceTable+" SET frozen = "+frozen+", frozen_until = "+until+
			" WHERE range_from = "+d.placeholder(1)+" AND range_to = "+d.placeholder(2), r.From, r.To); err != nil {
			return err
		}
		var n int
		// MySQL counts only changed rows, so the range's existence is asked apart.
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+fenceTable+" WHERE range_from = "+d.placeholder(1)+
			" AND range_to = "+d.placeholder(2), r.From, r.To).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return ErrNotOpen
		}
		return d.frozenChanged(ctx, tx, f)
	})
	if err != nil {
		verb := "thaw"
		if frozen == trueSQL(f.Dialect) {
			verb = "freeze"
		}
		return fmt.Errorf("fence: %s %d-%d: %w", verb, r.From, r.To, err)
	}
	return nil
}

// NotInstalled reports whether err says a table of the fence is missing on
// the database: the fence was never installed there.
func (f Fence) NotInstalled(err error) bool {
	d, derr := f.dialect()
	return derr == nil && err != nil && d.missingTable(err)
}

// Close removes r's fence row: writes of it are allowed and not logged. Like
// Freeze, it waits for the writers that read the row before. A range not
// fenced is no error.
func (f Fence) Close(ctx context.Context, db *sql.DB, r Range) error {
	d, err := f.dialect()
	if err != nil {
		return err
	}
	if err := f.checkRange(r); err != nil {
		return err
	}
	err = d.locked(ctx, db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+fenceTable+" WHERE range_from = "+d.placeholder(1)+
			" AND range_to = "+d.placeholder(2), r.From, r.To); err != nil {
			return err
		}
		return d.frozenChanged(ctx, tx, f)
	})
	if err != nil && d.missingTable(err) {
		return nil // a database the fence was never installed on (a move that failed before) fences nothing
	}
	if err != nil {
		return fmt.Errorf("fence: close %d-%d: %w", r.From, r.To, err)
	}
	return nil
}

// Changes returns up to limit logged changes, oldest first. A key appears
// once per logged write; replaying it means copying the row's current state.
func (f Fence) Changes(ctx context.Context, db *sql.DB, limit int) ([]Change, error) {
	d, err := f.dialect()
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("%w: limit %d", ErrInvalid, limit)
	}
	rows, err := db.QueryContext(ctx, "SELECT seq, table_name, key_int, key_text FROM "+changesTable+
		" ORDER BY seq LIMIT "+d.placeholder(1), limit)
	if err != nil {
		return nil, fmt.Errorf("fence: read changes: %w", err)
	}
	defer rows.Close()
	var changes []Change
	for rows.Next() {
		var c Change
		var keyInt sql.NullInt64
		var keyText sql.NullString
		if err := rows.Scan(&c.Seq, &c.Table, &keyInt, &keyText); err != nil {
			return nil, fmt.Errorf("fence: read changes: %w", err)
		}
		if keyInt.Valid {
			c.Key = keyInt.Int64
		} else {
			c.Key = keyText.String
		}
		changes = append(changes, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fence: read changes: %w", err)
	}
	return changes, nil
}

// Forget deletes the changes seqs, once replayed. Consecutive seqs go as
// one range: every seq within it is one of seqs, so a change logged but
// not yet committed when they were read, which sits in a gap between them,
// stays. A round of catch-up under bulk writes forgets thousands of seqs in
// a few statements.
func (f Fence) Forget(ctx context.Context, db *sql.DB, seqs []int64) error {
	d, err := f.dialect()
	if err != nil {
		return err
	}
	runs := seqRuns(seqs)
	const batch = 250 // two parameters a run: well under every dialect's bound
	for start := 0; start < len(runs); start += batch {
		var query strings.Builder
		query.WriteString("DELETE FROM " + changesTable + " WHERE ")
		var args []any
		for i, r := range runs[start:min(start+batch, len(runs))] {
			if i > 0 {
				query.WriteString(" OR ")
			}
			query.WriteString("seq BETWEEN " + d.placeholder(len(args)+1) + " AND " + d.placeholder(len(args)+2))
			args = append(args, r[0], r[1])
		}
		if _, err := db.ExecContext(ctx, query.String(), args...); err != nil {
			return fmt.Errorf("fence: forget changes: %w", err)
		}
	}
	return nil
}

// seqRuns returns seqs as ranges of consecutive values, [first, last],
// in order.
func seqRuns(seqs []int64) [][2]int64 {
	sorted := slices.Clone(seqs)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	var runs [][2]int64
	for _, s := range sorted {
		if n := len(runs); n > 0 && runs[n-1][1]+1 == s {
			runs[n-1][1] = s
			continue
		}
		runs = append(runs, [2]int64{s, s})
	}
	return runs
}

// Backlog is the number of changes logged and not forgotten.
func (f Fence) Backlog(ctx context.Context, db *sql.DB) (int64, error) {
	if _, err := f.dialect(); err != nil {
		return 0, err
	}
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+changesTable).Scan(&n); err != nil {
		return 0, fmt.Errorf("fence: count changes: %w", err)
	}
	return n, nil
}

// Bypass lets the writes on conn through every fence, neither refused nor
// logged: the mover's cleanup deleting the source's copies of a frozen range.
// It lasts as long as the connection; on SQLite it returns
// ErrBypassUnsupported.
func (f Fence) Bypass(ctx context.Context, conn *sql.Conn) error {
	d, err := f.dialect()
	if err != nil {
		return err
	}
	if err := d.bypass(ctx, conn); err != nil {
		return fmt.Errorf("fence: bypass: %w", err)
	}
	return nil
}

func trueSQL(dialect string) string {
	if dialect == "postgres" {
		return "TRUE"
	}
	return "1"
}

func falseSQL(dialect string) string {
	if dialect == "postgres" {
		return "FALSE"
	}
	return "0"
}
