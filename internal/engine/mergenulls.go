package engine

import (
	"database/sql"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"
)

// The merge orders NULLs where the dialect puts them. A field that cannot
// hold NULL (an int, a string, a time.Time) reads one as its zero value, so
// the parts' rows are scanned through nullNoting, which notes, as GORM scans
// each row, which of the ordered columns were NULL.
//
// Each part fetches OFFSET+LIMIT rows, more than the merge keeps: a row that
// fails to scan (a NULL plucked into []int64 past the rows LIMIT keeps) is one
// that one database would not have sent, and must not fail the query unless
// the merge keeps it. nullNoting notes such a row's error for the merge
// (queryPart.failed) and scans its columns one by one, so that the merge
// orders it right; a row whose ordered column, or key, fails on a value that
// is not NULL cannot be ordered, and fails the part as before.

// nullNoting is a part's rows, noting the NULLs of its ordered columns.
type nullNoting struct {
	*sql.Rows
	at   []int // the result's column of each ordered column, or -1
	part *queryPart
}

// notingNulls returns rows as GORM scans them, noting NULLs when the merge
// orders by columns.
func (part *queryPart) notingNulls(rows *sql.Rows) gorm.Rows {
	if len(part.nullsOf) == 0 {
		return rows
	}
	at := make([]int, len(part.nullsOf))
	for c, name := range part.nullsOf {
		at[c] = columnIndex(part.columns, name, part.foldNames)
	}
	return &nullNoting{Rows: rows, at: at, part: part}
}

func (n *nullNoting) Scan(dest ...any) error {
	err := n.Rows.Scan(dest...)
	var nulls uint64
	for c, i := range n.at {
		if i >= 0 && i < len(dest) && scannedNull(dest[i]) {
			nulls |= 1 << c
		}
	}
	if err != nil {
		var ok bool
		if nulls, ok = n.scanEach(dest); !ok {
			return err
		}
		n.part.failed = append(n.part.failed, scanFailure{row: len(n.part.nulls), err: err})
		err = nil
	}
	n.part.nulls = append(n.part.nulls, nulls)
	return err
}

// scanFailure is a part's row that failed to scan, which fails the merge if
// the merge keeps it.
type scanFailure struct {
	row int
	err error
}

// scanEach scans the current row's columns into dest one at a time, after
// the row failed to scan at once (which leaves the columns after the failing
// one unscanned), and returns the NULLs of its ordered columns; ok is false
// when a column the merge orders by (an ordered column, or the key that
// breaks ties) failed on a value that is not NULL.
func (n *nullNoting) scanEach(dest []any) (nulls uint64, ok bool) {
	raw := make([]any, len(dest))
	each := make([]any, len(dest))
	for j := range each {
		each[j] = &raw[j]
	}
	if n.Rows.Scan(each...) != nil {
		return 0, false
	}
	for j := range dest {
		for k := range each {
			each[k] = new(any)
		}
		each[j] = dest[j]
		if n.Rows.Scan(each...) == nil || j >= len(n.part.columns) {
			continue
		}
		name := n.part.columns[j]
		if n.part.keyColumn != "" && columnIndex([]string{name}, n.part.keyColumn, n.part.foldNames) == 0 {
			return 0, false
		}
		if c := slices.Index(n.at, j); c >= 0 && raw[j] != nil {
			return 0, false
		}
	}
	for c, i := range n.at {
		if i >= 0 && i < len(raw) && (raw[i] == nil || scannedNull(dest[i])) {
			nulls |= 1 << c
		}
	}
	return nulls, true
}

// scannedNull reports whether a destination GORM scanned a value into got
// NULL: it scans into a pointer to a pointer (or to an interface) that NULL
// leaves nil.
func scannedNull(dest any) bool {
	v := reflect.ValueOf(dest)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	switch v = v.Elem(); v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// columnIndex is the index of the result's column name among columns: the
// one of its name, else, where the dialect names columns without case
// (MySQL, SQLite: Select("id, SCORE") returns score as SCORE, which GORM
// scans into the field), the only one of its name in another case; -1 when
// there is none.
func columnIndex(columns []string, name string, fold bool) int {
	if i := slices.Index(columns, name); i >= 0 || !fold {
		return i
	}
	found := -1
	for i, c := range columns {
		if strings.EqualFold(c, name) {
			if found >= 0 {
				return -1
			}
			found = i
		}
	}
	return found
}
