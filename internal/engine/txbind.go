package engine

import (
	"database/sql"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"unsafe"
	"weak"

	"gorm.io/gorm"
)

// txRegistry keeps a note about each open transaction, for statements that
// reach it without the Settings of the statement that began it (GORM starts
// association saves with fresh statements). Notes go away with their
// transaction. It is safe for concurrent use.
type txRegistry[V any] struct {
	byTx sync.Map // weak.Pointer[sql.Tx] → V
}

// sqlTx returns the *sql.Tx behind a connection pool, if it is one.
func sqlTx(pool gorm.ConnPool) *sql.Tx {
	switch tx := pool.(type) {
	case *sql.Tx:
		return tx
	case *gorm.PreparedStmtTX: // around a *sql.Tx, or another prepared one (a prepared session of a prepared database)
		return sqlTx(tx.Tx)
	}
	return nil
}

// txDBField is where a *sql.Tx keeps the *sql.DB it was begun on (GORM's
// DB() reads it so too); txDBKnown whether this database/sql has it there.
var (
	txDBField, _ = reflect.TypeFor[sql.Tx]().FieldByName("db")
	txDBKnown    = txDBField.Type == reflect.TypeFor[*sql.DB]() && len(txDBField.Index) == 1
)

// dbBehind returns the *sql.DB a transaction was begun on: read at the
// field's offset, as reflection would, at every write's cost.
func dbBehind(tx *sql.Tx) *sql.DB {
	if !txDBKnown || tx == nil {
		return nil // not the database/sql this was written against
	}
	return *(**sql.DB)(unsafe.Add(unsafe.Pointer(tx), txDBField.Offset))
}

// gormTxKey is the key of the transaction GORM, or the plugin retrying a
// moved write, began for a routed write: in the write's context, where the
// statements its hooks and callbacks make find it.
type gormTxKey struct{}

// inGORMsTransaction reports whether the statement runs in a transaction
// GORM began for another, routed statement: it is a statement of its own,
// not one the application meant for that transaction's shard.
func inGORMsTransaction(stmt *gorm.Statement) bool {
	if _, ok := stmt.ConnPool.(*branchPool); ok {
		return true // only a statement made by another inherits a branch: its SQL is a statement of its own
	}
	tx := sqlTx(stmt.ConnPool)
	if tx == nil {
		return false
	}
	pool, ok := stmt.Context.Value(gormTxKey{}).(gorm.ConnPool)
	return ok && sqlTx(pool) == tx
}

func (r *txRegistry[V]) remember(pool gorm.ConnPool, v V) {
	tx := sqlTx(pool)
	if tx == nil {
		return
	}
	key := weak.Make(tx)
	if _, loaded := r.byTx.LoadOrStore(key, v); !loaded {
		runtime.AddCleanup(tx, func(key weak.Pointer[sql.Tx]) { r.byTx.Delete(key) }, key)
	}
}

func (r *txRegistry[V]) lookup(pool gorm.ConnPool) (V, bool) {
	var zero V
	tx := sqlTx(pool)
	if tx == nil {
		return zero, false
	}
	v, ok := r.byTx.Load(weak.Make(tx))
	if !ok {
		return zero, false
	}
	return v.(V), true
}

// inCreateInBatchesWrapper reports whether the calling statement is a batch of
// GORM's CreateInBatches running in the transaction that CreateInBatches
// itself opened around its batches ((*DB).CreateInBatches calls
// (*DB).Transaction, which calls the batch loop). Its caller rules out the
// nested case, where Transaction set a savepoint in a transaction of the
// application's.
func inCreateInBatchesWrapper() bool {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	inBatchLoop := false
	for {
		f, more := frames.Next()
		switch {
		case strings.HasPrefix(f.Function, "gorm.io/gorm.(*DB).CreateInBatches.func"):
			inBatchLoop = true
		case f.Function == "gorm.io/gorm.(*DB).Transaction":
			caller, _ := frames.Next()
			return inBatchLoop && caller.Function == "gorm.io/gorm.(*DB).CreateInBatches"
		}
		if !more {
			return false
		}
	}
}
