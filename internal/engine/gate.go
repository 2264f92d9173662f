package engine

import (
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/sqlscan"
	"github.com/shardid/shardid/shardrouter"
)

// The last gate. Routing reads a statement clause by clause; the gate reads
// the SQL GORM will send, built right before GORM's executor (which builds
// nothing when the SQL is built), with the dialect's tokenizer, and refuses
// a statement that names a table its routing does not cover where it runs:
// on a shard, an unsharded model's table or a sharded table other than its
// own model's, its colocated joins' and its subqueries' (any, under a
// one-shard clause); off a shard, a sharded table. Whatever the clause a
// name hides in (a select list, HAVING, a SET value, a join, a CTE), the
// statement fails closed before it writes or reads anything.

// gate is the callback right before GORM's executor of kind.
func (e *Engine) gate(kind statementKind) func(*gorm.DB) {
	return func(db *gorm.DB) {
		if db.Error != nil && db.DryRun && db.Statement.SQL.Len() == 0 && errors.Is(db.Error, ErrNoShard) {
			buildSQL(db, kind) // shown, as db.ToSQL shows a statement (a read or a write), and refused all the same
		}
		if db.Error != nil || !e.routed() {
			return
		}
		if t, ok := db.Statement.Context.Value(turnKey{}).(*turn); ok && t.stmt == db.Statement {
			t.hooked = append([]clause.Expression{}, conditionsOf(db.Statement)...) // before the build adds the rows' keys
			if t.guarded && len(t.hooked) <= t.plugins {
				db.AddError(gorm.ErrMissingWhereClause) // as GORM's own check, which runs here on one database
				return
			}
		}
		if db.Statement.SQL.Len() == 0 && !buildSQL(db, kind) {
			return // nothing to send: an update with nothing to set
		}
		if db.Error == nil {
			k, onShard := e.sentOn(db.Statement)
			if err := e.checkSent(db.Statement, db.Statement.SQL.String(), k, onShard); err != nil && !fannedOutDry(db) {
				db.AddError(err)
			} else if onShard && !db.DryRun {
				db.AddError(e.mapUsable()) // again: hooks, or a wait for a connection, ran since it was routed
			}
		}
	}
}

// sentOn is the physical database a statement is about to run on: that of
// its write's routing while it runs in the transaction GORM began there,
// else found by its connection.
func (e *Engine) sentOn(stmt *gorm.Statement) (int, bool) {
	if tx, ok := stmt.ConnPool.(*sql.Tx); ok {
		if state := routeStateOf(stmt); state != nil && state.boundOn > 0 && state.gormTx == gorm.ConnPool(tx) {
			return state.boundOn - 1, true
		}
	}
	return e.boundPhysical(stmt)
}

// fannedOutDry reports whether db is a statement over several databases built
// in DryRun, as GORM builds a subquery: it runs nowhere, and the statement
// that uses it is refused.
func fannedOutDry(db *gorm.DB) bool {
	_, ok := loadSetting(db.Statement, fanOutKey{})
	return db.DryRun && ok
}

// checkSent refuses sql, which stmt is about to send on physical database k
// (onShard) or the plugin's own, when it names a table the statement's
// routing does not cover there.
func (e *Engine) checkSent(stmt *gorm.Statement, sql string, k int, onShard bool) error {
	if !onShard && ownCopy(stmt) {
		return nil
	}
	scan := e.scanned(sql)
	own := stmt.Table
	if stmt.Schema != nil {
		own = stmt.Schema.Table
		if stmt.Table != own && stmt.Table != "" {
			own = e.namedOwnTable(stmt, own)
		}
	}
	own = own[strings.LastIndexByte(own, '.')+1:] // as the SQL's tables are compared: by name
	if onShard && scan.alone != "" && scan.alone == own {
		return nil // its own table alone, named once as the model names it: most statements
	}
	ownAgain := scan.timesOf(own) > 1 || scan.timesOf(e.keptName(own)) > 1
	if onShard && !scan.unread && !ownAgain && !slices.ContainsFunc(scan.tables, func(t shardrouter.Table) bool { return !e.sameTable(t.Name, own) }) {
		return nil // its own table alone, as most statements name
	}
	sent := shardrouter.SentSQL{RawSQL: shardrouter.RawSQL{Tables: scan.tables, Words: scan.words, Unread: scan.unread}}
	sent.OnShard = onShard
	if sent.OnShard {
		sent.Covered = e.coverage(stmt, own, scan)
	}
	route := shardrouter.CheckSent(sent, e.shardedModel, e.unshardedModel)
	switch route.Refusal {
	case shardrouter.UnshardedOnShard:
		return fmt.Errorf("%w: the statement runs on %s, and its SQL names %s, the table of the unsharded model %s, whose rows live on the plugin's database only: read it apart",
			ErrCrossShard, e.physical[k].name, route.Table, route.Model)
	case shardrouter.ShardedUncovered:
		return fmt.Errorf("%w: the statement runs on %s, and its SQL names %s, whose rows are on every physical database: only those on %s would be read; read them apart, or give the statement a shard clause (OnShard, ByID, ByKey) to read that shard's rows only",
			ErrCrossShard, e.physical[k].name, route.Table, e.physical[k].name)
	case shardrouter.ShardedOffShard:
		return &FieldError{Model: route.Model, Field: "table " + route.Table, Err: ErrNoShard,
			Detail: "the statement runs on the plugin's database, which holds no logical shard, and its SQL names a sharded table: read it with its own model, or give the statement a shard clause"}
	}
	return nil
}

// namedOwnTable is the table a sharded model's statement reads as its own
// where Table(...) names another than the model's (modelTable): the table
// named, when the plugin's migrator recorded it as sharded, placed by the
// model's rule, and no model of the process has it (Migrator(db.Table(name))
// of the model made it on every shard), as in the process that made it,
// which has not read the record. Else modelTable: a table of another model,
// or recorded by another rule, is another's rows, and refused as such.
func (e *Engine) namedOwnTable(stmt *gorm.Statement, modelTable string) string {
	parts := fromTableParts(stmt)
	named := parts[len(parts)-1]
	if e.sameTable(named, bareTable(modelTable)) || !e.recordedAsSharded(named) {
		return modelTable
	}
	m, err := e.model(stmt.Schema)
	if err != nil || m == nil || !m.sharded() {
		return modelTable
	}
	rule, ok := e.recordedPlacements.Load(strings.ToLower(strings.Join(parts, "."))) // recorded as named, with its schema if any
	if !ok {
		rule, ok = e.recordedPlacements.Load(strings.ToLower(named))
	}
	if !ok || !rule.(placed).fits(m) {
		return modelTable
	}
	return named
}

// coverage returns which sharded tables a statement on a shard may name: its
// own, named once; under a one-shard clause any; else those routing
// approved, as often as it approved them, found only when asked. A table
// named more often (its own in a subquery, a joined one again in a select
// item) is one more read of it, which this database answers for its own
// rows alone.
func (e *Engine) coverage(stmt *gorm.Statement, own string, scan *scannedSQL) func(table string) bool {
	var approved map[string]int
	return func(table string) bool {
		named := max(scan.timesOf(table), 1) // a word of SQL not read names it once at least
		uses := 0
		if e.sameTable(table, own) {
			uses = 1
		}
		if uses >= named {
			return true
		}
		if approved == nil {
			if oneShardClause(stmt) {
				return true
			}
			approved = e.approvedTables(stmt)
		}
		uses += approved[strings.ToLower(table)]
		return uses >= named // named more often than approved: the other naming reads one database's rows only
	}
}

// approvedTables are the sharded tables, lower case, that routing let a
// statement read beside its own on its shard, each with how often: the
// models of its joins along a colocate column, the tables of its SQL joins
// (routing refused the others) and of its subqueries, which routing sent to
// the same database. A many2many join table is read along its owner's key
// in a join, not in a condition or a select item, whose rows it would take
// from one database.
func (e *Engine) approvedTables(stmt *gorm.Statement) map[string]int {
	approved := map[string]int{}
	approve := func(scan *scannedSQL) {
		for name, n := range scan.times { // of SQL not read, each word as often as it is written
			approved[name] += n
		}
	}
	for _, j := range stmt.Joins {
		if j.Expression != nil {
			continue // a join on a subquery, which a one-shard clause alone lets run
		}
		if path, ok := shardrouter.RelationPath(stmt.Schema, j.Name); ok {
			for _, rel := range path {
				for _, key := range e.tableKeys(rel.FieldSchema.Table)[1:] { // as the scanner reads it: bare, cut as PostgreSQL cuts it
					approved[key]++
				}
			}
			continue
		}
		approve(e.scanned(fragmentSQL(e.db.Dialector.Name(), j.Name)))
	}
	for _, sub := range readClauses(stmt).subqueries {
		approve(e.scanned(subquerySQL(sub)))
	}
	delete(approved, joinProbe)
	return approved
}

// subquerySQL is a subquery's SQL, as GORM builds it.
func subquerySQL(sub *gorm.DB) string {
	run := sub.Session(&gorm.Session{DryRun: true, Logger: logger.Discard}).Clauses() // as GORM's AddVar builds it
	if run.Statement.SQL.Len() == 0 {
		run.Callback().Query().Execute(run)
	}
	return run.Statement.SQL.String()
}

// scannedSQL is what the tokenizer read of a statement's SQL.
type scannedSQL struct {
	tables []shardrouter.Table
	times  map[string]int // how often each table is named, lower case
	words  []string       // of SQL not read for certain
	unread bool
	// alone is the table of SQL read that names one table, once (and
	// once as the dialect keeps its name): most statements' own.
	alone string
}

// timesOf is how often the SQL names table.
func (s *scannedSQL) timesOf(table string) int { return s.times[strings.ToLower(table)] }

// scanCacheSize and scanCacheBytes bound the texts kept read: GORM's SQL of
// one shape differs only by its placeholders, and an application has few
// shapes; texts with values written in are many, and can be long.
const (
	scanCacheSize  = 4096
	scanCacheBytes = 4 << 20
)

// scanCache keeps what the tokenizer read of SQL texts, by dialect and
// text. It is safe for concurrent use.
type scanCache struct {
	texts sync.Map // string → *scannedSQL
	count atomic.Int64
	bytes atomic.Int64 // of the texts kept
}

// scanned reads sql, once per text.
func (e *Engine) scanned(sql string) *scannedSQL {
	if v, ok := e.scans.texts.Load(sql); ok {
		return v.(*scannedSQL)
	}
	scan, unread := sqlscan.Read(e.db.Dialector.Name(), sql)
	read := &scannedSQL{times: scan.Times, words: scan.Words, unread: unread != nil}
	read.tables = make([]shardrouter.Table, len(scan.Tables))
	for i, t := range scan.Tables {
		read.tables[i] = shardrouter.Table{Qualifier: t.Qualifier, Name: t.Name}
	}
	if len(read.tables) == 1 && !read.unread {
		if name := read.tables[0].Name; read.timesOf(name) <= 1 && read.timesOf(e.keptName(name)) <= 1 {
			read.alone = name
		}
	}
	e.scans.keep(sql, read)
	return read
}

// keep adds a text read, starting the cache over once full: a long-running
// process keeps reading its shapes from the cache after one-off texts filled it.
func (c *scanCache) keep(sql string, read *scannedSQL) {
	if len(sql) > scanCacheBytes/16 {
		return // a text this long is read once more rather than kept
	}
	if c.count.Load() >= scanCacheSize || c.bytes.Load()+int64(len(sql)) > scanCacheBytes {
		c.texts.Clear()
		c.count.Store(0)
		c.bytes.Store(0)
	}
	if _, loaded := c.texts.LoadOrStore(sql, read); !loaded {
		c.count.Add(1)
		c.bytes.Add(int64(len(sql)))
	}
}

// buildSQL builds the statement's SQL as GORM's executor of kind would
// (gorm.io/gorm/callbacks: BuildQuerySQL, and the building part of Create,
// Update and Delete), so that the executor sends it as built. It reports
// false when there is nothing to send.
func buildSQL(db *gorm.DB, kind statementKind) bool {
	stmt := db.Statement
	switch kind {
	case kindQuery, kindRow:
		callbacks.BuildQuerySQL(db)
	case kindCreate:
		buildCreateSQL(db)
	case kindUpdate:
		if stmt.Schema != nil {
			for _, c := range stmt.Schema.UpdateClauses {
				stmt.AddClause(c)
			}
		}
		if stmt.SQL.Len() > 0 {
			return true // a clause built it (soft deletes build theirs)
		}
		stmt.AddClauseIfNotExists(clause.Update{})
		set, given := stmt.Clauses["SET"].Expression.(clause.Set)
		if !given {
			set = callbacks.ConvertToAssignments(stmt)
			if len(set) == 0 {
				return false
			}
			stmt.AddClause(set)
			defer delete(stmt.Clauses, "SET") // GORM's executor makes it afresh for each run
		}
		if t, ok := stmt.Context.Value(turnKey{}).(*turn); ok && t.stmt == stmt {
			t.set = set // what the part writes, after its hooks
		}
		stmt.SQL.Grow(180) // as GORM's Update does
		stmt.Build(stmt.BuildClauses...)
	case kindDelete:
		buildDeleteSQL(db)
	}
	return stmt.SQL.Len() > 0
}

// buildCreateSQL is the building part of GORM's Create.
func buildCreateSQL(db *gorm.DB) {
	stmt := db.Statement
	if stmt.Schema != nil {
		if !stmt.Unscoped {
			for _, c := range stmt.Schema.CreateClauses {
				stmt.AddClause(c)
			}
		}
		if slices.Contains(db.Callback().Create().Clauses, "RETURNING") && len(stmt.Schema.FieldsWithDefaultDBValue) > 0 {
			if _, ok := stmt.Clauses["RETURNING"]; !ok {
				var columns []clause.Column
				for _, field := range stmt.Schema.FieldsWithDefaultDBValue {
					if field.Readable {
						columns = append(columns, clause.Column{Name: field.DBName})
					}
				}
				if len(columns) > 0 {
					stmt.AddClause(clause.Returning{Columns: columns})
				}
			}
		}
	}
	if stmt.SQL.Len() == 0 {
		keepOnConflict(stmt)
		stmt.SQL.Grow(180) // as GORM's Create does, which this build stands in for
		stmt.AddClauseIfNotExists(clause.Insert{})
		stmt.AddClause(callbacks.ConvertToCreateValues(stmt))
		stmt.Build(stmt.BuildClauses...)
	}
}

// onConflictKey is the Settings key of an UpdateAll upsert's ON CONFLICT
// clause as it was before GORM's build expanded it into assignments.
type onConflictKey struct{ stmt *gorm.Statement }

// keepOnConflict keeps an UpdateAll upsert's ON CONFLICT clause as given:
// each build appends the assignments again, so a statement built anew (a
// write held at a move's cutover and run on the new database) starts from it.
// A clause kept by an earlier run of a *gorm.DB used again is forgotten: the
// statement's own is this run's.
func keepOnConflict(stmt *gorm.Statement) {
	if c, ok := stmt.Clauses["ON CONFLICT"]; ok {
		if oc, _ := c.Expression.(clause.OnConflict); oc.UpdateAll {
			stmt.Settings.Store(onConflictKey{stmt}, c)
			return
		}
	}
	if !settingsUntouched(&stmt.Settings) {
		stmt.Settings.Delete(onConflictKey{stmt})
	}
}

// unbuild makes a statement built and run once ready to be built and run
// again: no SQL, no values, the clauses its build changed as they were.
func unbuild(stmt *gorm.Statement) {
	stmt.SQL.Reset()
	stmt.Vars = nil
	if c, ok := loadSetting(stmt, onConflictKey{stmt}); ok {
		stmt.Clauses["ON CONFLICT"] = c.(clause.Clause)
	}
}

// buildDeleteSQL is the building part of GORM's Delete.
func buildDeleteSQL(db *gorm.DB) {
	stmt := db.Statement
	if stmt.Schema != nil {
		for _, c := range stmt.Schema.DeleteClauses {
			stmt.AddClause(c)
		}
	}
	if stmt.SQL.Len() > 0 {
		return // a clause built it (soft deletes build theirs)
	}
	stmt.AddClauseIfNotExists(clause.Delete{})
	if stmt.Schema != nil {
		keysOf := func(rv reflect.Value) {
			_, values := schema.GetIdentityFieldValuesMap(stmt.Context, rv, stmt.Schema.PrimaryFields)
			column, list := schema.ToQueryValues(stmt.Table, stmt.Schema.PrimaryFieldDBNames, values)
			if len(list) > 0 {
				stmt.AddClause(clause.Where{Exprs: []clause.Expression{clause.IN{Column: column, Values: list}}})
			}
		}
		keysOf(stmt.ReflectValue)
		if stmt.ReflectValue.CanAddr() && stmt.Dest != stmt.Model && stmt.Model != nil {
			keysOf(reflect.ValueOf(stmt.Model))
		}
	}
	stmt.AddClauseIfNotExists(clause.From{})
	stmt.SQL.Grow(100) // as GORM's Delete does
	stmt.Build(stmt.BuildClauses...)
}
