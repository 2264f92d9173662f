package strategies

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// clockSQL is one dialect's statements for the [Instagram] clock-sequence.
type clockSQL struct {
	create           []string
	transactionalDDL bool   // run create in a transaction (PostgreSQL: two processes at once)
	autocommit       string // asks whether a connection commits on its own; empty where it always does
	seed             string // creates the clock row, below the durable mark, if it is missing
	read             string // returns the clock row's value, or no row
	readMark         string // returns the durable mark; empty where the clock itself is durable
	advanceMark      string // takes the new mark; empty where the clock itself is durable
	// advance moves the clock row by n, to at least atLeast, and returns its
	// new value, or sql.ErrNoRows when the row is missing.
	advance func(ctx context.Context, conn Conn, n int, atLeast int64) (int64, error)
}

// Table names of the clock-sequence and its durable mark.
const (
	clockTable = "shardid_clock"
	markTable  = "shardid_clock_mark"
)

func clockSQLFor(dialect string, l Layout) (clockSQL, error) {
	epochMs, unitMs, seqBits := l.Epoch.UnixMilli(), int64(l.TimeUnit/time.Millisecond), l.SequenceBits
	switch dialect {
	case "mysql":
		return mysqlClock(fmt.Sprintf("(((FLOOR(@@timestamp * 1000) - %d) DIV %d) << %d)", epochMs, unitMs, seqBits)), nil
	case "postgres":
		return postgresClock(fmt.Sprintf("(((floor(extract(epoch from clock_timestamp()) * 1000)::bigint - %d) / %d) << %d)", epochMs, unitMs, seqBits)), nil
	case "sqlite":
		return sqliteClock(fmt.Sprintf("(((CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) - %d) / %d) << %d)", epochMs, unitMs, seqBits)), nil
	}
	return clockSQL{}, fmt.Errorf("%w: %q (instagram supports mysql, postgres and sqlite)", ErrUnsupportedDialect, dialect)
}

// mysqlClock keeps the clock-sequence in a MEMORY table (no redo log, no
// flush) and reads it back from the OK packet's insert id, which
// LAST_INSERT_ID(expr) sets in the same round trip. The count is written into
// the statement's text: a statement with parameters would be prepared first,
// a second round trip.
func mysqlClock(floor string) clockSQL {
	head := "UPDATE `" + clockTable + "` SET `v` = LAST_INSERT_ID(GREATEST(`v` + "
	return clockSQL{
		autocommit: autocommitQuery,
		create: []string{
			"CREATE TABLE IF NOT EXISTS `" + clockTable + "` (`id` TINYINT NOT NULL PRIMARY KEY, `v` BIGINT NOT NULL) ENGINE=MEMORY",
			"CREATE TABLE IF NOT EXISTS `" + markTable + "` (`id` TINYINT NOT NULL PRIMARY KEY, `v` BIGINT NOT NULL) ENGINE=InnoDB",
		},
		seed: "INSERT IGNORE INTO `" + clockTable + "` (`id`, `v`) SELECT 1, GREATEST(" + floor +
			", COALESCE(MAX(`v`), 0)) - 1 FROM `" + markTable + "`",
		read:        "SELECT `v` FROM `" + clockTable + "` WHERE `id` = 1",
		readMark:    "SELECT COALESCE(MAX(`v`), 0) FROM `" + markTable + "`",
		advanceMark: "INSERT INTO `" + markTable + "` (`id`, `v`) VALUES (1, ?) ON DUPLICATE KEY UPDATE `v` = GREATEST(`v`, VALUES(`v`))",
		advance: func(ctx context.Context, conn Conn, n int, atLeast int64) (int64, error) {
			count := strconv.Itoa(n)
			// No WHERE: the table holds the one row, and a MEMORY hash lookup costs more than the scan.
			res, err := conn.ExecContext(ctx, head+count+", "+floor+" + "+count+" - 1, "+strconv.FormatInt(atLeast, 10)+"))")
			if err != nil {
				return 0, err
			}
			if changed, err := res.RowsAffected(); err != nil || changed == 0 {
				return 0, errors.Join(sql.ErrNoRows, err)
			}
			return res.LastInsertId()
		},
	}
}

// postgresClock keeps the clock-sequence in an UNLOGGED table: a transaction
// that writes only unlogged tables commits without waiting for a WAL flush.
func postgresClock(floor string) clockSQL {
	return clockSQL{
		create: []string{
			// Concurrent CREATE TABLE IF NOT EXISTS can fail on pg_type; the lock serializes starters.
			`SELECT pg_advisory_xact_lock(7270246873298435073)`,
			`CREATE UNLOGGED TABLE IF NOT EXISTS "` + clockTable + `" ("id" smallint PRIMARY KEY, "v" bigint NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS "` + markTable + `" ("id" smallint PRIMARY KEY, "v" bigint NOT NULL)`,
		},
		transactionalDDL: true,
		seed: `INSERT INTO "` + clockTable + `" ("id", "v") SELECT 1, GREATEST(` + floor +
			`, COALESCE(max("v"), 0)) - 1 FROM "` + markTable + `" ON CONFLICT ("id") DO NOTHING`,
		read:        `SELECT "v" FROM "` + clockTable + `" WHERE "id" = 1`,
		readMark:    `SELECT COALESCE(max("v"), 0) FROM "` + markTable + `"`,
		advanceMark: `INSERT INTO "` + markTable + `" AS m ("id", "v") VALUES (1, $1) ON CONFLICT ("id") DO UPDATE SET "v" = GREATEST(m."v", EXCLUDED."v")`,
		advance:     queryAdvance(`UPDATE "` + clockTable + `" SET "v" = GREATEST("v" + $1, ` + floor + ` + $1 - 1, $2) WHERE "id" = 1 RETURNING "v"`),
	}
}

// sqliteClock keeps the clock-sequence in an ordinary table: SQLite writes
// are local, and a transaction around them is the caller's.
func sqliteClock(floor string) clockSQL {
	return clockSQL{
		create: []string{`CREATE TABLE IF NOT EXISTS "` + clockTable + `" ("id" INTEGER PRIMARY KEY, "v" INTEGER NOT NULL)`},
		seed:   `INSERT OR IGNORE INTO "` + clockTable + `" ("id", "v") VALUES (1, ` + floor + ` - 1)`,
		read:   `SELECT "v" FROM "` + clockTable + `" WHERE "id" = 1`,
		advance: queryAdvance(`UPDATE "` + clockTable + `" SET "v" = MAX("v" + ?1, ` + strings.ReplaceAll(floor, "?", "") +
			` + ?1 - 1, ?2) WHERE "id" = 1 RETURNING "v"`),
	}
}

// queryAdvance runs an UPDATE … RETURNING whose parameters are the count
// and the value the clock must reach at least.
func queryAdvance(query string) func(ctx context.Context, conn Conn, n int, atLeast int64) (int64, error) {
	return func(ctx context.Context, conn Conn, n int, atLeast int64) (int64, error) {
		var v int64
		err := conn.QueryRowContext(ctx, query, n, atLeast).Scan(&v)
		return v, err
	}
}
