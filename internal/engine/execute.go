package engine

import (
	"context"
	"errors"

	"gorm.io/gorm"
)

// Executing a plan. The callbacks plan a statement (shardrouter) and then run
// it: on one database by binding it there (route.go's bind), or in parts.
// A query's parts run at once, through runQueryParts (querypart.go); a
// write's parts, a split Create's or a fan-out update's or delete's, run
// through runParts, once every part is made and checked: the one place
// where the parts of a write over several databases commit, and where
// committing them together (two-phase commit) belongs.

// runParts runs one part of a statement per physical database, in turn, and
// makes the statement's outcome theirs: the rows they affected, and the
// errors of the parts that failed, each naming its database, without undoing
// the parts that succeeded. A part run returns nil when it had nothing to do.
func (e *Engine) runParts(db *gorm.DB, kind statementKind, physicals []int, run func(k int) *gorm.DB) {
	var errs []error
	for _, k := range physicals {
		var part *gorm.DB
		callerCtx := db.Statement.Context
		e.traced(callerCtx, k, operations[kind], db.Statement.Table, func(ctx context.Context) (string, error) {
			db.Statement.Context = ctx // the part, made from the statement, runs in its span
			defer func() { db.Statement.Context = callerCtx }()
			if part = run(k); part != nil {
				return ranSQL(part.Statement), part.Error
			}
			return "", nil
		})
		if part == nil {
			continue
		}
		db.RowsAffected += part.RowsAffected
		if part.Error != nil {
			errs = append(errs, e.partError(k, part.Error))
		}
	}
	db.Error = errors.Join(errs...)
	if db.Error == nil {
		db.Error = errRouted
	}
}

// ranSQL is the SQL a statement ran, as its clock kept it for tracers.
func ranSQL(stmt *gorm.Statement) string {
	if v, ok := stmt.Settings.Load(routeKey{stmt}); ok {
		return v.(*statementClock).sql
	}
	return ""
}
