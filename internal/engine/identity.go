package engine

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/sqlerr"
	"github.com/shardid/shardid/internal/sqlscan"
)

// Each physical database carries a token of its own, and the plugin's
// database records the token each shard name opened: a name bound to
// another database than it was before (two shards' DSNs swapped in a
// config, or an operator's file that disagrees with the application's), a
// name that opens the database another configured name opens (a DSN spelled
// two ways: a socket and TCP, a symbolic link), and a name that opens the
// plugin's own database are refused when it opens, before a statement or a
// move runs there. The token lives in the database's data, so a replica
// promoted in its place keeps it.

const (
	databaseTokenTable = "shardid_database"        // on each physical database and the plugin's: its token
	boundTokensTable   = "shardid_shard_databases" // on the plugin's database: each shard name's token, the default map's
)

// boundTokens is the table of the plugin's database recording the token
// each shard name of this plugin's map opened: another map's shard of the
// same name is another database.
func (e *Engine) boundTokens() string {
	return mapstore.KeptTable(e.mapTable(), boundTokensTable, "_databases")
}

// quotedBoundTokens is boundTokens in SQL on the plugin's database.
func (e *Engine) quotedBoundTokens() string {
	return sqlscan.QuoteFolded(e.db.Dialector.Name(), e.boundTokens())
}

// identityTables serializes the checks of a process.
type identityTables struct {
	mu sync.Mutex
	// checkOnly makes the checks read the tokens and the records, and
	// write neither (CheckIdentitiesOnly).
	checkOnly bool
}

// Of returns the engine of a *shardid.Plugin; package shardid sets it.
var Of func(gorm.Plugin) *Engine

// CheckIdentitiesOnly makes e, before db.Use, check each database its shard
// names open against the tokens the databases carry and the names the
// plugin's database records, as ever, but give no database a token and
// record no name: an operator's command that only reads, given a file that
// names a new shard by a mistyped DSN, would otherwise bind the name to
// that database, and refuse the application that opens it by the right one.
func (e *Engine) CheckIdentitiesOnly() { e.identity.checkOnly = true }

// checkIdentity gives physical database name, opened as physical, its token
// if it has none, and fails unless the plugin's database recorded that
// token for name, or nothing yet, and for no other configured name, and the
// plugin's database has another. Its tables are created each time, should
// they have been dropped since.
func (e *Engine) checkIdentity(ctx context.Context, name string, physical *sql.DB, dialect string) error {
	own, err := e.db.DB()
	if err != nil || physical == nil {
		return nil // handles that only build SQL
	}
	if e.maps != nil {
		own = e.maps.DB() // the plugin's own pool: the application's transaction may hold the last connection of its
	}
	if e.identity.checkOnly {
		return e.checkRecordedIdentity(ctx, name, physical, own, dialect)
	}
	token, err := databaseToken(ctx, physical, dialect)
	if errors.Is(err, ErrShardUnavailable) {
		return err // its dial failed, and says so naming it
	}
	if err != nil {
		return fmt.Errorf("%w: %s: reading its shardid token: %w", ErrShardUnavailable, name, err)
	}
	e.identity.mu.Lock()
	defer e.identity.mu.Unlock()
	ownDialect := e.db.Dialector.Name()
	ownToken, err := databaseToken(ctx, own, ownDialect)
	if err != nil {
		return errs.Wrap(err, "%s: reading the plugin's database's own token", name)
	}
	if ownToken == token {
		return fmt.Errorf("%w: shard %s opens the plugin's own database (both carry the token %s in %s), which holds no logical shard: give the shard a database of its own",
			ErrInvalidConfig, name, token, databaseTokenTable)
	}
	if err := createTable(ctx, own, e.quotedBoundTokens()+" (name VARCHAR(191) NOT NULL PRIMARY KEY, token VARCHAR(64) NOT NULL)"); err != nil {
		return errs.Wrap(err, "%s: creating %s", name, e.boundTokens())
	}
	var bound string
	switch err := own.QueryRowContext(ctx, inDialect(ownDialect, "SELECT token FROM "+e.quotedBoundTokens()+" WHERE name = ?"), name).Scan(&bound); {
	case err == nil && bound != token:
		return swapped(name, token, bound, e.boundTokens())
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return errs.Wrap(err, "%s: reading the database the plugin's database records for it", name)
	}
	if err := e.noOtherShardOpens(ctx, own, ownDialect, token, name); err != nil {
		return err // nothing recorded: the config, once put right, opens
	}
	bound, err = claimToken(ctx, own, ownDialect, "",
		"INSERT INTO "+e.quotedBoundTokens()+" (token, name) VALUES (?, ?)", "SELECT token FROM "+e.quotedBoundTokens()+" WHERE name = ?", token, name)
	if err != nil {
		return errs.Wrap(err, "%s: reading the database the plugin's database records for it", name)
	}
	if bound != token {
		return swapped(name, token, bound, e.boundTokens())
	}
	if err := e.noOtherShardOpens(ctx, own, ownDialect, token, name); err != nil {
		// Another process recorded the other name meanwhile: this one's goes.
		return errors.Join(err, e.forgetBinding(ctx, own, ownDialect, token, name))
	}
	return nil
}

// checkRecordedIdentity is checkIdentity writing nothing: a database
// without a token, or a name without a record, is one no plugin opened,
// and passes; a name recorded for another token than its database's is
// refused, as is a token of the plugin's own database or of another
// configured name.
func (e *Engine) checkRecordedIdentity(ctx context.Context, name string, physical, own *sql.DB, dialect string) error {
	token, err := storedToken(ctx, physical, dialect)
	if errors.Is(err, ErrShardUnavailable) {
		return err // its dial failed, and says so naming it
	}
	if err != nil {
		return fmt.Errorf("%w: %s: reading its shardid token: %w", ErrShardUnavailable, name, err)
	}
	ownDialect := e.db.Dialector.Name()
	ownToken, err := storedToken(ctx, own, ownDialect)
	if err != nil {
		return errs.Wrap(err, "%s: reading the plugin's database's own token", name)
	}
	if token != "" && ownToken == token {
		return fmt.Errorf("%w: shard %s opens the plugin's own database (both carry the token %s in %s), which holds no logical shard: give the shard a database of its own",
			ErrInvalidConfig, name, token, databaseTokenTable)
	}
	var bound string
	err = own.QueryRowContext(ctx, inDialect(ownDialect, "SELECT token FROM "+e.quotedBoundTokens()+" WHERE name = ?"), name).Scan(&bound)
	switch {
	case err == nil && bound != token:
		return swapped(name, token, bound, e.boundTokens())
	case err != nil && !errors.Is(err, sql.ErrNoRows) && !sqlerr.MissingTable(ownDialect, err):
		return errs.Wrap(err, "%s: reading the database the plugin's database records for it", name)
	}
	if token == "" || sqlerr.MissingTable(ownDialect, err) {
		return nil // no plugin opened the database, or none recorded a name
	}
	return e.noOtherShardOpens(ctx, own, ownDialect, token, name)
}

// storedToken is the token of db, or "" if it has none.
func storedToken(ctx context.Context, db *sql.DB, dialect string) (string, error) {
	var token string
	err := db.QueryRowContext(ctx, "SELECT token FROM "+databaseTokenTable+" WHERE id = 1").Scan(&token)
	if errors.Is(err, sql.ErrNoRows) || sqlerr.MissingTable(dialect, err) {
		return "", nil
	}
	return token, err
}

// swapped is the error of shard name opening the database of token, where
// the plugin's database records bound for it.
func swapped(name, token, bound, table string) error {
	if token == "" {
		return fmt.Errorf("%w: shard %s opens another database than the one it named before (that one carries no shardid token; the plugin's database records %s in %s): is its DSN mistyped, or two shards' DSNs swapped? If the database was replaced on purpose, delete the shard's row there",
			ErrInvalidConfig, name, bound, table)
	}
	return fmt.Errorf("%w: shard %s opens another database than the one it named before (its token is %s; the plugin's database records %s in %s): are two shards' DSNs swapped? If the database was replaced on purpose, delete the shard's row there",
		ErrInvalidConfig, name, token, bound, table)
}

// noOtherShardOpens fails when the plugin's database records token for a
// configured shard name other than name.
func (e *Engine) noOtherShardOpens(ctx context.Context, own *sql.DB, dialect, token, name string) error {
	others, err := namesBoundTo(ctx, own, dialect, e.quotedBoundTokens(), token, name)
	if err != nil {
		return errs.Wrap(err, "%s: reading the names the plugin's database records for its database", name)
	}
	for _, other := range others {
		if e.shardNamed(other) {
			return fmt.Errorf("%w: shards %s and %s open one database (token %s in %s): a fan-out would read each row twice; give each shard a database of its own",
				ErrInvalidConfig, other, name, token, databaseTokenTable)
		}
	}
	return nil
}

// forgetBinding deletes the record of name opening the database of token.
func (e *Engine) forgetBinding(ctx context.Context, own *sql.DB, dialect, token, name string) error {
	_, err := own.ExecContext(ctx, inDialect(dialect, "DELETE FROM "+e.quotedBoundTokens()+" WHERE name = ? AND token = ?"), name, token)
	return err
}

// databaseToken is the token of db, given one if it has none.
func databaseToken(ctx context.Context, db *sql.DB, dialect string) (string, error) {
	return claimToken(ctx, db, dialect, databaseTokenTable+" (id INT NOT NULL PRIMARY KEY, token VARCHAR(64) NOT NULL)",
		"INSERT INTO "+databaseTokenTable+" (id, token) VALUES (1, ?)", "SELECT token FROM "+databaseTokenTable+" WHERE id = 1", newToken())
}

// namesBoundTo returns the shard names other than name that the plugin's
// database records for token.
func namesBoundTo(ctx context.Context, own *sql.DB, dialect, table, token, name string) ([]string, error) {
	rows, err := own.QueryContext(ctx, inDialect(dialect, "SELECT name FROM "+table+" WHERE token = ? AND name <> ?"), token, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var other string
		if err := rows.Scan(&other); err != nil {
			return nil, err
		}
		names = append(names, other)
	}
	return names, rows.Err()
}

// shardNamed reports whether the config names a shard name.
func (e *Engine) shardNamed(name string) bool {
	return slices.ContainsFunc(e.config.Shards, func(s Shard) bool { return s.Name == name })
}

// claimToken creates table (when not ""), inserts token, with key after it
// if given, unless a row is there, and returns the row's token, read by
// query (of key, if given).
func claimToken(ctx context.Context, db *sql.DB, dialect, table, insert, query, token string, key ...any) (string, error) {
	if table != "" {
		if err := createTable(ctx, db, table); err != nil {
			return "", err
		}
	}
	insert, query = inDialect(dialect, insert), inDialect(dialect, query)
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

// createTable creates table (its name and columns) unless it is there.
func createTable(ctx context.Context, db *sql.DB, table string) error {
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table); err != nil {
		// Two processes creating one table at once on PostgreSQL: one fails, and the table is there.
		if _, again := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table); again != nil {
			if again.Error() == err.Error() { // a database that does not answer, said once
				return err
			}
			return errors.Join(err, again)
		}
	}
	return nil
}

// inDialect numbers query's ? placeholders where the dialect wants them numbered.
func inDialect(dialect, query string) string {
	if dialect == "postgres" {
		return sqlscan.NumberParameters(query)
	}
	return query
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
