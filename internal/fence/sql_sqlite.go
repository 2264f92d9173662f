package fence

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// sqliteDialect bakes each frozen range's target into the triggers, since
// RAISE takes only a literal message; Freeze, Thaw and Close renew them in
// their transaction (SQLite's DDL is transactional and its writers take turns).
type sqliteDialect struct{}

func (sqliteDialect) placeholder(int) string { return "?" }

// sqliteTables makes the fence's tables, the fence table first.
var sqliteTables = []string{
	"CREATE TABLE IF NOT EXISTS " + fenceTable + ` (
			range_from INTEGER NOT NULL PRIMARY KEY,
			range_to INTEGER NOT NULL,
			target TEXT NOT NULL,
			frozen INTEGER NOT NULL DEFAULT 0,
			frozen_until INTEGER NULL
		)`,
	"CREATE TABLE IF NOT EXISTS " + changesTable + ` (
			seq INTEGER PRIMARY KEY AUTOINCREMENT,
			table_name TEXT NOT NULL,
			key_int INTEGER NULL,
			key_text TEXT NULL
		)`,
	"CREATE TABLE IF NOT EXISTS " + tablesTable + ` (
			name TEXT NOT NULL PRIMARY KEY,
			key_column TEXT NOT NULL,
			kind INTEGER NOT NULL
		)`,
}

func (sqliteDialect) prepare(ctx context.Context, db *sql.DB) error {
	for _, ddl := range sqliteTables {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}
	return addDeadline(ctx, db, "SELECT COUNT(*) FROM pragma_table_info('"+fenceTable+"') WHERE name = 'frozen_until'")
}

func (sqliteDialect) checkKey(ctx context.Context, db *sql.DB, t Table) error {
	var dataType string
	err := db.QueryRowContext(ctx, "SELECT type FROM pragma_table_info(?) WHERE name = ?", t.Name, t.Key).Scan(&dataType)
	if err == sql.ErrNoRows {
		return fmt.Errorf("%w: no column %s.%s", ErrUnsupportedKey, t.Name, t.Key)
	} else if err != nil {
		return err
	}
	return checkSQLiteKeyType(t, strings.ToUpper(dataType))
}

func (d sqliteDialect) install(ctx context.Context, db *sql.DB, f Fence, t Table) error {
	if err := d.checkKey(ctx, db, t); err != nil {
		return err
	}
	return d.locked(ctx, db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+tablesTable+" (name, key_column, kind) VALUES (?, ?, ?)"+
			" ON CONFLICT (name) DO UPDATE SET key_column = excluded.key_column, kind = excluded.kind", t.Name, t.Key, int(t.Kind)); err != nil {
			return err
		}
		return sqliteCreate(ctx, tx, f, t)
	})
}

// checkSQLiteKeyType reads the column's type affinity as SQLite does.
func checkSQLiteKeyType(t Table, dataType string) error {
	isInt := strings.Contains(dataType, "INT")
	isText := strings.Contains(dataType, "CHAR") || strings.Contains(dataType, "CLOB") || strings.Contains(dataType, "TEXT")
	if (t.Kind == KeyInt64 && isInt) || (t.Kind == KeyUUIDText && isText && !isInt) {
		return nil
	}
	return checkKeyType(t, dataType, nil, nil)
}

// sqliteCreate replaces t's triggers with ones naming the current frozen targets.
func sqliteCreate(ctx context.Context, tx Execer, f Fence, t Table) error {
	var targets []string
	rows, err := tx.QueryContext(ctx, "SELECT DISTINCT target FROM "+fenceTable+" WHERE frozen = 1 ORDER BY target")
	if err != nil {
		return err
	}
	for rows.Next() {
		var target string
		if err := rows.Scan(&target); err != nil {
			_ = rows.Close()
			return err
		}
		targets = append(targets, target)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, op := range ops {
		name := quoteIdent("sqlite", triggerName("sqlite", t.Name, op.name))
		body, err := sqliteTrigger(f, t, op.name, targets)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DROP TRIGGER IF EXISTS "+name); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "CREATE TRIGGER "+name+" BEFORE "+op.event+" ON "+quoteIdent("sqlite", t.Name)+
			" FOR EACH ROW BEGIN"+body+"\nEND"); err != nil {
			return err
		}
	}
	return nil
}

// sqliteTrigger is the body of one trigger: a RAISE per frozen target, one
// without a target should a range freeze under an older trigger, the log.
func sqliteTrigger(f Fence, t Table, op string, targets []string) (string, error) {
	key := quoteIdent("sqlite", t.Key)
	check := func(image, when string) (string, error) {
		shard, err := f.ShardSQL(t, image)
		if err != nil {
			return "", err
		}
		inRange := "range_from <= " + shard + " AND range_to >= " + shard
		frozen := "frozen = 1 AND (frozen_until IS NULL OR " + nowMillis("sqlite") + " < frozen_until) AND "
		var b strings.Builder
		for _, target := range targets {
			b.WriteString("\n  SELECT RAISE(ABORT, " + quoteString("sqlite", "shardid: logical shard moved to "+target) + ") WHERE " + when +
				"EXISTS (SELECT 1 FROM " + fenceTable + " WHERE " + frozen + "target = " + quoteString("sqlite", target) + " AND " + inRange + ");")
		}
		b.WriteString("\n  SELECT RAISE(ABORT, 'shardid: logical shard moved') WHERE " + when +
			"EXISTS (SELECT 1 FROM " + fenceTable + " WHERE " + frozen + inRange + ");")
		keyColumn := "key_int"
		if t.Kind == KeyUUIDText {
			keyColumn = "key_text"
		}
		b.WriteString("\n  INSERT INTO " + changesTable + " (table_name, " + keyColumn + ") SELECT " + quoteString("sqlite", t.Name) + ", " +
			image + "." + key + " WHERE " + when + "EXISTS (SELECT 1 FROM " + fenceTable + " WHERE " + inRange + ");")
		return b.String(), nil
	}
	switch op {
	case "ins":
		return check("NEW", "")
	case "del":
		return check("OLD", "")
	}
	c, err := check("NEW", "")
	if err != nil {
		return "", err
	}
	old, err := check("OLD", "OLD."+key+" IS NOT NEW."+key+" AND ")
	return c + old, err
}

func (sqliteDialect) uninstall(ctx context.Context, db *sql.DB, t Table) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, op := range ops {
		if _, err := tx.ExecContext(ctx, "DROP TRIGGER IF EXISTS "+quoteIdent("sqlite", triggerName("sqlite", t.Name, op.name))); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM "+tablesTable+" WHERE name = ?", t.Name); err != nil {
		return err
	}
	return tx.Commit()
}

func (sqliteDialect) locked(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	// A write first takes the write lock, so a reader never has to upgrade (SQLITE_BUSY).
	if _, err := tx.ExecContext(ctx, "UPDATE "+fenceTable+" SET frozen = frozen WHERE 0"); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (sqliteDialect) frozenChanged(ctx context.Context, tx Execer, f Fence) error {
	rows, err := tx.QueryContext(ctx, "SELECT name, key_column, kind FROM "+tablesTable+" ORDER BY name")
	if err != nil {
		return err
	}
	var tables []Table
	for rows.Next() {
		var t Table
		if err := rows.Scan(&t.Name, &t.Key, &t.Kind); err != nil {
			_ = rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range tables {
		if err := sqliteCreate(ctx, tx, f, t); err != nil {
			return err
		}
	}
	return nil
}

// forUpdate is empty: locked took the database's write lock already.
func (sqliteDialect) forUpdate() string { return "" }

func (sqliteDialect) missingTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table: shardid_move_") // one of the fence's own tables
}

func (sqliteDialect) bypass(context.Context, *sql.Conn) error { return ErrBypassUnsupported }

// waitSnapshots has nothing to wait for: its writers take turns, and each sees the newest data.
func (sqliteDialect) waitSnapshots(context.Context, *sql.DB) error { return nil }

// holders names no one: SQLite's lock is the file's, and its busy timeout
// waits for it.
func (sqliteDialect) holders(context.Context, *sql.DB, string) ([]string, error) { return nil, nil }
