package shardid

import (
	"database/sql"
	"runtime"
	"sync"
	"weak"

	"gorm.io/gorm"
)

// txPhysicals remembers which physical database each open transaction is on,
// for statements that reach it without the Settings of the statement that
// began it (GORM starts association saves with fresh statements). Entries go
// away with their transaction. It is safe for concurrent use.
type txPhysicals struct {
	byTx sync.Map // weak.Pointer[sql.Tx] → int
}

// sqlTx returns the *sql.Tx behind a connection pool, if it is one.
func sqlTx(pool gorm.ConnPool) *sql.Tx {
	switch tx := pool.(type) {
	case *sql.Tx:
		return tx
	case *gorm.PreparedStmtTX:
		if inner, ok := tx.Tx.(*sql.Tx); ok {
			return inner
		}
	}
	return nil
}

func (r *txPhysicals) remember(pool gorm.ConnPool, k int) {
	tx := sqlTx(pool)
	if tx == nil {
		return
	}
	key := weak.Make(tx)
	if _, loaded := r.byTx.LoadOrStore(key, k); !loaded {
		runtime.AddCleanup(tx, func(key weak.Pointer[sql.Tx]) { r.byTx.Delete(key) }, key)
	}
}

func (r *txPhysicals) lookup(pool gorm.ConnPool) (int, bool) {
	tx := sqlTx(pool)
	if tx == nil {
		return 0, false
	}
	k, ok := r.byTx.Load(weak.Make(tx))
	if !ok {
		return 0, false
	}
	return k.(int), true
}
