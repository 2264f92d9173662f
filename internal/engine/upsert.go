package engine

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/shardrouter"
)

// checkUpsert refuses an ON CONFLICT update of a placing column, unless it
// writes the inserted row's own value (excluded.col, as UpdateAll, Save and
// association saves do) and every row it may conflict with keeps that
// column's shard: by the table's unique keys, or on MySQL, asked of the
// database inside the statement's transaction.
func (e *Engine) checkUpsert(stmt *gorm.Statement, m *model) error {
	c, ok := stmt.Clauses["ON CONFLICT"]
	if !ok {
		return nil
	}
	oc, _ := c.Expression.(clause.OnConflict)
	set := oc.DoUpdates
	if oc.UpdateAll { // GORM expands it to every inserted column but the key
		for _, f := range []*schema.Field{m.pk().colocate, m.pk().hash} {
			if f != nil {
				set = append(set, clause.Assignment{Column: clause.Column{Name: f.DBName}, Value: clause.Column{Table: "excluded", Name: f.DBName}})
			}
		}
	}
	var asked error
	mysql := stmt.DB.Dialector.Name() == "mysql"
	var stored [][]*schema.Field // MySQL's: read once, in the statement's transaction
	keeps := func(column string) bool {
		keys := m.uniqueKeys
		if mysql {
			if !inTransaction(stmt.ConnPool) && globalOf(stmt.ConnPool) == nil && !stmt.DB.DryRun {
				// The check's locks would end with it: another owner's row could take the value before the upsert
				// (in DryRun nothing is written: the check alone says what would be refused).
				if err := e.beginOwnTransaction(stmt); err != nil {
					asked = fmt.Errorf("%w: %s: the upsert may fire on another unique key and rewrite the %s column of a row on another shard; the plugin checks it under locks that only a transaction keeps, and could not begin one: %w",
						ErrCrossShard, m.schema.Name, column, err)
					return false
				}
			}
			if stored == nil {
				if stored, asked = e.storedUniqueKeys(stmt, m, column); asked != nil {
					return false
				}
			}
			keys = stored
		}
		others, known := firingKeys(stmt, m, oc, column, keys)
		if !known || len(others) > 0 && !mysql {
			return false
		}
		if len(others) == 0 {
			return true
		}
		var conflict bool
		conflict, asked = e.conflictsElsewhere(stmt, m, others, m.schema.LookUpField(column))
		return asked == nil && !conflict
	}
	pl, column, refused := shardrouter.CheckUpsert(set, m.placings, keeps)
	switch {
	case asked != nil:
		return asked
	case refused:
		return fmt.Errorf("%w: %s: the upsert may rewrite the %s column %s of a row on another shard; update it apart, or conflict on the primary key only",
			ErrCrossShard, m.schema.Name, pl.Role, column)
	}
	return nil
}

// firingKeys returns the unique keys an ON CONFLICT may fire on that are
// neither the primary key nor hold column: a row conflicting on those may
// have another value of column. The keys that may fire are the target's, or
// on MySQL, whose ON DUPLICATE KEY ignores the target, and with no target,
// all of them (keys, the table's unique keys but the primary key). known is
// false when they cannot be told (ON CONSTRAINT).
func firingKeys(stmt *gorm.Statement, m *model, oc clause.OnConflict, column string, keys [][]*schema.Field) (others [][]*schema.Field, known bool) {
	if oc.OnConstraint != "" {
		return nil, false
	}
	consider := func(key []*schema.Field) {
		isPK := len(key) == 1 && key[0] == m.pk().field
		holds := slices.ContainsFunc(key, func(f *schema.Field) bool { return strings.EqualFold(f.DBName, column) })
		if !isPK && !holds {
			others = append(others, key)
		}
	}
	if len(oc.Columns) == 0 && oc.UpdateAll && stmt.DB.Dialector.Name() != "mysql" {
		return nil, true // GORM targets the primary key (Save of a slice), which holds no other row
	}
	if len(oc.Columns) > 0 && stmt.DB.Dialector.Name() != "mysql" {
		target := make([]*schema.Field, 0, len(oc.Columns))
		for _, c := range oc.Columns {
			f := m.schema.LookUpField(c.Name)
			if f == nil {
				return nil, false
			}
			target = append(target, f)
		}
		consider(target)
		return others, true
	}
	for _, key := range keys {
		consider(key)
	}
	return others, true
}

// conflictsElsewhere asks MySQL, in the statement's transaction, whether a
// row the upsert inserts has the values of one of keys in a row with another
// primary key and another value of column, which the upsert would update
// instead, rewriting column. FOR UPDATE locks what it read, and under
// InnoDB's default isolation the gaps where such a row would go, so none
// appears before the upsert runs.
func (e *Engine) conflictsElsewhere(stmt *gorm.Statement, m *model, keys [][]*schema.Field, column *schema.Field) (bool, error) {
	pk := m.pk().field
	rows, err := structRows(m, stmt.ReflectValue, nil)
	if err != nil {
		return false, err
	}
	for _, row := range rows {
		var where []string
		var args []any
		for _, key := range keys {
			parts, values := make([]string, 0, len(key)), make([]any, 0, len(key))
			for _, f := range key {
				v, _ := f.ValueOf(stmt.Context, row)
				if shardrouter.WrittenNull(v) { // NULLs never conflict: the key cannot fire
					parts = nil
					break
				}
				parts, values = append(parts, stmt.Quote(f.DBName)+" = ?"), append(values, v)
			}
			if len(parts) > 0 {
				where, args = append(where, "("+strings.Join(parts, " AND ")+")"), append(args, values...)
			}
		}
		if len(where) == 0 {
			continue
		}
		id, _ := pk.ValueOf(stmt.Context, row)
		value, _ := column.ValueOf(stmt.Context, row)
		query := fmt.Sprintf("SELECT 1 FROM %s WHERE (%s) AND %s <> ? AND NOT %s <=> ? LIMIT 1 FOR UPDATE",
			stmt.Quote(stmt.Table), strings.Join(where, " OR "), stmt.Quote(pk.DBName), stmt.Quote(column.DBName))
		if state := routeStateOf(stmt); state != nil {
			state.lockedGaps = true
		}
		held, err := stmt.ConnPool.QueryContext(stmt.Context, query, append(args, id, value)...)
		if err != nil {
			return false, errs.Wrap(err, "reading the rows an upsert of %s may conflict with", m.schema.Name)
		}
		found := held.Next()
		err = held.Err()
		_ = held.Close()
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// beginOwnTransaction begins a transaction of the plugin's own for a write
// on one database that runs outside any (SkipDefaultTransaction), where a
// check must hold its locks until the write ran: as GORM's own would, it
// holds the rest of the statement (the INSERT, the associations saved
// after it, the After hooks), and finish commits it, or rolls it back on
// an error (endOwnTransaction).
func (e *Engine) beginOwnTransaction(stmt *gorm.Statement) error {
	state := routeStateOf(stmt)
	if state == nil || state.ownFrom != nil {
		return errors.New("the statement is not a routed write")
	}
	tx, err := beginOn(stmt.Context, stmt.ConnPool)
	if err != nil {
		return err
	}
	state.ownFrom = stmt.ConnPool
	stmt.ConnPool = tx
	if state.boundOn > 0 {
		state.gormTx = tx // as GORM's: the SQL of its hooks is theirs, not meant for that database
	}
	stmt.DB.InstanceSet(gormStartedTransaction, true) // as GORM notes its own: a deadlock's retry begins it again (runAgain)
	return nil
}

// endOwnTransaction commits the transaction beginOwnTransaction began for
// the statement, or rolls it back when the statement failed, and gives the
// statement its connection back. It reports whether there was one.
func (e *Engine) endOwnTransaction(db *gorm.DB) bool {
	state := routeStateOf(db.Statement)
	if state == nil || state.ownFrom == nil {
		return false
	}
	if tx, ok := db.Statement.ConnPool.(gorm.TxCommitter); ok {
		if db.Error != nil && db.Error != errRouted {
			if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
				db.AddError(err)
			}
		} else if err := tx.Commit(); err != nil {
			db.AddError(err)
			state.failedBeforeCommit = true // nothing of it written: its IDs are given back
		}
	}
	db.Statement.ConnPool, state.ownFrom = state.ownFrom, nil
	return true
}

// storedUniqueKeys reads the unique keys but the primary key that MySQL's
// ON DUPLICATE KEY may fire on from the table itself, in the statement's
// transaction, whose metadata lock then holds them until it ends: a
// process's model may not declare them all (a unique index another version
// of the model migrated while this one runs). A key on a column the model
// has no field for, whose value the INSERT leaves to the table, fires on
// nothing when that value is NULL (a nullable column of no other default);
// otherwise it is refused, as its value is not known: column is the placing
// column the upsert would rewrite.
func (e *Engine) storedUniqueKeys(stmt *gorm.Statement, m *model, column string) ([][]*schema.Field, error) {
	parts := fromTableParts(stmt)
	table := strings.Join(parts, ".")
	rows, err := stmt.ConnPool.QueryContext(stmt.Context, "SHOW INDEX FROM "+stmt.Quote(table)+" WHERE Non_unique = 0")
	if err != nil {
		return nil, errs.Wrap(err, "reading the unique keys of %s", table)
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	at := map[string]int{}
	for i, n := range names {
		at[strings.ToLower(n)] = i
	}
	keyAt, columnAt := at["key_name"], at["column_name"] // SHOW INDEX lists a key's columns in their order
	values := make([]sql.NullString, len(names))
	dest := make([]any, len(names))
	for i := range values {
		dest[i] = &values[i]
	}
	var order []string
	byKey := map[string][]*schema.Field{}
	unknown := map[string][]sql.NullString{} // per key, its columns the model has no field for
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		key := values[keyAt].String
		if strings.EqualFold(key, "PRIMARY") {
			continue
		}
		if _, seen := byKey[key]; !seen {
			order = append(order, key)
			byKey[key] = nil
		}
		if f := m.schema.LookUpField(values[columnAt].String); values[columnAt].Valid && f != nil {
			byKey[key] = append(byKey[key], f)
		} else {
			unknown[key] = append(unknown[key], values[columnAt])
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	_ = rows.Close()
	keys := make([][]*schema.Field, 0, len(order))
	for _, k := range order {
		if len(unknown[k]) > 0 {
			null, err := leftNull(stmt, parts, unknown[k])
			if err != nil {
				return nil, errs.Wrap(err, "reading the columns of %s", table)
			}
			if null {
				continue // the INSERT stores NULL there, which conflicts with nothing
			}
			return nil, fmt.Errorf("%w: %s: table %s has the unique key %s on %s, which the model has no field for (another version of the model migrated it?), and the INSERT leaves it to the table's default: the upsert may fire on it and rewrite the %s column of a row on another shard; conflict on the primary key only, or upsert through a model that has the column",
				ErrCrossShard, m.schema.Name, table, k, cmpOrExpression(unknown[k][0]), column)
		}
		keys = append(keys, byKey[k])
	}
	return keys, nil
}

// leftNull reports whether one of columns, which an INSERT leaves out, is
// stored NULL by it: a nullable column, not generated, of no other default.
// MariaDB writes that default as the text NULL, MySQL as NULL.
func leftNull(stmt *gorm.Statement, parts []string, columns []sql.NullString) (bool, error) {
	schemaName, table := "DATABASE()", parts[len(parts)-1]
	args := []any{table}
	if len(parts) > 1 {
		schemaName, args = "?", []any{parts[0], table}
	}
	for _, c := range columns {
		if !c.Valid {
			continue // an expression's part
		}
		var n int
		err := stmt.ConnPool.QueryRowContext(stmt.Context, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "+schemaName+
			" AND TABLE_NAME = ? AND COLUMN_NAME = ? AND IS_NULLABLE = 'YES' AND (COLUMN_DEFAULT IS NULL OR COLUMN_DEFAULT = 'NULL') AND EXTRA NOT LIKE '%GENERATED%'",
			append(args, c.String)...).Scan(&n)
		if err != nil {
			return false, err
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}

// cmpOrExpression names an index's column, or an expression for none.
func cmpOrExpression(column sql.NullString) string {
	if column.Valid {
		return column.String
	}
	return "an expression"
}
