package shardid

import (
	"fmt"
	"math"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// hintKind says how a clause names the shard of a statement.
type hintKind uint8

const (
	hintShard hintKind = iota + 1 // a logical shard
	hintID                        // the shard bits of an ID
	hintUUID                      // the shard bits of a UUID
	hintKey                       // the hash of a key, as the tag option hash: does
	hintAll                       // every physical database
)

// Clause says which shard a statement is for; pass it to db.Clauses. It is a
// gorm.StatementModifier, kept in Statement.Settings, so it carries into a
// transaction begun from the statement and into that transaction's
// statements. It adds nothing to the SQL.
type Clause struct{ hint shardHint }

var (
	_ gorm.StatementModifier = Clause{}
	_ clause.Expression      = Clause{}
)

// shardHint is what a Clause says.
type shardHint struct {
	kind  hintKind
	shard int
	id    int64
	key   any
}

// hintSettingKey is the Statement.Settings key of the statement's shardHint.
type hintSettingKey struct{}

// hintOwnerKey is the Statement.Settings key of the statement a Clause was
// given to; a sub-statement that inherited the clause drops it (ownSettings).
type hintOwnerKey struct{}

// txPhysicalKey is the Statement.Settings key of the physical database that a
// transaction begun from this statement is on.
type txPhysicalKey struct{}

// OnShard routes the statement to the physical database holding logical
// shard n. With Begin or Transaction, the transaction begins there.
func OnShard(n int) Clause { return Clause{shardHint{kind: hintShard, shard: n}} }

// ByID routes the statement to the physical database holding the logical
// shard in id's shard bits: of an int64 ID, or of a UUID of the uuidv7 or
// uuidv4 strategy (a uuid.UUID, a [16]byte, or its text). With Begin or
// Transaction, the transaction begins there.
func ByID[T ~int | ~int64 | ~uint64 | ~string | ~[16]byte](id T) Clause {
	switch v := reflect.ValueOf(id); v.Kind() {
	case reflect.String, reflect.Array:
		return Clause{shardHint{kind: hintUUID, key: id}}
	case reflect.Uint64:
		if v.Uint() > math.MaxInt64 {
			return Clause{shardHint{kind: hintID, id: -1}} // no ID: refused as one
		}
		return Clause{shardHint{kind: hintID, id: int64(v.Uint())}}
	default:
		return Clause{shardHint{kind: hintID, id: v.Int()}}
	}
}

// ByKey routes the statement to the physical database holding the logical
// shard that the tag option hash: gives key: [HashKey](key) % shard count.
func ByKey(key any) Clause { return Clause{shardHint{kind: hintKey, key: key}} }

// AllShards runs a query on every physical database, concurrently, and merges
// the results: counts are summed; rows ordered by the key, or by the model's
// NOT NULL integer or time columns, are merged k-way, with LIMIT and OFFSET
// applied to the whole; without an order they come one database after
// another. Anything else that cannot be merged right is refused with
// [ErrCrossShard]. Updates and deletes run on every physical database, one
// after another.
func AllShards() Clause { return Clause{shardHint{kind: hintAll}} }

// ModifyStatement implements gorm.StatementModifier. Outside a transaction it
// also points the statement at the shard's database, so that Begin and
// Transaction begin there.
func (c Clause) ModifyStatement(stmt *gorm.Statement) {
	h := c.hint
	stmt.Settings.Store(hintSettingKey{}, h)
	stmt.Settings.Store(hintOwnerKey{}, stmt)
	p, ok := stmt.DB.Config.Plugins[pluginName].(*Plugin)
	if !ok || h.kind == hintAll || inTransaction(stmt.ConnPool) {
		return
	}
	if s, err := p.hintShard(h); err == nil {
		shardMap := p.router.Map()
		k := shardMap.Physical(s)
		if pool, err := p.poolOf(stmt.Context, k, stmt.ConnPool); err == nil { // else the statement's routing reports it
			stmt.ConnPool = pool
			stmt.Settings.Store(txPhysicalKey{}, k)
			stmt.Settings.Store(txMapKey{}, shardMap)
		}
	}
}

// Build implements clause.Expression, so that db.Clauses takes a Clause; it
// writes nothing.
func (Clause) Build(clause.Builder) {}

// hintShard returns the logical shard a hint names.
func (p *Plugin) hintShard(h shardHint) (int, error) {
	switch h.kind {
	case hintShard:
		if h.shard < 0 || h.shard >= p.layout.ShardCount() {
			return 0, fmt.Errorf("%w: OnShard(%d): logical shards are 0..%d", ErrNoShard, h.shard, p.layout.ShardCount()-1)
		}
		return h.shard, nil
	case hintID:
		if h.id <= 0 {
			return 0, fmt.Errorf("%w: ByID(%d): an ID is positive", ErrNoShard, h.id)
		}
		return p.layout.Shard(h.id), nil
	case hintUUID:
		u, err := uuidOf(h.key)
		if err != nil {
			return 0, fmt.Errorf("%w: ByID(%v): %w", ErrNoShard, h.key, err)
		}
		return p.uuids.Shard(u), nil
	case hintKey:
		hash, err := HashKey(h.key)
		if err != nil {
			return 0, fmt.Errorf("ByKey: %w", err)
		}
		return int(hash % uint64(p.layout.ShardCount())), nil
	}
	return 0, fmt.Errorf("%w: AllShards names no single shard", ErrNoShard)
}

// inTransaction reports whether pool is a transaction.
func inTransaction(pool gorm.ConnPool) bool {
	_, ok := pool.(gorm.TxCommitter)
	return ok
}
