package strategies

import (
	"context"
	"fmt"
	"time"
)

// clockSQL is one dialect's statements for the [Instagram] clock-sequence.
type clockSQL struct {
	create           []string
	transactionalDDL bool   // run create in a transaction (PostgreSQL: two processes at once)
	readMark         string // returns the durable mark; empty where the clock itself is durable
	advanceMark      string // takes the new mark; empty where the clock itself is durable
	next             func(ctx context.Context, conn Conn, n int) (int64, error)
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
// LAST_INSERT_ID(expr) sets on the same connection in the same round trip.
func mysqlClock(floor string) clockSQL {
	next := "INSERT INTO `" + clockTable + "` (`id`, `v`, `floor_v`) VALUES (1, LAST_INSERT_ID(GREATEST(" + floor +
		", (SELECT COALESCE(MAX(`v`), 0) FROM `" + markTable + "`)) + ? - 1), " + floor + ")" +
		" ON DUPLICATE KEY UPDATE `v` = LAST_INSERT_ID(GREATEST(`v` + ?, VALUES(`floor_v`) + ? - 1))"
	return clockSQL{
		create: []string{
			"CREATE TABLE IF NOT EXISTS `" + clockTable + "` (`id` TINYINT NOT NULL PRIMARY KEY, `v` BIGINT NOT NULL, `floor_v` BIGINT NOT NULL) ENGINE=MEMORY",
			"CREATE TABLE IF NOT EXISTS `" + markTable + "` (`id` TINYINT NOT NULL PRIMARY KEY, `v` BIGINT NOT NULL) ENGINE=InnoDB",
		},
		readMark:    "SELECT COALESCE(MAX(`v`), 0) FROM `" + markTable + "`",
		advanceMark: "INSERT INTO `" + markTable + "` (`id`, `v`) VALUES (1, ?) ON DUPLICATE KEY UPDATE `v` = GREATEST(`v`, VALUES(`v`))",
		next: func(ctx context.Context, conn Conn, n int) (int64, error) {
			res, err := conn.ExecContext(ctx, next, n, n, n)
			if err != nil {
				return 0, err
			}
			return res.LastInsertId()
		},
	}
}

// postgresClock keeps the clock-sequence in an UNLOGGED table: a transaction
// that writes only unlogged tables commits without waiting for a WAL flush.
func postgresClock(floor string) clockSQL {
	next := `INSERT INTO "` + clockTable + `" AS c ("id", "v") VALUES (1, GREATEST(` + floor +
		`, (SELECT COALESCE(max("v"), 0) FROM "` + markTable + `")) + $1 - 1)` +
		` ON CONFLICT ("id") DO UPDATE SET "v" = GREATEST(c."v" + $1, ` + floor + ` + $1 - 1) RETURNING "v"`
	return clockSQL{
		create: []string{
			// Concurrent CREATE TABLE IF NOT EXISTS can fail on pg_type; the lock serializes starters.
			`SELECT pg_advisory_xact_lock(7270246873298435073)`,
			`CREATE UNLOGGED TABLE IF NOT EXISTS "` + clockTable + `" ("id" smallint PRIMARY KEY, "v" bigint NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS "` + markTable + `" ("id" smallint PRIMARY KEY, "v" bigint NOT NULL)`,
		},
		transactionalDDL: true,
		readMark:         `SELECT COALESCE(max("v"), 0) FROM "` + markTable + `"`,
		advanceMark:      `INSERT INTO "` + markTable + `" AS m ("id", "v") VALUES (1, $1) ON CONFLICT ("id") DO UPDATE SET "v" = GREATEST(m."v", EXCLUDED."v")`,
		next:             queryNext(next, 1),
	}
}

// sqliteClock keeps the clock-sequence in an ordinary table: SQLite writes
// are local, and a transaction around them is the caller's.
func sqliteClock(floor string) clockSQL {
	next := `INSERT INTO "` + clockTable + `" ("id", "v") VALUES (1, ` + floor + ` + ? - 1)` +
		` ON CONFLICT ("id") DO UPDATE SET "v" = MAX("v" + ?, excluded."v") RETURNING "v"`
	return clockSQL{
		create: []string{`CREATE TABLE IF NOT EXISTS "` + clockTable + `" ("id" INTEGER PRIMARY KEY, "v" INTEGER NOT NULL)`},
		next:   queryNext(next, 2),
	}
}

// queryNext runs a statement that returns the new clock-sequence value and
// takes the count as its only parameter, repeated times.
func queryNext(query string, repeated int) func(ctx context.Context, conn Conn, n int) (int64, error) {
	return func(ctx context.Context, conn Conn, n int) (int64, error) {
		args := make([]any, repeated)
		for i := range args {
			args[i] = n
		}
		var v int64
		err := conn.QueryRowContext(ctx, query, args...).Scan(&v)
		return v, err
	}
}
