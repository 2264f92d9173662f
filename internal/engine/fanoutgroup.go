package engine

import (
	"cmp"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid/shardrouter"
)

// A query over several databases planned as an Aggregation (aggregates,
// GROUP BY and HAVING, DISTINCT): each part selects the plan's items
// without HAVING, ORDER BY or LIMIT, its values are merged by the planner's
// MergeGroups, and the merged rows reach GORM as a database's would
// (mergedrows.go).

// partValues is what a part of an Aggregation read: its columns and values
// as its driver gave them.
type partValues struct {
	columns []*sql.ColumnType
	rows    [][]any
}

// readValues reads every row of rows into part.
func readValues(rows *sql.Rows, part *partValues) error {
	columns, err := rows.ColumnTypes()
	if err != nil {
		return err
	}
	part.columns = columns
	into := make([]any, len(columns))
	for rows.Next() {
		row := make([]any, len(columns))
		for i := range row {
			into[i] = &row[i]
		}
		if err := rows.Scan(into...); err != nil {
			return err
		}
		part.rows = append(part.rows, row)
	}
	return rows.Err()
}

// fanOutAggregate runs the parts of a query planned as a, merges their
// values and hands the merged rows to GORM: scanned into the destination
// for a query, as the *sql.Rows or *sql.Row of Row, Rows and Scan.
func (e *Engine) fanOutAggregate(db *gorm.DB, kind statementKind, m *model, plan shardrouter.Parts, a *shardrouter.Aggregation, dialect string) {
	stmt := db.Statement
	prepare := func(ps *gorm.Statement) {
		ps.RaiseErrorOnNotFound = false
		ps.SkipHooks = true
		ps.Preloads = nil
		delete(ps.Clauses, "ORDER BY") // the merge orders and windows the groups
		delete(ps.Clauses, "LIMIT")
		if c, ok := ps.Clauses["GROUP BY"]; ok {
			g, _ := c.Expression.(clause.GroupBy)
			g.Having = nil // applied to the merged groups
			c.Expression = g
			ps.Clauses["GROUP BY"] = c
		}
		ps.Selects = nil
		distinct := a.CountGroups || a.Grouped && len(a.Keys) == len(a.Items) && stmt.Distinct
		sel := ps.Clauses["SELECT"] // its hints and comments (gorm.io/hints) stay in every part
		sel.Name, sel.Expression = "SELECT", clause.Select{Distinct: distinct, Columns: []clause.Column{{Name: a.SelectList(), Raw: true}}}
		ps.Clauses["SELECT"] = sel
		var rows []map[string]any // unread: the part's values are read as they come
		ps.Dest = &rows
		ps.BuildClauses = stmt.BuildClauses
	}
	runs, err := e.queryParts(db, m, plan, prepare)
	if err != nil {
		db.Error = err
		return
	}
	if len(runs) == 0 { // no database may hold its rows; its aggregates' names and types are no one's to say
		db.AddError(fmt.Errorf("%w: %s: an aggregate of no database's rows", ErrCrossShard, m.schema.Name))
		return
	}
	on := make([]int, len(runs))
	for i := range runs {
		on[i] = runs[i].k
		runs[i].values = &partValues{}
	}
	e.fannedOut(db, on)
	e.runQueryParts(db, kind, runs)
	var errs []error
	values := make([][][]any, len(runs))
	for i, r := range runs {
		errs = append(errs, r.err)
		values[i] = r.values.rows
	}
	if err := errors.Join(errs...); err != nil {
		db.Error = err
		return
	}
	columns := make([]shardrouter.Column, len(runs[0].values.columns))
	for i, c := range runs[0].values.columns {
		columns[i] = shardrouter.Column{Name: c.Name(), DatabaseType: c.DatabaseTypeName()}
	}
	if err := e.readCollations(db, runs, dialect, a, columns); err != nil {
		db.AddError(err)
		return
	}
	for _, j := range a.Keys {
		if dialect == shardrouter.MySQL && j < len(columns) && strings.EqualFold(columns[j].DatabaseType, "FLOAT") {
			db.AddError(fmt.Errorf("%w: %s: %s over several physical databases: %s is a FLOAT, whose values MySQL and MariaDB send rounded to six digits, so that values apart in the table would merge as one", ErrCrossShard, m.schema.Name, cmp.Or(a.Items[j].Arg, a.Items[j].SQL), columns[j].Name))
			return
		}
	}
	merged, err := shardrouter.MergeGroups(a, dialect, columns, values)
	if err != nil {
		db.AddError(fmt.Errorf("%w: %s: %v", ErrCrossShard, m.schema.Name, err))
		return
	}
	result := &mergedResult{rows: merged}
	if a.CountGroups {
		name := a.CountAlias
		if name == "" {
			name = countName(dialect, a.CountText)
		}
		result.columns = []mergedColumn{{name: name, databaseType: "BIGINT", scanType: reflect.TypeFor[int64]()}}
	} else {
		for j, c := range runs[0].values.columns[:a.Visible] {
			scanType := c.ScanType()
			if dialect == shardrouter.SQLite && len(merged) > 0 {
				scanType = sqliteScanType(merged[0][j], c.DatabaseTypeName())
			}
			result.columns = append(result.columns, mergedColumn{name: c.Name(), databaseType: c.DatabaseTypeName(), scanType: scanType})
		}
	}
	e.giveMerged(db, kind, m, result)
}

// sqliteScanType is the scan type SQLite's driver gives a column whose
// first row holds v: the type of that row's value, which a Scan into maps
// then converts every row to (a DECIMAL column's 0 and 2.5 both float64
// when the first is 2.5), where a part's first row is not the merged one.
func sqliteScanType(v any, declared string) reflect.Type {
	switch v.(type) {
	case nil:
		return nil
	case int64:
		if strings.EqualFold(declared, "boolean") {
			return reflect.TypeFor[bool]()
		}
	case []byte:
		return reflect.TypeFor[[][]byte]() // as the driver says it
	}
	return reflect.TypeOf(v)
}

// readCollations asks every part's database how the text columns the
// parts returned compare (the grouped, distinct and MIN/MAX ones): each
// part's values came ordered and grouped by its own database's collation.
func (e *Engine) readCollations(db *gorm.DB, runs []queryPart, dialect string, a *shardrouter.Aggregation, columns []shardrouter.Column) error {
	if len(columns) != len(a.Items) {
		return nil // MergeGroups refuses it
	}
	var text []int
	for j, item := range a.Items {
		if (item.Func == "" || item.Func == "min" || item.Func == "max") && hasText(runs, j, columns[j]) {
			text = append(text, j)
		}
	}
	if len(text) == 0 {
		return nil
	}
	read := make([][]shardrouter.TextComparison, len(runs))
	errs := make([]error, len(runs))
	e.eachRun(runs, func(i int) {
		pool, err := e.pool(db.Statement.Context, runs[i].k)
		if err != nil {
			errs[i] = err
			return
		}
		for _, j := range text {
			comparison, err := textComparison(db.Statement.Context, pool, dialect, fromTableParts(db.Statement), a.Items[j].Arg)
			if err != nil {
				errs[i] = e.partError(runs[i].k, fmt.Errorf("reading the collation of %s.%s: %w", fromTable(db.Statement), a.Items[j].Arg, err))
				return
			}
			read[i] = append(read[i], comparison)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for c, j := range text {
		columns[j].Text = e.commonComparison(runs, read, c)
	}
	return nil
}

func hasText(runs []queryPart, j int, c shardrouter.Column) bool {
	for _, r := range runs {
		for _, row := range r.values.rows {
			if j < len(row) && shardrouter.IsText(row[j], c) {
				return true
			}
		}
	}
	return false
}

// countName is the name a dialect gives the column of a COUNT written as
// text, with no alias: PostgreSQL names it by its function.
func countName(dialect, text string) string {
	if dialect == shardrouter.Postgres {
		return "count"
	}
	return text
}

// giveMerged hands GORM the merged rows as one database's.
func (e *Engine) giveMerged(db *gorm.DB, kind statementKind, m *model, result *mergedResult) {
	stmt := db.Statement
	if kind == kindRow {
		if many, _ := loadSetting(stmt, "rows"); many == true {
			rows, err := result.query(stmt.Context)
			stmt.Dest = rows
			db.AddError(err)
		} else {
			stmt.Dest = result.queryRow(stmt.Context)
		}
		db.RowsAffected = -1
		if db.Error == nil {
			db.Error = errRouted
		}
		return
	}
	rows, err := result.query(stmt.Context)
	if db.AddError(err) != nil {
		return
	}
	gorm.Scan(rows, db, 0)
	db.AddError(rows.Close())
	if db.Error != nil {
		return
	}
	e.afterMerge(db, m)
	if db.Error == nil {
		db.Error = errRouted
	}
}
