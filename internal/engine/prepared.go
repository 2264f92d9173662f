package engine

import (
	"context"
	"database/sql"

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
	if c, ok := current.(*clausePool); ok {
		current = c.had
	}
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

// unprepareTransaction gives a statement of a prepared session begun in a
// transaction on a physical database, or over several, the transaction
// without the session's store: GORM gives such a session the store of the
// plugin's own database, whose statements another database's transaction
// cannot run. It runs in its transaction, prepared by that database's own
// store if the transaction has one (gorm.Config's PrepareStmt), else
// unprepared.
func (e *Engine) unprepareTransaction(stmt *gorm.Statement) {
	for {
		prepared, ok := stmt.ConnPool.(*gorm.PreparedStmtTX)
		if !ok {
			return
		}
		if global := acrossShards(prepared.Tx); global != nil {
			stmt.ConnPool = global // which prepares nothing: its statements run on branches
			return
		}
		inner := sqlTx(prepared.Tx)
		if inner == nil {
			return
		}
		k, onShard := e.physicalOfPool(dbBehind(inner))
		if !onShard {
			return
		}
		if prepared.PreparedStmtDB != nil {
			if j, own := e.physicalOfPool(prepared.PreparedStmtDB.ConnPool); own && j == k {
				return // the database's own store
			}
		}
		stmt.ConnPool = prepared.Tx
	}
}

// acrossShards returns the transaction across shards that pool is, or is
// inside prepared sessions of; nil if none.
func acrossShards(pool gorm.ConnPool) gorm.ConnPool {
	switch tx := pool.(type) {
	case *globalTx, *branchPool:
		return tx
	case *gorm.PreparedStmtTX:
		return acrossShards(tx.Tx)
	}
	return nil
}

// StmtContext makes the global transaction a gorm.Tx, so that a prepared
// session begun in it stays in it (unprepareTransaction).
func (g *globalTx) StmtContext(_ context.Context, stmt *sql.Stmt) *sql.Stmt { return stmt }

// StmtContext makes a branch a gorm.Tx, as its global transaction.
func (b *branchPool) StmtContext(_ context.Context, stmt *sql.Stmt) *sql.Stmt { return stmt }
