package mover

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/shardid/shardid/internal/sqlscan"
)

// placeholders returns n placeholders from the (first+1)th on.
func placeholders(dialect string, first, n int) string {
	parts := make([]string, n)
	for i := range parts {
		if dialect == "postgres" {
			parts[i] = "$" + strconv.Itoa(first+i+1)
		} else {
			parts[i] = "?"
		}
	}
	return strings.Join(parts, ", ")
}

func (t *movedTable) quotedColumns() string {
	cols := make([]string, len(t.columns))
	for i, c := range t.columns {
		cols[i] = sqlscan.Quote(t.dialect, c)
	}
	return strings.Join(cols, ", ")
}

// chunkQuery reads the next rows of the range after a key, in key order.
func (t *movedTable) chunkQuery(after bool, limit int) string {
	q := "SELECT " + t.quotedColumns() + " FROM " + sqlscan.Quote(t.dialect, t.name) + " WHERE " + t.inRange
	if after {
		q += " AND " + sqlscan.Quote(t.dialect, t.key) + " > " + placeholders(t.dialect, 2, 1)
	}
	return q + " ORDER BY " + sqlscan.Quote(t.dialect, t.key) + " LIMIT " + strconv.Itoa(limit)
}

// readRows runs a query and returns its rows as values the drivers take back.
func readRows(ctx context.Context, db *sql.DB, width int, query string, args ...any) ([][]any, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		values := make([]any, width)
		ptrs := make([]any, width)
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, values)
	}
	return out, rows.Err()
}

// maxParameters keeps a statement within every driver's limit (SQLite's 32766).
const maxParameters = 30000

// upsert writes rows on db, replacing the rows with the same keys.
func (t *movedTable) upsert(ctx context.Context, db *sql.DB, rows [][]any) error {
	per := max(1, maxParameters/len(t.columns))
	for len(rows) > 0 {
		n := min(per, len(rows))
		if err := t.upsertSome(ctx, db, rows[:n]); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

func (t *movedTable) upsertSome(ctx context.Context, db *sql.DB, rows [][]any) error {
	var b strings.Builder
	b.WriteString("INSERT INTO " + sqlscan.Quote(t.dialect, t.name) + " (" + t.quotedColumns() + ") VALUES ")
	args := make([]any, 0, len(rows)*len(t.columns))
	for i, row := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + placeholders(t.dialect, len(args), len(row)) + ")")
		args = append(args, row...)
	}
	var sets []string
	for _, c := range t.columns {
		if c == t.key {
			continue
		}
		q := sqlscan.Quote(t.dialect, c)
		if t.dialect == "mysql" {
			sets = append(sets, q+" = VALUES("+q+")")
		} else {
			sets = append(sets, q+" = excluded."+q)
		}
	}
	switch {
	case t.dialect == "mysql" && len(sets) == 0:
		b.WriteString(" ON DUPLICATE KEY UPDATE " + sqlscan.Quote(t.dialect, t.key) + " = " + sqlscan.Quote(t.dialect, t.key))
	case t.dialect == "mysql":
		b.WriteString(" ON DUPLICATE KEY UPDATE " + strings.Join(sets, ", "))
	case len(sets) == 0:
		b.WriteString(" ON CONFLICT (" + sqlscan.Quote(t.dialect, t.key) + ") DO NOTHING")
	default:
		b.WriteString(" ON CONFLICT (" + sqlscan.Quote(t.dialect, t.key) + ") DO UPDATE SET " + strings.Join(sets, ", "))
	}
	_, err := db.ExecContext(ctx, b.String(), args...)
	return err
}

// deleter and rangeQuerier are a pool or one connection of it.
type (
	deleter interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	}
	rangeQuerier interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	}
)

// byKeys reads the rows with the given keys.
func (t *movedTable) byKeys(ctx context.Context, db *sql.DB, keys []any) ([][]any, error) {
	q := "SELECT " + t.quotedColumns() + " FROM " + sqlscan.Quote(t.dialect, t.name) + " WHERE " + sqlscan.Quote(t.dialect, t.key) + " IN (" + placeholders(t.dialect, 0, len(keys)) + ")"
	return readRows(ctx, db, len(t.columns), q, keys...)
}

// deleteKeys deletes the rows with the given keys, on conn or db.
func (t *movedTable) deleteKeys(ctx context.Context, db deleter, keys []any) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := db.ExecContext(ctx, "DELETE FROM "+sqlscan.Quote(t.dialect, t.name)+" WHERE "+sqlscan.Quote(t.dialect, t.key)+" IN ("+placeholders(t.dialect, 0, len(keys))+")", keys...)
	return err
}

// rangeKeys returns up to limit keys of the range's rows.
func (t *movedTable) rangeKeys(ctx context.Context, db rangeQuerier, r Range, limit int) ([]any, error) {
	rows, err := db.QueryContext(ctx, "SELECT "+sqlscan.Quote(t.dialect, t.key)+" FROM "+sqlscan.Quote(t.dialect, t.name)+" WHERE "+t.inRange+" LIMIT "+strconv.Itoa(limit), r.From, r.To)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []any
	for rows.Next() {
		var k any
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, normalizeKey(k))
	}
	return keys, rows.Err()
}

// normalizeKey turns a key as a driver scanned it (MySQL's text protocol
// gives bytes) into a value every driver binds as the key.
func normalizeKey(k any) any {
	if b, ok := k.([]byte); ok {
		if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return n
		}
		return string(b)
	}
	return k
}

// count is how many rows of the range a table holds on db.
func (t *movedTable) count(ctx context.Context, db *sql.DB, r Range) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+sqlscan.Quote(t.dialect, t.name)+" WHERE "+t.inRange, r.From, r.To).Scan(&n)
	return n, err
}
