package fence

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/shardid/shardid/internal/sqlerr"
)

type mysqlDialect struct{}

func (mysqlDialect) placeholder(int) string { return "?" }

// CREATE TABLE IF NOT EXISTS is atomic in InnoDB, so two processes may race.
func (mysqlDialect) prepare(ctx context.Context, db *sql.DB) error {
	for _, ddl := range []string{
		"CREATE TABLE IF NOT EXISTS " + fenceTable + ` (
			range_from INT NOT NULL PRIMARY KEY,
			range_to INT NOT NULL,
			target VARCHAR(64) NOT NULL,
			frozen TINYINT NOT NULL DEFAULT 0,
			frozen_until BIGINT NULL
		) ENGINE=InnoDB`,
		"CREATE TABLE IF NOT EXISTS " + changesTable + ` (
			seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
			table_name VARCHAR(64) NOT NULL,
			key_int BIGINT NULL,
			key_text VARCHAR(64) NULL
		) ENGINE=InnoDB`,
	} {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}
	return addDeadline(ctx, db, `SELECT COUNT(*) FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '`+fenceTable+`' AND COLUMN_NAME = 'frozen_until'`)
}

func (mysqlDialect) checkKey(ctx context.Context, db *sql.DB, t Table) error {
	var dataType string
	err := db.QueryRowContext(ctx, `SELECT DATA_TYPE FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?`, t.Name, t.Key).Scan(&dataType)
	if err == sql.ErrNoRows {
		return fmt.Errorf("%w: no column %s.%s", ErrUnsupportedKey, t.Name, t.Key)
	} else if err != nil {
		return err
	}
	return checkKeyType(t, strings.ToLower(dataType),
		[]string{"bigint", "int", "mediumint", "smallint", "tinyint"},
		[]string{"char", "varchar", "text", "tinytext", "mediumtext", "longtext"})
}

func (d mysqlDialect) install(ctx context.Context, db *sql.DB, f Fence, t Table) error {
	if err := d.checkKey(ctx, db, t); err != nil {
		return err
	}
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return err
	}
	// MariaDB replaces a trigger atomically; MySQL has to drop it first.
	mariaDB := strings.Contains(strings.ToLower(version), "mariadb")
	// Statements on the table queue behind a trigger waiting for its metadata
	// lock: wait briefly, on a connection of its own, then again.
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION lock_wait_timeout = "+installLockWait); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SET SESSION lock_wait_timeout = DEFAULT")
	for _, op := range ops {
		body, err := mysqlTrigger(f, t, op.name, op.event)
		if err != nil {
			return err
		}
		name := quoteIdent("mysql", triggerName("mysql", t.Name, op.name))
		if mariaDB {
			_, err = conn.ExecContext(ctx, "CREATE OR REPLACE TRIGGER "+name+body)
		} else if _, err = conn.ExecContext(ctx, "DROP TRIGGER IF EXISTS "+name); err == nil {
			_, err = conn.ExecContext(ctx, "CREATE TRIGGER "+name+body)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mysqlTrigger is the part of CREATE TRIGGER after the name. The fence row is
// found with a plain read (no lock for the rows outside every range), then
// read again by its primary key with a share lock: Freeze's update waits for
// it, and it sees the latest version under REPEATABLE READ.
func mysqlTrigger(f Fence, t Table, op, event string) (string, error) {
	check := func(image string) (string, error) {
		shard, err := f.ShardSQL(t, image)
		if err != nil {
			return "", err
		}
		keyColumn := "key_int"
		if t.Kind == KeyUUIDText {
			keyColumn = "key_text"
		}
		return `
    SET v_shard = ` + shard + `;
    SET v_to = NULL;
    SET v_from = (SELECT MAX(range_from) FROM ` + fenceTable + ` WHERE range_from <= v_shard);
    IF v_from IS NOT NULL THEN
      SELECT range_to, frozen, target, frozen_until INTO v_to, v_frozen, v_target, v_until FROM ` + fenceTable + ` WHERE range_from = v_from LOCK IN SHARE MODE;
    END IF;
    IF v_to >= v_shard THEN
      IF v_frozen = 1 AND (v_until IS NULL OR ` + nowMillis("mysql") + ` < v_until) THEN
        SET v_message = CONCAT('shardid: logical shard ', v_shard, ' moved to ', v_target);
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = v_message;
      END IF;
      INSERT INTO ` + changesTable + ` (table_name, ` + keyColumn + `) VALUES (` + quoteString("mysql", t.Name) + `, ` + image + `.` + quoteIdent("mysql", t.Key) + `);
    END IF;`, nil
	}
	var checks string
	switch op {
	case "ins":
		c, err := check("NEW")
		if err != nil {
			return "", err
		}
		checks = c
	case "del":
		c, err := check("OLD")
		if err != nil {
			return "", err
		}
		checks = c
	case "upd":
		c, err := check("NEW")
		if err != nil {
			return "", err
		}
		old, err := check("OLD")
		if err != nil {
			return "", err
		}
		key := quoteIdent("mysql", t.Key)
		checks = c + "\n    IF NOT (OLD." + key + " <=> NEW." + key + ") THEN" + old + "\n    END IF;"
	}
	return " BEFORE " + event + " ON " + quoteIdent("mysql", t.Name) + ` FOR EACH ROW
BEGIN
  DECLARE v_shard INT;
  DECLARE v_from INT;
  DECLARE v_to INT;
  DECLARE v_frozen INT;
  DECLARE v_until BIGINT;
  DECLARE v_target VARCHAR(64);
  DECLARE v_message VARCHAR(128);
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_to = NULL;
  IF COALESCE(@shardid_fence_bypass, 0) <> 1 THEN` + checks + `
  END IF;
END`, nil
}

func (mysqlDialect) uninstall(ctx context.Context, db *sql.DB, t Table) error {
	for _, op := range ops {
		if _, err := db.ExecContext(ctx, "DROP TRIGGER IF EXISTS "+quoteIdent("mysql", triggerName("mysql", t.Name, op.name))); err != nil {
			return err
		}
	}
	return nil
}

// fenceLockName is the fence lock's name in SQL: the database's, 40 characters within MySQL's 64.
const fenceLockName = "SHA1(CONCAT(DATABASE(), '.shardid_move_fence'))"

// locked holds a named lock around the transaction: InnoDB takes no gap
// locks under READ COMMITTED, so two Opens could both see no overlap. The
// name is the database's: a server's named locks are shared by all its
// databases, and another's Freeze waiting for its writers would hold this
// one's renewals.
func (mysqlDialect) locked(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK("+fenceLockName+", 60)").Scan(&got); err != nil {
		return err
	}
	if got.Int64 != 1 {
		return fmt.Errorf("another process holds the fence lock")
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK("+fenceLockName+")")
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (mysqlDialect) frozenChanged(context.Context, Execer, Fence) error { return nil }

func (mysqlDialect) forUpdate() string { return " FOR UPDATE" }

func (mysqlDialect) missingTable(err error) bool {
	number, _, ok := sqlerr.MySQL(err)
	return ok && number == 1146
}

func (mysqlDialect) bypass(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, "SET @shardid_fence_bypass = 1")
	return err
}

// checkKeyType accepts the column types the triggers can read Kind from.
func checkKeyType(t Table, dataType string, ints, texts []string) error {
	allowed := ints
	if t.Kind == KeyUUIDText {
		allowed = texts
	}
	for _, a := range allowed {
		if dataType == a {
			return nil
		}
	}
	kind := "an integer ID"
	if t.Kind == KeyUUIDText {
		kind = "a UUID as text (binary UUIDs are not supported)"
	}
	return fmt.Errorf("%w: %s.%s is %s, not %s", ErrUnsupportedKey, t.Name, t.Key, dataType, kind)
}

// waitSnapshots has nothing to wait for: its trigger's reads of the fence are locking reads, which see the newest row.
func (mysqlDialect) waitSnapshots(context.Context, *sql.DB) error { return nil }

// holders names the oldest open transactions: MySQL keeps a table's
// metadata lock until the transaction that touched it ends. The server
// lists those of every database: its sessions' current database comes first.
func (mysqlDialect) holders(ctx context.Context, db *sql.DB, _ string) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT t.trx_mysql_thread_id, COALESCE(p.DB, ''), TIMESTAMPDIFF(SECOND, t.trx_started, NOW()), t.trx_state, COALESCE(LEFT(t.trx_query, 120), '')
		FROM information_schema.innodb_trx t LEFT JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
		WHERE t.trx_mysql_thread_id <> CONNECTION_ID() ORDER BY COALESCE(p.DB = DATABASE(), 0) DESC, t.trx_started LIMIT 5`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var thread, seconds int64
		var database, state, query string
		if err := rows.Scan(&thread, &database, &seconds, &state, &query); err != nil {
			return nil, err
		}
		found = append(found, fmt.Sprintf("thread %d on database %q (%s, in a transaction for %ds): %s", thread, database, state, seconds, query))
	}
	return found, rows.Err()
}
