package mover

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/shardid/shardid/internal/sqlscan"
)

// selfKey is a foreign key of one column by which a table references
// itself: a row's child column holds its parent's parent column.
type selfKey struct{ child, parent int } // indexes in the table's columns

// readSelfKeys reads the foreign keys of one column by which t references
// itself on db; keys of several columns are left to the database to check.
func readSelfKeys(ctx context.Context, db *sql.DB, t *movedTable) ([]selfKey, error) {
	q, args := `SELECT "from", COALESCE("to", '') FROM pragma_foreign_key_list(?) f WHERE "table" = ? COLLATE NOCASE AND (SELECT COUNT(*) FROM pragma_foreign_key_list(?) g WHERE g.id = f.id) = 1`, []any{t.name, t.name, t.name}
	switch t.dialect {
	case "mysql":
		q, args = "SELECT k.COLUMN_NAME, k.REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE k WHERE k.TABLE_SCHEMA = DATABASE() AND k.TABLE_NAME = ? "+
			"AND k.REFERENCED_TABLE_SCHEMA = DATABASE() AND k.REFERENCED_TABLE_NAME = k.TABLE_NAME AND NOT EXISTS (SELECT 1 FROM information_schema.KEY_COLUMN_USAGE o "+
			"WHERE o.TABLE_SCHEMA = k.TABLE_SCHEMA AND o.TABLE_NAME = k.TABLE_NAME AND o.CONSTRAINT_NAME = k.CONSTRAINT_NAME AND o.ORDINAL_POSITION > 1)", []any{t.name}
	case "postgres":
		q, args = "SELECT a.attname, p.attname FROM pg_constraint k JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1] "+
			"JOIN pg_attribute p ON p.attrelid = k.confrelid AND p.attnum = k.confkey[1] "+
			"WHERE k.contype = 'f' AND k.conrelid = to_regclass($1) AND k.confrelid = k.conrelid AND cardinality(k.conkey) = 1", []any{sqlscan.Quote(t.dialect, t.name)}
	}
	rows, err := readRows(ctx, db, 2, q, args...)
	if err != nil {
		return nil, err
	}
	var keys []selfKey
	for _, row := range rows {
		parent := asText(row[1])
		if parent == "" && len(t.pk) == 1 { // SQLite's key naming no column references the primary key
			parent = t.pk[0]
		}
		child, of := t.columnIndex(asText(row[0])), t.columnIndex(parent)
		if child >= 0 && of >= 0 {
			keys = append(keys, selfKey{child: child, parent: of})
		}
	}
	return keys, nil
}

// columnIndex is the index of the column name in t's columns, or -1.
func (t *movedTable) columnIndex(name string) int {
	return slices.IndexFunc(t.columns, func(c string) bool { return strings.EqualFold(c, name) })
}

// parentsFirst orders rows of a table referencing itself so that each
// follows its parents among them (MySQL checks a key row by row), and
// takes out those waiting for a parent neither among them nor on the
// target, with the rows under them: written, they would only be refused,
// one statement each. A row whose parent the lookup misses is written
// anyway, and refused by the database, as before; a lookup that fails
// leaves the rows as they are.
func (t *movedTable) parentsFirst(ctx context.Context, target rangeQuerier, rows [][]any) (ordered, waiting [][]any) {
	if len(t.selfKeys) == 0 || len(rows) < 2 {
		return rows, nil
	}
	holders := make([]map[string][]int, len(t.selfKeys)) // by key: a parent value's rows
	onTarget := make([]map[string]bool, len(t.selfKeys))
	for k, key := range t.selfKeys {
		holders[k] = map[string][]int{}
		for i, row := range rows {
			if v := row[key.parent]; v != nil {
				holders[k][keyText(v)] = append(holders[k][keyText(v)], i)
			}
		}
		var ask []any
		for _, row := range rows {
			if v := row[key.child]; v != nil && holders[k][keyText(v)] == nil {
				ask = append(ask, normalizeKey(v))
			}
		}
		found, err := t.presentValues(ctx, target, t.columns[key.parent], ask)
		if err != nil {
			return rows, nil
		}
		onTarget[k] = found
	}
	const undecided, placed, blocked = 0, 1, 2
	state := make([]int, len(rows))
	for progress := true; progress; {
		progress = false
		for i, row := range rows {
			if state[i] != undecided {
				continue
			}
			next := placed
			for k, key := range t.selfKeys {
				v := row[key.child]
				if v == nil || onTarget[k][keyText(v)] {
					continue
				}
				of := holders[k][keyText(v)]
				switch {
				case slices.ContainsFunc(of, func(h int) bool { return state[h] == placed }):
				case !slices.ContainsFunc(of, func(h int) bool { return state[h] != blocked }):
					next = blocked
				default:
					next = min(next, undecided) // a parent not placed yet
				}
				if next == blocked {
					break
				}
			}
			if next != undecided {
				state[i], progress = next, true
				if next == placed {
					ordered = append(ordered, row)
				} else {
					waiting = append(waiting, row)
				}
			}
		}
	}
	for i, row := range rows { // rows of a cycle: the database decides
		if state[i] == undecided {
			ordered = append(ordered, row)
		}
	}
	return ordered, waiting
}

// presentValues reads which of values the target's column holds.
func (t *movedTable) presentValues(ctx context.Context, target rangeQuerier, column string, values []any) (map[string]bool, error) {
	found := map[string]bool{}
	for ask := range slices.Chunk(values, replayKeys) {
		q := "SELECT " + sqlscan.Quote(t.dialect, column) + " FROM " + sqlscan.Quote(t.dialect, t.name) + " WHERE " + sqlscan.Quote(t.dialect, column) + " IN (" + placeholders(t.dialect, 0, len(ask)) + ")"
		rows, err := readRows(ctx, target, 1, q, ask...)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			found[keyText(row[0])] = true
		}
	}
	return found, nil
}

// keyText is a key value as text, whichever way a driver read it.
func keyText(v any) string { return fmt.Sprint(normalizeKey(v)) }
