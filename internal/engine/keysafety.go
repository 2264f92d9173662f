package engine

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/shardrouter"
)

// Key safety is checked on what GORM will execute, after the model's Before
// hooks and association saves, right before the INSERT or UPDATE, inside the
// statement's transaction: a refused statement writes nothing.

// checkUpdate runs right before gorm:update, and checks the SET clause GORM
// is about to write. The first part of a fan-out update of one value leaves
// that SET for the other parts, which run without the hooks (fanOutWrite).
func (e *Engine) checkUpdate(db *gorm.DB) {
	stmt := db.Statement
	if db.Error != nil || stmt.SQL.Len() > 0 {
		return
	}
	m, err := e.statementModel(stmt)
	if err != nil || m == nil || !m.sharded() {
		return
	}
	planned, fannedOut := loadSetting(stmt, plannedSetKey{stmt})
	if !fannedOut && setsNoPlacing(stmt, m) {
		db.AddError(e.stillBound(stmt, m, "update"))
		return
	}
	set := assignments(stmt, stmt.ReflectValue)
	if db.Error != nil {
		return
	}
	if err := e.keepsShard(stmt, m, set); err != nil {
		db.AddError(err)
		return
	}
	if db.AddError(e.stillBound(stmt, m, "update")) != nil {
		return
	}
	if fannedOut {
		planned.(*plannedSet).set, planned.(*plannedSet).made = set, true
	}
}

// plannedSetKey is the Settings key, on the first part of a fan-out update
// of one value (not rows), of the SET that part writes after its hooks.
type plannedSetKey struct{ stmt *gorm.Statement }

type plannedSet struct {
	set  clause.Set
	made bool // the part got as far as its write
}

// checkPlannedUpdate checks, before an update runs, the SET it was given
// against its rows as checkUpdate will after the hooks, with its model as
// the rows (gorm:setup_reflect_value makes it so).
func (e *Engine) checkPlannedUpdate(stmt *gorm.Statement, m *model) error {
	if setsNoPlacing(stmt, m) {
		return nil
	}
	return e.keepsShard(stmt, m, assignments(stmt, reflect.Indirect(reflect.ValueOf(stmt.Model))))
}

// assignments returns the SET an update writes: the one the statement was
// given, or the one callbacks.ConvertToAssignments builds for rows, here on a
// copy of the statement so that the caller's model is not assigned (nor
// conditions added) twice, nor for a refused statement.
func assignments(stmt *gorm.Statement, rows reflect.Value) clause.Set {
	if c, given := stmt.Clauses["SET"]; given {
		set, _ := c.Expression.(clause.Set)
		return set
	}
	return callbacks.ConvertToAssignments(scratch(stmt, rows))
}

// setsNoPlacing reports whether an update's SET, which GORM builds after
// this check, cannot name a placing column, so that building it twice is
// spared: no SET clause given, and either a map (Update, UpdateColumn,
// Updates(map)) naming none among its keys (GORM sets those and the
// update-time fields), or the model's own row (Save, Updates(&row)) of a model
// placed by its key alone, which GORM leaves out of the SET of its own row.
func setsNoPlacing(stmt *gorm.Statement, m *model) bool {
	if _, given := stmt.Clauses["SET"]; given {
		return false
	}
	values, isMap := stmt.Dest.(map[string]any)
	if !isMap {
		dest, model := reflect.ValueOf(stmt.Dest), reflect.ValueOf(stmt.Model)
		return len(m.placings) == 1 && dest.Kind() == reflect.Pointer && model.Kind() == reflect.Pointer &&
			dest.Type() == model.Type() && dest.Pointer() == model.Pointer() // GORM's stmt.Dest == stmt.Model
	}
	for key := range values {
		if _, placing := shardrouter.PlacingOf(m.placings, clause.Column{Name: key}); placing {
			return false
		}
	}
	for _, pl := range m.placings {
		if f := m.schema.LookUpField(pl.DBName); f == nil || f.AutoUpdateTime != 0 {
			return false
		}
	}
	return true
}

// scratch returns a copy of an update statement for building its SET: its
// own clauses, and its rows not addressable, so that nothing is assigned.
func scratch(stmt *gorm.Statement, rows reflect.Value) *gorm.Statement {
	s := &gorm.Statement{
		DB: stmt.DB, Schema: stmt.Schema, Model: stmt.Model, Dest: stmt.Dest, Table: stmt.Table,
		Selects: stmt.Selects, Omits: stmt.Omits, Context: stmt.Context, SkipHooks: stmt.SkipHooks,
		Clauses: make(map[string]clause.Clause, len(stmt.Clauses)),
	}
	for k, c := range stmt.Clauses {
		s.Clauses[k] = c
	}
	if rows.IsValid() {
		s.ReflectValue = reflect.ValueOf(rows.Interface())
	}
	return s
}

// keepsShard refuses assignments that would leave a row on a shard its own
// columns no longer name, as the planner decides (CheckAssignments).
func (e *Engine) keepsShard(stmt *gorm.Statement, m *model, set []clause.Assignment) error {
	row := shardrouter.UpdatedRow{
		Shard:  func() (int, bool) { return e.rowShard(stmt, m) },
		HasKey: func(v any) bool { return e.sameKey(stmt, m, v) },
		Holds:  func(column string, v any) bool { return e.rowHolds(stmt, m, column, v) },
	}
	if wrong := shardrouter.CheckAssignments(set, m.placings, row); wrong != "" {
		return fmt.Errorf("%w: %s: the statement %s; copy the row instead", ErrCrossShard, m.schema.Name, wrong)
	}
	return nil
}

// rowHolds reports whether the one row an update names holds v in column
// on the database the statement runs on, read there, inside its
// transaction: an update that rewrites a row's colocate or exact hash value
// as it is
// (GORM's Save writes every column) changes nothing, also of a row whose
// key names another shard than the value (written before its table was
// sharded). Asked only of such a value, never on the hot path.
func (e *Engine) rowHolds(stmt *gorm.Statement, m *model, column string, v any) bool {
	if hash := m.pk().hash; hash != nil && m.pk().looseHash && strings.EqualFold(column, hash.DBName) {
		return false // the column finds other values equal: holding one is not holding v
	}
	key, ok := e.rowKey(stmt, m)
	if !ok || stmt.ConnPool == nil || stmt.Table == "" {
		return false
	}
	first, second := "?", "?"
	if stmt.DB.Dialector.Name() == "postgres" {
		first, second = "$1", "$2"
	}
	query := "SELECT 1 FROM " + stmt.Quote(clause.Table{Name: stmt.Table}) + " WHERE " + stmt.Quote(m.pk().field.DBName) + " = " + first +
		" AND " + stmt.Quote(column) + " = " + second
	if state := routeStateOf(stmt); state != nil {
		state.lockedGaps = true
	}
	rows, err := stmt.ConnPool.QueryContext(stmt.Context, query, key, v)
	if err != nil {
		return false
	}
	defer rows.Close()
	return rows.Next()
}

// placingsOf lists the columns that place a row of a model keyed by the
// shardid field key, made once per model: the key, then its colocate or hash
// column.
func (e *Engine) placingsOf(key *idField, keys []shardrouter.KeyColumn) []shardrouter.Placing {
	list := []shardrouter.Placing{{Role: "key", DBName: key.field.DBName, Name: key.field.Name}}
	if key.colocate != nil {
		list = append(list, shardrouter.Placing{Role: "colocate", DBName: key.colocate.DBName, Name: key.colocate.Name})
	}
	if key.hash != nil {
		list = append(list, shardrouter.Placing{Role: "hash", DBName: key.hash.DBName, Name: key.hash.Name})
	}
	for i := range list {
		list[i].ShardOf = keys[i].ShardOf // evidenceOf lists the same columns in the same order
	}
	if key.hash == nil {
		return list
	}
	if size := e.cutPastSize(key); size > 0 {
		// A new key past its column's size would be stored cut, under a key of another shard, as on Create.
		last := len(list) - 1
		byValue := list[last].ShardOf
		list[last].ShardOf = func(v any) (int, error) {
			if k, err := asKind(v, key.hash.FieldType); err == nil && utf8.RuneCountInString(k.String()) > size {
				return 0, fmt.Errorf("%w: %s is %d characters, longer than its column's size %d", ErrNoShard, key.hash.Name, utf8.RuneCountInString(k.String()), size)
			}
			return byValue(v)
		}
	}
	return list
}

// boundPhysical returns the physical database a statement runs on: the one
// its pool is, or its transaction was begun on.
func (e *Engine) boundPhysical(stmt *gorm.Statement) (int, bool) {
	if inTransaction(stmt.ConnPool) {
		return e.transactionPhysical(stmt)
	}
	return e.physicalOfPool(stmt.ConnPool)
}

// createdOn returns the physical database a Create runs on, where its rows
// may have changed since it was routed: a model without hooks or relations
// writes the rows the routing read (its check would find nothing), and is
// spared the look-up of the transaction.
func (e *Engine) createdOn(stmt *gorm.Statement, m *model) (int, bool) {
	if !e.routed() || !m.sharded() {
		return 0, false
	}
	if state := routeStateOf(stmt); state != nil && state.boundOn > 0 {
		return state.boundOn - 1, true
	}
	if stmt.Schema != nil && !opensTransactionsInside(stmt.Schema) {
		return 0, false
	}
	return e.boundPhysical(stmt)
}

// stillBound refuses a statement whose one row, after the hooks, belongs on
// another physical database than the one the statement was routed to.
func (e *Engine) stillBound(stmt *gorm.Statement, m *model, what string) error {
	if !e.routed() {
		return nil
	}
	on, bound := e.boundPhysical(stmt)
	shard, known := e.rowShard(stmt, m)
	if !bound || !known {
		return nil
	}
	routedBy := e.mapOf(stmt) // a newer map read since is the fence's to decide
	k := routedBy.Physical(shard)
	if k == on || e.clauseNames(stmt, shard) {
		return nil
	}
	return fmt.Errorf("%w: %s: after the hooks the %s names a row of %s, the statement runs on %s",
		ErrCrossShard, m.schema.Name, what, e.physical[k].name, e.physical[on].name)
}

// clauseNames reports whether a statement routed by its shard clause alone
// (db.Table, which keeps no map it was routed by) names the row's shard
// there: by whatever map, the row is where the clause sent it.
func (e *Engine) clauseNames(stmt *gorm.Statement, shard int) bool {
	if routeStateOf(stmt) != nil {
		return false
	}
	h, ok := loadSetting(stmt, hintSettingKey{})
	if !ok || h.(Hint).kind == hintAll {
		return false
	}
	s, err := e.hintShard(h.(Hint))
	return err == nil && s == shard
}

// checkCreate runs right before gorm:create, after the model's Before hooks
// and the saves of belongs-to associations: every tagged ID of every row
// agrees with its colocate or hash value, every row belongs on the physical
// database the statement runs on, and an upsert rewrites no placing column.
func (e *Engine) checkCreate(db *gorm.DB) {
	stmt := db.Statement
	if db.Error != nil || stmt.SQL.Len() > 0 {
		return
	}
	m, err := e.statementModel(stmt)
	if err != nil || m == nil {
		return
	}
	on, bound := e.createdOn(stmt, m)
	if stmt.Schema == nil {
		db.AddError(e.checkCreatedMaps(stmt, m, on, bound))
		return
	}
	if m.sharded() && !insertsColumn(stmt, m.pk().field) {
		if omitsColumn(stmt, m.pk().field) {
			db.AddError(&FieldError{Model: m.schema.Name, Field: m.pk().field.Name, Err: ErrNoShard,
				Detail: "the INSERT leaves out the ID (Omit): the database would give the row a key that names no shard"})
			return
		}
		// Select of other columns (GORM's "create with selected fields"):
		// the ID the plugin made is inserted with them.
		stmt.Selects = append(slices.Clip(stmt.Selects), m.pk().field.Name)
	}
	routedBy := e.mapOf(stmt) // the map it was routed by: one read since may be newer, and the fence decides then
	check := func(row reflect.Value) error {
		for _, f := range m.fields {
			shard, err := e.agreeingShard(stmt, m, f, row)
			if err != nil {
				return err
			}
			if k := routedBy.Physical(shard); bound && f == m.pk() && k != on {
				return fmt.Errorf("%w: %s: a row of %s is created on %s (a hook changed what places it after it was routed)",
					ErrCrossShard, m.schema.Name, e.physical[k].name, e.physical[on].name)
			}
		}
		return nil
	}
	switch rv := reflect.Indirect(stmt.ReflectValue); rv.Kind() {
	case reflect.Struct:
		if db.AddError(check(rv)) != nil {
			return
		}
	case reflect.Slice, reflect.Array:
		for i := range rv.Len() {
			if row := reflect.Indirect(rv.Index(i)); row.Kind() == reflect.Struct && db.AddError(check(row)) != nil {
				return
			}
		}
	}
	if m.sharded() {
		db.AddError(e.checkUpsert(stmt, m))
	}
}

// checkAllRows refuses a Create split over several databases when any row's
// ID disagrees with its colocate or hash value, before any part runs: a part
// refused after another committed would leave the statement half written.
// Each part checks its rows again after its hooks (checkCreate).
func (e *Engine) checkAllRows(stmt *gorm.Statement, m *model, rows []reflect.Value) error {
	for _, row := range rows {
		for _, f := range m.fields {
			if _, err := e.agreeingShard(stmt, m, f, row); err != nil {
				return err
			}
		}
	}
	return nil
}

// agreeingShard returns the shard of a row's ID field f, refusing an ID that
// is unset or disagrees with its colocate or hash value.
func (e *Engine) agreeingShard(stmt *gorm.Statement, m *model, f *idField, row reflect.Value) (int, error) {
	wrong := func(format string, args ...any) error {
		return &FieldError{Model: m.schema.Name, Field: f.field.Name, Err: ErrCrossShard, Detail: fmt.Sprintf(format, args...)}
	}
	shard, zero, err := e.fieldShard(f.field.ReflectValueOf(stmt.Context, row))
	switch {
	case err != nil:
		return 0, wrong("%v", err)
	case zero:
		return 0, wrong("the ID was cleared after it was assigned (by a hook?)")
	}
	switch {
	case f.colocate != nil:
		other, zero, err := e.fieldShard(f.colocate.ReflectValueOf(stmt.Context, row))
		if err != nil || !zero && other != shard {
			return 0, wrong("the ID is of shard %d, its colocate:%s names shard %d; the row could not be found by %s", shard, f.colocate.Name, other, f.colocate.Name)
		}
	case f.hash != nil:
		other, err := e.rowHashShard(stmt.Context, f, row)
		if err != nil {
			return 0, wrong("hash:%s: %v", f.hash.Name, err)
		}
		if other != shard {
			return 0, wrong("the ID is of shard %d, the hash of %s names shard %d; the row could not be found by %s (normalise the key before Create, not in a hook)", shard, f.hash.Name, other, f.hash.Name)
		}
	}
	return shard, nil
}

// statementModel returns the plugin's model of a statement: by its schema, or
// for db.Table("t") without a model, the sharded model whose table t is.
func (e *Engine) statementModel(stmt *gorm.Statement) (*model, error) {
	if stmt.Schema != nil {
		return e.model(stmt.Schema)
	}
	table := fromTable(stmt)
	if table == "" {
		return nil, nil
	}
	return e.shardedModelOf(table), nil
}

// shardedModelOf returns the sharded model whose table is table, of those the
// plugin has seen.
func (e *Engine) shardedModelOf(table string) *model {
	var found *model
	e.models.Range(func(k, _ any) bool {
		if m, err := e.model(k.(*schema.Schema)); err == nil && m != nil && m.sharded() && (strings.EqualFold(m.schema.Table, table) || bareTable(m.schema.Table) == strings.ToLower(table)) {
			found = m
		}
		return found == nil
	})
	return found
}

// insertsColumn reports whether a Create's INSERT writes f, as
// callbacks.ConvertToCreateValues chooses its columns.
func insertsColumn(stmt *gorm.Statement, f *schema.Field) bool {
	if len(stmt.Selects) == 0 && len(stmt.Omits) == 0 {
		return true // every column, without building the maps
	}
	selected, restricted := stmt.SelectAndOmitColumns(true, false)
	v, named := selected[f.DBName]
	return named && v || !named && !restricted
}

// omitsColumn reports whether the statement names f's column to be left
// out (Omit), as against not selecting it.
func omitsColumn(stmt *gorm.Statement, f *schema.Field) bool {
	columns, _ := stmt.SelectAndOmitColumns(true, false)
	v, named := columns[f.DBName]
	return named && !v
}

// checkCreatedMaps checks the rows of db.Table("t").Create(map) on a sharded
// table: each gives its ID, which agrees with its colocate or hash value and
// names the physical database the statement runs on.
func (e *Engine) checkCreatedMaps(stmt *gorm.Statement, m *model, on int, bound bool) error {
	var rows []map[string]any
	switch v := stmt.Dest.(type) {
	case map[string]any:
		rows = []map[string]any{v}
	case *map[string]any:
		rows = []map[string]any{*v}
	case []map[string]any:
		rows = v
	case *[]map[string]any:
		rows = *v
	}
	key := m.pk()
	for _, row := range rows {
		values := map[string]any{}
		for column, v := range row {
			if pl, ok := shardrouter.PlacingOf(m.placings, clause.Column{Name: column}); ok {
				values[pl.Role] = v
			}
		}
		id, given := values["key"]
		if !given || shardrouter.WrittenNull(id) || shardrouter.Unreadable(id) {
			return &FieldError{Model: m.schema.Name, Field: key.field.Name, Err: ErrNoShard,
				Detail: "a row created from a map into a sharded table must give its ID (the plugin cannot write one into a map)"}
		}
		shard, err := m.placings[0].ShardOf(id)
		if err != nil {
			return err
		}
		for _, pl := range m.placings[1:] {
			v, given := values[pl.Role]
			if !given || shardrouter.WrittenNull(v) {
				continue
			}
			if s, err := pl.ShardOf(v); shardrouter.Unreadable(v) || err != nil || s != shard {
				return &FieldError{Model: m.schema.Name, Field: key.field.Name, Err: ErrCrossShard,
					Detail: fmt.Sprintf("the ID is of shard %d, its %s column %s does not name that shard", shard, pl.Role, pl.DBName)}
			}
		}
		if k := e.mapOf(stmt).Physical(shard); bound && k != on {
			return fmt.Errorf("%w: %s: a row of %s is created on %s", ErrCrossShard, m.schema.Name, e.physical[k].name, e.physical[on].name)
		}
	}
	return nil
}
