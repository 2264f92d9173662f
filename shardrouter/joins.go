package shardrouter

import (
	"cmp"
	"regexp"
	"strings"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// Keyed is what the planner knows of a sharded model for a join: its table,
// its primary key's column and its colocate column ("" when it has none).
type Keyed struct {
	Table, Key, Colocate string
}

// simpleJoin reads a join written as SQL of one table on one equality:
// [INNER | LEFT [OUTER]] JOIN t [AS a] ON x.c = y.d, the equality maybe in
// parentheses (ON (x.c = y.d), see joinMatch); a RIGHT join keeps
// rows of the joined table that no row of the model matches, which a part
// kept to its ranges by the model's key would drop. The table and the
// columns' tables may be qualified by a schema (JOIN app.t ON app.t.c =
// app.u.d, as GORM names tables of a TablePrefix "app."): the groups hold
// the bare names, as the gate compares tables without their schema.
var simpleJoin = regexp.MustCompile("(?i)^\\s*(?:(?:inner|left)\\s+(?:outer\\s+)?)?join\\s+" + joinQualifier + joinIdent +
	"(?:\\s+(?:as\\s+)?" + joinIdent + ")?\\s+on\\s+" +
	joinQualifier + joinIdent + "\\." + joinIdent + "\\s*=\\s*" +
	joinQualifier + joinIdent + "\\." + joinIdent + "\\s*$")

// joinIdent is a name, maybe quoted, its text in a group; joinQualifier an
// optional schema before one, left out of the groups.
const (
	joinIdent     = "[`\"]?(\\w+)[`\"]?"
	joinQualifier = "(?:[`\"]?\\w+[`\"]?\\.)?"
)

// parenthesizedOn is an ON whose condition is one group of parentheses
// with none inside: ON (x.c = y.d).
var parenthesizedOn = regexp.MustCompile(`(?i)(\son\s+)\(([^()]*)\)\s*$`)

// joinMatch matches sql against simpleJoin, its ON condition out of the
// parentheses that may hold it (the same condition to the database).
func joinMatch(sql string) []string {
	return simpleJoin.FindStringSubmatch(parenthesizedOn.ReplaceAllString(sql, "${1}${2}"))
}

// ColocatedJoin reports whether a join written as SQL joins, on one
// equality, a sharded model (found by its table) colocated with m by it: the
// joined table's colocate column with m's key (a photo of a user), or m's
// colocate column with the joined table's key (the user of a photo).
func ColocatedJoin(m Keyed, sql string, sharded func(table string) (Keyed, bool)) bool {
	match := joinMatch(sql)
	if match == nil {
		return false
	}
	joined, ok := sharded(match[1])
	if !ok || strings.EqualFold(bareName(joined.Table), bareName(m.Table)) { // a self join pairs two rows of any shards
		return false
	}
	alias := cmp.Or(match[2], match[1])
	side := func(table string) (Keyed, int, bool) {
		switch {
		case strings.EqualFold(table, alias):
			return joined, 1, true
		case strings.EqualFold(table, bareName(m.Table)):
			return m, 0, true
		}
		return Keyed{}, 0, false
	}
	a, sideA, okA := side(match[3])
	b, sideB, okB := side(match[5])
	if !okA || !okB || sideA == sideB {
		return false
	}
	ca, cb := match[4], match[6]
	follows := func(child Keyed, column string, parent Keyed, key string) bool {
		return child.Colocate != "" && strings.EqualFold(child.Colocate, column) && strings.EqualFold(parent.Key, key)
	}
	return follows(a, ca, b, cb) || follows(b, cb, a, ca)
}

// SQLTableRefusal says why SQL a statement carries names a table whose rows
// are not all on the statement's database.
type SQLTableRefusal uint8

const (
	// SQLTableOK: every table is on the statement's database.
	SQLTableOK SQLTableRefusal = iota
	// NotSharded: a table the plugin does not know as sharded.
	NotSharded
	// ShardedWithoutClause: a sharded table, read on one database without a
	// clause saying that shard's rows are the ones meant.
	ShardedWithoutClause
)

// JoinTableJoin reports whether sql joins a many2many join table of m along
// m's key, JOIN joinTable [AS a] ON joinTable.ownerColumn = m.key (either
// side first): then each of its rows joins the join rows of its own, which
// are beside it.
func JoinTableJoin(m Keyed, joinTable, ownerColumn, sql string) bool {
	match := joinMatch(sql)
	if match == nil || !strings.EqualFold(match[1], bareName(joinTable)) {
		return false
	}
	alias := cmp.Or(match[2], match[1])
	is := func(i int, table, column string) bool {
		return strings.EqualFold(match[i], table) && strings.EqualFold(match[i+1], column)
	}
	table := bareName(m.Table)
	return is(3, alias, ownerColumn) && is(5, table, m.Key) || is(5, alias, ownerColumn) && is(3, table, m.Key)
}

// bareName is a table's name without the schema it may be qualified by.
func bareName(table string) string { return table[strings.LastIndexByte(table, '.')+1:] }

// CheckSQLTables decides the tables that SQL of a statement names (a join
// other than a colocated one or one of its join tables along its key, a
// subquery in a condition): each must hold sharded rows (shardedRows), and
// then only a clause naming one shard says its rows are the ones meant.
func CheckSQLTables(tables []string, shardedRows func(table string) bool, oneShardClause bool) (string, SQLTableRefusal) {
	for _, table := range tables {
		switch {
		case !shardedRows(table):
			return table, NotSharded
		case !oneShardClause:
			return table, ShardedWithoutClause
		}
	}
	return "", SQLTableOK
}

// ConditionSQL returns the SQL text of conditions that may hold a subquery.
func ConditionSQL(exprs []clause.Expression) []string {
	var texts []string
	for _, e := range exprs {
		switch c := e.(type) {
		case clause.Expr:
			if containsSelect(c.SQL) {
				texts = append(texts, c.SQL)
			}
		case clause.NamedExpr:
			if containsSelect(c.SQL) {
				texts = append(texts, c.SQL)
			}
		case clause.AndConditions:
			texts = append(texts, ConditionSQL(c.Exprs)...)
		case clause.OrConditions:
			texts = append(texts, ConditionSQL(c.Exprs)...)
		case clause.NotConditions:
			texts = append(texts, ConditionSQL(c.Exprs)...)
		case clause.Where:
			texts = append(texts, ConditionSQL(c.Exprs)...)
		}
	}
	return texts
}

// containsSelect reports whether sql holds the word SELECT in any case,
// without the copy strings.ToUpper makes: it runs for every condition.
func containsSelect(sql string) bool {
	for i := 0; i+len("select") <= len(sql); i++ {
		if (sql[i] == 's' || sql[i] == 'S') && strings.EqualFold(sql[i:i+len("select")], "select") {
			return true
		}
	}
	return false
}

// ColocatedAlong reports whether the rows a relationship joins are on one
// shard: its foreign key is the colocate column of the model holding it,
// and references the other's primary key. from and to are the primary keys
// and colocate columns of the relationship's two models (nil when a model
// has no colocate column; from nil when its model is not sharded).
func ColocatedAlong(rel *schema.Relationship, fromKey, fromColocate, toKey, toColocate *schema.Field) bool {
	if fromKey == nil || len(rel.References) != 1 {
		return false
	}
	ref := rel.References[0]
	switch rel.Type {
	case schema.BelongsTo:
		return fromColocate != nil && ref.ForeignKey == fromColocate && ref.PrimaryKey == toKey
	case schema.HasOne, schema.HasMany:
		return toColocate != nil && ref.ForeignKey == toColocate && ref.PrimaryKey == fromKey
	}
	return false
}

// RelationPath returns the relationships a Joins name walks ("Author",
// "Author.Publisher"), if it names relationships.
func RelationPath(s *schema.Schema, name string) ([]*schema.Relationship, bool) {
	var path []*schema.Relationship
	for _, part := range strings.Split(name, ".") {
		rel, found := s.Relationships.Relations[part]
		if !found {
			return nil, false
		}
		path = append(path, rel)
		s = rel.FieldSchema
	}
	return path, true
}
