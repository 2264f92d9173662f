package engine

import (
	"context"
	"time"

	"gorm.io/gorm"

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
// hooks or belongs-to saves would have run in the rolled-back transaction)
// while a mover announces the cutover of a range it may name; it goes on
// once the map moved the range, the announcement ended, or Config.MoveWait
// passed (the source's triggers then decide). Inside the application's
// transaction nothing is held: that transaction is on the source already.
func (e *Engine) holdWhileFreezing(db *gorm.DB, m *model, kind statementKind) {
	announced := e.freezing.Load()
	stmt := db.Statement
	if announced == nil || len(*announced) == 0 || inTransaction(stmt.ConnPool) || hooksRunFirst(stmt.Schema, kind) == "" {
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
