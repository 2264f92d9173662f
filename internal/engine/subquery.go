package engine

import (
	"database/sql"
	"fmt"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid/internal/errs"
)

// A *gorm.DB bound as a value of a statement's clauses (Where("x IN (?)",
// sub), a clause.IN or clause.Eq value, a raw Joins argument,
// Table("(?) AS t", sub), an Update value) is a statement of its own: GORM
// writes its SQL by running the Query callbacks on it in DryRun, and drops
// the errors they add. The plugin routes it first, on its own model, and
// refuses the statement unless both run on one database.

// fanOutKey is the Statement.Settings key under which a DryRun statement that
// would need several physical databases records them: it is built, never run.
type fanOutKey struct{}

// pluginSide stands for the plugin's own database in databaseOf.
const pluginSide = -1

// checkSubqueries refuses a statement whose subqueries would run on another
// database than the one it was routed to.
func (e *Engine) checkSubqueries(db *gorm.DB, subs []*gorm.DB) {
	if db.Error != nil || !e.routed() || len(subs) == 0 {
		return
	}
	outer, several := e.databaseOf(db.Statement)
	if several {
		db.AddError(fmt.Errorf("%w: the statement needs several physical databases, and a subquery runs on one", ErrCrossShard))
		return
	}
	for _, sub := range subs {
		k, err := e.subqueryDatabase(sub)
		if err != nil {
			db.AddError(errs.Wrap(err, "a subquery"))
			return
		}
		if k != outer {
			db.AddError(fmt.Errorf("%w: a subquery runs on %s, its statement on %s; run them apart, or keep the rows they join on one database",
				ErrCrossShard, e.databaseName(k), e.databaseName(outer)))
			return
		}
	}
}

// subqueryDatabase routes a subquery as GORM will build it, in DryRun, and
// returns the database it was routed to.
func (e *Engine) subqueryDatabase(sub *gorm.DB) (int, error) {
	// A statement of its own, as GORM's AddVar makes; db.Raw(...) as a value is
	// known by its SQL only.
	run := sub.Session(&gorm.Session{DryRun: true, Logger: logger.Discard}).Clauses()
	if run.Statement.SQL.Len() > 0 {
		if err := e.routeRaw(run); err != nil {
			return 0, err
		}
	} else if err := run.Callback().Query().Execute(run).Error; err != nil {
		return 0, err
	}
	k, several := e.databaseOf(run.Statement)
	if several {
		return 0, fmt.Errorf("%w: the subquery needs several physical databases; give it a condition or a clause naming one", ErrCrossShard)
	}
	return k, nil
}

// databaseOf returns the physical database a routed statement runs on, or
// pluginSide for the plugin's own, and whether it needs several.
func (e *Engine) databaseOf(stmt *gorm.Statement) (k int, several bool) {
	if _, ok := loadSetting(stmt, fanOutKey{}); ok {
		return 0, true
	}
	if k, ok := e.physicalOfPool(stmt.ConnPool); ok {
		return k, false
	}
	if inTransaction(stmt.ConnPool) {
		if k, ok := e.transactionPhysical(stmt); ok {
			return k, false
		}
	}
	return pluginSide, false
}

func (e *Engine) databaseName(k int) string {
	if k == pluginSide {
		return "the plugin's own database"
	}
	return e.physical[k].name
}

// clauseReading is what routing reads of a statement's clauses, in one pass
// over them.
type clauseReading struct {
	where, having []clause.Expression
	// subqueries are the subqueries among the values of the clauses, the
	// table expression, the raw joins and an update's values.
	subqueries []*gorm.DB
}

// readClauses reads the statement's clauses; without subqueries it does not
// allocate.
func readClauses(stmt *gorm.Statement) clauseReading {
	var r clauseReading
	db := stmt.DB
	for name, c := range stmt.Clauses {
		switch e := c.Expression.(type) {
		case *routedBy: // the plugin's mark
			continue
		case nil, clause.Limit:
		case clause.OrderBy:
			if e.Expression != nil {
				r.subqueries = subqueriesIn(db, e.Expression, r.subqueries)
			}
		case clause.Where:
			if name == "WHERE" {
				r.where = e.Exprs
			}
			r.subqueries = subqueriesInList(db, e.Exprs, r.subqueries)
		case clause.GroupBy:
			r.having = e.Having // GORM keeps HAVING under GROUP BY
			r.subqueries = subqueriesInList(db, e.Having, r.subqueries)
		default:
			r.subqueries = subqueriesIn(db, c.Expression, r.subqueries)
		}
		if c.BeforeExpression != nil {
			r.subqueries = subqueriesIn(db, c.BeforeExpression, r.subqueries)
		}
		if c.AfterNameExpression != nil {
			r.subqueries = subqueriesIn(db, c.AfterNameExpression, r.subqueries)
		}
		if c.AfterExpression != nil {
			r.subqueries = subqueriesIn(db, c.AfterExpression, r.subqueries)
		}
	}
	if stmt.TableExpr != nil {
		r.subqueries = subqueriesIn(db, stmt.TableExpr, r.subqueries)
	}
	for _, join := range stmt.Joins {
		if strings.ContainsAny(join.Name, " (?") { // raw SQL: its arguments are values
			for _, v := range join.Conds {
				r.subqueries = subqueriesIn(db, v, r.subqueries)
			}
		} else if join.On != nil { // a relation: a *gorm.DB argument gives its ON conditions
			r.subqueries = subqueriesIn(db, join.On, r.subqueries)
		}
	}
	if values, ok := stmt.Dest.(map[string]any); ok {
		r.subqueries = subqueriesIn(db, values, r.subqueries)
	}
	return r
}

// subqueriesIn appends the subqueries in an expression or value to found.
func subqueriesIn(db *gorm.DB, v any, found []*gorm.DB) []*gorm.DB {
	switch e := v.(type) {
	case nil:
	case *gorm.DB:
		found = append(found, e)
	case clause.Where:
		found = subqueriesInList(db, e.Exprs, found)
	case *clause.Where:
		if e != nil {
			found = subqueriesInList(db, e.Exprs, found)
		}
	case clause.AndConditions:
		found = subqueriesInList(db, e.Exprs, found)
	case clause.OrConditions:
		found = subqueriesInList(db, e.Exprs, found)
	case clause.NotConditions:
		found = subqueriesInList(db, e.Exprs, found)
	case clause.Expr:
		found = subqueriesInValues(db, e.Vars, found)
	case *clause.Expr:
		if e != nil {
			found = subqueriesInValues(db, e.Vars, found)
		}
	case clause.NamedExpr:
		found = subqueriesInValues(db, e.Vars, found)
	case clause.Eq:
		found = subqueriesIn(db, e.Value, found)
	case clause.Neq:
		found = subqueriesIn(db, e.Value, found)
	case clause.Gt:
		found = subqueriesIn(db, e.Value, found)
	case clause.Gte:
		found = subqueriesIn(db, e.Value, found)
	case clause.Lt:
		found = subqueriesIn(db, e.Value, found)
	case clause.Lte:
		found = subqueriesIn(db, e.Value, found)
	case clause.Like:
		found = subqueriesIn(db, e.Value, found)
	case clause.IN:
		found = subqueriesInValues(db, e.Values, found)
	case clause.Select:
		found = subqueriesIn(db, e.Expression, found)
	case clause.From:
		for _, join := range e.Joins {
			found = subqueriesIn(db, join, found)
		}
	case clause.Join:
		found = subqueriesIn(db, e.Expression, found)
		found = subqueriesInList(db, e.ON.Exprs, found)
	case clause.GroupBy:
		found = subqueriesInList(db, e.Having, found)
	case clause.OrderBy:
		found = subqueriesIn(db, e.Expression, found)
	case clause.Set:
		for _, a := range e {
			found = subqueriesIn(db, a.Value, found)
		}
	case []any:
		found = subqueriesInValues(db, e, found)
	case map[string]any:
		for _, value := range e {
			found = subqueriesIn(db, value, found)
		}
	case sql.NamedArg: // Where("x IN (@s)", sql.Named("s", sub))
		found = subqueriesIn(db, e.Value, found)
	case []*gorm.DB:
		found = append(found, e...)
	case gorm.Valuer: // GORM builds what it returns: a subquery may be among its values
		found = subqueriesIn(db, e.GormValue(db.Statement.Context, db), found)
	}
	return found
}

func subqueriesInList(db *gorm.DB, exprs []clause.Expression, found []*gorm.DB) []*gorm.DB {
	for _, e := range exprs {
		found = subqueriesIn(db, e, found)
	}
	return found
}

func subqueriesInValues(db *gorm.DB, values []any, found []*gorm.DB) []*gorm.DB {
	for _, v := range values {
		switch v.(type) {
		case int64, int, uint64, string: // the keys most conditions give
			continue
		}
		found = subqueriesIn(db, v, found)
	}
	return found
}
