package strategies

import (
	"context"
	"database/sql"
	"fmt"
)

// segmentTable holds one counter row per sequence name: v is the highest
// value reserved so far, and a block is (old v, new v].
const segmentTable = "shardid_segments"

// segmentSQL is one dialect's statements for the [Segment] counters.
type segmentSQL struct {
	create           []string
	transactionalDDL bool   // run create in a transaction (PostgreSQL: two processes at once)
	autocommit       string // asks whether a connection commits on its own; empty where it always does
	seed             string // creates the counter row of name ($1) at 0 if it is missing
	read             string // returns the counter of name ($1), or no row
	raise            string // moves the counter of name ($2) up to at least $1, never down
	// reserve moves the counter of name to max(v, floor) + step and returns
	// its new value, or sql.ErrNoRows when the row is missing. It runs on the
	// pool, never in the caller's transaction: a reservation rolled back with
	// the caller's rows would let another process reserve the same block.
	reserve func(ctx context.Context, conn Conn, name string, floor, step int64) (int64, error)
}

func segmentSQLFor(dialect string) (segmentSQL, error) {
	switch dialect {
	case "mysql":
		return mysqlSegment(), nil
	case "postgres":
		return postgresSegment(), nil
	case "sqlite":
		return sqliteSegment(), nil
	}
	return segmentSQL{}, fmt.Errorf("%w: %q (segment supports mysql, postgres and sqlite)", ErrUnsupportedDialect, dialect)
}

// mysqlSegment reserves with LAST_INSERT_ID(expr), which remembers the new
// value in the session; the SELECT that reads it back must therefore run on
// the same connection as the UPDATE, so both run on one pinned *sql.Conn.
// 191 characters of utf8mb4 is the longest key older InnoDB row formats index.
func mysqlSegment() segmentSQL {
	update := "UPDATE `" + segmentTable + "` SET `v` = LAST_INSERT_ID(GREATEST(`v`, ?) + ?) WHERE `name` = ?"
	return segmentSQL{
		create: []string{"CREATE TABLE IF NOT EXISTS `" + segmentTable +
			"` (`name` VARCHAR(191) NOT NULL PRIMARY KEY, `v` BIGINT NOT NULL) ENGINE=InnoDB"},
		autocommit: autocommitQuery,
		seed:       "INSERT IGNORE INTO `" + segmentTable + "` (`name`, `v`) VALUES (?, 0)",
		read:       "SELECT `v` FROM `" + segmentTable + "` WHERE `name` = ?",
		raise:      "UPDATE `" + segmentTable + "` SET `v` = GREATEST(`v`, ?) WHERE `name` = ?",
		reserve: func(ctx context.Context, on Conn, name string, floor, step int64) (int64, error) {
			conn := on // a transaction is one connection already
			if pool, ok := on.(*sql.DB); ok {
				pinned, err := pool.Conn(ctx)
				if err != nil {
					return 0, err
				}
				defer pinned.Close()
				conn = pinned
			}
			res, err := conn.ExecContext(ctx, update, floor, step, name)
			if err != nil {
				return 0, err
			}
			// Without a matched row LAST_INSERT_ID() would still return the
			// session's previous value: a block that is not ours.
			if changed, err := res.RowsAffected(); err != nil {
				return 0, err
			} else if changed == 0 {
				return 0, sql.ErrNoRows
			}
			var v int64
			err = conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&v)
			return v, err
		},
	}
}

func postgresSegment() segmentSQL {
	return segmentSQL{
		create: []string{
			// Concurrent CREATE TABLE IF NOT EXISTS can fail on pg_type; the lock serializes starters.
			`SELECT pg_advisory_xact_lock(7270246873298435074)`,
			`CREATE TABLE IF NOT EXISTS "` + segmentTable + `" ("name" varchar(191) PRIMARY KEY, "v" bigint NOT NULL)`,
		},
		transactionalDDL: true,
		seed:             `INSERT INTO "` + segmentTable + `" ("name", "v") VALUES ($1, 0) ON CONFLICT ("name") DO NOTHING`,
		read:             `SELECT "v" FROM "` + segmentTable + `" WHERE "name" = $1`,
		raise:            `UPDATE "` + segmentTable + `" SET "v" = GREATEST("v", $1) WHERE "name" = $2`,
		reserve:          returningReserve(`UPDATE "` + segmentTable + `" SET "v" = GREATEST("v", $1) + $2 WHERE "name" = $3 RETURNING "v"`),
	}
}

func sqliteSegment() segmentSQL {
	return segmentSQL{
		create:  []string{`CREATE TABLE IF NOT EXISTS "` + segmentTable + `" ("name" VARCHAR(191) NOT NULL PRIMARY KEY, "v" INTEGER NOT NULL)`},
		seed:    `INSERT OR IGNORE INTO "` + segmentTable + `" ("name", "v") VALUES (?1, 0)`,
		read:    `SELECT "v" FROM "` + segmentTable + `" WHERE "name" = ?1`,
		raise:   `UPDATE "` + segmentTable + `" SET "v" = MAX("v", ?1) WHERE "name" = ?2`,
		reserve: returningReserve(`UPDATE "` + segmentTable + `" SET "v" = MAX("v", ?1) + ?2 WHERE "name" = ?3 RETURNING "v"`),
	}
}

// returningReserve runs an UPDATE … RETURNING whose parameters are the
// floor, the step and the name: one atomic statement, one round trip.
func returningReserve(query string) func(ctx context.Context, conn Conn, name string, floor, step int64) (int64, error) {
	return func(ctx context.Context, conn Conn, name string, floor, step int64) (int64, error) {
		var v int64
		err := conn.QueryRowContext(ctx, query, floor, step, name).Scan(&v)
		return v, err
	}
}

// createSegmentTable creates shardid_segments on conn.
func createSegmentTable(ctx context.Context, conn Conn, sqls segmentSQL) error {
	return runDDL(ctx, conn, sqls.create, sqls.transactionalDDL)
}
