package strategies

import (
	"context"
	"database/sql"
)

// Generator makes int64 IDs. Implementations are safe for concurrent use; a
// process keeps one per strategy, never one per call.
type Generator interface {
	// Generate sets ids[i] to a new ID in logical shard shards[i], for rows
	// that will be written to target. len(ids) must equal len(shards).
	Generate(ctx context.Context, target Target, shards []int, ids []int64) error
}

// Target is the physical database that will store the rows being numbered.
type Target struct {
	// Name identifies the physical database; per-database state is kept by it.
	Name string
	// Table is the table the rows go into; segment keeps one counter per
	// table and database.
	Table string
	// Dialect is the GORM dialector name: "postgres", "mysql" or "sqlite".
	Dialect string
	// Conn is where a strategy may run SQL: a pool, or the transaction the
	// rows will be written in.
	Conn Conn
	// DB is the database's pool, for work outside the statement: leases,
	// heartbeats, background refills, pinned connections.
	DB *sql.DB
}

// Conn is the part of *sql.DB, *sql.Tx and gorm.ConnPool that strategies use.
type Conn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Names of the strategies, as the shardid struct tag spells them.
const (
	NameInstagram = "instagram"
	NameSnowflake = "snowflake"
	NameSegment   = "segment"
	NameTicket    = "ticket"
	NameUUIDv7    = "uuidv7"
	NameUUIDv4    = "uuidv4"
)
