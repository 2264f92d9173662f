package integration

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// outcome is what one statement returned: error or not, RowsAffected and the
// values it gave back, canonicalised.
type outcome struct {
	err  error
	rows int64
	out  string
}

func (o outcome) String() string {
	e := "nil"
	if o.err != nil {
		e = o.err.Error()
	}
	return fmt.Sprintf("err=%s rows=%d out=%s", e, o.rows, o.out)
}

// same compares outcomes: both failed or neither, and equal values.
func (o outcome) same(ref outcome) bool {
	if (o.err == nil) != (ref.err == nil) {
		return false
	}
	if o.err != nil {
		return true // both failed; the messages name different databases
	}
	return o.rows == ref.rows && o.out == ref.out
}

// cell writes one column's value as read from a database: creation and
// update stamps left out, a deleted_at as set/null.
func cell(column string, v any) string {
	switch column {
	case "created_at", "updated_at":
		return "T"
	case "deleted_at":
		if v == nil {
			return "null"
		}
		return "set"
	}
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return string(x)
	case time.Time:
		return "T"
	case int32:
		return fmt.Sprint(int64(x))
	case int:
		return fmt.Sprint(int64(x))
	}
	return fmt.Sprint(v)
}

// tableRows is a table's rows, each canonicalised, sorted, with the value of
// the column that places it.
type tableRows struct {
	rows   []string
	placed []string // the shard column's value of each row, same order
}

// readTable reads every row of table on db, straight from the database:
// through its *sql.DB, as GORM's Raw(...).Rows() would, without GORM's
// statement building, which made up much of the differential test's time
// (it reads every table of every database after each statement).
func readTable(db *gorm.DB, table dtTable) (tableRows, error) {
	sqlDB, err := db.DB()
	if err != nil {
		return tableRows{}, err
	}
	rows, err := sqlDB.Query("SELECT * FROM " + table.name)
	if err != nil {
		return tableRows{}, err
	}
	defer rows.Close()
	columns, err := rows.Columns()
	if err != nil {
		return tableRows{}, err
	}
	// The columns in name order, each with its index in the result.
	order := make([]int, len(columns))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(columns[a], columns[b]) })
	type row struct{ text, placed string }
	var all []row
	values := make([]any, len(columns))
	pointers := make([]any, len(columns))
	for i := range values {
		pointers[i] = &values[i]
	}
	for rows.Next() {
		clear(values)
		if err := rows.Scan(pointers...); err != nil {
			return tableRows{}, err
		}
		var r row
		parts := make([]string, 0, len(columns))
		for _, i := range order {
			c := columns[i]
			text := cell(c, values[i])
			parts = append(parts, c+"="+text)
			if c == table.shardColumn {
				r.placed = text
			}
		}
		r.text = strings.Join(parts, " ")
		all = append(all, r)
	}
	if err := rows.Err(); err != nil {
		return tableRows{}, err
	}
	slices.SortFunc(all, func(a, b row) int { return strings.Compare(a.text, b.text) })
	var t tableRows
	for _, r := range all {
		t.rows = append(t.rows, r.text)
		t.placed = append(t.placed, r.placed)
	}
	return t, nil
}

// diffRows lists the rows only in got and only in want.
func diffRows(got, want []string) string {
	count := map[string]int{}
	for _, r := range got {
		count[r]++
	}
	for _, r := range want {
		count[r]--
	}
	var b strings.Builder
	for _, r := range got {
		if count[r] > 0 {
			b.WriteString("    + plugin only:    " + r + "\n")
			count[r]--
		}
	}
	for _, r := range want {
		if count[r] < 0 {
			b.WriteString("    - reference only: " + r + "\n")
			count[r]++
		}
	}
	return b.String()
}
