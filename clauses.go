package shardid

import (
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid/internal/engine"
)

// Clause says which shard a statement is for; pass it to db.Clauses, to
// gorm.G as an option, or as a condition where GORM takes no clause
// (gorm.G's PreloadBuilder.Where): among a statement's top-level WHERE
// conditions it routes the statement as db.Clauses does. It is a
// gorm.StatementModifier, kept in Statement.Settings, so it carries into a
// transaction begun from the statement and into that transaction's
// statements. It adds nothing to the SQL.
type Clause struct{ hint engine.Hint }

var (
	_ gorm.StatementModifier = Clause{}
	_ clause.Expression      = Clause{}
)

// OnShard routes the statement to the physical database holding logical
// shard n. With Begin or Transaction, the transaction begins there.
func OnShard(n int) Clause { return Clause{engine.OnShard(n)} }

// ByID routes the statement to the physical database holding the logical
// shard in id's shard bits: of an int64 ID, or of a UUID of the uuidv7 or
// uuidv4 strategy (a uuid.UUID, a [16]byte, or its text). With Begin or
// Transaction, the transaction begins there.
func ByID[T ~int | ~int64 | ~uint64 | ~string | ~[16]byte](id T) Clause {
	return Clause{engine.ByID(id)}
}

// ByKey routes the statement to the physical database holding the logical
// shard that the tag option hash: gives key: [HashKey](key) % shard count.
func ByKey(key any) Clause { return Clause{engine.ByKey(key)} }

// AllShards runs a query on every physical database, concurrently, and merges
// the results: counts are summed; rows ordered by the key, or by the model's
// NOT NULL integer or time columns, are merged k-way, with LIMIT and OFFSET
// applied to the whole; without an order they come one database after
// another. Anything else that cannot be merged right is refused with
// [ErrCrossShard]. Updates and deletes run on every physical database, one
// after another.
func AllShards() Clause { return Clause{engine.AllShards()} }

// AcrossShards begins a transaction over several shards:
//
//	db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error { … })
//
// Each statement in it is routed on its own, as outside a transaction, and
// runs in a branch of the transaction on its physical database, opened on
// first use (unsharded models: on the plugin's database). Commit commits
// every branch with two-phase commit (see Config.Atomic): all of it or none,
// also if the process dies midway (RecoverTransactions). Rollback, or an
// error, rolls every branch back; savepoints (a nested Transaction) apply
// to every branch. Reads see each database's own snapshot: the transaction
// is atomic, not isolated across databases. Outside Begin or Transaction
// the clause does nothing.
func AcrossShards() Clause { return Clause{engine.AcrossShards()} }

// ModifyStatement implements gorm.StatementModifier. Outside a transaction it
// also points the statement at the shard's database, so that Begin and
// Transaction begin there.
func (c Clause) ModifyStatement(stmt *gorm.Statement) {
	var e *engine.Engine
	if p, ok := stmt.DB.Config.Plugins[pluginName].(*Plugin); ok {
		e = p.engine()
	}
	e.KeepHint(stmt, c.hint)
}

func init() {
	engine.HintOf = func(x clause.Expression) (engine.Hint, bool) {
		c, ok := x.(Clause)
		return c.hint, ok
	}
}

// Build implements clause.Expression, so that db.Clauses takes a Clause; it
// writes nothing.
func (Clause) Build(clause.Builder) {}
