package engine

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/shardid/shardid/internal/sqlerr"
)

// boundedConn is a connection a boundedConnector made: the driver's, whose
// Begin on a connection the server has ended since its last use fails with
// a bad connection naming the database, so that database/sql begins again
// on another one, at its last try a new one. pgx checks a pooled connection
// only when it has been idle a second, and its BeginTx, unlike its Exec and
// Query, returns the error of a lost connection as it is (the server's
// 57P01, or its own "conn closed" found before sending), which database/sql
// would return as it is too. Beginning again is safe: a BEGIN that failed
// changed nothing.
//
// The driver's optional interfaces are passed through; where the driver
// has none, each method answers as database/sql does without it.
type boundedConn struct {
	driver.Conn
	name string
}

var (
	_ driver.ConnBeginTx        = (*boundedConn)(nil)
	_ driver.ConnPrepareContext = (*boundedConn)(nil)
	_ driver.ExecerContext      = (*boundedConn)(nil)
	_ driver.QueryerContext     = (*boundedConn)(nil)
	_ driver.Pinger             = (*boundedConn)(nil)
	_ driver.SessionResetter    = (*boundedConn)(nil)
	_ driver.Validator          = (*boundedConn)(nil)
	_ driver.NamedValueChecker  = (*boundedConn)(nil)
)

func (c *boundedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.begin(ctx, opts)
	if err != nil && sqlerr.Ended(ctx) != nil {
		return nil, sqlerr.OfEndedContext(ctx, err) // pgx's timeout at the deadline is the context's end, not a lost database
	}
	if err != nil && (sqlerr.Unreachable(err) || sqlerr.Unsent(err)) {
		return nil, fmt.Errorf("%w: %s: %w: %w", ErrShardUnavailable, c.name, driver.ErrBadConn, err)
	}
	if err != nil {
		return nil, err
	}
	return boundedTx{Tx: tx, name: c.name, ctx: ctx}, nil
}

// boundedTx is a transaction of a boundedConn: its commit or rollback on a
// connection lost fails with ErrShardUnavailable naming the database, as its
// statements do (GORM's Commit and Rollback run no callback that would name
// it), or with its context's error once that ended: the driver cuts the
// connection's reads and writes when the context ends, which is then what
// lost it.
type boundedTx struct {
	driver.Tx
	name string
	ctx  context.Context // the transaction's, from BeginTx
}

func (t boundedTx) Commit() error {
	if err := t.Tx.Commit(); err != nil {
		ended := sqlerr.Ended(t.ctx) // the driver's deadline may fire before the context's timer
		switch {
		case ended != nil && sqlerr.Unsent(err):
			return fmt.Errorf("%w: %s: the context ended before the commit was sent, and the transaction did not commit: %w", ended, t.name, err)
		case ended != nil && sqlerr.Unreachable(err):
			return fmt.Errorf("%w: %s: the context ended before the commit's answer came, and whether it committed is unknown: %w", ended, t.name, err)
		case sqlerr.Unsent(err):
			return fmt.Errorf("%w: %s: the connection was lost before the commit was sent, and the transaction did not commit: %w", ErrShardUnavailable, t.name, err)
		case sqlerr.Unreachable(err):
			return fmt.Errorf("%w: %s: the commit's answer was lost, and whether it committed is unknown: %w", ErrShardUnavailable, t.name, err)
		}
		return err
	}
	return nil
}

func (t boundedTx) Rollback() error {
	if err := t.Tx.Rollback(); err != nil {
		if ended := sqlerr.Ended(t.ctx); ended != nil && (sqlerr.Unreachable(err) || sqlerr.Unsent(err)) {
			return fmt.Errorf("%w: %s: rolling back after the context ended: %w", ended, t.name, err)
		}
		if sqlerr.Unreachable(err) || sqlerr.Unsent(err) {
			return fmt.Errorf("%w: %s: rolling back: %w", ErrShardUnavailable, t.name, err)
		}
		return err
	}
	return nil
}

func (c *boundedConn) begin(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	if opts.Isolation != 0 || opts.ReadOnly {
		return nil, errors.New("sql: driver does not support non-default isolation level or read-only transactions")
	}
	return c.Conn.Begin() // a driver without BeginTx: database/sql would call it so
}

func (c *boundedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return c.Conn.Prepare(query)
}

func (c *boundedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if e, ok := c.Conn.(driver.ExecerContext); ok {
		return e.ExecContext(ctx, query, args)
	}
	return nil, driver.ErrSkip // database/sql prepares the statement
}

func (c *boundedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if q, ok := c.Conn.(driver.QueryerContext); ok {
		return q.QueryContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

func (c *boundedConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// ResetSession is the driver's, which checks a pooled connection before
// its use (pgx pings one idle over a second, go-sql-driver reads its socket).
func (c *boundedConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *boundedConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *boundedConn) CheckNamedValue(v *driver.NamedValue) error {
	if n, ok := c.Conn.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(v)
	}
	return driver.ErrSkip // database/sql converts the value itself
}
