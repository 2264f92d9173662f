package engine

import (
	"fmt"
	"math"
	"reflect"
	"strconv"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// hintKind says how a clause names the shard of a statement.
type hintKind uint8

const (
	hintShard  hintKind = iota + 1 // a logical shard
	hintID                         // the shard bits of an ID
	hintUUID                       // the shard bits of a UUID
	hintKey                        // the hash of a key, as the tag option hash: does
	hintAll                        // every physical database
	hintAcross                     // a transaction over several shards
)

// Hint is what a shardid.Clause says of a statement's shard.
type Hint struct {
	kind  hintKind
	shard int
	id    int64
	key   any
}

// OnShard names logical shard n.
func OnShard(n int) Hint { return Hint{kind: hintShard, shard: n} }

// ByID names the shard in an ID's shard bits: of an int64 ID, or of a UUID
// (a uuid.UUID, a [16]byte, or its text).
func ByID(id any) Hint {
	switch v := reflect.ValueOf(id); v.Kind() {
	case reflect.String, reflect.Array:
		return Hint{kind: hintUUID, key: id}
	case reflect.Uint, reflect.Uint64:
		if v.Uint() > math.MaxInt64 {
			return Hint{kind: hintID, id: -1, key: id} // no ID: refused as one, named as given
		}
		return Hint{kind: hintID, id: int64(v.Uint())}
	default:
		return Hint{kind: hintID, id: v.Int()}
	}
}

// ByKey names the shard of a hash key.
func ByKey(key any) Hint { return Hint{kind: hintKey, key: key} }

// AllShards names every physical database.
func AllShards() Hint { return Hint{kind: hintAll} }

// AcrossShards begins a transaction whose statements each go to their own
// shard, committed on all of them at once.
func AcrossShards() Hint { return Hint{kind: hintAcross} }

// hintSettingKey is the Statement.Settings key of the statement's Hint.
type hintSettingKey struct{}

// hintOwnerKey is the Statement.Settings key of the statement a Clause was
// given to; a sub-statement that inherited the clause drops it (ownSettings).
type hintOwnerKey struct{}

// acrossInTxKey is the Statement.Settings key saying AcrossShards was given
// in a transaction begun without it, where it does nothing.
type acrossInTxKey struct{}

// acrossInTxHint explains a statement refused for crossing shards in such
// a transaction.
func acrossInTxHint(stmt *gorm.Statement) string {
	if _, given := loadSetting(stmt, acrossInTxKey{}); !given {
		return ""
	}
	return "; shardid.AcrossShards() was given inside a transaction begun without it, where it does nothing (a nested Transaction is a savepoint of the outer one): begin the outermost transaction with it"
}

// txPhysicalKey is the Statement.Settings key of the physical database that a
// transaction begun from this statement is on.
type txPhysicalKey struct{}

// unavailableKey is the Statement.Settings key of the physical database a
// shard clause named, or a part of a statement over several runs on, and
// that could not be opened: the statement fails, and is counted, there.
type unavailableKey struct{}

// KeepHint keeps h in the statement. e, the engine of the statement's
// plugin, may be nil; outside a transaction it also points the statement
// at the shard's database (a clausePool, which follows the shard's moves),
// so that Begin and Transaction begin there, or fails the statement when
// that database cannot be opened.
func (e *Engine) KeepHint(stmt *gorm.Statement, h Hint) {
	if h.kind == hintAcross {
		// Not a route: the statements of the transaction route themselves.
		if e != nil && !inTransaction(stmt.ConnPool) {
			stmt.ConnPool = &acrossBeginner{e: e, pool: stmt.ConnPool}
		} else if globalOf(stmt.ConnPool) == nil {
			stmt.Settings.Store(acrossInTxKey{}, true) // does nothing: a refusal says so
		}
		return
	}
	stmt.Settings.Store(hintSettingKey{}, h)
	stmt.Settings.Store(hintOwnerKey{}, stmt)
	if e == nil || h.kind == hintAll || inTransaction(stmt.ConnPool) {
		return
	}
	s, err := e.hintShard(h)
	if err != nil {
		stmt.DB.AddError(err) // the statement, or a transaction begun from it, has no database to run on
		return
	}
	shardMap := e.router.Map()
	k := shardMap.Physical(s)
	if _, err := e.poolOf(stmt.Context, k, stmt.ConnPool); err != nil {
		stmt.DB.AddError(err) // ErrShardUnavailable, naming the database: not a transaction begun elsewhere
		stmt.Settings.Store(unavailableKey{}, k)
		stmt.ConnPool = unavailablePool{err: err, name: e.physical[k].name, own: e.db.ConnPool} // nor one begun on the plugin's own database
		return
	}
	had := stmt.ConnPool
	if c, ok := had.(*clausePool); ok {
		had = c.had
	}
	c := &clausePool{e: e, shard: s, had: had}
	stmt.ConnPool = c
	stmt.Settings.Store(clausePoolKey{}, c)
	stmt.Settings.Store(txPhysicalKey{}, k)
}

// hintShard returns the logical shard a hint names.
func (e *Engine) hintShard(h Hint) (int, error) {
	switch h.kind {
	case hintShard:
		if h.shard < 0 || h.shard >= e.layout.ShardCount() {
			return 0, fmt.Errorf("%w: OnShard(%d): logical shards are 0..%d", ErrNoShard, h.shard, e.layout.ShardCount()-1)
		}
		return h.shard, nil
	case hintID:
		if h.key != nil {
			return 0, fmt.Errorf("%w: ByID(%v): above 2^63-1, the largest ID", ErrNoShard, h.key)
		}
		if h.id <= 0 {
			return 0, fmt.Errorf("%w: ByID(%d): an ID is positive", ErrNoShard, h.id)
		}
		return e.layout.Shard(h.id), nil
	case hintUUID:
		u, err := uuidOf(h.key)
		if s, isText := h.key.(string); err != nil && isText {
			if _, isNumber := strconv.ParseInt(s, 10, 64); isNumber == nil { // an int64 ID as text, as JSON carries shardid.ID
				return 0, fmt.Errorf("%w: ByID(%q): a string is read as a UUID's text; give an int64 ID as a number (strconv.ParseInt, or shardid.ID's value)", ErrNoShard, s)
			}
		}
		if err != nil {
			return 0, fmt.Errorf("%w: ByID(%v): %w", ErrNoShard, h.key, err)
		}
		return e.uuids.Shard(u), nil
	case hintKey:
		hash, err := HashKey(h.key)
		if err != nil {
			return 0, fmt.Errorf("ByKey: %w", err)
		}
		return int(hash % uint64(e.layout.ShardCount())), nil
	}
	return 0, fmt.Errorf("%w: AllShards names no single shard", ErrNoShard)
}

// inTransaction reports whether pool is a transaction.
func inTransaction(pool gorm.ConnPool) bool {
	_, ok := pool.(gorm.TxCommitter)
	return ok
}

// HintOf returns the hint of a shardid.Clause; package shardid sets it.
var HintOf = func(clause.Expression) (Hint, bool) { return Hint{}, false }

// keepHintsInWhere keeps a shard clause given as a condition, where GORM
// takes no clauses (gorm.G's PreloadBuilder.Where), as db.Clauses keeps it,
// and takes it out of the WHERE, in which it would build no SQL.
func (e *Engine) keepHintsInWhere(stmt *gorm.Statement) {
	c, ok := stmt.Clauses["WHERE"]
	if !ok {
		return
	}
	where, ok := c.Expression.(clause.Where)
	if !ok {
		return
	}
	kept, taken := e.takeHints(stmt, where.Exprs)
	if !taken {
		return
	}
	if len(kept) == 0 {
		delete(stmt.Clauses, "WHERE") // no condition: GORM refuses an update or delete without one
		return
	}
	c.Expression = clause.Where{Exprs: kept}
	stmt.Clauses["WHERE"] = c
}

// takeHints keeps the shard clauses among exprs, and in their AND groups (a
// list of conditions given at once), and returns exprs without them, in a
// new slice (exprs may be another statement's too), and whether there were
// any. A clause under OR or NOT is left, and refused.
func (e *Engine) takeHints(stmt *gorm.Statement, exprs []clause.Expression) ([]clause.Expression, bool) {
	var kept []clause.Expression
	for i, x := range exprs {
		keep, changed := true, false
		if h, isHint := HintOf(x); isHint {
			e.KeepHint(stmt, h)
			keep = false
		} else if and, isAnd := x.(clause.AndConditions); isAnd {
			if rest, taken := e.takeHints(stmt, and.Exprs); taken {
				x, keep, changed = clause.AndConditions{Exprs: rest}, len(rest) > 0, true
			}
		}
		if kept == nil && (!keep || changed) {
			kept = append(make([]clause.Expression, 0, len(exprs)), exprs[:i]...)
		}
		if kept != nil && keep {
			kept = append(kept, x)
		}
	}
	return kept, kept != nil
}
