package engine

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/shardid/shardid/internal/sqlscan"
)

// Each physical database carries a token of its own, and the plugin's
// database records the token each shard name opened: a name bound to
// another database than it was before (two shards' DSNs swapped in a
// config, or an operator's file that disagrees with the application's) is
// refused when it opens, before a statement or a move runs there. The token
// lives in the database's data, so a replica promoted in its place keeps it.

const (
	databaseTokenTable = "shardid_database"        // on each physical database: its token
	boundTokensTable   = "shardid_shard_databases" // on the plugin's database: each shard name's token
)

// identityTables serializes the checks, and creates the plugin's table
// once per process.
type identityTables struct {
	mu      sync.Mutex
	created bool
}

// checkIdentity gives physical database name, opened as physical, its token
// if it has none, and fails unless the plugin's database recorded that
// token for name, or nothing yet.
func (e *Engine) checkIdentity(ctx context.Context, name string, physical *sql.DB, dialect string) error {
	own, err := e.db.DB()
	if err != nil || physical == nil {
		return nil // handles that only build SQL
	}
	token, err := claimToken(ctx, physical, dialect, databaseTokenTable+" (id INT NOT NULL PRIMARY KEY, token VARCHAR(64) NOT NULL)",
		"INSERT INTO "+databaseTokenTable+" (id, token) VALUES (1, ?)", "SELECT token FROM "+databaseTokenTable+" WHERE id = 1", newToken())
	if err != nil {
		return fmt.Errorf("%w: %s: reading its shardid token: %w", ErrShardUnavailable, name, err)
	}
	e.identity.mu.Lock()
	defer e.identity.mu.Unlock()
	table := boundTokensTable + " (name VARCHAR(191) NOT NULL PRIMARY KEY, token VARCHAR(64) NOT NULL)"
	if e.identity.created {
		table = ""
	}
	bound, err := claimToken(ctx, own, e.db.Dialector.Name(), table,
		"INSERT INTO "+boundTokensTable+" (token, name) VALUES (?, ?)", "SELECT token FROM "+boundTokensTable+" WHERE name = ?", token, name)
	if err != nil {
		return fmt.Errorf("shardid: %s: reading the database the plugin's database records for it: %w", name, err)
	}
	e.identity.created = true
	if bound != token {
		return fmt.Errorf("%w: shard %s opens another database than the one it named before (its token is %s; the plugin's database records %s in %s): are two shards' DSNs swapped? If the database was replaced on purpose, delete the shard's row there",
			ErrInvalidConfig, name, token, bound, boundTokensTable)
	}
	return nil
}

// claimToken creates table (when not ""), inserts token, with key after it
// if given, unless a row is there, and returns the row's token, read by
// query (of key, if given).
func claimToken(ctx context.Context, db *sql.DB, dialect, table, insert, query, token string, key ...any) (string, error) {
	if table != "" {
		if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table); err != nil {
			// Two processes creating one table at once on PostgreSQL: one fails, and the table is there.
			if _, again := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table); again != nil {
				return "", errors.Join(err, again)
			}
		}
	}
	if dialect == "postgres" {
		insert, query = sqlscan.NumberParameters(insert), sqlscan.NumberParameters(query)
	}
	var stored string
	err := db.QueryRowContext(ctx, query, key...).Scan(&stored)
	if !errors.Is(err, sql.ErrNoRows) {
		return stored, err
	}
	if _, err := db.ExecContext(ctx, insertUnlessThere(dialect, insert), append([]any{token}, key...)...); err != nil {
		return "", err
	}
	err = db.QueryRowContext(ctx, query, key...).Scan(&stored)
	return stored, err
}

// insertUnlessThere makes an INSERT leave a row with the same key as it is.
func insertUnlessThere(dialect, insert string) string {
	switch dialect {
	case "mysql":
		return "INSERT IGNORE" + insert[len("INSERT"):]
	case "sqlite":
		return "INSERT OR IGNORE" + insert[len("INSERT"):]
	}
	return insert + " ON CONFLICT DO NOTHING"
}

// newToken is a random token of 16 bytes, as hex.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
