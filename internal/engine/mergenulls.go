package engine

import (
	"database/sql"
	"reflect"
	"slices"

	"gorm.io/gorm"
)

// The merge orders NULLs where the dialect puts them. A field that cannot
// hold NULL (an int, a string, a time.Time) reads one as its zero value, so
// the parts' rows are scanned through nullNoting, which notes, as GORM scans
// each row, which of the ordered columns were NULL.

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
		at[c] = slices.Index(part.columns, name)
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
	n.part.nulls = append(n.part.nulls, nulls)
	return err
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
