package shardid

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
)

// quiet is Config.Log for plugins on fake databases, whose made-up answers
// to the shared map's queries would be warned about.
var quiet = slog.New(slog.DiscardHandler)

// fakeConnector is a database/sql connector whose connections answer every
// statement at once, without I/O: an INSERT or UPDATE affects one row, and a
// query returns one row (id, name). Benchmarks use it so that only the CPU
// that GORM and the plugin spend is measured.
type fakeConnector struct{ statements atomic.Int64 }

func (c *fakeConnector) Connect(context.Context) (driver.Conn, error) { return fakeConn{c}, nil }
func (c *fakeConnector) Driver() driver.Driver                        { return fakeDriver{c} }

type fakeDriver struct{ c *fakeConnector }

func (d fakeDriver) Open(string) (driver.Conn, error) { return fakeConn(d), nil }

type fakeConn struct{ c *fakeConnector }

func (fakeConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (fakeConn) Close() error                        { return nil }
func (fakeConn) Begin() (driver.Tx, error)           { return fakeTx{}, nil }
func (c fakeConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	c.c.statements.Add(1)
	return driver.RowsAffected(1), nil
}
func (c fakeConn) QueryContext(_ context.Context, query string, _ []driver.NamedValue) (driver.Rows, error) {
	c.c.statements.Add(1)
	if rows, ok := setupAnswer(query, func() string { return fmt.Sprintf("fake-%p", c.c) }); ok {
		return rows, nil
	}
	return &fakeRows{columns: []string{"id", "name"}, row: []driver.Value{int64(506214187877944320), "n"}}, nil
}

type fakeTx struct{}

func (fakeTx) Commit() error   { return nil }
func (fakeTx) Rollback() error { return nil }

type fakeRows struct {
	columns []string
	row     []driver.Value
	done    bool
}

func (r *fakeRows) Columns() []string { return r.columns }
func (*fakeRows) Close() error        { return nil }
func (r *fakeRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	copy(dest, r.row)
	return nil
}

// setupAnswer answers what GORM and the plugin ask a fake database before
// any statement: SQLite's version, and the database's shardid token, which
// tells the fake databases apart (made only then: the benchmarks count
// allocations). It reads the queries' beginnings only: searching a
// statement's text costs more where its table's name is more like these.
func setupAnswer(query string, token func() string) (driver.Rows, bool) {
	switch {
	case strings.HasPrefix(query, "select sqlite_version"):
		return &fakeRows{columns: []string{"version"}, row: []driver.Value{"3.45.0"}}, true
	case strings.HasPrefix(query, "SELECT token FROM shardid_database "):
		return &fakeRows{columns: []string{"token"}, row: []driver.Value{token()}}, true
	}
	return nil, false
}

func newFakeDB() (*sql.DB, *fakeConnector) {
	c := &fakeConnector{}
	return sql.OpenDB(c), c
}
