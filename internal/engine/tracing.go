package engine

import (
	"context"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid/shardrouter"
)

// What tracers (the shardidotel module) read of a statement: where it ran,
// and a span per part of a statement over several databases.

// Route is where a statement runs: its physical databases, and the logical
// shards its rows, conditions or shard clause name (nil when they name none,
// as for AllShards).
type Route struct {
	Physical []string
	Logical  []int
}

// TracedPart is a part of a statement over several physical databases, as
// a tracer is told of it.
type TracedPart struct {
	Physical  string // the database it runs on
	Operation string // "select", "insert", "update", "delete", or "preload" for the preloads of its rows
	Table     string
}

// PartTracer is told of each part of a statement over several physical
// databases before it runs; the context it returns is the part's, and end
// is called when the part is done with the SQL it ran ("" when it ran
// several statements, or none) and its error.
type PartTracer func(ctx context.Context, part TracedPart) (partCtx context.Context, end func(sql string, err error))

// TraceParts makes the plugin tell t of the parts of statements over several
// databases, and follow each statement for RouteOf. Call it after db.Use.
func (e *Engine) TraceParts(t PartTracer) {
	e.tracer.Store(&t)
}

// partTracer returns the tracer, or nil.
func (e *Engine) partTracer() PartTracer {
	if t := e.tracer.Load(); t != nil {
		return *t
	}
	return nil
}

// traced runs run, which returns the SQL it ran and its error, in the
// context of a span of the part on k of a statement of kind on table, if a
// tracer is set.
func (e *Engine) traced(ctx context.Context, k int, operation, table string, run func(context.Context) (string, error)) {
	t := e.partTracer()
	if t == nil {
		_, _ = run(ctx)
		return
	}
	partCtx, end := t(ctx, TracedPart{Physical: e.physical[k].name, Operation: operation, Table: table})
	var sql string
	var err error
	defer func() { end(sql, err) }() // a part that panics ends its span too
	sql, err = run(partCtx)
}

// operations name the statements of each kind in a part's span.
var operations = [...]string{kindQuery: "select", kindUpdate: "update", kindDelete: "delete", kindRow: "select", kindRaw: "raw", kindCreate: "insert"}

// fannedOut notes the databases a statement's parts are about to run on;
// the statement is counted once they are sent (countFanOut).
func (e *Engine) fannedOut(db *gorm.DB, physicals []int) {
	if c := clockOf(db.Statement); c != nil {
		c.fanOut = physicals
	}
}

// routeKey is the Statement.Settings key of a traced statement's clock once
// the statement ran, for the callbacks of other plugins that run after the
// plugin's last.
type routeKey struct{ stmt *gorm.Statement }

// RouteOf returns where the statement db runs or ran, from the plugin's
// routing callback on: for tracers, which TraceParts makes it follow.
// It reports false for a statement the plugin did not send to a physical
// database (an unsharded model's, raw SQL without a shard clause).
func (e *Engine) RouteOf(db *gorm.DB) (Route, bool) {
	stmt := db.Statement
	c := clockOf(stmt)
	if c == nil {
		v, ok := loadSetting(stmt, routeKey{stmt}) // stopped, for a callback that runs after the last
		if !ok {
			return Route{}, false
		}
		c = v.(*statementClock)
	}
	var r Route
	switch {
	case c.physical >= 0:
		r.Physical = []string{e.physical[c.physical].name}
	case len(c.fanOut) > 0:
		for _, k := range c.fanOut {
			r.Physical = append(r.Physical, e.physical[k].name)
		}
	default:
		return Route{}, false
	}
	r.Logical = e.logicalOf(stmt, c.kind)
	return r, true
}

// logicalOf returns the logical shards the statement's shard clause, rows
// or conditions name, sorted.
func (e *Engine) logicalOf(stmt *gorm.Statement, kind statementKind) []int {
	var shards []int
	if v, ok := loadSetting(stmt, hintSettingKey{}); ok {
		if h := v.(Hint); h.kind != hintAll {
			if s, err := e.hintShard(h); err == nil {
				shards = append(shards, s)
			}
		}
	}
	if stmt.Schema == nil {
		return shards
	}
	m, err := e.model(stmt.Schema)
	if err != nil || m == nil || !m.sharded() {
		return shards
	}
	switch kind {
	case kindCreate: // a query's rows are its results
		if rows, err := structRows(m, stmt.ReflectValue, nil); err == nil && stmt.ReflectValue.IsValid() {
			for _, row := range rows {
				if s, zero, err := e.fieldShard(m.pk().field.ReflectValueOf(stmt.Context, row)); err == nil && !zero {
					shards = append(shards, s)
				}
			}
		}
	case kindUpdate, kindDelete:
		if s, ok := e.rowShard(stmt, m); ok {
			shards = append(shards, s)
		}
	}
	if where, ok := stmt.Clauses["WHERE"].Expression.(clause.Where); ok {
		for _, column := range m.evidence {
			values, _ := shardrouter.ColumnValues(where.Exprs, column.matches)
			for _, v := range values {
				if s, err := column.shardOf(e, v); err == nil {
					shards = append(shards, s)
				}
			}
		}
	}
	slices.Sort(shards)
	return slices.Compact(shards)
}
