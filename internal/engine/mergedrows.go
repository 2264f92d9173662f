package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"reflect"
	"sync"
)

// A result merged from several databases reaches GORM as the *sql.Rows (or
// *sql.Row) one database would give, read from memory by a driver of the
// plugin's own: GORM's Scan, Row, Rows and Pluck then read it as they read
// any other, types and column names included.

// mergedColumn is a column of a merged result, as its parts described it.
type mergedColumn struct {
	name, databaseType string
	scanType           reflect.Type
}

// mergedResult is the rows of a merged result.
type mergedResult struct {
	columns []mergedColumn
	rows    [][]any
}

var errMergedReadOnly = errors.New("shardid: a merged result is only read")

// mergedDB serves merged results; its connections hold nothing.
var mergedDB = sync.OnceValue(func() *sql.DB { return sql.OpenDB(mergedConnector{}) })

func (r *mergedResult) query(ctx context.Context) (*sql.Rows, error) {
	return mergedDB().QueryContext(ctx, "", r)
}

func (r *mergedResult) queryRow(ctx context.Context) *sql.Row {
	return mergedDB().QueryRowContext(ctx, "", r)
}

type mergedConnector struct{}

func (mergedConnector) Connect(context.Context) (driver.Conn, error) { return mergedConn{}, nil }
func (mergedConnector) Driver() driver.Driver                        { return mergedDriver{} }

type mergedDriver struct{}

func (mergedDriver) Open(string) (driver.Conn, error) { return mergedConn{}, nil }

type mergedConn struct{}

func (mergedConn) Prepare(string) (driver.Stmt, error) { return nil, errMergedReadOnly }
func (mergedConn) Close() error                        { return nil }
func (mergedConn) Begin() (driver.Tx, error)           { return nil, errMergedReadOnly }

// CheckNamedValue lets the result itself through as the query's argument.
func (mergedConn) CheckNamedValue(*driver.NamedValue) error { return nil }

// failedRow is a row whose Scan returns err.
func failedRow(ctx context.Context, err error) *sql.Row {
	return mergedDB().QueryRowContext(context.WithoutCancel(ctx), "", failedQuery{err})
}

// failedQuery is the argument of a query that fails with err.
type failedQuery struct{ err error }

func (mergedConn) QueryContext(_ context.Context, _ string, args []driver.NamedValue) (driver.Rows, error) {
	if len(args) != 1 {
		return nil, errMergedReadOnly
	}
	if failed, ok := args[0].Value.(failedQuery); ok {
		return nil, failed.err
	}
	r, ok := args[0].Value.(*mergedResult)
	if !ok {
		return nil, errMergedReadOnly
	}
	return &mergedRows{result: r}, nil
}

type mergedRows struct {
	result *mergedResult
	next   int
}

func (r *mergedRows) Columns() []string {
	names := make([]string, len(r.result.columns))
	for i, c := range r.result.columns {
		names[i] = c.name
	}
	return names
}

func (r *mergedRows) Close() error { return nil }

func (r *mergedRows) Next(dest []driver.Value) error {
	if r.next == len(r.result.rows) {
		return io.EOF
	}
	for i, v := range r.result.rows[r.next] {
		dest[i] = v
	}
	r.next++
	return nil
}

func (r *mergedRows) ColumnTypeScanType(i int) reflect.Type {
	if t := r.result.columns[i].scanType; t != nil {
		return t
	}
	return reflect.TypeFor[any]()
}

func (r *mergedRows) ColumnTypeDatabaseTypeName(i int) string {
	return r.result.columns[i].databaseType
}
