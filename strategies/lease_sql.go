package strategies

import (
	"fmt"

	"github.com/shardid/shardid/internal/sqlscan"
)

// DefaultLeaseTable holds one row per worker ID of a physical database: who holds it,
// until when (by the database's clock, in Unix milliseconds), the highest time
// tick its IDs may have used, and a generation that every write bumps, so
// each write is a compare-and-swap.
const DefaultLeaseTable = "shardid_workers"

// leaseSQL is one dialect's statements for the worker leases. Parameters are
// written ? and renumbered for PostgreSQL.
type leaseSQL struct {
	create           []string
	transactionalDDL bool
	autocommit       string // asks whether a connection commits on its own; empty where it always does
	list             string // worker_id, owner, expires_at, high_water, generation, the database's now
	insert           string // takes a worker ID no row names yet: id, owner, ttl ms, high water
	take             string // takes an expired row: owner, ttl ms, high water, id, generation
	renew            string // ttl ms, high water, id, generation, owner
	release          string // owner to write, high water, id, generation, owner
	owner            string // owner, generation of a worker ID
}

func leaseSQLFor(dialect, leaseTable string) (leaseSQL, error) {
	var q leaseSQL
	leaseTable = sqlscan.QuoteFolded(dialect, leaseTable) // a reserved word too; the table earlier versions made unquoted
	var nowMs, greatest, insertHead, insertTail string
	switch dialect {
	case "mysql":
		nowMs, greatest = "CAST(FLOOR(@@timestamp * 1000) AS SIGNED)", "GREATEST"
		insertHead, insertTail = "INSERT IGNORE INTO ", ""
		q.autocommit = autocommitQuery
		q.create = []string{"CREATE TABLE IF NOT EXISTS " + leaseTable +
			" (worker_id INT NOT NULL PRIMARY KEY, owner VARCHAR(128) NOT NULL, expires_at BIGINT NOT NULL, high_water BIGINT NOT NULL, generation BIGINT NOT NULL) ENGINE=InnoDB"}
	case "postgres":
		nowMs, greatest = "floor(extract(epoch from clock_timestamp()) * 1000)::bigint", "GREATEST"
		insertHead, insertTail = "INSERT INTO ", " ON CONFLICT (worker_id) DO NOTHING"
		q.create = []string{
			// Concurrent CREATE TABLE IF NOT EXISTS can fail on pg_type; the lock serializes starters.
			"SELECT pg_advisory_xact_lock(7270246873298435074)",
			"CREATE TABLE IF NOT EXISTS " + leaseTable +
				" (worker_id integer PRIMARY KEY, owner varchar(128) NOT NULL, expires_at bigint NOT NULL, high_water bigint NOT NULL, generation bigint NOT NULL)",
		}
		q.transactionalDDL = true
	case "sqlite":
		nowMs, greatest = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)", "MAX"
		insertHead, insertTail = "INSERT OR IGNORE INTO ", ""
		q.create = []string{"CREATE TABLE IF NOT EXISTS " + leaseTable +
			" (worker_id INTEGER PRIMARY KEY, owner TEXT NOT NULL, expires_at INTEGER NOT NULL, high_water INTEGER NOT NULL, generation INTEGER NOT NULL)"}
	default:
		return q, fmt.Errorf("%w: %q (worker leases support mysql, postgres and sqlite)", ErrUnsupportedDialect, dialect)
	}
	q.list = "SELECT worker_id, owner, expires_at, high_water, generation, " + nowMs + " FROM " + leaseTable + " ORDER BY worker_id"
	q.insert = insertHead + leaseTable + " (worker_id, owner, expires_at, high_water, generation) VALUES (?, ?, " + nowMs + " + ?, ?, 1)" + insertTail
	q.take = "UPDATE " + leaseTable + " SET owner = ?, expires_at = " + nowMs + " + ?, high_water = " + greatest +
		"(high_water, ?), generation = generation + 1 WHERE worker_id = ? AND generation = ? AND expires_at < " + nowMs
	// Renewals and releases name the owner too: a row emptied and made
	// again by another process starts its generation at 1 once more.
	q.renew = "UPDATE " + leaseTable + " SET expires_at = " + nowMs + " + ?, high_water = " + greatest +
		"(high_water, ?), generation = generation + 1 WHERE worker_id = ? AND generation = ? AND owner = ?"
	q.owner = "SELECT owner, generation FROM " + leaseTable + " WHERE worker_id = ?"
	q.release = "UPDATE " + leaseTable + " SET owner = ?, expires_at = 0, high_water = ?, generation = generation + 1 WHERE worker_id = ? AND generation = ? AND owner = ?"
	if dialect == "postgres" {
		for _, s := range []*string{&q.insert, &q.take, &q.renew, &q.release, &q.owner} {
			*s = sqlscan.NumberParameters(*s)
		}
	}
	return q, nil
}
