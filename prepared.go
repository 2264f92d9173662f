package shardid

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
func (p *Plugin) poolOf(ctx context.Context, k int, current gorm.ConnPool) (gorm.ConnPool, error) {
	pool, err := p.pool(ctx, k)
	if err != nil {
		return nil, err
	}
	return p.preparedFor(k, pool, current), nil
}

// ownPool returns the plugin's own database's pool in the form of current.
func (p *Plugin) ownPool(current gorm.ConnPool) gorm.ConnPool {
	return p.preparedFor(-1, p.db.ConnPool, current)
}

func (p *Plugin) preparedFor(key int, pool, current gorm.ConnPool) gorm.ConnPool {
	if _, prepared := current.(*gorm.PreparedStmtDB); !prepared {
		return pool
	}
	if _, already := pool.(*gorm.PreparedStmtDB); already {
		return pool
	}
	if store, ok := p.prepared.Load(key); ok {
		return store.(*gorm.PreparedStmtDB)
	}
	store, _ := p.prepared.LoadOrStore(key, gorm.NewPreparedStmtDB(pool, p.db.PrepareStmtMaxSize, p.db.PrepareStmtTTL))
	return store.(*gorm.PreparedStmtDB)
}
