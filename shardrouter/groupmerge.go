package shardrouter

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The merge of an Aggregation works on the values the parts' rows carry,
// as their drivers gave them (int64, float64, []byte or string, time.Time,
// bool, nil), and gives back values of the same types: a DECIMAL sum stays
// decimal text, an integer count an int64. Where its answer could differ
// from one database's (floating-point sums, text compared by a collation
// Go does not reproduce) it fails instead.

// Column is what the merge knows of a column of the parts' rows.
type Column struct {
	Name         string
	DatabaseType string // as the driver names it: DECIMAL, NUMERIC, VARCHAR, …
	Text         TextComparison
}

// TextComparison is what is proven of how a text column compares.
type TextComparison struct {
	Collation string // named when the merge refuses
	Equal     bool   // equal exactly when the bytes are
	PadSpace  bool   // the shorter of two strings is padded with spaces (MySQL's PAD SPACE)
	TrimSpace bool   // trailing spaces are dropped (SQLite's RTRIM, PostgreSQL's char(n))
	Order     bool   // ordered as the bytes are
}

// Dialects, as GORM's dialectors name themselves.
const (
	MySQL    = "mysql"
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// ErrMerge marks a merge that could not be done exactly.
var ErrMerge = errors.New("the parts' values cannot be merged exactly")

func mergeError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMerge, fmt.Sprintf(format, args...))
}

// MergeGroups merges the rows of the parts (each row the values of a's
// Items) into the query's rows: one per group, HAVING applied, ordered and
// windowed, each carrying the Visible items; for CountGroups, one row with
// the number of groups. It merges into the parts' rows: they are the
// merge's afterwards.
func MergeGroups(a *Aggregation, dialect string, columns []Column, parts [][][]any) ([][]any, error) {
	if len(columns) != len(a.Items) {
		return nil, mergeError("a part returned %d columns for %d items", len(columns), len(a.Items))
	}
	largest := 0
	for _, rows := range parts {
		largest = max(largest, len(rows))
	}
	index := make(map[string]int, largest) // at least as many groups as the largest part has
	merged := make([][]any, 0, largest)
	samples := make([]any, len(a.Items)) // a non-NULL value of each item, for its type
	var key []byte
	for _, rows := range parts {
		for _, row := range rows {
			if len(row) != len(a.Items) {
				return nil, mergeError("a part returned a row of %d values for %d items", len(row), len(a.Items))
			}
			for j, v := range row {
				if samples[j] == nil {
					samples[j] = v
				}
				if dialect == SQLite && !sameOffset(samples[j], v) {
					return nil, mergeError("%s: SQLite compares times as their text, and these carry different UTC offsets", columns[j].Name)
				}
			}
			key = key[:0]
			if a.Grouped {
				var err error
				for _, k := range a.Keys {
					if key, err = appendKey(key, row[k], columns[k]); err != nil {
						return nil, err
					}
				}
			}
			at, seen := index[string(key)]
			if !seen {
				index[string(key)] = len(merged)
				merged = append(merged, row) // the group's first row becomes the merged one
				continue
			}
			for j, item := range a.Items {
				var err error
				if merged[at][j], err = combine(item, merged[at][j], row[j], columns[j]); err != nil {
					return nil, err
				}
			}
		}
	}
	if a.CountGroups {
		n := int64(len(merged))
		if _, null := index["n"]; null {
			n-- // COUNT(DISTINCT) counts no NULL
		}
		return windowRows([][]any{{n}}, a.Limit, a.Offset, a.Limited), nil
	}
	for j, item := range a.Items {
		if item.Func != "avg" {
			continue
		}
		for _, row := range merged {
			var err error
			if row[j], err = average(dialect, samples[j], row[item.Sum], row[item.Count], columns[item.Sum]); err != nil {
				return nil, err
			}
		}
	}
	kept := merged[:0]
	for _, row := range merged {
		ok, err := a.holds(row, columns)
		if err != nil {
			return nil, err
		}
		if ok {
			kept = append(kept, row)
		}
	}
	if err := a.sort(kept, dialect, columns); err != nil {
		return nil, err
	}
	kept = windowRows(kept, a.Limit, a.Offset, a.Limited)
	for i, row := range kept {
		kept[i] = row[:a.Visible]
	}
	return kept, nil
}

// sameOffset reports whether two values, if both are times, carry the same
// UTC offset: SQLite stores a time as text with its offset, and orders and
// groups that text, which orders as the instants do only at one offset.
func sameOffset(a, b any) bool {
	x, okX := a.(time.Time)
	y, okY := b.(time.Time)
	if !okX || !okY {
		return true
	}
	_, offX := x.Zone()
	_, offY := y.Zone()
	return offX == offY
}

func windowRows(rows [][]any, limit, offset int, limited bool) [][]any {
	offset = min(offset, len(rows))
	end := len(rows)
	if limited {
		end = min(end, offset+limit)
	}
	return rows[offset:end]
}

// combine merges into acc, an item's value of a group so far, the value v
// of the same group from another part.
func combine(item Item, acc, v any, c Column) (any, error) {
	switch item.Func {
	case "count", "sum":
		return add(acc, v, c)
	case "min", "max":
		if v == nil {
			return acc, nil
		}
		if acc == nil {
			return v, nil
		}
		d, err := compareValues(acc, v, c)
		if err != nil {
			return nil, err
		}
		if item.Func == "min" && d > 0 || item.Func == "max" && d < 0 {
			return v, nil
		}
	}
	return acc, nil
}

// holds reports whether a merged group passes HAVING.
func (a *Aggregation) holds(row []any, columns []Column) (bool, error) {
	for _, c := range a.Having {
		v := row[c.Item]
		if v == nil {
			return false, nil // a comparison with NULL is not true
		}
		d, err := compareParameter(v, c.Value, columns[c.Item])
		if err != nil {
			return false, err
		}
		var ok bool
		switch c.Op {
		case "=":
			ok = d == 0
		case "<>":
			ok = d != 0
		case "<":
			ok = d < 0
		case "<=":
			ok = d <= 0
		case ">":
			ok = d > 0
		case ">=":
			ok = d >= 0
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// sort orders the merged groups by ORDER BY, NULLs where the dialect puts
// them; without ORDER BY, by their group keys when those compare exactly.
func (a *Aggregation) sort(rows [][]any, dialect string, columns []Column) error {
	order, unordered := a.Order, len(a.Order) == 0
	if unordered { // any order is one database's: the keys' where they compare
		for _, k := range a.Keys {
			order = append(order, SortItem{Item: k})
		}
	}
	nullsLast := dialect == Postgres // ascending; the others put NULL first
	var failed error
	slices.SortStableFunc(rows, func(x, y []any) int {
		for _, s := range order {
			d, err := compareSorted(x[s.Item], y[s.Item], columns[s.Item], nullsLast)
			if err != nil {
				failed = cmp.Or(failed, err)
				return 0
			}
			if d != 0 {
				if s.Desc {
					return -d
				}
				return d
			}
		}
		return 0
	})
	if unordered {
		return nil
	}
	return failed
}

func compareSorted(x, y any, c Column, nullsLast bool) (int, error) {
	switch {
	case x == nil && y == nil:
		return 0, nil
	case x == nil:
		if nullsLast {
			return 1, nil
		}
		return -1, nil
	case y == nil:
		if nullsLast {
			return -1, nil
		}
		return 1, nil
	}
	return compareValues(x, y, c)
}
