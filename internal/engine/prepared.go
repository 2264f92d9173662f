package engine

import (
	"context"

	"gorm.io/gorm"
)

// GORM keys prepared statements by their SQL text alone, and a prepared
// session carries the store of the database it was made on. A statement the
// plugin sends to a physical database gets that database's own store, as
// gorm.io/plugin/dbresolver gives each of its sources.

// poolOf returns physical database k's connection pool in the form of
// current: its own prepared-statement store when current is one.
func (e *Engine) poolOf(ctx context.Context, k int, current gorm.ConnPool) (gorm.ConnPool, error) {
	pool, err := e.pool(ctx, k)
	if err != nil {
		return nil, err
	}
	return e.preparedFor(k, pool, current), nil
}

// ownPool returns the plugin's own database's pool in the form of current.
func (e *Engine) ownPool(current gorm.ConnPool) gorm.ConnPool {
	return e.preparedFor(-1, e.db.ConnPool, current)
}

func (e *Engine) preparedFor(key int, pool, current gorm.ConnPool) gorm.ConnPool {
	if _, prepared := current.(*gorm.PreparedStmtDB); !prepared {
		return pool
	}
	if _, already := pool.(*gorm.PreparedStmtDB); already {
		return pool
	}
	if store, ok := e.prepared.Load(key); ok {
		return store.(*gorm.PreparedStmtDB)
	}
	store, _ := e.prepared.LoadOrStore(key, gorm.NewPreparedStmtDB(pool, e.db.PrepareStmtMaxSize, e.db.PrepareStmtTTL))
	return store.(*gorm.PreparedStmtDB)
}
