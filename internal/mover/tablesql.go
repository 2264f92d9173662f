package mover

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
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

// quotedPK is the primary key's columns, quoted.
func (t *movedTable) quotedPK() string {
	cols := make([]string, len(t.pk))
	for i, c := range t.pk {
		cols[i] = sqlscan.Quote(t.dialect, c)
	}
	return strings.Join(cols, ", ")
}

// chunkQuery reads the next rows of the range after a primary key, in its
// order.
func (t *movedTable) chunkQuery(after bool, limit int) string {
	q := "SELECT " + t.quotedColumns() + " FROM " + sqlscan.Quote(t.dialect, t.name) + " WHERE " + t.inRange
	switch {
	case after && len(t.pk) == 1:
		q += " AND " + t.quotedPK() + " > " + placeholders(t.dialect, 2, 1)
	case after: // the leading column's bound keeps the index scan short where a row comparison does not (MariaDB)
		q += " AND " + sqlscan.Quote(t.dialect, t.pk[0]) + " >= " + placeholders(t.dialect, 2, 1) +
			" AND (" + t.quotedPK() + ") > (" + placeholders(t.dialect, 3, len(t.pk)) + ")"
	}
	return q + " ORDER BY " + t.quotedPK() + " LIMIT " + strconv.Itoa(limit)
}

// readRows runs a query and returns its rows as values the drivers take back.
func readRows(ctx context.Context, db rangeQuerier, width int, query string, args ...any) ([][]any, error) {
	return readRowsAs(ctx, db, width, nil, query, args...)
}

// readRowsAs is readRows with each row's values given to as, with the
// columns' types, before it is kept; a nil as keeps them as read.
func readRowsAs(ctx context.Context, db rangeQuerier, width int, as func([]*sql.ColumnType, []any), query string, args ...any) ([][]any, error) {
	out, _, err := readRowsWithin(ctx, db, width, 0, as, query, args...)
	return out, err
}

// chunkBytes bounds the values of the rows one read of the copy or the
// catch-up keeps, and one statement writes, whatever ChunkSize: a thousand
// rows of a few megabytes each would take gigabytes of memory (more than
// once over, as the drivers read and encode them) and exceed PostgreSQL's
// 1 GB message.
const chunkBytes = 16 << 20

// rowBytes is about how many bytes a row's values take.
func rowBytes(row []any) int {
	n := 0
	for _, v := range row {
		switch x := v.(type) {
		case []byte:
			n += len(x)
		case string:
			n += len(x)
		default:
			n += 8
		}
	}
	return n
}

// readRowsWithin is readRowsAs that stops, full, after the row that
// brings its values to budget bytes (0: no bound).
func readRowsWithin(ctx context.Context, db rangeQuerier, width, budget int, as func([]*sql.ColumnType, []any), query string, args ...any) (_ [][]any, full bool, _ error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var types []*sql.ColumnType
	if as != nil {
		if types, err = rows.ColumnTypes(); err != nil {
			return nil, false, err
		}
	}
	var out [][]any
	size := 0
	for rows.Next() {
		if budget > 0 && size >= budget {
			return out, true, nil
		}
		values := make([]any, width)
		ptrs := make([]any, width)
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, false, err
		}
		if as != nil {
			as(types, values)
		}
		out = append(out, values)
		if budget > 0 {
			size += rowBytes(values)
		}
	}
	return out, false, rows.Err()
}

// textUnlessBytea gives PostgreSQL's bytes of any column but a bytea as
// text: pgx reads json, jsonb and xml as bytes, which it sends as a bytea
// where the statement's parameter types are not asked of the server (the
// DSN's default_query_exec_mode exec or simple_protocol, as for PgBouncer),
// and the column then refuses them or stores their hex; given as text, they
// are the column's own type in every mode.
func textUnlessBytea(types []*sql.ColumnType, values []any) {
	for i, v := range values {
		if b, ok := v.([]byte); ok && i < len(types) && types[i].DatabaseTypeName() != "BYTEA" {
			values[i] = string(b)
		}
	}
}

// On MySQL a row's values are read and written by a statement prepared on
// purpose: the driver's binary protocol carries them exactly whatever the
// DSN's interpolateParams, with which the text protocol sends a FLOAT
// rounded to six digits and bytes are bound as _binary literals, stored
// without conversion to the column's character set.
type (
	preparer interface {
		PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	}
	preparedQuerier struct{ stmt *sql.Stmt }
)

func (p preparedQuerier) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return p.stmt.QueryContext(ctx, args...)
}

// readValues reads rows of t's columns by query, up to chunkBytes of
// values: full says it stopped there, other rows unread.
func (t *movedTable) readValues(ctx context.Context, db rangeQuerier, query string, args ...any) (_ [][]any, full bool, _ error) {
	budget := chunkBytes
	if t.join {
		budget = 0 // an owner's rows are read whole; join rows are small
	}
	if t.dialect == "postgres" {
		return readRowsWithin(ctx, db, len(t.columns), budget, textUnlessBytea, query, args...)
	}
	p, ok := db.(preparer)
	if !ok || t.dialect != "mysql" {
		return readRowsWithin(ctx, db, len(t.columns), budget, nil, query, args...)
	}
	stmt, err := p.PrepareContext(ctx, query)
	if err != nil {
		return nil, false, err
	}
	defer stmt.Close()
	return readRowsWithin(ctx, preparedQuerier{stmt}, len(t.columns), budget, nil, query, args...)
}

// writeValues runs a statement writing rows' values.
func (t *movedTable) writeValues(ctx context.Context, db execQuerier, query string, args ...any) (sql.Result, error) {
	p, ok := db.(preparer)
	if !ok || t.dialect != "mysql" {
		return db.ExecContext(ctx, query, args...)
	}
	stmt, err := p.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	return stmt.ExecContext(ctx, args...)
}

// maxParameters keeps a statement within every driver's limit (SQLite's 32766).
const maxParameters = 30000

// upsert writes rows on db, replacing the rows with the same primary keys.
func (t *movedTable) upsert(ctx context.Context, db execQuerier, rows [][]any) error {
	per := max(1, maxParameters/len(t.columns))
	for len(rows) > 0 {
		n, size := 0, 0
		for n < min(per, len(rows)) && (n == 0 || size+rowBytes(rows[n]) <= chunkBytes) {
			size += rowBytes(rows[n])
			n++
		}
		if err := t.upsertSome(ctx, db, rows[:n]); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

func (t *movedTable) upsertSome(ctx context.Context, db execQuerier, rows [][]any) error {
	var b strings.Builder
	b.WriteString("INSERT INTO " + sqlscan.Quote(t.dialect, t.name) + " (" + t.quotedColumns() + ")")
	if len(t.alwaysIdentity) > 0 {
		b.WriteString(" OVERRIDING SYSTEM VALUE") // the source's values, which PostgreSQL refuses for such a column otherwise
	}
	b.WriteString(" VALUES ")
	args := make([]any, 0, len(rows)*len(t.columns))
	for i, row := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + placeholders(t.dialect, len(args), len(row)) + ")")
		args = append(args, row...)
	}
	var sets, samePK []string
	for _, c := range t.pk {
		q := sqlscan.Quote(t.dialect, c)
		samePK = append(samePK, q+" = VALUES("+q+")")
	}
	for _, c := range t.columns {
		if slices.Contains(t.pk, c) || slices.Contains(t.alwaysIdentity, c) { // an update may not set it; an update never changes it but to a new value, which the checks catch
			continue
		}
		q := sqlscan.Quote(t.dialect, c)
		if t.dialect == "mysql" {
			// ON DUPLICATE KEY fires on any unique index: a row with another
			// key holding one of the copied row's unique values keeps its own.
			sets = append(sets, q+" = IF("+strings.Join(samePK, " AND ")+", VALUES("+q+"), "+q+")")
		} else {
			sets = append(sets, q+" = excluded."+q)
		}
	}
	key := sqlscan.Quote(t.dialect, t.key)
	switch {
	case t.dialect == "mysql" && len(sets) == 0:
		b.WriteString(" ON DUPLICATE KEY UPDATE " + key + " = " + key)
	case t.dialect == "mysql":
		b.WriteString(" ON DUPLICATE KEY UPDATE " + strings.Join(sets, ", "))
	case len(sets) == 0:
		b.WriteString(" ON CONFLICT (" + t.quotedPK() + ") DO NOTHING")
	default:
		b.WriteString(" ON CONFLICT (" + t.quotedPK() + ") DO UPDATE SET " + strings.Join(sets, ", "))
	}
	res, err := t.writeValues(ctx, db, b.String(), args...)
	if err != nil || t.dialect != "mysql" {
		return err
	}
	// Each row written counts 1 or 2; fewer may be a row left out by another
	// row's unique value (or rows the same already: replays).
	if n, err := res.RowsAffected(); err != nil || n >= int64(len(rows)) {
		return err
	}
	return t.mustBeWritten(ctx, db, rows)
}

// mustBeWritten fails, naming both keys, when a row of rows is not on db
// because another row there holds one of its unique values: on MySQL the
// copy leaves that row as it was and writes nothing of the copied one.
func (t *movedTable) mustBeWritten(ctx context.Context, db execQuerier, rows [][]any) error {
	var keys []any
	for _, row := range rows {
		keys = append(keys, t.pkOf(row)...)
	}
	in := t.quotedPK() + " IN (" + placeholders(t.dialect, 0, len(keys)) + ")"
	if len(t.pk) > 1 {
		tuple := "(" + placeholders(t.dialect, 0, len(t.pk)) + ")"
		in = "(" + t.quotedPK() + ") IN (" + strings.Repeat(tuple+", ", len(rows)-1) + tuple + ")"
	}
	found, err := readRows(ctx, db, len(t.pk), "SELECT "+t.quotedPK()+" FROM "+sqlscan.Quote(t.dialect, t.name)+" WHERE "+in, keys...)
	if err != nil || len(found) == len(rows) {
		return err
	}
	written := map[string]bool{}
	for _, f := range found {
		written[pkText(f)] = true
	}
	for _, row := range rows {
		if !written[pkText(t.pkOf(row))] {
			return fmt.Errorf("%w: %s: the row %s conflicts on the target with the row %s on a unique index other than the key; nothing was overwritten: make the values unique, then move again%w",
				ErrVerify, t.name, pkText(t.pkOf(row)), t.holderOfUniqueValues(ctx, db, row), noText{errUniqueValueHeld})
		}
	}
	return nil
}

// pkOf is a row's values of the primary key's columns.
func (t *movedTable) pkOf(row []any) []any {
	values := make([]any, len(t.pk))
	for i, c := range t.pk {
		values[i] = row[slices.Index(t.columns, c)]
	}
	return values
}

// pkText is a primary key's values as text, comma-separated.
func pkText(values []any) string {
	texts := make([]string, len(values))
	for i, v := range values {
		texts[i] = asText(v)
	}
	return strings.Join(texts, ",")
}

// asText is a value read back, as text: the drivers give text as []byte.
func asText(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return fmt.Sprint(v)
}

// holderOfUniqueValues names the key of the row of db that holds one of
// row's values of a unique index other than the primary key.
func (t *movedTable) holderOfUniqueValues(ctx context.Context, db execQuerier, row []any) string {
	indexes, err := readRows(ctx, db, 2, "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS "+
		"WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND NON_UNIQUE = 0 AND INDEX_NAME <> 'PRIMARY' ORDER BY INDEX_NAME, SEQ_IN_INDEX", t.name)
	if err != nil {
		return "(unknown: " + err.Error() + ")"
	}
	var where []string
	var args []any
	for i := 0; i < len(indexes); {
		var parts []string
		var values []any
		usable := true // a column the source does not have: this index cannot be asked
		for name := indexes[i][0]; i < len(indexes) && asText(indexes[i][0]) == asText(name); i++ {
			column := asText(indexes[i][1])
			at := slices.Index(t.columns, column)
			if at < 0 {
				usable = false
				continue
			}
			parts, values = append(parts, sqlscan.Quote(t.dialect, column)+" = ?"), append(values, row[at])
		}
		if usable && len(parts) > 0 {
			where, args = append(where, "("+strings.Join(parts, " AND ")+")"), append(args, values...)
		}
	}
	if len(where) == 0 {
		return "(none found)"
	}
	holders, err := readRows(ctx, db, len(t.pk), "SELECT "+t.quotedPK()+" FROM "+sqlscan.Quote(t.dialect, t.name)+" WHERE "+strings.Join(where, " OR ")+" LIMIT 1", args...)
	if err != nil || len(holders) == 0 {
		return "(none found)"
	}
	return pkText(holders[0])
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

// byKeys reads the rows with the given keys, up to chunkBytes of values
// (full: others may be unread).
func (t *movedTable) byKeys(ctx context.Context, db rangeQuerier, keys []any) ([][]any, bool, error) {
	q := "SELECT " + t.quotedColumns() + " FROM " + sqlscan.Quote(t.dialect, t.name) + " WHERE " + sqlscan.Quote(t.dialect, t.key) + " IN (" + placeholders(t.dialect, 0, len(keys)) + ")"
	return t.readValues(ctx, db, q, keys...)
}

// deleteKeys deletes the rows with the given keys, on conn or db.
func (t *movedTable) deleteKeys(ctx context.Context, db deleter, keys []any) error {
	if len(keys) == 0 {
		return nil
	}
	q := "DELETE FROM " + sqlscan.Quote(t.dialect, t.name) + " WHERE " + sqlscan.Quote(t.dialect, t.key) + " IN (" + placeholders(t.dialect, 0, len(keys)) + ")"
	if t.referencesItself && t.dialect == "mysql" {
		q += " ORDER BY " + sqlscan.Quote(t.dialect, t.key) + " DESC" // InnoDB checks each row as it goes: children, made later, first
	}
	_, err := db.ExecContext(ctx, q, keys...)
	return err
}

// deleteInAnyOrder deletes the rows with the given keys, those of a table
// referencing itself in any order; it returns the keys not deleted.
func (t *movedTable) deleteInAnyOrder(ctx context.Context, db deleter, keys []any) ([]any, error) {
	del := func(keys []any) error { return t.deleteKeys(ctx, db, keys) }
	if !t.referencesItself {
		if err := del(keys); err != nil {
			return keys, err
		}
		return nil, nil
	}
	return inAnyOrder(keys, del)
}

// rangeKeys returns up to limit keys of the range's rows; of a table
// referencing itself, from the highest key down, below the key given.
func (t *movedTable) rangeKeys(ctx context.Context, db rangeQuerier, r Range, limit int, below ...any) ([]any, error) {
	q := "SELECT " + sqlscan.Quote(t.dialect, t.key) + " FROM " + sqlscan.Quote(t.dialect, t.name) + " WHERE " + t.inRange
	if len(below) > 0 {
		q += " AND " + sqlscan.Quote(t.dialect, t.key) + " < " + placeholders(t.dialect, 2, 1)
	}
	if t.referencesItself {
		q += " ORDER BY " + sqlscan.Quote(t.dialect, t.key) + " DESC"
	}
	rows, err := db.QueryContext(ctx, q+" LIMIT "+strconv.Itoa(limit), append([]any{r.From, r.To}, below...)...)
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

// noText wraps an error that marks another without adding to its text.
type noText struct{ err error }

func (n noText) Error() string { return "" }
func (n noText) Unwrap() error { return n.err }
