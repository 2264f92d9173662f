package shardid

import (
	"fmt"
	"regexp"
	"strings"

	"gorm.io/gorm"
)

// sqlToken splits SQL text into words and the punctuation that matters for
// finding tables; sqlLiteral is a quoted string, which names none.
var (
	sqlToken   = regexp.MustCompile(`\w+|[,.()]`)
	sqlLiteral = regexp.MustCompile(`'(?:[^']|'')*'`)
)

// tableKeywords are the words a table name follows; clauseWords end a list of
// tables (an alias is any other word after a table).
var (
	tableKeywords      = map[string]bool{"from": true, "join": true, "update": true, "into": true, "table": true}
	skippedBeforeTable = map[string]bool{"if": true, "not": true, "exists": true, "only": true, "lateral": true}
	clauseWords        = map[string]bool{"where": true, "on": true, "using": true, "set": true, "group": true, "order": true,
		"limit": true, "values": true, "select": true, "having": true, "returning": true, "inner": true, "left": true,
		"right": true, "full": true, "outer": true, "cross": true, "natural": true, "union": true, "default": true}
)

// sqlTables returns the words of SQL text that stand where a table does:
// after FROM, JOIN, UPDATE, INTO or TABLE, and in the comma list after FROM,
// not in quoted strings, nor aliases and column names.
func sqlTables(sql string) []string {
	tokens := sqlToken.FindAllString(sqlLiteral.ReplaceAllString(sql, "''"), -1)
	var tables []string
	const (
		elsewhere = iota
		expectTable
		afterTable
	)
	state := elsewhere
	for i, token := range tokens {
		word := strings.ToLower(token)
		switch {
		case tableKeywords[word]:
			state = expectTable
		case state == expectTable && token != "," && token != "(" && token != ")" && token != ".":
			if i+1 < len(tokens) && tokens[i+1] == "." || skippedBeforeTable[word] {
				continue // a schema, or IF NOT EXISTS, ONLY, LATERAL: the table follows
			}
			tables, state = append(tables, token), afterTable
		case state == afterTable && token == ",":
			state = expectTable
		case state == afterTable && (clauseWords[word] || token == "(" || token == ")"):
			state = elsewhere
		}
	}
	return tables
}

// routeRaw routes raw SQL (db.Raw, db.Exec).
func (p *Plugin) routeRaw(db *gorm.DB) error {
	return p.routeWithoutModel(db, db.Statement.SQL.String(), "raw SQL")
}

// routeTable routes a statement that names its table but has no model
// (db.Table("users").Count, db.Table("users").Create(map)).
func (p *Plugin) routeTable(db *gorm.DB) error {
	table := db.Statement.Table
	if db.Statement.TableExpr != nil { // Table("authors AS a"): Table is the alias
		table = db.Statement.TableExpr.SQL
	}
	return p.routeWithoutModel(db, "FROM "+table, "a statement on a table without its model")
}

// routeWithoutModel routes a statement the plugin knows only by its SQL: to
// the shard its clause names, or else where it already is: the transaction's
// database, or the plugin's own one. Outside a transaction bound to a shard,
// SQL that names a sharded table where a table stands is refused without a
// clause.
func (p *Plugin) routeWithoutModel(db *gorm.DB, sql, what string) error {
	if routed, err := p.routeByHint(db); routed || err != nil {
		return err
	}
	if _, bound := p.transactionPhysical(db.Statement); bound && inTransaction(db.Statement.ConnPool) {
		return nil // a transaction begun on a shard: the SQL is for it
	}
	for _, table := range sqlTables(sql) {
		if model, ok := p.shardedTables.Load(strings.ToLower(table)); ok {
			return &FieldError{Model: model.(string), Field: "table " + table, Err: ErrNoShard,
				Detail: what + " on a sharded table needs db.Clauses(shardid.ByID(id)), shardid.OnShard(n) or shardid.ByKey(key), or a transaction begun with one"}
		}
	}
	return nil
}

// routeByHint binds a statement to the shard its clause names, if it has one.
func (p *Plugin) routeByHint(db *gorm.DB) (bool, error) {
	v, ok := db.Statement.Settings.Load(hintSettingKey{})
	if !ok {
		return false, nil
	}
	h := v.(shardHint)
	if h.kind == hintAll {
		return true, fmt.Errorf("%w: AllShards does not apply to raw SQL or a table without its model; run it with OnShard(n) once per shard", ErrNoShard)
	}
	s, err := p.hintShard(h)
	if err != nil {
		return true, err
	}
	return true, p.bind(db, p.physicalOf(s))
}
