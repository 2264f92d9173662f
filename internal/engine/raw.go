package engine

import (
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/sqlscan"
	"github.com/shardid/shardid/shardrouter"
)

// routeRaw routes raw SQL (db.Raw, db.Exec).
func (e *Engine) routeRaw(db *gorm.DB) error {
	return e.routeWithoutModel(db, db.Statement.SQL.String(), "raw SQL")
}

// routeTable routes a statement that names its table but has no model
// (db.Table("users").Count, db.Table("users").Create(map)).
func (e *Engine) routeTable(db *gorm.DB) error {
	table := db.Statement.Table
	if db.Statement.TableExpr != nil { // Table("authors AS a"): Table is the alias
		table = db.Statement.TableExpr.SQL
	}
	if h, ok := loadSetting(db.Statement, hintSettingKey{}); ok && h.(Hint).kind == hintAll && db.DryRun && e.routed() {
		if _, sharded := e.shardedModel(db.Statement.Table); sharded {
			// Built, never run (a view's query the migrator makes on every database): as a model's fan-out in DryRun.
			db.Statement.Settings.Store(fanOutKey{}, e.allPhysicals())
			return nil
		}
	}
	return e.routeWithoutModel(db, "SELECT * FROM "+table, "a statement on a table without its model")
}

// allPhysicals lists every physical database.
func (e *Engine) allPhysicals() []int {
	all := make([]int, len(e.physical))
	for k := range all {
		all[k] = k
	}
	return all
}

// routeWithoutModel routes a statement the plugin knows only by its SQL,
// read by the dialect's tokenizer: to the shard its clause names, or else
// where it already is: the transaction's database, or the plugin's own one.
// Outside a transaction the application began on a shard, SQL that names a
// sharded table is refused without a clause (also in the transaction GORM
// began for a statement, where a hook's SQL would inherit its shard); on a shard, SQL that names an unsharded model's
// table is refused, as its rows live on the plugin's database only. SQL the
// tokenizer cannot read for certain is refused when any of its words names
// such a table, and otherwise runs as it would without the plugin.
func (e *Engine) routeWithoutModel(db *gorm.DB, sql, what string) error {
	stmt := db.Statement
	scan, unread := sqlscan.Read(e.db.Dialector.Name(), sql)
	if slices.Contains(scan.Kinds, "SAVEPOINT") && inTransaction(stmt.ConnPool) {
		e.savepoints.remember(stmt.ConnPool, struct{}{}) // GORM's dialectors set savepoints with Exec
	}
	if !e.routed() {
		return nil
	}
	hinted, err := e.routeByHint(db)
	if err != nil {
		return err
	}
	k, onShard, bound := e.rawSQLPhysical(stmt)
	if !onShard && ownCopy(stmt) {
		return nil
	}
	if onShard {
		if err := e.mapUsable(); err != nil {
			return err
		}
	}
	raw := shardrouter.RawSQL{Words: scan.Words, Unread: unread != nil, OnShard: onShard}
	for _, t := range scan.Tables {
		raw.Tables = append(raw.Tables, shardrouter.Table{Qualifier: t.Qualifier, Name: t.Name})
	}
	// A transaction the application began with a shard clause is for that
	// shard; GORM's own transaction of a routed statement is not: SQL a hook
	// issues in it is a statement of its own, and needs its own clause.
	raw.ForShard = hinted || bound && !inGORMsTransaction(stmt)
	route := shardrouter.PlanRaw(raw, e.shardedModel, e.unshardedModel)
	table, model := route.Table, route.Model
	switch route.Refusal {
	case shardrouter.RawRuns:
		return nil
	case shardrouter.UnshardedOnShard:
		return fmt.Errorf("%w: %s names %s, the table of the unsharded model %s, but runs on %s; its rows live on the plugin's database only: run it there, without a shard clause and outside a shard's transaction%s",
			ErrCrossShard, what, table, model, e.physical[k].name, unreadNote(unread))
	}
	detail := what + " on a sharded table needs db.Clauses(shardid.ByID(id)), shardid.OnShard(n) or shardid.ByKey(key), or a transaction begun with one"
	if bound {
		detail = what + " in GORM's transaction of another statement (issued by a model's hook) is a statement of its own and may name rows of another shard: give it db.Clauses(shardid.ByID(id)), shardid.OnShard(n) or shardid.ByKey(key) (it then runs in that transaction if that is its shard)"
	}
	if unread != nil {
		detail = fmt.Sprintf("%s could not be read for certain (%v) and names a sharded table: give it db.Clauses(shardid.ByID(id)), shardid.OnShard(n) or shardid.ByKey(key), or run it in a transaction begun with one", what, unread)
	}
	if slices.ContainsFunc(scan.Kinds, func(k string) bool { return k == "CREATE" || k == "ALTER" || k == "DROP" }) {
		detail += "; DDL on a sharded table goes to every physical database through the plugin's migrator"
	}
	return &FieldError{Model: model, Field: "table " + table, Err: ErrNoShard, Detail: detail}
}

// rawSQLPhysical returns the physical database other than the plugin's own
// that the statement runs on, if it does: a shard's transaction (bound) or
// connection pool (given by a clause, or inherited by SQL a hook issued).
func (e *Engine) rawSQLPhysical(stmt *gorm.Statement) (k int, onShard, bound bool) {
	if inTransaction(stmt.ConnPool) {
		k, bound = e.transactionPhysical(stmt)
		return k, bound && e.routed(), bound
	}
	if k, ok := e.physicalOfPool(stmt.ConnPool); ok { // a prepared session's store too
		return k, true, false
	}
	return 0, false, false
}

// shardedModel returns the model whose rows a sharded table holds: a
// sharded model's, or the join table of its many2many.
func (e *Engine) shardedModel(table string) (string, bool) {
	lower := strings.ToLower(table)
	if model, ok := e.shardedTables.Load(lower); ok {
		return model.(string), true
	}
	if _, ok := e.joinTables.Load(lower); ok {
		return "many2many", true
	}
	recorded, isRecorded := e.recordedTables.Load(lower)
	if u, ok := e.unshardedTables.Load(lower); ok && (!isRecorded || recorded.(string) == u.(unshardedTable).table) {
		return "", false // this process's model of it says unsharded: a table recorded before, not another schema's of the same name
	}
	if isRecorded {
		return "(a model this process has not used, recorded as sharded in " + e.tablesTable() + ")", true
	}
	return "", false
}

// recordedAsSharded reports whether the plugin's migrator recorded table
// as sharded, though no sharded model of this process (nor its many2many)
// has it.
func (e *Engine) recordedAsSharded(table string) bool {
	_, sharded := e.shardedTables.Load(strings.ToLower(table))
	_, joins := e.joinTables.Load(strings.ToLower(table))
	_, recorded := e.recordedTables.Load(strings.ToLower(table))
	return recorded && !sharded && !joins
}

// unshardedModel returns the unsharded model whose table this is.
func (e *Engine) unshardedModel(table string) (string, bool) {
	if _, sharded := e.shardedModel(table); sharded {
		return "", false
	}
	if u, ok := e.unshardedTables.Load(strings.ToLower(table)); ok {
		return u.(unshardedTable).model, true
	}
	if model, ok := e.unshardedJoinTables.Load(strings.ToLower(table)); ok {
		return model.(string), true
	}
	return "", false
}

// unshardedTable is an unsharded model's: its name, and its table as its
// model names it, lower case.
type unshardedTable struct{ model, table string }

func unreadNote(unread error) string {
	if unread == nil {
		return ""
	}
	return fmt.Sprintf(" (the SQL could not be read for certain: %v)", unread)
}

// routeByHint binds a statement to the shard its clause names, if it has one.
func (e *Engine) routeByHint(db *gorm.DB) (bool, error) {
	v, ok := loadSetting(db.Statement, hintSettingKey{})
	if !ok {
		return false, nil
	}
	h := v.(Hint)
	if h.kind == hintAll {
		return true, fmt.Errorf("%w: AllShards does not apply to raw SQL or a table without its model; run it with OnShard(n) once per shard", ErrNoShard)
	}
	s, err := e.hintShard(h)
	if err != nil {
		return true, err
	}
	return true, e.bind(db, e.physicalOf(s))
}

// joinProbe stands for the statement's own table before a join written as
// SQL, so that the fragment reads as a statement.
const joinProbe = "shardid_join_probe"

// fragmentSQL makes a statement of a fragment of SQL (FROM …, a join) for
// the scanner, known by its first word as dialect reads it (after a comment,
// before a newline); other SQL it returns as it is.
func fragmentSQL(dialect, fragment string) string {
	switch sqlscan.FirstWord(dialect, fragment) {
	case "FROM":
		return "SELECT * " + fragment
	case "JOIN", "LEFT", "RIGHT", "INNER", "OUTER", "FULL", "CROSS", "NATURAL", "STRAIGHT_JOIN":
		return "SELECT * FROM " + joinProbe + " " + fragment
	}
	return fragment
}

// sqlTables returns the tables a fragment of SQL (a statement, a FROM list or
// a join) names, read by the dialect's tokenizer; of a fragment it cannot read
// for certain, every word, so that callers looking for unknown tables fail
// closed.
func (e *Engine) sqlTables(fragment string) []string {
	scan, unread := sqlscan.Read(e.db.Dialector.Name(), fragmentSQL(e.db.Dialector.Name(), fragment))
	if unread != nil {
		return scan.Words
	}
	tables := make([]string, 0, len(scan.Tables))
	for _, t := range scan.Tables {
		if t.Name != joinProbe {
			tables = append(tables, t.Name)
		}
	}
	return tables
}
