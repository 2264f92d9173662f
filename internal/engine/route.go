package engine

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/sqlerr"
	"github.com/shardid/shardid/shardrouter"
)

// errRouted stops GORM's own execution of a statement that the plugin has
// run itself, once per physical database; shardid:finish clears it.
var errRouted = errors.New("shardid: statement ran per physical database")

// Kind is the GORM processor a routing callback serves.
type statementKind uint8

const (
	kindQuery statementKind = iota
	kindUpdate
	kindDelete
	kindRow
	kindRaw
	kindCreate
)

// pinKey is the Statement.Settings key of a statement that the plugin has
// already sent to one physical database: a part of a fan-out or a split.
type pinKey struct{}

type pin struct {
	schema   *schema.Schema
	physical int
}

// routed reports whether the plugin routes statements at all: with no
// Shards, every logical shard is on the plugin's own database.
func (e *Engine) routed() bool { return len(e.config.Shards) > 0 }

// route is the callback that sends a query, update, delete or row statement
// on a sharded model to the physical database(s) its shard names.
// Its subqueries are then checked to run on that database.
func (e *Engine) route(kind statementKind) func(*gorm.DB) {
	return func(db *gorm.DB) {
		e.keepHintsInWhere(db.Statement)
		settings, sub := ownSettings(db.Statement)
		if db.Error != nil {
			return
		}
		e.unprepareTransaction(db.Statement)
		e.startRouting(db.Statement)
		e.awaitEndedAnchorsOf(db.Statement)
		if (kind == kindUpdate || kind == kindDelete) && !sub {
			e.holdIfAnnounced(db, kind)
		}
		if kind == kindRaw && db.Statement.SQL.Len() > 0 {
			e.routeStatement(db, kind, sub, &settings, nil) // its text is all there is to read
			return
		}
		aheadSQL, aheadVars, ahead := builtAhead(db, kind)
		ownTableConditions(db.Statement)
		reading := readClauses(db.Statement)
		e.routeStatement(db, kind, sub, &settings, &reading)
		e.checkSubqueries(db, reading.subqueries)
		if ahead && db.Error == nil { // on one database: sent as the callback built it
			db.Statement.SQL.WriteString(aheadSQL)
			db.Statement.Vars = aheadVars
		}
	}
}

// builtAhead sets aside the SQL a callback before GORM's query built from
// the statement's clauses (gorm.io/plugin/caches builds its key so), for the
// statement to be routed by its clauses: a part of a statement over several
// databases is built anew from them, one on one database is sent as built.
func builtAhead(db *gorm.DB, kind statementKind) (string, []any, bool) {
	stmt := db.Statement
	if kind != kindQuery && kind != kindRow || stmt.SQL.Len() == 0 {
		return "", nil, false
	}
	if _, fromClauses := stmt.Clauses["FROM"]; !fromClauses { // db.Raw's SQL has none
		return "", nil, false
	}
	sql, vars := stmt.SQL.String(), stmt.Vars
	if len(stmt.Joins) == 0 && !strings.Contains(sql, clausesSQL(db)) { // with Joins a build joins them again: taken as built
		return "", nil, false // db.Raw on a statement that ran before, whose clauses it keeps
	}
	stmt.SQL.Reset()
	stmt.Vars = nil
	if len(stmt.Joins) > 0 {
		stmt.Settings.Store(joinsBuiltKey{}, true)
	}
	return sql, vars, true
}

// clausesSQL is the SQL GORM builds of a query's clauses, on a copy: a
// Session given a Context copies the statement, which one without shares.
func clausesSQL(db *gorm.DB) string {
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	built := db.Session(&gorm.Session{DryRun: true, Logger: logger.Discard, Context: ctx})
	built.Statement.BuildClauses = db.Statement.BuildClauses // the copy has none
	built.Statement.SQL.Reset()
	built.Statement.Vars = nil
	callbacks.BuildQuerySQL(built)
	return built.Statement.SQL.String()
}

// joinsBuiltKey marks a statement whose Joins a callback built into its FROM
// clause already: built again, as a part, they would be joined twice.
type joinsBuiltKey struct{}

// routeStatement routes the statement by its clauses' reading (nil for SQL
// already built); sub says it is a statement GORM made while running another.
func (e *Engine) routeStatement(db *gorm.DB, kind statementKind, sub bool, settings *settingsReading, reading *clauseReading) {
	stmt := db.Statement
	if stmt.SQL.Len() > 0 {
		if e.routed() {
			e.onPluginDatabase(stmt)
			db.AddError(e.routeRaw(db))
		}
		return
	}
	if stmt.Schema == nil {
		if e.routed() && (stmt.Table != "" || stmt.TableExpr != nil) {
			e.onPluginDatabase(stmt)
			db.AddError(e.routeTable(db))
		}
		return
	}
	m, err := e.model(stmt.Schema) // a bad tag fails every statement on the model
	if err == nil && m != nil && m.sharded() && e.closed.Load() {
		err = e.closedError("") // with Config.Shards or without
	}
	if err != nil || !e.routed() {
		db.AddError(err)
		return
	}
	if m == nil || !m.sharded() {
		db.AddError(e.keepUnsharded(db, kind))
		return
	}
	if err := e.mapUsable(); err != nil {
		db.AddError(err)
		return
	}
	if settings.pinned && settings.pin.schema == stmt.Schema {
		// A part of a fan-out: back to its database, whatever a plugin
		// that runs before this one (dbresolver) chose.
		e.bindWrite(db, kind, settings.pin.physical, e.router.Map())
		return
	}
	if err := e.checkJoins(stmt, m); err != nil {
		db.AddError(err)
		return
	}
	if err := e.checkConditionSQL(stmt, m, reading); err != nil {
		db.AddError(err)
		return
	}
	shardMap := e.router.Map() // one map for the whole statement, though it be swapped meanwhile
	route, err := e.routeOf(db, m, kind, settings, reading.where, shardMap)
	physicals, several := route.Databases, route.Several
	if errors.Is(err, ErrNoShard) {
		if table, joins := e.joinsJoinTable(stmt); joins { // Association(...).Find or Count of a many2many
			err = fmt.Errorf("%w: %s is joined with %s, the join rows of a sharded model, which are on their owner's database, and the %s rows they name may be on others: read them with Preload, which reads each where it is, or, where they live beside their owner, give the owner's shard (db.Clauses(shardid.ByID(ownerID)))",
				ErrCrossShard, m.schema.Name, table, m.schema.Name)
		}
	}
	if err != nil && sub && errors.Is(err, ErrNoShard) {
		err = fmt.Errorf("%w (a statement GORM made for a Preload or an association save; a clause of the statement that made it does not apply to it: give it its own, as in Preload(\"X\", func(tx *gorm.DB) *gorm.DB { return tx.Clauses(shardid.AllShards()) }), or with gorm.G as a condition: Preload(\"X\", func(pb gorm.PreloadBuilder) error { pb.Where(shardid.AllShards()); return nil }))", err)
	}
	if err != nil {
		db.AddError(err)
		return
	}
	if k, ok := physicals.Single(); ok {
		if route.ByClause && (kind == kindQuery || kind == kindRow) {
			// No key pins its rows: it reads the ranges the map gives k only, as a part over several
			// databases does, not a move's copy of another range k holds.
			e.keepStatementToOnce(stmt, m, stmt.Table, shardMap.Keep(k))
		}
		if state := e.bindWrite(db, kind, k, shardMap); state != nil {
			state.severalShards, state.where = several, reading.where
		}
		return
	}
	stmt.Settings.Store(routingKey{}, &routeState{shardMap: shardMap}) // its parts split their values by it
	e.fanOut(db, kind, m, physicals.List(), len(reading.subqueries) > 0)
}

// routingKey is the key of what routing keeps for the later callbacks of a
// statement over several databases (in its Settings) or of a Create (in its
// context).
type routingKey struct{}

// routeState is what routing keeps of a statement.
type routeState struct {
	shardMap *shardrouter.Map // the map it was routed by
	// filled are the IDs the plugin made for a Create, so that a retry on
	// another database makes them anew there.
	filled         []filledID
	filledOnStruct [2]filledID // room for the filled IDs of one row
	// parents are the IDs made for belongs-to parents created in the same
	// call, and the rows' keys that name them.
	parents []filledID
	// nested are the IDs that Creates run in this one's transaction (its
	// associations', its parts') made and kept: given back with its own
	// when that transaction rolls back.
	nested []filledID
	// undone says a Create run in parts failed with every part rolled back;
	// failedBeforeCommit, that it failed before GORM's commit.
	undone, failedBeforeCommit bool
	scratch                    idScratch
	// boundOn is the database a Create was bound to outside a transaction,
	// plus one; gormTx the transaction GORM then began for it there.
	boundOn int
	gormTx  gorm.ConnPool
	// severalShards says the update or delete bound on boundOn names rows of
	// two logical shards or more, which a move may since have split.
	severalShards bool
	// where are the conditions it was routed by, to tell whether a callback
	// or hook changed them since.
	where []clause.Expression
	// counted is the map version a Create counts in while GORM begins its
	// transaction (countCreate), until countedBack marks the statement.
	counted *routedBy
	// anchored is the write of a Create in a transaction on the plugin's
	// own database, which commits with it (anchored.go); anchorPool is
	// that transaction's pool, which the statement had before.
	anchored   *globalTx
	anchorPool gorm.ConnPool
	// lockedGaps says the plugin's own check read the table in the
	// statement's transaction before its write, so that a deadlock it
	// loses runs it again: an upsert's check read, FOR UPDATE, the rows it
	// may conflict with (checkUpsert): two such upserts of one new value
	// hold the same gap and deadlock on their inserts; an update's read of
	// the colocate value its row holds (rowHolds) takes MySQL's metadata
	// lock, behind which a move's CREATE TRIGGER waits while the update's
	// write waits behind it.
	lockedGaps bool
	// ownFrom is the connection a write had before the plugin began a
	// transaction of its own for it (beginOwnTransaction), which it gets
	// back at its end.
	ownFrom gorm.ConnPool
}

// writeContext carries a write's routeState in the statement's context: a
// setting would cost every Create, Update and Delete three allocations more,
// as GORM copies the settings when it begins the transaction.
type writeContext struct {
	context.Context
	stmt *gorm.Statement // the write it is of; statements it starts see it and ignore it
	routeState
}

func (c *writeContext) Value(key any) any {
	switch key.(type) { // by type: the keys are empty structs
	case routingKey:
		return c
	case gormTxKey:
		if c.gormTx != nil {
			return c.gormTx
		}
	}
	return c.Context.Value(key)
}

// keepWriteState gives a write the state of its routing, by shardMap.
func keepWriteState(stmt *gorm.Statement, shardMap *shardrouter.Map) *routeState {
	parent := stmt.Context
	if parent == nil {
		parent = context.Background()
	}
	c := &writeContext{Context: parent, stmt: stmt, routeState: routeState{shardMap: shardMap}}
	stmt.Context = c
	return &c.routeState
}

// dropWriteState gives a write back the context it came with, unless
// another plugin has wrapped it since (the state is then left, for nothing
// to find).
func dropWriteState(stmt *gorm.Statement) {
	if c, ok := stmt.Context.(*writeContext); ok && c.stmt == stmt {
		stmt.Context = c.Context
	}
}

// routeStateOf returns what routing kept of the statement, or nil.
func routeStateOf(stmt *gorm.Statement) *routeState {
	if c, ok := stmt.Context.(*writeContext); ok && c.stmt == stmt { // unwrapped since: no walk
		return &c.routeState
	}
	if stmt.Context != nil {
		if c, ok := stmt.Context.Value(routingKey{}).(*writeContext); ok && c.stmt == stmt {
			return &c.routeState
		}
	}
	if v, ok := loadSetting(stmt, routingKey{}); ok {
		return v.(*routeState)
	}
	return nil
}

// mapOf returns the shard map the statement was routed by, or the current one.
func (e *Engine) mapOf(stmt *gorm.Statement) *shardrouter.Map {
	if state := routeStateOf(stmt); state != nil {
		return state.shardMap
	}
	return e.router.Map()
}

// resolverAfterHint explains a transaction begun with a shard clause that
// gorm.io/plugin/dbresolver's clause, given after it, sent back to the
// plugin's database: dbresolver chooses its connection as its clause is
// read, after the shard clause chose the shard's.
func resolverAfterHint(stmt *gorm.Statement) string {
	if _, hinted := loadSetting(stmt, hintSettingKey{}); !hinted {
		return ""
	}
	_, write := stmt.Settings.Load("gorm:db_resolver:write")
	_, read := stmt.Settings.Load("gorm:db_resolver:read")
	_, using := stmt.Clauses["gorm:db_resolver:using"]
	if !write && !read && !using {
		return ""
	}
	return "; a gorm.io/plugin/dbresolver clause given after the shard clause chose the connection the transaction began on: give it first, as in db.Clauses(dbresolver.Write).Clauses(shardid.ByID(id))"
}

// bind sends the statement to physical database k: it sets the statement's
// connection pool, or, inside a transaction, checks that the transaction is
// on k.
func (e *Engine) bind(db *gorm.DB, k int) error {
	stmt := db.Statement
	if g := globalOf(stmt.ConnPool); g != nil {
		branch, err := g.branch(stmt.Context, k)
		e.boundTo(stmt, k)
		if err != nil {
			return err
		}
		stmt.ConnPool = branch
		return nil
	}
	if inTransaction(stmt.ConnPool) {
		on, ok := e.transactionPhysical(stmt)
		switch {
		case !ok:
			return fmt.Errorf("%w: the statement belongs on %s, and its transaction is not one begun there: begin it with db.Clauses(shardid.ByID(id)), shardid.OnShard(n) or shardid.ByKey(key), or, for rows it creates and then reads or changes (a sign-up), with db.Clauses(shardid.AcrossShards()) (a transaction on the plugin's own database holds no logical shard)%s",
				ErrCrossShard, e.physical[k].name, resolverAfterHint(stmt)+acrossInTxHint(stmt))
		case on != k && e.movedAway(stmt, on):
			return &MovedError{Shard: -1, To: e.physical[k].name, Why: fmt.Sprintf("the transaction on %s began before the move; retry the transaction", e.physical[on].name)}
		case on != k && inGORMsTransaction(stmt):
			return fmt.Errorf("%w: the statement belongs on %s, and runs in the transaction GORM began on %s for the write whose hook or callback runs it, which holds that database only: run it after that write, or run the write in db.Clauses(shardid.AcrossShards()).Transaction, which spans databases",
				ErrCrossShard, e.physical[k].name, e.physical[on].name)
		case on != k:
			return fmt.Errorf("%w: the transaction is on %s, the statement belongs on %s%s", ErrCrossShard, e.physical[on].name, e.physical[k].name, acrossInTxHint(stmt))
		}
		e.boundTo(stmt, k)
		return nil
	}
	pool, err := e.poolOf(stmt.Context, k, stmt.ConnPool)
	e.boundTo(stmt, k) // counted there, its error too: a database down since the start is no exception
	if err != nil {
		return err
	}
	stmt.ConnPool = pool
	return nil
}

// bindWrite binds a statement of kind to k, and notes an update or a delete
// bound outside a transaction: GORM begins one for it there.
func (e *Engine) bindWrite(db *gorm.DB, kind statementKind, k int, shardMap *shardrouter.Map) *routeState {
	outside := !inTransaction(db.Statement.ConnPool)
	if db.AddError(e.bind(db, k)) == nil && outside && (kind == kindUpdate || kind == kindDelete) {
		state := keepWriteState(db.Statement, shardMap)
		state.boundOn = k + 1
		return state
	}
	return nil
}

// writeStillRouted refuses, right before GORM's executor, an update or
// delete on one database whose conditions a callback or a hook changed
// since it was routed (an Or, another key) so that they name rows of
// another database: it would write this one's only.
func (e *Engine) writeStillRouted(kind statementKind) func(*gorm.DB) {
	return func(db *gorm.DB) {
		stmt := db.Statement
		if db.Error != nil || !e.routed() || stmt.Schema == nil || stmt.SQL.Len() > 0 {
			return
		}
		if _, part := loadSetting(stmt, pinKey{}); part {
			return // a part of a statement over several databases: its conditions are checked whole
		}
		w, _ := stmt.Clauses["WHERE"].Expression.(clause.Where)
		where := w.Exprs
		if state := routeStateOf(stmt); state != nil && len(state.where) == len(where) && (len(where) == 0 || &state.where[0] == &where[0]) {
			return // as routed
		}
		m, err := e.model(stmt.Schema)
		if err != nil || m == nil || !m.sharded() {
			return
		}
		on, ok := e.sentOn(stmt)
		if !ok {
			return
		}
		set, err := e.statementPhysicals(db, m, kind, e.mapOf(stmt))
		if k, one := set.Single(); err == nil && one && k == on {
			return
		}
		if current := e.router.Map(); current != e.mapOf(stmt) { // a write held at a move's cutover runs again by the new map
			if now, err := e.statementPhysicals(db, m, kind, current); err == nil {
				if k, one := now.Single(); one && k == on {
					return
				}
			}
		}
		if err == nil {
			where := fmt.Sprintf("%d databases", set.Len())
			if k, one := set.Single(); one {
				where = e.physical[k].name
			}
			err = fmt.Errorf("%w: %s: after its callbacks and hooks the %s's conditions name rows of %s, and it runs on %s only", ErrCrossShard, m.schema.Name, statementKinds[kind], where, e.physical[on].name)
		}
		db.AddError(err)
	}
}

// rowKey returns the primary key of the one row an update names, by its
// model or its conditions.
func (e *Engine) rowKey(stmt *gorm.Statement, m *model) (any, bool) {
	if model := reflect.Indirect(reflect.ValueOf(stmt.Model)); model.Kind() == reflect.Struct && model.Type() == m.schema.ModelType {
		if value, zero := m.pk().field.ValueOf(stmt.Context, model); !zero {
			return value, true
		}
	}
	if where, ok := stmt.Clauses["WHERE"].Expression.(clause.Where); ok {
		if values, ok := shardrouter.ColumnValues(where.Exprs, m.evidence[0].matches); ok && len(values) == 1 {
			return values[0], true
		}
	}
	return nil, false
}

// sameKey reports whether v is the primary key of the one row the update names.
func (e *Engine) sameKey(stmt *gorm.Statement, m *model, v any) bool {
	key, ok := e.rowKey(stmt, m)
	if !ok {
		return false
	}
	a, errA := sortKeyOf(key, m.pk().field.FieldType)
	b, errB := sortKeyOf(v, m.pk().field.FieldType)
	return errA == nil && errB == nil && a == b
}

// rowShard returns the logical shard of the one row an update names.
func (e *Engine) rowShard(stmt *gorm.Statement, m *model) (int, bool) {
	key, ok := e.rowKey(stmt, m)
	if !ok {
		return 0, false
	}
	shard, err := m.evidence[0].shardOf(e, key)
	return shard, err == nil
}

// keepUnsharded keeps a statement on an unsharded model on the plugin's own
// database, where its rows live, whatever shard connection it inherited from
// the statement it was started by (GORM saves associations so) or a shard
// clause chose. Inside a transaction on a shard it is read outside the
// transaction, and written never (ErrCrossShard); joined with rows that live
// on shards, it fails with ErrCrossShard. The join rows of a sharded
// model's many2many go to their owner's shard.
func (e *Engine) keepUnsharded(db *gorm.DB, kind statementKind) error {
	stmt := db.Statement
	if _, joins := e.joinTables.Load(strings.ToLower(stmt.Schema.Table)); joins {
		return e.routeJoinRows(db, kind == kindCreate)
	}
	if table, joins := e.joinsJoinTable(stmt); joins {
		return fmt.Errorf("%w: %s is not sharded, and the statement joins %s, the join rows of a sharded model, which are on that model's shard: read the join rows and %s apart (Preload does)",
			ErrCrossShard, stmt.Schema.Name, table, stmt.Schema.Name)
	}
	for _, j := range stmt.Joins {
		path, named := shardrouter.RelationPath(stmt.Schema, j.Name)
		if !named && e.namesShardedRows(j.Name) {
			return fmt.Errorf("%w: %s is not sharded, and Joins(%q) joins rows that live on shards: query them apart",
				ErrCrossShard, stmt.Schema.Name, j.Name)
		}
		for _, rel := range path {
			if tm, err := e.model(rel.FieldSchema); err != nil || tm != nil && tm.sharded() {
				return errors.Join(err, fmt.Errorf("%w: %s is not sharded, and Joins(%q) joins %s, which is: query %s and join %s instead, or load it with Preload",
					ErrCrossShard, stmt.Schema.Name, j.Name, rel.FieldSchema.Name, rel.FieldSchema.Name, stmt.Schema.Name))
			}
		}
	}
	if g := globalOf(stmt.ConnPool); g != nil && !g.implicit {
		branch, err := g.branch(stmt.Context, ownDatabase) // an application's transaction across shards: its rows too
		if err == nil {
			stmt.ConnPool = branch
		}
		return err
	}
	if inTransaction(stmt.ConnPool) {
		if k, onShard := e.transactionPhysical(stmt); onShard {
			if kind == kindQuery || kind == kindRow {
				stmt.ConnPool = e.db.ConnPool // read where its rows are, outside the shard's transaction
				return nil
			}
			return fmt.Errorf("%w: %s is not sharded: its rows live on the plugin's database, not in the transaction on %s; save it apart",
				ErrCrossShard, stmt.Schema.Name, e.physical[k].name)
		}
		return nil
	}
	e.onPluginDatabase(stmt)
	return nil
}

// opensTransactionsInside reports whether statements on s may run further
// statements inside GORM's transaction for it, with fresh Settings: saving
// associations, or the model's own hooks. Only those need the transaction
// remembered.
func opensTransactionsInside(s *schema.Schema) bool {
	return len(s.Relationships.Relations) > 0 ||
		s.BeforeCreate || s.AfterCreate || s.BeforeSave || s.AfterSave ||
		s.BeforeUpdate || s.AfterUpdate || s.BeforeDelete || s.AfterDelete
}

// transactionPhysical returns the physical database the statement's
// transaction is on: the one it was begun on, whoever began it (a shard
// clause, GORM for a routed write, a callback); for another plugin's kind
// of transaction, the one a shard clause chose, if any.
func (e *Engine) transactionPhysical(stmt *gorm.Statement) (int, bool) {
	if b, ok := stmt.ConnPool.(*branchPool); ok {
		return b.k, b.k != ownDatabase
	}
	if tx := sqlTx(stmt.ConnPool); tx != nil {
		k, ok := e.physicalOfPool(dbBehind(tx))
		if ok {
			e.noteTransactionMap(stmt)
		}
		return k, ok
	}
	if c, ok := stmt.ConnPool.(*clausePool); ok {
		return c.physical(), true
	}
	if v, ok := loadSetting(stmt, txPhysicalKey{}); ok {
		e.noteTransactionMap(stmt)
		return v.(int), true
	}
	return 0, false
}

// noteTransactionMap remembers, for movedAway, the shard map a transaction
// of a shard clause's statement began by when its clausePool did not begin it
// (GORM's own, for a write the clause routed; one on a Connection): the
// write's routing map, else the map of its first statement, never the map of
// when the clause was given, which a *gorm.DB kept with it holds across moves.
func (e *Engine) noteTransactionMap(stmt *gorm.Statement) {
	if _, clause := loadSetting(stmt, clausePoolKey{}); !clause {
		return // not a clause's transaction: GORM's own, of one statement
	}
	if _, noted := e.txMaps.lookup(stmt.ConnPool); noted {
		return
	}
	began := e.router.Map()
	if state := routeStateOf(stmt); state != nil && state.gormTx == stmt.ConnPool {
		began = state.shardMap
	}
	e.txMaps.remember(stmt.ConnPool, began)
}

// movedAway reports whether physical database k, which a transaction is on,
// has lost logical shards to a move since the transaction began: a
// statement of it that belongs elsewhere now is to be retried with the
// transaction, not refused as crossing shards.
func (e *Engine) movedAway(stmt *gorm.Statement, k int) bool {
	began, ok := e.txMaps.lookup(stmt.ConnPool)
	now := e.router.Map()
	return ok && began != now && slices.ContainsFunc(began.Logical(k), func(s int) bool { return now.Physical(s) != k })
}

// rememberTransaction runs after gorm:begin_transaction: the transaction GORM
// began for a write the plugin bound outside one is noted as GORM's own, so
// that SQL its hooks and callbacks issue is not taken for SQL meant for that
// database.
func (e *Engine) rememberTransaction(db *gorm.DB) {
	stmt := db.Statement
	countedBack(stmt)
	if !inTransaction(stmt.ConnPool) {
		return
	}
	if state := routeStateOf(stmt); state != nil && state.boundOn > 0 {
		state.gormTx = stmt.ConnPool
	}
}

// finish runs last: a statement the plugin ran per physical database
// succeeded if every part did; the error of a statement routed to one names
// that database.
func (e *Engine) finish(kind statementKind) func(*gorm.DB) {
	return func(db *gorm.DB) {
		var ownEnded bool
		if kind == kindCreate {
			ownEnded = e.endOwnTransaction(db) // where GORM's own would have ended
		}
		doneRunning(db.Statement)
		giveOwnWhereBack(db.Statement)
		if kind == kindCreate {
			countedBack(db.Statement) // one that ended before its begin's callback
		}
		e.endRouting(db.Statement)
		var anchorPool gorm.ConnPool
		if kind == kindCreate {
			anchorPool = e.endAnchored(db)
		}
		if db.Error == errRouted {
			db.Error = nil
			keepResult(db)
		}
		var state *routeState // a Create's, whose IDs a failure gives back; a failed write's, with the IDs of the Creates it ran
		if kind == kindCreate || db.Error != nil && (kind == kindUpdate || kind == kindDelete) {
			state = routeStateOf(db.Statement)
		}
		var routedBy *shardrouter.Map // read before its state is dropped, on the error path only
		if db.Error != nil {
			routedBy = e.mapOf(db.Statement)
		}
		dropWriteState(db.Statement) // a statement instance may run again
		if db.Error != nil && e.routed() {
			db.Error = e.nameDatabase(db, kind, routedBy)
			if shard, to, moved := fence.MovedShard(db.Error); moved && !errors.Is(db.Error, ErrShardMoved) {
				// Raw SQL, a part over several databases: refused, not retried.
				db.Error = &MovedError{Shard: shard, To: to, Why: "run the statement again", Err: db.Error}
			} else if fence.RacedInstall(db.Error) {
				db.Error = &MovedError{Shard: -1, To: "(a move being prepared)", Why: "it raced the creation of the move's triggers; retry the transaction", Err: db.Error}
			}
			if g := globalOf(db.Statement.ConnPool); g != nil && errors.Is(db.Error, ErrShardMoved) {
				g.fail(db.Error) // a branch the move's fence refused: the whole transaction goes back
			}
			if errors.Is(db.Error, ErrShardMoved) && e.maps != nil {
				// The caller runs it again next: by the map that moved it.
				ctx, cancel := context.WithTimeout(db.Statement.Context, e.moveWait()) // a map held back does not hold the refusal
				_, _ = e.refreshMap(ctx)
				cancel()
			}
		}
		if kind == kindRow && db.Error != nil {
			e.giveFailedRow(db)
		}
		if state != nil {
			rolledBack := false
			if db.Error != nil { // looked up then only: InstanceGet costs two allocations
				_, began := db.InstanceGet("gorm:started_transaction") // GORM's own, which took the parents' and children's rows back too
				rolledBack = began && state.failedBeforeCommit || state.undone
			}
			if rolledBack || db.Statement.RowsAffected == 0 && (db.Error != nil || !db.DryRun) { // undone, failed, or skipped (ON CONFLICT DO NOTHING)
				state.unfill(rolledBack)
			} else {
				handUp(db.Statement, state)
			}
		}
		if ownEnded { // GORM's note of a transaction, made for the plugin's own, goes with it
			db.Statement.Settings.Delete(fmt.Sprintf("%p", db.Statement) + gormStartedTransaction)
		}
		e.leaveShardPool(db) // after its error is named, by its pool among others
		if anchorPool != nil {
			db.Statement.ConnPool = anchorPool
		}
		if t, part := db.Statement.Context.Value(turnKey{}).(*turn); part && t.stmt == db.Statement && db.Error == nil {
			// The callbacks registered after the plugin that GORM runs last (an
			// application's After("gorm:create")) run once, for the whole
			// statement, as without the plugin: a part's end is marked for them
			// to pass over, and unmarked by stopClock.
			db.Error = errPartEnded
		}
	}
}

// errPartEnded marks a part of a write over several databases that has
// ended (finish); driver.ErrSkip, which tracing plugins
// (gorm.io/plugin/opentelemetry) do not record as a failure.
var errPartEnded = driver.ErrSkip

// leaveShardPool gives a statement that routing sent to a shard's pool,
// outside a transaction, the plugin's own pool back as it ends: the *gorm.DB
// used again (its Begin, its next statement) starts where a new one would.
// A statement whose shard clause chose a pool gets that one back (GORM gives
// a statement whose transaction it ended the pool the *gorm.DB was opened
// with), for Begin to begin on that shard; a DryRun statement keeps its own,
// which tells where a subquery it built runs.
func (e *Engine) leaveShardPool(db *gorm.DB) {
	stmt := db.Statement
	if !e.routed() || db.DryRun || inTransaction(stmt.ConnPool) {
		return
	}
	if c, hinted := loadSetting(stmt, clausePoolKey{}); hinted {
		stmt.ConnPool = c.(*clausePool)
		return
	}
	if _, ok := e.physicalOfPool(stmt.ConnPool); ok {
		stmt.ConnPool = e.ownPool(stmt.ConnPool)
	}
}

// giveFailedRow hands Row of a failed statement on a sharded model, or of
// raw SQL under a shard clause, a row
// whose Scan returns the error, as one database's failed query does: GORM
// hands nil when a callback failed (a refusal, a part over several
// databases), whose Scan panics in the caller.
func (e *Engine) giveFailedRow(db *gorm.DB) {
	stmt := db.Statement
	if many, _ := loadSetting(stmt, "rows"); many == true || stmt.Schema == nil && !hasShardClause(stmt) {
		return
	}
	if row, ok := stmt.Dest.(*sql.Row); ok && row != nil {
		return
	}
	if stmt.Schema != nil { // else raw SQL under a shard clause, which the plugin failed
		if m, err := e.model(stmt.Schema); err == nil && (m == nil || !m.sharded()) {
			return // a statement the plugin left to GORM, as without it
		}
	}
	stmt.Dest = failedRow(stmt.Context, db.Error)
}

// hasShardClause reports whether a shard clause chose the statement's
// database, or failed it as unavailable.
func hasShardClause(stmt *gorm.Statement) bool {
	_, pooled := loadSetting(stmt, clausePoolKey{})
	_, unavailable := loadSetting(stmt, unavailableKey{})
	return pooled || unavailable
}

// nameDatabase names the physical database a failed statement ran on. Found
// only now, on the error path: by its connection, its transaction, or, once
// GORM has ended the transaction it began, by its rows and conditions again
// and the map it was routed by.
func (e *Engine) nameDatabase(db *gorm.DB, kind statementKind, routedBy *shardrouter.Map) error {
	stmt, err := db.Statement, db.Error
	if fromDatabase(err) {
		err = sqlerr.OfEndedContext(stmt.Context, err)
	}
	if pinned, ok := loadSetting(stmt, pinKey{}); ok && pinned.(pin).schema == stmt.Schema {
		return err // a part of a statement over several databases, which names it
	}
	if !fromDatabase(err) {
		return err
	}
	k, ok := e.boundPhysical(stmt)
	if !ok && stmt.Schema != nil && !inTransaction(stmt.ConnPool) {
		k, ok = e.routedAgain(db, kind, routedBy)
	}
	if !ok {
		return err
	}
	return &onError{name: e.physical[k].name, err: err}
}

// routedAgain returns the one physical database a write on a sharded model
// was routed to.
func (e *Engine) routedAgain(db *gorm.DB, kind statementKind, routedBy *shardrouter.Map) (int, bool) {
	m, err := e.model(db.Statement.Schema)
	if err != nil || m == nil || !m.sharded() {
		return 0, false
	}
	switch kind {
	case kindCreate:
		rows, err := structRows(m, db.Statement.ReflectValue, nil)
		var set shardrouter.Set
		for _, row := range rows {
			shard, zero, err := e.fieldShard(m.pk().field.ReflectValueOf(db.Statement.Context, row))
			if err != nil || zero {
				return 0, false
			}
			set = set.With(routedBy.Physical(shard))
		}
		if err != nil {
			return 0, false
		}
		return set.Single() // not a Create split over several databases, whose parts name theirs
	case kindUpdate, kindDelete:
		set, err := e.statementPhysicals(db, m, kind, routedBy)
		if err != nil {
			return 0, false
		}
		return set.Single()
	}
	return 0, false
}

// fromDatabase reports whether an error is one a database may have returned:
// not gorm.ErrRecordNotFound, left as it is for callers that compare it with
// ==, nor the plugin's own refusals, nor one named already (a sub-statement's,
// or the parts' of a statement over several databases).
func fromDatabase(err error) bool {
	var named *onError
	var mapNotRead *mapNotReadError
	return err != gorm.ErrRecordNotFound && !errors.Is(err, ErrNoShard) && !errors.Is(err, ErrCrossShard) &&
		!errors.Is(err, ErrInvalidID) && !errors.As(err, &named) && !errors.As(err, &mapNotRead) && !strings.HasPrefix(errs.Text(err), "shardid: on ")
}

// onError is an error of a statement on one physical database.
type onError struct {
	name string
	err  error
}

func (e *onError) Error() string {
	if inner, ok := e.err.(*onError); ok && inner.name == e.name {
		return inner.Error() // named once
	}
	return "shardid: on " + e.name + ": " + strings.TrimPrefix(errs.Text(e.err), "shardid: ")
}
func (e *onError) Unwrap() error { return e.err }

// Is makes an error of a database that could not be reached, or whose
// connection was lost, an ErrShardUnavailable.
func (e *onError) Is(target error) bool {
	return target == ErrShardUnavailable && sqlerr.Unreachable(e.err)
}

// statementPhysicals returns the physical databases that can hold the rows a
// statement names, as the planner decides from its shard clause, its
// conditions on the key columns and its model's IDs.
func (e *Engine) statementPhysicals(db *gorm.DB, m *model, kind statementKind, shardMap *shardrouter.Map) (shardrouter.Set, error) {
	settings := readSettings(db.Statement)
	route, err := e.routeOf(db, m, kind, &settings, readClauses(db.Statement).where, shardMap)
	return route.Databases, err
}

// routeOf is statementPhysicals for the statement's Settings and conditions
// where, read already, as the planner's route.
func (e *Engine) routeOf(db *gorm.DB, m *model, kind statementKind, settings *settingsReading, where []clause.Expression, shardMap *shardrouter.Map) (shardrouter.Route, error) {
	stmt := db.Statement
	planned := shardrouter.Statement{Keys: m.keys, Where: where}
	if settings.hinted {
		h := settings.hint
		if h.kind == hintAll {
			planned.Clause = shardMap.Serving() // a database serving no range holds no row to read
		} else {
			s, err := e.hintShard(h)
			if err != nil {
				return shardrouter.Route{}, err
			}
			planned.Clause = shardrouter.Only(shardMap.Physical(s))
		}
	}
	var rowsOnStack [1]int
	planned.Rows = e.modelShards(stmt, m, kind, rowsOnStack[:0])
	if len(planned.Rows) > 0 && shardrouter.OrJoined(where) {
		return shardrouter.Route{}, fmt.Errorf("%w: %s: a condition given by Or leaves the IDs of the statement's rows, which GORM appends, AND-ed to part of the conditions only: the rows it names may be on any database; give the IDs as a condition, or the Or inside Where(clause.Or(...))",
			ErrCrossShard, m.schema.Name)
	}
	if (kind == kindQuery || kind == kindRow) && shardrouter.OrJoined(where) && softDeleteWillWrap(stmt) { // a wrap changes only a list holding an Or
		// read as the soft delete will build it: a leading Or AND-ed to the next condition
		planned.Where = []clause.Expression{clause.And(where...)}
	}
	route := shardrouter.PlanRoute(planned, shardMap)
	switch route.Refusal {
	case shardrouter.OutsideClause:
		return shardrouter.Route{Databases: route.Databases}, fmt.Errorf("%w: %s: the statement's conditions name rows outside the shard its clause names%s", ErrCrossShard, m.schema.Name, acrossInTxHint(stmt))
	case shardrouter.NoShard:
		if rows := reflect.Indirect(reflect.ValueOf(stmt.Model)); kind == kindUpdate && (rows.Kind() == reflect.Slice || rows.Kind() == reflect.Array) && rows.Len() > 0 {
			return shardrouter.Route{Databases: route.Databases}, fmt.Errorf("%w (GORM restricts an update of rows to their IDs only when the last row has one)", e.noShard(m))
		}
		return shardrouter.Route{Databases: route.Databases}, e.noShard(m)
	}
	return route, route.Err
}

func (e *Engine) noShard(m *model) error {
	key := m.pk()
	detail := "no condition names its logical shard: give the ID (First(&x, id), Where(\"" + key.field.DBName + " = ?\", id), Where(&T{ID: id}) or a struct with its ID set)"
	if key.colocate != nil {
		detail += ", or " + key.colocate.Name + " (colocate)"
	}
	if key.hash != nil {
		detail += ", or " + key.hash.Name + " (hash)"
	}
	detail += "; or say it with db.Clauses(shardid.ByID(id)), shardid.OnShard(n), shardid.ByKey(key) or shardid.AllShards()"
	return &FieldError{Model: m.schema.Name, Field: key.field.Name, Err: ErrNoShard, Detail: detail}
}

// namesNoShard reports whether v is a key value the plugin never writes:
// an integer that is not positive, an empty or nil UUID.
func namesNoShard(v any, uuidColumn bool) bool {
	if !uuidColumn {
		id, err := int64Of(v)
		return err == nil && id <= 0
	}
	if bound, err := boundValue(v); err == nil && (bound == "" || reflect.DeepEqual(bound, []byte{})) {
		return true
	}
	u, err := uuidOf(v)
	return err == nil && u == uuid.Nil
}

// keyColumns gives the planner the model's key columns, made once per model.
func (e *Engine) keyColumns(list []evidence) []shardrouter.KeyColumn {
	keys := make([]shardrouter.KeyColumn, len(list))
	for i, column := range list {
		keys[i] = shardrouter.KeyColumn{Matches: column.matches, ShardOf: func(v any) (int, error) { return column.shardOf(e, v) }}
	}
	return keys
}

// conditionKeys are the key columns as a statement's conditions read them:
// a primary key the plugin never writes (an integer that is not positive,
// an empty or nil UUID), or an empty exact hash key, names no row, so, as
// NULL, it matches nothing on any database, where a written value (placings)
// is still refused. An empty loose hash key is where the keys its column
// finds equal to it (blanks) were placed. A colocate column's 0 (or empty
// or nil UUID), which a child its owner let go keeps, may be on any database:
// a condition on it says nothing about the shard.
func (e *Engine) conditionKeys(list []evidence, key *idField) []shardrouter.KeyColumn {
	keys := e.keyColumns(list)
	uuidKey := isUUIDType(key.field.FieldType)
	byValue := keys[0].ShardOf
	keys[0].ShardOf = func(v any) (int, error) {
		shard, err := byValue(v)
		if err == nil || errors.Is(err, errNull) {
			return shard, err
		}
		if namesNoShard(v, uuidKey) {
			return 0, errNull
		}
		return shard, err
	}
	if key.colocate != nil {
		byOwner := keys[1].ShardOf // evidenceOf lists the colocate column second
		keys[1].ShardOf = func(v any) (int, error) {
			shard, err := byOwner(v)
			if err == nil || errors.Is(err, errNull) {
				return shard, err
			}
			if namesNoShard(v, isUUIDType(key.colocate.FieldType)) {
				return 0, shardrouter.ErrAnyShard
			}
			return shard, err
		}
	}
	if key.hash != nil {
		last := len(keys) - 1 // evidenceOf lists the hash column last
		byKey := keys[last].ShardOf
		keys[last].ShardOf = func(v any) (int, error) {
			shard, err := byKey(v)
			if !errors.Is(err, errEmptyKey) {
				return shard, err
			}
			if key.looseHash { // "  " folds to "", and hashShard placed it so
				h, err := hashValue(reflect.ValueOf(LooseKey("")))
				return int(h % uint64(e.layout.ShardCount())), err
			}
			return 0, errNull
		}
	}
	return keys
}

// modelShards appends to shards the logical shards of the rows a statement
// names through its values, as GORM adds them to its conditions: the
// destination struct of First(&T{ID: id}), the struct or slice of Delete
// and its Model (Model(&rows).Delete(&T{})), and the model of Save and
// Model(&x).Updates.
func (e *Engine) modelShards(stmt *gorm.Statement, m *model, kind statementKind, shards []int) []int {
	if kind == kindUpdate {
		return e.valueShards(stmt, m, kind, reflect.Indirect(reflect.ValueOf(stmt.Model)), shards)
	}
	shards = e.valueShards(stmt, m, kind, reflect.Indirect(stmt.ReflectValue), shards)
	if kind == kindDelete && stmt.Model != nil && !sameValue(stmt.Model, stmt.Dest) && stmt.ReflectValue.CanAddr() {
		shards = e.valueShards(stmt, m, kind, reflect.Indirect(reflect.ValueOf(stmt.Model)), shards) // callbacks.Delete adds its keys too
	}
	return shards
}

// sameValue reports whether a and b, a statement's Model and Dest, are the
// same value, as GORM's a == b says of those it can compare: == of a slice,
// or of a struct with a slice field (Delete(user) of a User with []Photo),
// panics.
func sameValue(a, b any) bool {
	if ta := reflect.TypeOf(a); ta != nil && ta.Kind() == reflect.Pointer {
		return a == b // the usual Delete(&row): a pointer compares without reflect's allocation
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if !va.IsValid() || !vb.IsValid() || va.Type() != vb.Type() {
		return !va.IsValid() && !vb.IsValid()
	}
	if va.Comparable() {
		return a == b
	}
	switch va.Kind() {
	case reflect.Slice:
		return va.Pointer() == vb.Pointer() && va.Len() == vb.Len()
	case reflect.Map, reflect.Func:
		return va.Pointer() == vb.Pointer()
	}
	return false // a struct value: a copy, never the caller's own
}

// valueShards appends the logical shards of the keys of rv, a row or rows.
func (e *Engine) valueShards(stmt *gorm.Statement, m *model, kind statementKind, rv reflect.Value, shards []int) []int {
	pk := m.pk().field
	shardOfRow := func(row reflect.Value) (int, bool) {
		if row.Kind() != reflect.Struct || row.Type() != m.schema.ModelType {
			return 0, false
		}
		shard, zero, err := e.fieldShard(pk.ReflectValueOf(stmt.Context, row))
		return shard, err == nil && !zero
	}
	switch {
	case rv.Kind() == reflect.Struct:
		if shard, ok := shardOfRow(rv); ok {
			shards = append(shards, shard)
		}
	case kind != kindQuery && (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array):
		if kind == kindUpdate && !lastRowKeyed(stmt.Context, m.schema, rv) {
			return shards // GORM writes by the other conditions alone
		}
		for i := range rv.Len() {
			if shard, ok := shardOfRow(reflect.Indirect(rv.Index(i))); ok {
				shards = append(shards, shard)
			}
		}
	}
	return shards
}

// ownTableConditions makes the conditions GORM qualified by the statement's
// table, where a Table(...) override (or its alias) names it otherwise than
// the model (First(&x, id) is `archive.id IN (?)` of Table("archive")),
// qualified by clause.CurrentTable, which GORM writes as that same name:
// routing reads them as the model's own columns, as on a statement without
// the override. The SQL sent is the same.
func ownTableConditions(stmt *gorm.Statement) {
	if stmt.Schema == nil || stmt.Table == "" || stmt.Table == stmt.Schema.Table || stmt.Table == unqualified(stmt.Schema.Table) {
		return // most statements: their conditions name the model's table (bare, of a TableName() with its schema), which evidence matches
	}
	c, ok := stmt.Clauses["WHERE"]
	if !ok {
		return
	}
	if where, ok := c.Expression.(clause.Where); ok {
		if exprs, changed := ownTableColumns(where.Exprs, stmt.Table); changed {
			c.Expression = clause.Where{Exprs: exprs}
			stmt.Clauses["WHERE"] = c
		}
	}
}

// ownTableColumns returns exprs with the columns of their comparisons that
// table qualifies qualified by clause.CurrentTable instead, down through
// their groups, and whether any was; exprs themselves stay as they are.
func ownTableColumns(exprs []clause.Expression, table string) ([]clause.Expression, bool) {
	own := func(column any) (clause.Column, bool) {
		c, ok := column.(clause.Column)
		if ok && c.Table == table {
			c.Table = clause.CurrentTable
			return c, true
		}
		return c, false
	}
	var out []clause.Expression
	for i, e := range exprs {
		changed := false
		switch c := e.(type) {
		case clause.Eq:
			if c.Column, changed = own(c.Column); changed {
				e = c
			}
		case clause.IN:
			if c.Column, changed = own(c.Column); changed {
				e = c
			}
		case clause.AndConditions:
			if c.Exprs, changed = ownTableColumns(c.Exprs, table); changed {
				e = c
			}
		case clause.OrConditions:
			if c.Exprs, changed = ownTableColumns(c.Exprs, table); changed {
				e = c
			}
		case clause.NotConditions:
			if c.Exprs, changed = ownTableColumns(c.Exprs, table); changed {
				e = c
			}
		case clause.Where:
			if c.Exprs, changed = ownTableColumns(c.Exprs, table); changed {
				e = c
			}
		}
		if changed && out == nil {
			out = slices.Clone(exprs)
		}
		if out != nil {
			out[i] = e
		}
	}
	if out == nil {
		return exprs, false
	}
	return out, true
}

// evidence is a column whose values name a row's logical shard.
type evidence struct {
	table   string   // the model's table
	names   []string // column and field names, and clause.PrimaryKey for the primary key
	fold    bool     // no other column's name differs from these in case only
	shardOf func(p *Engine, v any) (int, error)
}

// matches accepts the column when it is unqualified or qualified by the
// model's own table, with its schema or without (GORM qualifies a condition
// on "app.users" by users); in another case too where no other column of
// the model is so named, as the databases find it (MySQL and SQLite ignore
// case, PostgreSQL folds a bare name).
func (e evidence) matches(table, name string) bool {
	if table != "" && table != clause.CurrentTable && !strings.EqualFold(table, e.table) && !strings.EqualFold(table, unqualified(e.table)) {
		return false
	}
	return slices.Contains(e.names, name) || e.fold && slices.ContainsFunc(e.names, func(n string) bool { return strings.EqualFold(n, name) })
}

// unqualified is a table's name without the schema or database that
// qualifies it, in its case.
func unqualified(table string) string { return table[strings.LastIndexByte(table, '.')+1:] }

// evidenceOf lists the columns whose values name the shard of a model whose
// primary key is the shardid field f: the key itself, then its colocate or
// hash column.
func evidenceOf(s *schema.Schema, f *idField) []evidence {
	table := s.Table
	idShard := func(field *schema.Field) func(p *Engine, v any) (int, error) {
		return func(p *Engine, v any) (int, error) { return p.valueShard(v, field.FieldType) }
	}
	list := []evidence{{table: table, names: append([]string{clause.PrimaryKey}, columnNames(s, f.field)...), fold: aloneInAnyCase(s, f.field), shardOf: idShard(f.field)}}
	if f.colocate != nil {
		list = append(list, evidence{table: table, names: columnNames(s, f.colocate), fold: aloneInAnyCase(s, f.colocate), shardOf: idShard(f.colocate)})
	}
	if f.hash != nil {
		hashed, loose := f.hash, f.looseHash
		list = append(list, evidence{table: table, names: columnNames(s, hashed), fold: aloneInAnyCase(s, hashed), shardOf: func(p *Engine, v any) (int, error) {
			// The database compares the column's type: hash the value as that type.
			key, err := asKind(v, hashed.FieldType)
			if errors.Is(err, errNull) {
				return 0, err
			}
			if err == nil && key.Kind() == reflect.Slice && p.db.Dialector.Name() == "postgres" && boundAsText(v) {
				// PostgreSQL reads text bound to a bytea as bytea's input (\x6162, \141b): hash the bytes it compares.
				key, err = byteaInput(key.Bytes())
			}
			if err != nil {
				return 0, fmt.Errorf("%w: %v (%T) cannot be a %s key: %w", ErrNoShard, v, v, hashed.Name, err)
			}
			return p.hashShard(key, loose)
		}})
	}
	return list
}

// columnNames are the names a condition may give field's column by: its
// own, and its Go name, unless that is another column's.
func columnNames(s *schema.Schema, field *schema.Field) []string {
	for _, other := range s.Fields {
		if other != field && other.DBName != "" && strings.EqualFold(other.DBName, field.Name) {
			return []string{field.DBName}
		}
	}
	return []string{field.DBName, field.Name}
}

// aloneInAnyCase reports whether no other field's column or Go name is
// field's column name or Go name in another case.
func aloneInAnyCase(s *schema.Schema, field *schema.Field) bool {
	for _, other := range s.Fields {
		if other == field {
			continue
		}
		for _, a := range []string{other.DBName, other.Name} {
			if a != "" && (strings.EqualFold(a, field.DBName) || strings.EqualFold(a, field.Name)) {
				return false
			}
		}
	}
	return true
}

// hashShard is the logical shard of a hash key, given as a value of the hash
// field's type (loose: a string hashed as LooseKey): one function for the
// rows of a Create and the values of a condition, so that both hash alike.
func (e *Engine) hashShard(key reflect.Value, loose bool) (int, error) {
	if (key.Kind() == reflect.String || key.Kind() == reflect.Slice) && key.Len() == 0 {
		return 0, errEmptyKey
	}
	if loose && key.Kind() == reflect.String {
		key = reflect.ValueOf(LooseKey(key.String()))
	}
	h, err := hashValue(key)
	if err != nil {
		return 0, err
	}
	return int(h % uint64(e.layout.ShardCount())), nil
}

var errEmptyKey = fmt.Errorf("%w: an empty key has no shard", ErrNoShard)

// rowHashShard is the logical shard of a created row's hash key: its Go
// value, as a condition's is read, whatever a Value method of its type makes
// of it, so that a row keeps its shard across versions. A zero key of a
// field with a default is the default GORM's Create writes in its place; one
// the database fills in is not known before the INSERT.
func (e *Engine) rowHashShard(ctx context.Context, f *idField, row reflect.Value) (int, error) {
	stored := f.hash.ReflectValueOf(ctx, row)
	value := stored.Interface()
	if f.hash.HasDefaultValue && stored.IsZero() {
		if f.hash.DefaultValueInterface == nil {
			return 0, fmt.Errorf("%w: it is zero, and the database writes the column's default (default:%s) in its place: set the key", ErrNoShard, f.hash.DefaultValue)
		}
		value = f.hash.DefaultValueInterface
	}
	key, err := asKind(value, f.hash.FieldType)
	if err != nil {
		return 0, err
	}
	if size := e.cutPastSize(f); size > 0 && utf8.RuneCountInString(key.String()) > size {
		// The database cuts trailing spaces past the size, or refuses the row: stored otherwise than placed.
		return 0, fmt.Errorf("%w: %s is %d characters, longer than its column's size %d", ErrNoShard, f.hash.Name, utf8.RuneCountInString(key.String()), size)
	}
	return e.hashShard(key, f.looseHash)
}

// cutPastSize returns the size past which the database cuts an exact string
// key, dropping the trailing spaces past it, or 0: a varchar(size) on
// MySQL/MariaDB or PostgreSQL, whether GORM makes it from the field's size,
// the plugin's migrator from none (varchar(191) on MySQL/MariaDB, as
// exactHashColumns makes it) or the model gives it as its type
// (varchar(10), character varying(10)). SQLite keeps a key whole; a
// Valuer's value may hold more.
func (e *Engine) cutPastSize(f *idField) int {
	h := f.hash
	if f.looseHash || h.FieldType.Kind() != reflect.String || h.FieldType.Implements(valuerType) ||
		reflect.PointerTo(h.FieldType).Implements(valuerType) || e.db.Dialector.Name() == "sqlite" {
		return 0
	}
	if typ := h.TagSettings["TYPE"]; typ != "" {
		if m := varcharType.FindStringSubmatch(typ); m != nil {
			size, _ := strconv.Atoi(m[1])
			return size
		}
		return 0
	}
	if h.Size == 0 && e.db.Dialector.Name() == "mysql" {
		return 191 // the plugin's migrator makes an exact hash column without a size varchar(191)
	}
	return h.Size
}

// varcharType is a column type that holds up to its size in characters,
// cutting trailing spaces past it.
var varcharType = regexp.MustCompile(`(?i)^\s*(?:varchar|character\s+varying|char\s+varying|nvarchar|national\s+(?:character|char)\s+varying|national\s+varchar)\s*\(\s*(\d+)\s*\)`)

// asKind reads a condition's value as the hash field's type t, as the
// database compares it with the column: a value of the field's own kind (a
// named type, uuid.UUID for a [16]byte field, through pointers) is the row's
// value as it was hashed on Create; anything else is read as it binds (a
// driver.Valuer's value). A value the column would compare otherwise than by
// equal keys (a number for a text column: MySQL compares '042' = 42) is
// refused rather than guessed.
func asKind(v any, t reflect.Type) (reflect.Value, error) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() && rv.Elem().Kind() == t.Kind() {
		rv = rv.Elem()
	}
	if rv.IsValid() && rv.Kind() == t.Kind() && rv.Type().ConvertibleTo(t) {
		return rv.Convert(t), nil
	}
	bound, err := boundValue(v)
	if err != nil {
		return reflect.Value{}, err
	}
	switch t.Kind() {
	case reflect.Array: // a [16]byte key (uuid.UUID) given as its text or its bytes
		var b []byte
		switch key := bound.(type) {
		case string:
			u, err := uuid.Parse(key)
			if err != nil {
				return reflect.Value{}, err
			}
			b = u[:]
		case []byte:
			b = key
		}
		if len(b) != t.Len() {
			return reflect.Value{}, fmt.Errorf("not a %s", t)
		}
		key := reflect.New(t).Elem()
		reflect.Copy(key, reflect.ValueOf(b))
		return key, nil
	case reflect.String:
		switch key := bound.(type) {
		case string:
			return reflect.ValueOf(key), nil
		case []byte:
			return reflect.ValueOf(string(key)), nil
		}
		return reflect.Value{}, fmt.Errorf("a %T is compared with text by conversion, which other keys may equal too; give the key as a string", v)
	case reflect.Slice: // a []byte key, given as its bytes or its text
		switch key := bound.(type) {
		case []byte:
			return reflect.ValueOf(key), nil
		case string:
			return reflect.ValueOf([]byte(key)), nil
		}
		return reflect.Value{}, fmt.Errorf("a %T is not bytes", v)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := int64Of(v)
		return reflect.ValueOf(n), err
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		switch key := bound.(type) {
		case int64:
			if key >= 0 {
				return reflect.ValueOf(uint64(key)), nil
			}
		case string:
			n, err := strconv.ParseUint(key, 10, 64)
			return reflect.ValueOf(n), err
		}
		return reflect.Value{}, fmt.Errorf("a %T is not an unsigned integer", v)
	}
	return reflect.Value{}, fmt.Errorf("a %s key cannot be compared", t)
}

// boundAsText reports whether v binds as text: a string, through pointers
// and a driver.Valuer's value.
func boundAsText(v any) bool {
	if _, ok := v.(string); ok {
		return true
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		return false
	}
	bound, err := boundValue(v)
	_, text := bound.(string)
	return err == nil && text
}

// byteaInput is the value PostgreSQL's bytea input makes of text: the hex
// format (\x, pairs of hex digits, spaces, tabs and line ends between pairs), else the
// escape format (\\ a backslash, \nnn an octal byte, every other byte
// itself). Text PostgreSQL refuses is refused.
func byteaInput(text []byte) (reflect.Value, error) {
	invalid := func() (reflect.Value, error) {
		return reflect.Value{}, fmt.Errorf("%q is not bytea input, which PostgreSQL reads text bound to a bytea as", text)
	}
	if len(text) >= 2 && text[0] == '\\' && text[1] == 'x' {
		out := make([]byte, 0, (len(text)-2)/2)
		for i := 2; i < len(text); {
			if strings.IndexByte(" \t\n\r", text[i]) >= 0 { // as PostgreSQL's hex_decode skips
				i++
				continue
			}
			if i+1 >= len(text) {
				return invalid()
			}
			b, err := strconv.ParseUint(string(text[i:i+2]), 16, 8)
			if err != nil {
				return invalid()
			}
			out = append(out, byte(b))
			i += 2
		}
		return reflect.ValueOf(out), nil
	}
	if bytes.IndexByte(text, '\\') < 0 {
		return reflect.ValueOf(text), nil
	}
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); i++ {
		switch {
		case text[i] != '\\':
			out = append(out, text[i])
		case i+1 < len(text) && text[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(text) && '0' <= text[i+1] && text[i+1] <= '3' && '0' <= text[i+2] && text[i+2] <= '7' && '0' <= text[i+3] && text[i+3] <= '7':
			out = append(out, (text[i+1]-'0')<<6|(text[i+2]-'0')<<3|(text[i+3]-'0'))
			i += 3
		default:
			return invalid()
		}
	}
	return reflect.ValueOf(out), nil
}

// int64Of reads a condition's value as an integer ID, as it binds: a
// driver.Valuer's value, through pointers, a named integer type as its
// value, a decimal string as its number. NULL fails with errNull.
func int64Of(v any) (int64, error) {
	switch n := v.(type) { // the common cases, without a conversion
	case int64:
		return n, nil
	case int:
		return int64(n), nil
	}
	bound, err := boundValue(v)
	if err != nil {
		return 0, err
	}
	switch n := bound.(type) {
	case int64:
		return n, nil
	case string:
		return strconv.ParseInt(n, 10, 64)
	case []byte:
		return strconv.ParseInt(string(n), 10, 64)
	}
	return 0, fmt.Errorf("a %T is not an integer ID", v)
}
