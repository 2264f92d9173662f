package engine

import (
	"fmt"
	"reflect"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/shardrouter"
)

// Each statement is routed on its own model. GORM copies a statement's
// Settings, and its connection, into the statements it makes while running it
// (preloads, association saves, the join rows of many2many); the model's
// hooks get its connection. A shard clause, a fan-out part's pin and a
// physical database's connection were given to the statement that runs, not
// to those: they are dropped from a sub-statement before it is routed.

// runningKey is the Statement.Settings key of the statement that is running:
// a statement that finds another one there got its Settings from it.
type runningKey struct{}

// settingsReading is what the plugin keeps in a statement's Settings, read
// in one pass over them.
type settingsReading struct {
	running   *gorm.Statement // the statement that was running when this one's Settings were copied, if any
	hintOwner any
	hint      Hint
	pin       pin
	hinted    bool
	pinned    bool
}

// readSettings reads the plugin's keys of the statement's Settings.
func readSettings(stmt *gorm.Statement) settingsReading {
	var r settingsReading
	if settingsUntouched(&stmt.Settings) {
		return r
	}
	stmt.Settings.Range(func(key, value any) bool {
		switch key.(type) {
		case runningKey:
			r.running = value.(*gorm.Statement)
		case hintSettingKey:
			r.hint, r.hinted = value.(Hint), true
		case hintOwnerKey:
			r.hintOwner = value
		case pinKey:
			r.pin, r.pinned = value.(pin), true
		}
		return true
	})
	return r
}

// ownSettings runs first on every statement: it reads the plugin's keys of
// its Settings, drops what a sub-statement inherited from the statement that
// made it, and marks the statement as running when it may make some (it
// preloads, or saves associations).
func ownSettings(stmt *gorm.Statement) (r settingsReading, sub bool) {
	r = readSettings(stmt)
	if r.running != nil && r.running != stmt {
		sub = true
		parent := r.running
		if r.hinted && r.hintOwner != stmt { // not given to it, as in a Preload's own conditions
			stmt.Settings.Delete(hintSettingKey{})
			r.hint, r.hinted = Hint{}, false
		}
		// A fan-out part is pinned by the plugin after copying its parent,
		// which has no pin; a statement made by a part inherits the part's.
		if r.pinned {
			if theirs, ok := loadSetting(parent, pinKey{}); ok && theirs.(pin) == r.pin {
				stmt.Settings.Delete(pinKey{})
				r.pin, r.pinned = pin{}, false
			}
		}
	}
	if makesSubStatements(stmt) {
		stmt.Settings.Store(runningKey{}, stmt)
	}
	return r, sub
}

// makesSubStatements reports whether a statement may make statements while
// it runs: it preloads, or saves associations.
func makesSubStatements(stmt *gorm.Statement) bool {
	return len(stmt.Preloads) > 0 || stmt.Schema != nil && len(stmt.Schema.Relationships.Relations) > 0
}

// doneRunning runs last on every statement, so that statements made from it
// later (a Session of it) are not taken for its sub-statements.
func doneRunning(stmt *gorm.Statement) {
	if !makesSubStatements(stmt) {
		return // ownSettings marked it not
	}
	if v, ok := loadSetting(stmt, runningKey{}); ok && v.(*gorm.Statement) == stmt {
		stmt.Settings.Delete(runningKey{})
	}
}

// onPluginDatabase moves a statement that is not for a shard (an unsharded
// model, raw SQL, a table without its model) off a physical database's
// connection, which it inherited or a shard clause chose, back to the plugin's
// own database (raw SQL given a clause is then bound to its shard). A
// transaction is left alone: its callers check it.
func (e *Engine) onPluginDatabase(stmt *gorm.Statement) {
	if inTransaction(stmt.ConnPool) {
		return
	}
	if _, ok := e.physicalOfPool(stmt.ConnPool); ok && e.routed() {
		stmt.ConnPool = e.ownPool(stmt.ConnPool)
	}
}

// checkJoins refuses a query on a sharded model that joins a model whose rows
// may be on another database: an unsharded one (its rows are on the plugin's
// database; load it with Preload, which reads it there), or a sharded one not
// colocated along the join. SQL the statement carries (a join, a condition
// with a subquery) may name the model's own join tables; another sharded
// table only under a shard clause, which says to read that shard's rows.
func (e *Engine) checkJoins(stmt *gorm.Statement, m *model) error {
	if len(stmt.Joins) == 0 {
		return nil
	}
	clauseGiven := oneShardClause(stmt)
	for _, j := range stmt.Joins {
		if j.Expression != nil && !clauseGiven { // gorm.G's join on a subquery: GORM joins by the caller's ON alone, whatever j.Name
			return fmt.Errorf("%w: %s: a join on a subquery (%s): GORM joins its rows by the ON given, and the subquery reads the database the statement runs on only; give the statement a shard clause (OnShard, ByID, ByKey) to read that shard's rows, or read them apart",
				ErrCrossShard, m.schema.Name, j.Name)
		}
		path, ok := shardrouter.RelationPath(stmt.Schema, j.Name)
		if !ok {
			if shardrouter.ColocatedJoin(keyedOf(m), j.Name, e.keyedOf) || e.joinsOwnJoinTable(m, j.Name) {
				continue
			}
			if err := e.checkSQLTables(m, fmt.Sprintf("Joins(%q)", j.Name), e.sqlTables(joinWithoutSubqueries(j.Name, j.Conds)), clauseGiven); err != nil {
				return err
			}
			continue
		}
		for _, rel := range path {
			target, err := e.model(rel.FieldSchema)
			if err != nil {
				return err
			}
			if target == nil || !target.sharded() {
				return fmt.Errorf("%w: %s: Joins(%q): %s is not sharded, its rows are on the plugin's database, not beside %s on its shard; load it with Preload(%q)",
					ErrCrossShard, m.schema.Name, j.Name, rel.FieldSchema.Name, m.schema.Name, j.Name)
			}
			from, err := e.model(rel.Schema)
			if err != nil {
				return err
			}
			if !colocatedAlong(rel, from, target) {
				return fmt.Errorf("%w: %s: Joins(%q): %s is not colocated with %s by the join's key, so the joined row may be on another database; load it with Preload(%q)",
					ErrCrossShard, m.schema.Name, j.Name, rel.FieldSchema.Name, rel.Schema.Name, j.Name)
			}
		}
	}
	return nil
}

// joinWithoutSubqueries is the text of a join written as SQL, each ? that
// GORM fills with a subquery (positionally, as clause.NamedExpr does) read
// as "SELECT 1": a subquery is routed and checked on its own
// (checkSubqueries), and the rest of the text then reads as SQL.
func joinWithoutSubqueries(name string, conds []any) string {
	var text strings.Builder
	next := 0
	for i := range len(name) {
		if name[i] != '?' || next >= len(conds) {
			text.WriteByte(name[i])
			continue
		}
		if _, sub := conds[next].(*gorm.DB); sub {
			text.WriteString("SELECT 1")
		} else {
			text.WriteByte('?')
		}
		next++
	}
	return text.String()
}

// checkConditionSQL applies checkJoins' rule for SQL to the text of the
// statement's conditions (WHERE, HAVING): a subquery in them reads the one
// database the statement runs on.
func (e *Engine) checkConditionSQL(stmt *gorm.Statement, m *model, reading *clauseReading) error {
	for _, exprs := range [...][]clause.Expression{reading.where, reading.having} {
		for _, text := range shardrouter.ConditionSQL(exprs) {
			tables := e.sqlTables("SELECT * FROM " + joinProbe + " WHERE " + text)
			if err := e.checkSQLTables(m, fmt.Sprintf("the condition %q", text), tables, oneShardClause(stmt)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSQLTables refuses, in SQL a statement on m carries, a table whose rows
// are not all on the statement's database: an unsharded table, or a sharded
// one other than m's own join tables without a shard clause.
func (e *Engine) checkSQLTables(m *model, where string, tables []string, clauseGiven bool) error {
	shardedRows := func(table string) bool { return e.namesShardedRows("FROM " + table) }
	switch table, refusal := shardrouter.CheckSQLTables(tables, shardedRows, clauseGiven); refusal {
	case shardrouter.NotSharded:
		return fmt.Errorf("%w: %s: %s names %s, which is not a sharded table known to the plugin (nor a join table of one), so it is not on %s's shard; load it apart",
			ErrCrossShard, m.schema.Name, where, table, m.schema.Name)
	case shardrouter.ShardedWithoutClause:
		return fmt.Errorf("%w: %s: %s names the sharded table %s, whose rows are on every physical database, but runs on one; load them apart, or give a shard clause (OnShard, ByID, ByKey) to read that shard's rows only",
			ErrCrossShard, m.schema.Name, where, table)
	}
	return nil
}

// keyedOf is what the planner knows of a sharded model for a join.
func keyedOf(m *model) shardrouter.Keyed {
	k := shardrouter.Keyed{Table: m.schema.Table, Key: m.pk().field.DBName}
	if c := m.pk().colocate; c != nil {
		k.Colocate = c.DBName
	}
	return k
}

// keyedOf finds a sharded model the plugin has seen by its table.
func (e *Engine) keyedOf(table string) (shardrouter.Keyed, bool) {
	m := e.shardedModelOf(table)
	if m == nil {
		return shardrouter.Keyed{}, false
	}
	return keyedOf(m), true
}

// oneShardClause reports whether the statement was given a clause naming one
// shard (AllShards names them all: each part would read its own database's
// rows of the other table).
func oneShardClause(stmt *gorm.Statement) bool {
	v, ok := loadSetting(stmt, hintSettingKey{})
	return ok && v.(Hint).kind != hintAll
}

// joinsOwnJoinTable reports whether a join written as SQL joins one of m's
// many2many join tables along m's key.
func (e *Engine) joinsOwnJoinTable(m *model, sql string) bool {
	for _, rel := range m.schema.Relationships.Many2Many {
		if rel.JoinTable == nil {
			continue
		}
		for _, ref := range rel.References {
			if ref.OwnPrimaryKey && ref.PrimaryKey == m.pk().field && shardrouter.JoinTableJoin(keyedOf(m), rel.JoinTable.Table, ref.ForeignKey.DBName, sql) {
				return true
			}
		}
	}
	return false
}

// colocatedAlong reports whether the rows a relationship joins are on one
// shard, as the planner decides (ColocatedAlong).
func colocatedAlong(rel *schema.Relationship, from, to *model) bool {
	if from == nil || !from.sharded() {
		return false
	}
	return shardrouter.ColocatedAlong(rel, from.pk().field, from.pk().colocate, to.pk().field, to.pk().colocate)
}

// namesShardedRows reports whether SQL names, where a table stands, a sharded
// table or the join table of a sharded model's many2many.
func (e *Engine) namesShardedRows(sql string) bool {
	for _, table := range e.sqlTables(sql) {
		if _, sharded := e.shardedTables.Load(strings.ToLower(table)); sharded {
			return true
		}
		if _, joins := e.joinTables.Load(strings.ToLower(table)); joins {
			return true
		}
	}
	return false
}

// joinsJoinTable reports whether a query reads a sharded model's many2many
// join table beside its own, as Association(...).Find and Count do.
func (e *Engine) joinsJoinTable(stmt *gorm.Statement) (string, bool) {
	from, ok := stmt.Clauses["FROM"].Expression.(clause.From)
	if !ok {
		return "", false
	}
	for _, j := range from.Joins {
		if _, joins := e.joinTables.Load(strings.ToLower(j.Table.Name)); joins {
			return j.Table.Name, true
		}
	}
	return "", false
}

// routeJoinRows sends a statement on a sharded model's many2many join table
// to the physical database of the owners it names, by its conditions
// (Association Delete, Clear, Replace) or by the rows it creates (association
// saves): join rows live beside their sharded owner. Naming none, it stays
// where it is (a preload's join rows are read on their parents' database).
func (e *Engine) routeJoinRows(db *gorm.DB, creating bool) error {
	stmt := db.Statement
	if !e.routed() {
		return nil
	}
	shards, err := e.joinRowOwners(stmt, creating)
	if err != nil {
		return err
	}
	var set shardrouter.Set
	for _, s := range shards {
		set = set.With(e.physicalOf(s))
	}
	if set.Empty() {
		if k, ok := e.boundPhysical(stmt); ok {
			e.boundTo(stmt, k) // counted, logged and traced on the database it inherited
		}
		return nil
	}
	k, one := set.Single()
	if !one {
		return fmt.Errorf("%w: %s: join rows of owners on %d physical databases; change them one owner's database at a time", ErrCrossShard, stmt.Schema.Table, set.Len())
	}
	return e.bind(db, k)
}

// joinRowOwners returns the logical shards of the owners a statement on a
// many2many join table names, by its conditions and, creating, its rows.
func (e *Engine) joinRowOwners(stmt *gorm.Statement, creating bool) ([]int, error) {
	where, _ := stmt.Clauses["WHERE"].Expression.(clause.Where)
	var shards []int
	for _, rel := range stmt.Schema.Relationships.Relations {
		owner, err := e.model(rel.FieldSchema)
		if err != nil || owner == nil || !owner.sharded() || len(rel.References) != 1 {
			continue
		}
		fk := rel.References[0].ForeignKey
		if !ownsJoinRows(rel.FieldSchema, stmt.Schema.Table, fk.DBName) {
			continue // a sharded target: its rows are where they live, the join rows beside the owner
		}
		values, _ := shardrouter.ColumnValues(where.Exprs, func(table, name string) bool {
			return (table == "" || strings.EqualFold(table, stmt.Schema.Table)) && strings.EqualFold(name, fk.DBName)
		})
		if creating {
			values = append(values, createdValues(stmt, fk)...)
		}
		for _, v := range values {
			s, err := e.valueShard(v, owner.pk().field.FieldType)
			if err != nil {
				return nil, fmt.Errorf("%w: %s.%s: %w", ErrNoShard, stmt.Schema.Table, fk.DBName, err)
			}
			shards = append(shards, s)
		}
	}
	return shards, nil
}

// ownsJoinRows reports whether owner declares a many2many whose join rows,
// in joinTable, name it by column: the side they live beside. A target that
// declares the many2many back owns them too.
func ownsJoinRows(owner *schema.Schema, joinTable, column string) bool {
	for _, rel := range owner.Relationships.Many2Many {
		if rel.JoinTable == nil || !strings.EqualFold(rel.JoinTable.Table, joinTable) {
			continue
		}
		for _, ref := range rel.References {
			if ref.OwnPrimaryKey && strings.EqualFold(ref.ForeignKey.DBName, column) {
				return true
			}
		}
	}
	return false
}

// createdValues returns the values of field in the rows a Create writes.
func createdValues(stmt *gorm.Statement, field *schema.Field) []any {
	rv := reflect.Indirect(stmt.ReflectValue)
	var values []any
	add := func(row reflect.Value) {
		if row = reflect.Indirect(row); row.Kind() == reflect.Struct {
			if v, zero := field.ValueOf(stmt.Context, row); !zero {
				values = append(values, v)
			}
		}
	}
	switch rv.Kind() {
	case reflect.Struct:
		add(rv)
	case reflect.Slice, reflect.Array:
		for i := range rv.Len() {
			add(rv.Index(i))
		}
	}
	return values
}
