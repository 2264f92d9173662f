package shardrouter

import "strings"

// RawSQL is what the planner reads of SQL the plugin knows only as text
// (db.Raw, db.Exec, a table without its model), as the dialect's tokenizer
// read it, and where it runs.
type RawSQL struct {
	Tables []Table // the tables it names
	// Words is every word of SQL that could not be read for certain
	// (Unread), for a decision that must fail closed.
	Words  []string
	Unread bool
	// OnShard: it runs on a shard's database (its transaction or pool).
	OnShard bool
	// ForShard: it was sent to its shard by a clause, or runs in a
	// transaction the application began on a shard.
	ForShard bool
}

// Table is a table raw SQL names.
type Table struct {
	Qualifier string // its schema or database, "" when none is written
	Name      string
}

// Catalog finds the model whose rows a table holds, without case; ok is
// false for a table of no model.
type Catalog func(table string) (model string, ok bool)

// RawRefusal says why raw SQL cannot run where it would.
type RawRefusal uint8

const (
	// RawRuns: the SQL runs where it is.
	RawRuns RawRefusal = iota
	// UnshardedOnShard: it runs on a shard, and names an unsharded model's
	// table, whose rows live on the plugin's database only.
	UnshardedOnShard
	// ShardedOffShard: it names a sharded table without a shard to run on.
	ShardedOffShard
	// ShardedUncovered: it runs on a shard, and names a sharded table whose
	// rows there are not those its routing chose.
	ShardedUncovered
)

// RawRoute is the planner's answer for raw SQL: whether it runs, and the
// table and model that refuse it.
type RawRoute struct {
	Refusal      RawRefusal
	Table, Model string
}

// systemSchemas hold the databases' catalogs, which GORM's migrators read:
// never a model's table, whatever its name.
var systemSchemas = map[string]bool{"information_schema": true, "pg_catalog": true, "performance_schema": true, "mysql": true, "sys": true}

// PlanRaw decides raw SQL: on a shard it must name no unsharded model's
// table (sharded, an unsharded table: refused); sent to no shard, it must
// name no sharded table. SQL not read for certain is judged by every word.
func PlanRaw(s RawSQL, sharded, unsharded Catalog) RawRoute {
	if s.OnShard {
		if table, model, ok := s.names(unsharded); ok {
			return RawRoute{Refusal: UnshardedOnShard, Table: table, Model: model}
		}
	}
	if s.ForShard {
		return RawRoute{}
	}
	if table, model, ok := s.names(sharded); ok {
		return RawRoute{Refusal: ShardedOffShard, Table: table, Model: model}
	}
	return RawRoute{}
}

// names returns the first table the SQL names that find knows, with any
// qualifier but a system schema's; of SQL not read for certain, any word.
func (s RawSQL) names(find Catalog) (table, model string, ok bool) {
	s.each(func(name string) bool {
		model, ok = find(name)
		table = name
		return ok
	})
	return table, model, ok
}

// each calls visit with every table the SQL names but a system schema's,
// and, of SQL not read for certain, every word, until visit returns true.
func (s RawSQL) each(visit func(name string) bool) {
	for _, t := range s.Tables {
		schema := t.Qualifier[strings.LastIndexByte(t.Qualifier, '.')+1:]
		if !systemSchemas[strings.ToLower(schema)] && visit(t.Name) {
			return
		}
	}
	if s.Unread {
		for _, word := range s.Words {
			if visit(word) {
				return
			}
		}
	}
}

// SentSQL is what the last gate reads of the SQL a statement is about to
// send, as GORM built it, and where it runs.
type SentSQL struct {
	RawSQL
	// Covered reports whether a sharded table's rows on the statement's
	// shard are those its routing chose: its own model's and join tables',
	// a colocated join's, a subquery's routed there, any under a one-shard
	// clause. Nil: none.
	Covered func(table string) bool
}

// CheckSent is the last gate: SQL about to be sent on a shard must name no
// unsharded model's table and no sharded table its routing does not cover
// there; off a shard, no sharded table. SQL not read for certain is judged
// by every word.
func CheckSent(s SentSQL, sharded, unsharded Catalog) RawRoute {
	judge := func(name string) RawRoute {
		switch {
		case !s.OnShard:
			if model, ok := sharded(name); ok {
				return RawRoute{Refusal: ShardedOffShard, Table: name, Model: model}
			}
		default:
			// Before coverage, which a one-shard clause gives every name:
			// no clause brings an unsharded model's rows onto a shard.
			if model, ok := unsharded(name); ok {
				return RawRoute{Refusal: UnshardedOnShard, Table: name, Model: model}
			}
			if s.Covered != nil && s.Covered(name) {
				break
			}
			if model, ok := sharded(name); ok {
				return RawRoute{Refusal: ShardedUncovered, Table: name, Model: model}
			}
		}
		return RawRoute{}
	}
	var refused RawRoute
	s.each(func(name string) bool {
		refused = judge(name)
		return refused.Refusal != RawRuns
	})
	return refused
}
