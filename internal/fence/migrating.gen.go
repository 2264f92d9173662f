package fence

// The file ends in .gen.go so that GORM's log lines of a migration's
// statements name the application's caller, not this file.

import (
	"context"
	"database/sql"
	"fmt"
)

// Execer is a transaction, or what runs statements in one (GORM's ConnPool
// of a transaction among them).
type Execer interface {
	Querier
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// HoldForMigration begins, in the transaction tx, a migration of the
// database's tables that KeepTriggers ends: on SQLite, it takes the write
// lock first (making the fence table, if it must, to write), so that no
// write comes between the migration and the triggers made again, and a
// reader never has to upgrade (SQLITE_BUSY).
// Other databases keep a table's triggers when they alter it.
func (f Fence) HoldForMigration(ctx context.Context, tx Execer) error {
	d := sqliteDialect{}
	if f.Dialect != "sqlite" {
		return nil
	}
	lock := "UPDATE " + fenceTable + " SET frozen = frozen WHERE 0"
	_, err := tx.ExecContext(ctx, lock)
	if d.missingTable(err) { // never fenced: making its fence table is the first write
		if _, err := tx.ExecContext(ctx, sqliteTables[0]); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, lock)
	}
	return err
}

// KeepTriggers makes again, in tx, the triggers of every table the fence
// guards on the database, after a migration HoldForMigration began: SQLite's
// migrator remakes a table to alter it, which drops its triggers, and a
// write of a moving range would then go unlogged or, frozen, through.
func (f Fence) KeepTriggers(ctx context.Context, tx Execer) error {
	d := sqliteDialect{}
	if f.Dialect != "sqlite" {
		return nil
	}
	if err := d.frozenChanged(ctx, tx, f); err != nil && !d.missingTable(err) { // never fenced: no trigger to keep
		return fmt.Errorf("fence: making the triggers again after a migration: %w", err)
	}
	return nil
}
