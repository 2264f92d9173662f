package mover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/sqlscan"
)

// The strategies [Driver.Tables] gives a many2many join table beside a
// sharded owner, whose Key is then its column of the owner's key.
const (
	// JoinRows: the other side is unsharded and stays where it is; the join
	// rows move with their owner.
	JoinRows = "many2many"
	// JoinShardedRows: the other side is sharded too; a move refuses it
	// ([ErrJoinSharded]).
	JoinShardedRows = "many2many-sharded"
)

// ErrJoinSharded is returned for a move of a model with a many2many to
// another sharded model (itself among them). It wraps [ErrInvalid].
var ErrJoinSharded = fmt.Errorf("%w: a many2many join table between two sharded models", ErrInvalid)

// movableJoin refuses a join table whose rows a move cannot carry.
func movableJoin(t Table) error {
	switch {
	case !t.Join:
		return nil
	case t.Strategy == JoinShardedRows:
		// A join row lives beside both its sides, and a move carries rows by
		// one key (the fence logs one key per table): a row whose other key
		// is outside the range would be parted from one of them.
		return fmt.Errorf("%w: %s: a move carries a row by one key and would part the join rows of the range's edge from one of their sides; keep the links in a sharded model colocated with its owner, which moves with it",
			ErrJoinSharded, t.Name)
	case t.Key == "":
		return fmt.Errorf("%w: the many2many join table %s has no column of its owner's key recorded (its join column references another field than the owner's key, or the models were migrated by an older version): migrate them again",
			ErrInvalid, t.Name)
	}
	return nil
}

// joinPrimaryKey returns the primary key's columns of a join table, its
// owner's column first: the copy reads the rows in that order and upserts
// them by it.
func joinPrimaryKey(ctx context.Context, db *sql.DB, dialect, table, owner string) ([]string, error) {
	q, name := "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", table
	switch dialect {
	case "mysql":
		q = "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION"
	case "postgres":
		q = "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) " +
			"WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)"
		name = sqlscan.Quote(dialect, table)
	}
	rows, err := readRows(ctx, db, 1, q, name)
	if err != nil {
		return nil, errs.Wrap(err, "reading the primary key of %s", table)
	}
	pk := []string{owner}
	for _, row := range rows {
		if c := asText(row[0]); c != owner {
			pk = append(pk, c)
		}
	}
	if len(pk) != len(rows) {
		return nil, fmt.Errorf("%w: the primary key of the join table %s does not hold its owner's column %s: the copy upserts its rows by a key holding it",
			ErrInvalid, table, owner)
	}
	return pk, nil
}

// replaceOwners makes the target's join rows of the owners keys the
// source's, deleting then inserting in one transaction on the target: an
// owner's logged write may have deleted rows, which the source no longer
// holds to be read again.
func (t *movedTable) replaceOwners(ctx context.Context, source, target *sql.DB, keys []any) error {
	var rows [][]any
	err := valuesInUTC(ctx, source, t.dialect, func(source dataConn) (err error) {
		rows, _, err = t.byKeys(ctx, source, keys) // whole: a join table's reads are not bounded
		return err
	})
	if err != nil {
		return err
	}
	return valuesInUTC(ctx, target, t.dialect, func(target dataConn) (err error) {
		if tx, ok := target.(*sql.Tx); ok { // PostgreSQL's: one already
			if err := t.deleteKeys(ctx, tx, keys); err != nil {
				return err
			}
			return t.upsert(ctx, tx, rows)
		}
		begin, ok := target.(interface {
			BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
		})
		if !ok {
			return fmt.Errorf("replacing the join rows of %s: no transaction on %T", t.name, target)
		}
		tx, err := begin.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() {
			if err != nil {
				err = errors.Join(err, tx.Rollback())
			}
		}()
		if err := t.deleteKeys(ctx, tx, keys); err != nil {
			return err
		}
		if err := t.upsert(ctx, tx, rows); err != nil {
			return err
		}
		return tx.Commit()
	})
}

// cursorOf is where the copy resumes after row: its key, or for a
// primary key of several columns the list of their values.
func (t *movedTable) cursorOf(row []any) any {
	values := make([]any, len(t.pk))
	for i, c := range t.pk {
		values[i] = normalizeKey(row[slices.Index(t.columns, c)])
	}
	if len(values) == 1 {
		return values[0]
	}
	return values
}

// afterArgs are the arguments of chunkQuery after a cursor, as read back
// from the state's JSON too: the leading column's value, then for a primary
// key of several columns each one's.
func (t *movedTable) afterArgs(cursor any) []any {
	list, ok := cursor.([]any)
	if !ok {
		return []any{jsonKey(cursor)}
	}
	args := []any{jsonKey(list[0])}
	for _, v := range list {
		args = append(args, jsonKey(v))
	}
	return args
}
