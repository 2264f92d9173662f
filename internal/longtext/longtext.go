// Package longtext widens the TEXT columns of the plugin's own tables that
// grow without bound (a map, a move's state, a commit's databases) to
// LONGTEXT on MySQL/MariaDB, whose TEXT holds 64 KiB: versions before made
// them TEXT.
package longtext

import (
	"context"
	"database/sql"
	"errors"
	"strings"
)

// Widen makes column of table, in the database db is on, a LONGTEXT if it
// is a TEXT, on MySQL or MariaDB; quoted is table as SQL names it.
func Widen(ctx context.Context, db *sql.DB, table, quoted, column string) error {
	var dataType string
	err := db.QueryRowContext(ctx, "SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?", table, column).Scan(&dataType)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if !strings.EqualFold(dataType, "text") {
		return nil
	}
	_, err = db.ExecContext(ctx, "ALTER TABLE "+quoted+" MODIFY "+column+" LONGTEXT NOT NULL")
	return err
}
