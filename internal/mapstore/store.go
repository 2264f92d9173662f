package mapstore

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/shardid/shardid/internal/sqlscan"
)

// processesTable lists the processes that follow the map, and the version
// each follows, so that a move's cleanup knows when none routes by an older one.
const processesTable = "shardid_process_maps"

// Store reads and writes the shared map, the processes that follow it and
// the moves' state in one database. It is safe for concurrent use.
type Store struct {
	db        *sql.DB
	dialect   string
	table     string        // the map's table
	owner     string        // this process, in the processes table
	heartbeat time.Duration // how often this process notes itself live
}

// New returns the store of the map table named table in db, a database of
// dialect, for a process that notes itself live every heartbeat. table must
// need no quoting; the caller validates it.
func New(db *sql.DB, dialect, table string, heartbeat time.Duration) *Store {
	host, _ := os.Hostname()
	return &Store{db: db, dialect: dialect, table: table, heartbeat: heartbeat,
		owner: fmt.Sprintf("%s:%d:%08x", host, os.Getpid(), randomSuffix())}
}

// Token is the random part of this process's name: short enough for a
// global transaction ID, by which Live finds the process again.
func (s *Store) Token() string { return s.owner[strings.LastIndexByte(s.owner, ':')+1:] }

// randomSuffix tells apart processes of one host and pid (containers).
func randomSuffix() uint32 { return rand.Uint32() }

// DB is the database the store keeps its tables in.
func (s *Store) DB() *sql.DB { return s.db }

// Table is the name of the map's table.
func (s *Store) Table() string { return s.table }

// Heartbeat is how often this process notes itself live.
func (s *Store) Heartbeat() time.Duration { return s.heartbeat }

// storeSQL writes ? placeholders as $n for PostgreSQL.
func storeSQL(dialect, query string) string {
	if dialect != "postgres" {
		return query
	}
	return sqlscan.NumberParameters(query)
}

// Exec runs a statement written with ? placeholders on the store's database.
func (s *Store) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return s.db.ExecContext(ctx, storeSQL(s.dialect, query), args...)
}

// Prepare creates the map and processes tables if they are missing.
func (s *Store) Prepare(ctx context.Context) error {
	text := "TEXT"
	for _, ddl := range []string{
		"CREATE TABLE IF NOT EXISTS " + s.table + " (version BIGINT NOT NULL PRIMARY KEY, map " + text + " NOT NULL, created_ms BIGINT NOT NULL)",
		"CREATE TABLE IF NOT EXISTS " + processesTable + " (owner VARCHAR(191) NOT NULL PRIMARY KEY, map_version BIGINT NOT NULL, seen_ms BIGINT NOT NULL, refresh_ms BIGINT NOT NULL)",
	} {
		if _, err := s.Exec(ctx, ddl); err != nil && !AlreadyExists(err) {
			return err
		}
	}
	return nil
}
