package engine

import (
	"context"
	"database/sql"
	"fmt"

	"gorm.io/gorm"
)

// unavailablePool is the connection pool of a statement whose shard clause
// names a database that cannot be opened (it is down, or the plugin is
// closed): every use fails with why, GORM's Begin among them. Left the
// plugin's own pool, a Transaction or Begin after the clause would begin a
// transaction there that nothing ends: GORM's Transaction returns the
// clause's error without a Rollback, and Begin's caller sees the error.
type unavailablePool struct {
	err  error
	name string        // the database's
	own  gorm.ConnPool // the plugin's own pool, for a Row that runs nothing
}

var _ gorm.ConnPoolBeginner = unavailablePool{}

// BeginTx fails short: GORM adds its error to the statement's, which says
// why already.
func (p unavailablePool) BeginTx(context.Context, *sql.TxOptions) (gorm.ConnPool, error) {
	return nil, fmt.Errorf("%w: %s: no transaction begun", ErrShardUnavailable, p.name)
}

func (p unavailablePool) ExecContext(context.Context, string, ...any) (sql.Result, error) {
	return nil, p.err
}

func (p unavailablePool) QueryContext(context.Context, string, ...any) (*sql.Rows, error) {
	return nil, p.err
}

func (p unavailablePool) PrepareContext(context.Context, string) (*sql.Stmt, error) {
	return nil, p.err
}

// QueryRowContext runs nothing: a Row carries no error of ours, so it gets
// that of an ended context.
func (p unavailablePool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	failed, cancel := context.WithCancel(ctx)
	cancel()
	return p.own.QueryRowContext(failed, query, args...)
}
