package shardrouter

import (
	"strings"
	"testing"
)

func catalog(tables map[string]string) Catalog {
	return func(table string) (string, bool) {
		model, ok := tables[strings.ToLower(table)]
		return model, ok
	}
}

// TestPlanRaw has a row per rule of "Raw SQL" in docs/routing.md.
func TestPlanRaw(t *testing.T) {
	sharded := catalog(map[string]string{"users": "User", "user_groups": "many2many"})
	unsharded := catalog(map[string]string{"countries": "Country"})
	users := []Table{{Name: "users"}}
	for name, c := range map[string]struct {
		sql     RawSQL
		refusal RawRefusal
		table   string
	}{
		"a sharded table without a clause":              {sql: RawSQL{Tables: users}, refusal: ShardedOffShard, table: "users"},
		"a sharded table with a clause":                 {sql: RawSQL{Tables: users, OnShard: true, ForShard: true}},
		"a sharded table's name in another case":        {sql: RawSQL{Tables: []Table{{Name: "USERS"}}}, refusal: ShardedOffShard, table: "USERS"},
		"a sharded table qualified by its schema":       {sql: RawSQL{Tables: []Table{{Qualifier: "public", Name: "users"}}}, refusal: ShardedOffShard, table: "users"},
		"a many2many join table of a sharded model":     {sql: RawSQL{Tables: []Table{{Name: "user_groups"}}}, refusal: ShardedOffShard, table: "user_groups"},
		"a catalog table of the same name":              {sql: RawSQL{Tables: []Table{{Qualifier: "information_schema", Name: "users"}}}},
		"an unsharded table on the plugin's database":   {sql: RawSQL{Tables: []Table{{Name: "countries"}}}},
		"an unsharded table on a shard":                 {sql: RawSQL{Tables: []Table{{Name: "countries"}}, OnShard: true, ForShard: true}, refusal: UnshardedOnShard, table: "countries"},
		"a hook's SQL in GORM's transaction on a shard": {sql: RawSQL{Tables: users, OnShard: true}, refusal: ShardedOffShard, table: "users"},
		"SQL not read for certain, a sharded word":      {sql: RawSQL{Unread: true, Words: []string{"select", "users"}}, refusal: ShardedOffShard, table: "users"},
		"SQL not read for certain, no known word":       {sql: RawSQL{Unread: true, Words: []string{"select", "1"}}},
		"words of SQL read for certain say nothing":     {sql: RawSQL{Words: []string{"users"}}},
		"no table at all":                               {sql: RawSQL{}},
	} {
		t.Run(name, func(t *testing.T) {
			route := PlanRaw(c.sql, sharded, unsharded)
			if route.Refusal != c.refusal || route.Table != c.table {
				t.Fatalf("route %+v, want refusal %d on %q", route, c.refusal, c.table)
			}
		})
	}
}

// TestCheckSent: the last gate, one row per rule of the SQL a statement on
// a model is about to send.
func TestCheckSent(t *testing.T) {
	sharded := catalog(map[string]string{"users": "User", "photos": "Photo", "user_groups": "many2many"})
	unsharded := catalog(map[string]string{"countries": "Country"})
	own := func(table string) bool { return table == "users" || table == "user_groups" }
	onShard := func(tables ...Table) SentSQL {
		return SentSQL{RawSQL: RawSQL{Tables: tables, OnShard: true}, Covered: own}
	}
	for name, c := range map[string]struct {
		sql     SentSQL
		refusal RawRefusal
		table   string
	}{
		"its own table on its shard":                               {sql: onShard(Table{Name: "users"})},
		"its own many2many join table":                             {sql: onShard(Table{Name: "users"}, Table{Name: "user_groups"})},
		"another sharded table its routing does not cover":         {sql: onShard(Table{Name: "users"}, Table{Name: "photos"}), refusal: ShardedUncovered, table: "photos"},
		"another sharded table qualified by its schema":            {sql: onShard(Table{Name: "users"}, Table{Qualifier: "public", Name: "photos"}), refusal: ShardedUncovered, table: "photos"},
		"another sharded table in another case":                    {sql: onShard(Table{Name: "users"}, Table{Name: "PHOTOS"}), refusal: ShardedUncovered, table: "PHOTOS"},
		"an unsharded table on a shard":                            {sql: onShard(Table{Name: "users"}, Table{Name: "countries"}), refusal: UnshardedOnShard, table: "countries"},
		"a catalog table of a sharded name":                        {sql: onShard(Table{Name: "users"}, Table{Qualifier: "pg_catalog", Name: "photos"})},
		"a table of no model":                                      {sql: onShard(Table{Name: "users"}, Table{Name: "logs"})},
		"every sharded table covered, as under a clause":           {sql: SentSQL{RawSQL: RawSQL{Tables: []Table{{Name: "photos"}}, OnShard: true}, Covered: func(string) bool { return true }}},
		"an unsharded table under a clause that covers every name": {sql: SentSQL{RawSQL: RawSQL{Tables: []Table{{Name: "users"}, {Name: "countries"}}, OnShard: true}, Covered: func(string) bool { return true }}, refusal: UnshardedOnShard, table: "countries"},
		"nothing covered":                                          {sql: SentSQL{RawSQL: RawSQL{Tables: []Table{{Name: "users"}}, OnShard: true}}, refusal: ShardedUncovered, table: "users"},
		"a sharded table off a shard":                              {sql: SentSQL{RawSQL: RawSQL{Tables: []Table{{Name: "countries"}, {Name: "users"}}}}, refusal: ShardedOffShard, table: "users"},
		"an unsharded table off a shard":                           {sql: SentSQL{RawSQL: RawSQL{Tables: []Table{{Name: "countries"}}}}},
		"SQL not read for certain, an uncovered sharded word":      {sql: SentSQL{RawSQL: RawSQL{Unread: true, Words: []string{"users", "photos"}, OnShard: true}, Covered: own}, refusal: ShardedUncovered, table: "photos"},
	} {
		t.Run(name, func(t *testing.T) {
			route := CheckSent(c.sql, sharded, unsharded)
			if route.Refusal != c.refusal || route.Table != c.table {
				t.Fatalf("route %+v, want refusal %d on %q", route, c.refusal, c.table)
			}
		})
	}
}
