package engine

import (
	"context"
	"reflect"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/shardrouter"
)

// holdIfAnnounced is holdWhileFreezing for a statement on a sharded model,
// at the cost of one load while no cutover is announced.
func (e *Engine) holdIfAnnounced(db *gorm.DB, kind statementKind) {
	if announced := e.freezing.Load(); announced == nil || len(*announced) == 0 || db.Statement.Schema == nil {
		return
	}
	if m, err := e.model(db.Statement.Schema); err == nil && m != nil && m.sharded() {
		e.holdWhileFreezing(db, m, kind)
	}
}

// holdWhileFreezing holds, before GORM's transaction and the model's hooks
// begin, a write that could not be run again alone once refused (its Before
// hooks or belongs-to saves would have run in the rolled-back transaction,
// or the has-one, has-many or many2many rows it saves after it in that
// transaction would be refused or, on MySQL, lose a metadata lock deadlock
// to the trigger a move creates on their table) while a mover announces the cutover of a range it may name; it goes on
// once the map moved the range, the announcement ended, or Config.MoveWait
// passed (the source's triggers then decide). Inside the application's
// transaction nothing is held: that transaction is on the source already.
func (e *Engine) holdWhileFreezing(db *gorm.DB, m *model, kind statementKind) {
	announced := e.freezing.Load()
	stmt := db.Statement
	if announced == nil || len(*announced) == 0 || inTransaction(stmt.ConnPool) || hooksRunFirst(stmt.Schema, kind) == "" && !savesAssociationsAfter(stmt, kind) {
		return
	}
	start := time.Now()
	deadline := start.Add(e.moveWait())
	held := false
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		ranges := freezingAt(*e.freezing.Load(), time.Now())
		if len(ranges) == 0 || !e.namesRanges(db, m, kind, ranges) || time.Now().Add(pause).After(deadline) {
			break
		}
		if !held {
			held = true
			e.movedStats.held.Add(1)
		}
		time.Sleep(pause)
		ctx, cancel := context.WithDeadline(stmt.Context, deadline)
		_, _ = e.refreshMap(ctx) // unread, the last map stands and the deadline ends the hold
		cancel()
	}
	if held {
		e.movedStats.retried.Add(1)
		e.noteHeld(time.Since(start))
	}
}

// savesAssociationsAfter says a create or update saves has-one, has-many or
// many2many rows after its own in GORM's transaction: those GORM saves of
// a non-zero field it neither omits nor leaves out of its Select. Such a
// write holds its row's table while it writes theirs, so that it can be
// neither run again alone once one of theirs is refused, nor be let run
// while a move creates its triggers: on MySQL and MariaDB, the trigger
// created on a child table that a foreign key ties to the parent waits for
// the write's lock on the parent, and the write's INSERT of the child then
// waits for the trigger's, a deadlock the server ends by rolling the write
// back.
func savesAssociationsAfter(stmt *gorm.Statement, kind statementKind) bool {
	if kind != kindCreate && kind != kindUpdate || stmt.Schema == nil {
		return false
	}
	rels := &stmt.Schema.Relationships
	if len(rels.HasOne)+len(rels.HasMany)+len(rels.Many2Many) == 0 {
		return false
	}
	value := reflect.Indirect(stmt.ReflectValue)
	if !value.IsValid() {
		return false
	}
	columns, restricted := stmt.SelectAndOmitColumns(kind == kindCreate, kind == kindUpdate)
	for _, list := range [][]*schema.Relationship{rels.HasOne, rels.HasMany, rels.Many2Many} {
		for _, rel := range list {
			if saved, named := columns[rel.Name]; named && !saved || !named && restricted {
				continue
			}
			switch value.Kind() {
			case reflect.Slice, reflect.Array:
				for i := 0; i < value.Len(); i++ {
					if row := reflect.Indirect(value.Index(i)); row.Kind() == reflect.Struct {
						if _, zero := rel.Field.ValueOf(stmt.Context, row); !zero {
							return true
						}
					}
				}
			case reflect.Struct:
				if _, zero := rel.Field.ValueOf(stmt.Context, value); !zero {
					return true
				}
			}
		}
	}
	return false
}

// freezingAt returns the announced ranges whose announcement lasts at now.
func freezingAt(announced []mapstore.Freezing, now time.Time) []shardrouter.Range {
	var ranges []shardrouter.Range
	for _, f := range announced {
		if f.Until > now.UnixMilli() {
			ranges = append(ranges, f.Logical)
		}
	}
	return ranges
}
