package mapstore

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shardid/shardid/internal/longtext"
	"github.com/shardid/shardid/internal/sqlscan"
)

// processesTable lists the processes that follow the map, and the version
// each follows, so that a move's cleanup knows when none routes by an older one.
// It is one for every map of the database (recovery asks it which processes
// live); its map_table column tells each process's map.
const processesTable = "shardid_process_maps"

// DefaultTable is the shared map's table unless the application names another.
const DefaultTable = "shardid_shard_map"

// longestKeptSuffix is the longest suffix KeptTable is given.
const longestKeptSuffix = "_databases"

// MaxTableName is the longest map table name: one whose kept tables'
// names (KeptTable) fit the dialects' identifiers of 63 characters.
const MaxTableName = 63 - len(longestKeptSuffix)

// KeptTable names a table the plugin keeps beside the map table mapTable
// (its moves, its sharded tables, the databases its shard names opened):
// base beside DefaultTable, whose tables keep the names they always had,
// and mapTable followed by suffix beside any other, so that sets of shards
// sharing one plugin database (Config.MapTable) keep them apart.
func KeptTable(mapTable, base, suffix string) string {
	if mapTable == DefaultTable || mapTable == "" {
		return base
	}
	return mapTable + suffix
}

// Store reads and writes the shared map, the processes that follow it and
// the moves' state in one database. It is safe for concurrent use.
type Store struct {
	db           *sql.DB
	dialect      string
	table        string        // the map's table
	moves        string        // the moves' table, KeptTable's
	probed       atomic.Bool   // processesTable has its map_table column
	movesWidened atomic.Bool   // the moves table's state is a LONGTEXT (MySQL)
	mapWidened   atomic.Bool   // the map table's map is a LONGTEXT (MySQL)
	owner        string        // this process, in the processes table
	heartbeat    time.Duration // how often this process notes itself live
}

// New returns the store of the map table named table in db, a database of
// dialect, for a process that notes itself live every heartbeat. table is a
// plain identifier, which the caller validates; it may be a reserved word.
func New(db *sql.DB, dialect, table string, heartbeat time.Duration) *Store {
	host, _ := os.Hostname()
	return &Store{db: db, dialect: dialect, table: table, heartbeat: heartbeat, moves: KeptTable(table, movesTable, "_moves"),
		owner: fmt.Sprintf("%s:%d:%08x", host, os.Getpid(), randomSuffix())}
}

// quoted is a table of the store's, named after the map table, in SQL.
func (s *Store) quoted(table string) string { return sqlscan.QuoteFolded(s.dialect, table) }

// Dialect is the dialect of the store's database.
func (s *Store) Dialect() string { return s.dialect }

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

// QueryRow reads one row of the store's database, its query's ? placeholders
// written as the dialect wants them, as Exec does.
func (s *Store) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return s.db.QueryRowContext(ctx, storeSQL(s.dialect, query), args...)
}

// Prepare creates the map and processes tables if they are missing. A map
// grows with its ranges (8,192 scattered shards take about 200 KB): on
// MySQL/MariaDB, whose TEXT holds 64 KiB, it is a LONGTEXT, and a table
// made by a version before is altered so once.
func (s *Store) Prepare(ctx context.Context) error {
	text := "TEXT"
	if s.dialect == "mysql" {
		text = "LONGTEXT"
	}
	for _, ddl := range []string{
		"CREATE TABLE IF NOT EXISTS " + s.quoted(s.table) + " (version BIGINT NOT NULL PRIMARY KEY, map " + text + " NOT NULL, created_ms BIGINT NOT NULL)",
		"CREATE TABLE IF NOT EXISTS " + processesTable + " (owner VARCHAR(191) NOT NULL PRIMARY KEY, map_version BIGINT NOT NULL, seen_ms BIGINT NOT NULL, refresh_ms BIGINT NOT NULL, map_table VARCHAR(191) NOT NULL DEFAULT '')",
	} {
		if _, err := s.Exec(ctx, ddl); err != nil && !AlreadyExists(err) {
			return err
		}
	}
	if err := s.widenMap(ctx); err != nil {
		return err
	}
	return s.addMapTableColumn(ctx)
}

// widenMap makes a map table's TEXT map a LONGTEXT, on MySQL/MariaDB.
func (s *Store) widenMap(ctx context.Context) error {
	if s.dialect != "mysql" || s.mapWidened.Load() {
		return nil
	}
	if err := longtext.Widen(ctx, s.db, s.table, s.quoted(s.table), "map"); err != nil {
		return err
	}
	s.mapWidened.Store(true)
	return nil
}

// addMapTableColumn adds map_table to a processes table made before it was;
// the rows of processes of those versions keep it empty, which every map counts
// as its own.
func (s *Store) addMapTableColumn(ctx context.Context) error {
	if s.probed.Load() {
		return nil
	}
	probe := func() error {
		rows, err := s.db.QueryContext(ctx, "SELECT map_table FROM "+processesTable+" WHERE 1 = 0")
		if err == nil {
			rows.Close()
		}
		return err
	}
	if probe() != nil {
		_, err := s.Exec(ctx, "ALTER TABLE "+processesTable+" ADD COLUMN map_table VARCHAR(191) NOT NULL DEFAULT ''")
		if err != nil && probe() != nil { // not another process's column
			return err
		}
	}
	s.probed.Store(true)
	return nil
}
