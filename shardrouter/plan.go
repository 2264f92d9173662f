package shardrouter

import (
	"errors"
	"slices"

	"gorm.io/gorm/clause"
)

// ErrNull is what a [KeyColumn]'s ShardOf returns for a NULL value, which
// matches no row on any database.
var ErrNull = errors.New("NULL matches no row")

// ErrAnyShard is what a [KeyColumn]'s ShardOf returns for a value that names
// no shard but that rows may hold on any database (a colocate column's 0,
// which an orphaned child keeps): a condition on it says nothing about the
// shard.
var ErrAnyShard = errors.New("the value names no shard; rows may hold it on any database")

// KeyColumn is a column whose values name a row's logical shard: the primary
// key, a colocate column (its values are IDs of the same shard) or a hash
// column (its values hash to the shard).
type KeyColumn struct {
	// Matches accepts the column as a condition names it: its table ("" when
	// unqualified) and its name.
	Matches func(table, name string) bool
	// ShardOf is the logical shard of a value of the column as a condition
	// binds it; [ErrNull] for NULL, [ErrAnyShard] for a value rows may hold
	// on any database, another error for a value that cannot name a shard
	// (the statement is refused with it).
	ShardOf func(v any) (int, error)
}

// Statement is what the planner reads of a statement on a sharded model: its
// shard clause, its conditions as GORM binds them, and the rows its values
// name, all as plain data.
type Statement struct {
	// Clause is what a shard clause allows: [Every] database for AllShards,
	// [Only] one for a clause naming a shard; the empty Set for no clause.
	Clause Set
	// Where holds the statement's AND-ed conditions (its WHERE clause's).
	Where []clause.Expression
	// Keys are the model's key columns, the primary key first.
	Keys []KeyColumn
	// Rows are the logical shards of the rows the statement's values name:
	// the destination struct of First(&T{ID: id}), the struct or slice of a
	// Delete, the model of Save and Model(&x).Updates.
	Rows []int
}

// Refusal says why a statement cannot be routed.
type Refusal uint8

const (
	// Routed: not refused.
	Routed Refusal = iota
	// OutsideClause: the conditions name rows outside the shard the clause names.
	OutsideClause
	// NoShard: nothing names the statement's shard.
	NoShard
)

// Route is where a statement runs: the physical databases that can hold the
// rows it names, or why it is refused.
type Route struct {
	Databases Set
	// Several says a source of the statement's shards (a key column's
	// values, its rows) names two logical shards or more: rows one database
	// holds that a move may since have split.
	Several bool
	// ByClause says the shard clause alone named the databases: no key
	// condition or row pins the statement's rows to a shard.
	ByClause bool
	Refusal  Refusal
	// Err is a key column's error for a value that cannot name a shard.
	Err error
}

// PlanRoute returns the physical databases of m that can hold the rows a
// statement names: the intersection of what its shard clause, each of its
// conditions on a key column, and its rows say. Conditions that match no row
// (IN (), only NULLs, or two that name rows of two databases) leave one
// database that serves a range to answer "no rows": that of the statement's
// rows when they have one. Nothing naming a shard, it is refused with NoShard, unless m has one
// database.
func PlanRoute(s Statement, m *Map) Route {
	named, found, none, several := m.Serving(), false, false, false
	for _, key := range s.Keys {
		values, ok := ColumnValues(s.Where, key.Matches)
		if !ok {
			continue
		}
		set, first, anywhere := Set{}, -1, false
		for _, v := range values {
			shard, err := key.ShardOf(v)
			if errors.Is(err, ErrNull) {
				continue // NULL matches no row, on any database
			}
			if errors.Is(err, ErrAnyShard) {
				anywhere = true
				continue
			}
			if err != nil {
				return Route{Err: err}
			}
			several = several || first >= 0 && shard != first
			first = shard
			set = set.With(m.Physical(shard))
		}
		if anywhere { // the column's condition holds rows of every database
			continue
		}
		if set.Empty() { // IN (), or only NULLs
			none = true
			continue
		}
		named, found = named.Intersect(set), true
	}
	if len(s.Rows) > 0 {
		set := Set{}
		for _, shard := range s.Rows {
			several = several || shard != s.Rows[0]
			set = set.With(m.Physical(shard))
		}
		named, found = named.Intersect(set), true
	}
	switch {
	case found && !s.Clause.Empty() && !named.SubsetOf(s.Clause):
		return Route{Refusal: OutsideClause}
	case found && !named.Empty():
		return Route{Databases: named, Several: several}
	case found && !s.Clause.Empty(): // conditions on rows of two databases, which no row satisfies at once
		return Route{Databases: Only(s.Clause.First())}
	case !s.Clause.Empty():
		return Route{Databases: s.Clause.copied(), ByClause: true} // a copy: what the caller gave stays its own, on its stack
	case found && oneDatabaseOf(s.Rows, m) >= 0: // no row matches: the statement's own rows' database says so, where its checks expect it
		return Route{Databases: Only(oneDatabaseOf(s.Rows, m))}
	case found, none, m.Len() == 1:
		return Route{Databases: Only(max(m.Serving().First(), 0))} // any database serving a range answers "no rows"
	}
	return Route{Refusal: NoShard}
}

// oneDatabaseOf is OneDatabase's database, or -1.
func oneDatabaseOf(shards []int, m *Map) int {
	if k, one := OneDatabase(shards, m); one {
		return k
	}
	return -1
}

// OneDatabase returns the database of m that holds all of shards, when one
// does: the common case of a statement's rows, decided without allocating.
func OneDatabase(shards []int, m *Map) (int, bool) {
	if len(shards) == 0 {
		return 0, false
	}
	first := m.Physical(shards[0])
	for _, shard := range shards[1:] {
		if m.Physical(shard) != first {
			return 0, false
		}
	}
	return first, true
}

// PlanRows splits rows, given by their logical shards, by the physical
// databases of m that hold them: one part per database, in the order each
// database first appears. Its cost grows with the rows, not the databases.
func PlanRows(shards []int, m *Map) []Part {
	var parts []Part
	var index map[int]int // database → its part, once there are many parts
	for i, shard := range shards {
		k := m.Physical(shard)
		at := -1
		if index != nil {
			if j, ok := index[k]; ok {
				at = j
			}
		} else if j := slices.IndexFunc(parts, func(p Part) bool { return p.Database == k }); j >= 0 {
			at = j
		}
		if at < 0 {
			at = len(parts)
			parts = append(parts, Part{Database: k})
			if index != nil {
				index[k] = at
			} else if len(parts) > 8 {
				index = make(map[int]int, 2*len(parts))
				for j, p := range parts {
					index[p.Database] = j
				}
			}
		}
		parts[at].Rows = append(parts[at].Rows, i)
	}
	return parts
}
