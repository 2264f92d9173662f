package engine

import (
	"context"
	"database/sql"

	"gorm.io/gorm"
)

// clausePool is the connection pool of a statement given a one-shard clause
// outside a transaction: it runs on, and GORM's Begin begins on, the
// database the shared map gives the clause's shard when it is used, not
// when the clause was given, so that a *gorm.DB kept with the clause (a
// tenant's) follows its shard's moves. The plugin's routing binds the
// statements themselves; this is what reaches GORM's Begin, Connection and
// DB, and SQL the plugin leaves where the clause put it.
type clausePool struct {
	e     *Engine
	shard int
	had   gorm.ConnPool // the statement's before the clause: a prepared session's store keeps it prepared
}

// clausePoolKey is the Statement.Settings key of the statement's
// clausePool, which it gets back as it ends (leaveShardPool).
type clausePoolKey struct{}

// physical is the database the map gives the clause's shard now.
func (c *clausePool) physical() int {
	return c.e.router.Map().Physical(c.shard)
}

func (c *clausePool) resolve(ctx context.Context) (gorm.ConnPool, error) {
	return c.e.poolOf(ctx, c.physical(), c.had)
}

// BeginTx begins on the shard's database, and notes the map it was chosen
// by: a statement of the transaction that the map sends elsewhere since is
// told its range moved.
func (c *clausePool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	shardMap := c.e.router.Map()
	pool, err := c.e.poolOf(ctx, shardMap.Physical(c.shard), c.had)
	if err != nil {
		return nil, err
	}
	var tx gorm.ConnPool
	switch beginner := pool.(type) {
	case gorm.ConnPoolBeginner:
		tx, err = beginner.BeginTx(ctx, opts)
	case gorm.TxBeginner:
		tx, err = beginner.BeginTx(ctx, opts)
	default:
		return nil, gorm.ErrInvalidTransaction
	}
	if err == nil {
		c.e.txMaps.remember(tx, shardMap)
	}
	return tx, err
}

func (c *clausePool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	pool, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	return pool.ExecContext(ctx, query, args...)
}

func (c *clausePool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	pool, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	return pool.QueryContext(ctx, query, args...)
}

func (c *clausePool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	pool, err := c.resolve(ctx)
	if err != nil { // a Row carries no error of ours: one of an ended context runs nothing
		failed, cancel := context.WithCancel(ctx)
		cancel()
		return c.e.db.ConnPool.QueryRowContext(failed, query, args...)
	}
	return pool.QueryRowContext(ctx, query, args...)
}

func (c *clausePool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	pool, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	return pool.PrepareContext(ctx, query)
}

// GetDBConn gives GORM's DB(), and so Connection, the shard's database.
func (c *clausePool) GetDBConn() (*sql.DB, error) {
	pool, err := c.resolve(context.Background())
	if err != nil {
		return nil, err
	}
	switch pool := pool.(type) {
	case *sql.DB:
		return pool, nil
	case gorm.GetDBConnector:
		return pool.GetDBConn()
	}
	return nil, gorm.ErrInvalidDB
}
