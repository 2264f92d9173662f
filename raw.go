package shardid

import (
	"fmt"
	"regexp"
	"strings"

	"gorm.io/gorm"
)

// sqlWord splits SQL text into the words that could name a table.
var sqlWord = regexp.MustCompile(`\w+`)

// routeRaw routes raw SQL (db.Raw, db.Exec): to the shard its clause names,
// or else where the statement already is: the transaction's database, or the
// plugin's own one. Outside a transaction bound to a shard, SQL that names a
// sharded table is refused without a clause.
func (p *Plugin) routeRaw(db *gorm.DB) error {
	stmt := db.Statement
	if routed, err := p.routeByHint(db); routed || err != nil {
		return err
	}
	if _, bound := p.transactionPhysical(stmt); bound && inTransaction(stmt.ConnPool) {
		return nil // a transaction begun on a shard: the SQL is for it
	}
	for _, word := range sqlWord.FindAllString(stmt.SQL.String(), -1) {
		if model, ok := p.shardedTables.Load(strings.ToLower(word)); ok {
			return &FieldError{Model: model.(string), Field: "table " + word, Err: ErrNoShard,
				Detail: "raw SQL on a sharded table needs db.Clauses(shardid.ByID(id)), shardid.OnShard(n) or shardid.ByKey(key), or a transaction begun with one"}
		}
	}
	return nil
}

// routeTable routes a statement that names its table but has no model
// (db.Table("users").Count): like raw SQL, by its clause, refused without one
// when the table is sharded.
func (p *Plugin) routeTable(db *gorm.DB) error {
	stmt := db.Statement
	if routed, err := p.routeByHint(db); routed || err != nil {
		return err
	}
	if _, bound := p.transactionPhysical(stmt); bound && inTransaction(stmt.ConnPool) {
		return nil
	}
	table := stmt.Table
	if stmt.TableExpr != nil { // Table("authors AS a"): Table is the alias
		table = stmt.TableExpr.SQL
	}
	for _, word := range sqlWord.FindAllString(table, -1) {
		if model, ok := p.shardedTables.Load(strings.ToLower(word)); ok {
			return &FieldError{Model: model.(string), Field: "table " + word, Err: ErrNoShard,
				Detail: "a statement on a sharded table without its model needs db.Clauses(shardid.ByID(id)), shardid.OnShard(n) or shardid.ByKey(key)"}
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
