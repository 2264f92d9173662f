package shardrouter

import (
	"fmt"
	"reflect"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Placing is a column whose value places a row on its logical shard: the
// primary key, or its colocate or hash column.
type Placing struct {
	Role         string // "key", "colocate" or "hash"
	DBName, Name string // the column's and the field's name
	// ShardOf is the logical shard a value of the column names.
	ShardOf func(v any) (int, error)
}

// PlacingOf returns the column of placings that c names, whatever its quotes,
// case or table prefix (the database resolves a raw column so).
func PlacingOf(placings []Placing, c clause.Column) (Placing, bool) {
	if c.Name == clause.PrimaryKey && len(placings) > 0 {
		return placings[0], true
	}
	name := strings.Trim(c.Name[strings.LastIndexByte(c.Name, '.')+1:], "`\"[] ")
	for _, pl := range placings {
		if strings.EqualFold(name, pl.DBName) || strings.EqualFold(name, pl.Name) {
			return pl, true
		}
	}
	return Placing{}, false
}

// UpdatedRow is the one row an update names, as far as the statement says;
// each is asked only when an assignment needs it.
type UpdatedRow struct {
	// Shard is the row's logical shard, when the statement names one row.
	Shard func() (int, bool)
	// HasKey reports whether v is the row's own primary key.
	HasKey func(v any) bool
	// Holds reports whether the row as stored already holds v in the
	// colocate or hash column named: rewriting it changes no row's shard,
	// whatever shard it names (a row written before its table was sharded
	// keeps its auto-increment key beside its parent's, or its hash
	// column's value). Asked only of a value of another shard than the
	// row's; nil, or false, for a column whose comparison is not exact (a
	// loose hash column finds other values equal): never.
	Holds func(column string, v any) bool
}

// CheckAssignments refuses assignments (an update's SET, as GORM will write
// it) that would leave a row on a shard its own columns no longer name: a
// new primary key, an expression for a placing column (it cannot be
// checked), or a colocate or hash value of another shard. NULL names no
// shard, and may be written to a colocate or hash column (GORM's Association
// Replace, Delete and Clear orphan children so); so may a colocate column's
// zero value that names no shard (0), which GORM reads that NULL as and
// leaves in the orphans it holds, and a Save of one writes. Where the row is
// not known from the statement, assigning a placing column is refused. It
// returns what the statement does wrong, or "".
func CheckAssignments(set []clause.Assignment, placings []Placing, row UpdatedRow) string {
	for _, a := range set {
		pl, ok := PlacingOf(placings, a.Column)
		switch {
		case !ok:
			continue
		case Unreadable(a.Value):
			return fmt.Sprintf("sets the %s column %s to an expression, which cannot be checked", pl.Role, a.Column.Name)
		case pl.Role == "key":
			// A new key is refused even on the same shard: it was not made for this row.
			if !row.HasKey(a.Value) {
				return "changes the primary key " + a.Column.Name
			}
			continue
		case WrittenNull(a.Value), pl.Role == "colocate" && zeroOfNoShard(pl, a.Value):
			continue
		}
		rowShard, known := row.Shard()
		if !known {
			return fmt.Sprintf("sets the %s column %s and does not name the one row it updates", pl.Role, a.Column.Name)
		}
		if s, err := pl.ShardOf(a.Value); err != nil || s != rowShard {
			if err == nil && pl.Role != "key" && row.Holds != nil && row.Holds(pl.DBName, a.Value) {
				continue
			}
			return fmt.Sprintf("sets the %s column %s to a value that does not place the row on its own shard", pl.Role, a.Column.Name)
		}
	}
	return ""
}

// CheckUpsert refuses an ON CONFLICT update (its assignments set) of a
// placing column, unless it writes the inserted row's own value
// (excluded.col, as UpdateAll, Save and GORM's association saves do) and
// every row it may conflict with keeps that column's shard (keeps, asked only
// then): a row with the same key is on the same shard, and a row with the
// same value in a unique key holding the column has that very value. It
// returns the placing column refused, if one is.
func CheckUpsert(set []clause.Assignment, placings []Placing, keeps func(column string) bool) (Placing, string, bool) {
	for _, a := range set {
		pl, ok := PlacingOf(placings, a.Column)
		if !ok {
			continue
		}
		own, isColumn := a.Value.(clause.Column)
		if isColumn && strings.EqualFold(own.Table, "excluded") && strings.EqualFold(own.Name, pl.DBName) && keeps(pl.DBName) {
			continue
		}
		return pl, a.Column.Name, true
	}
	return Placing{}, "", false
}

// zeroOfNoShard reports whether v is its type's zero value and names no
// shard: a condition on it reads every database its clause names
// (ErrAnyShard), so reads by it find the row wherever it is.
func zeroOfNoShard(pl Placing, v any) bool {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if !rv.IsValid() || !rv.IsZero() {
		return false
	}
	_, err := pl.ShardOf(v)
	return err != nil
}

// Unreadable reports whether an assigned value is SQL the database computes
// (gorm.Expr, a column, a subquery), which no check can read.
func Unreadable(v any) bool {
	switch v := v.(type) {
	case clause.Expression, clause.Column, *gorm.DB:
		return true
	case []any:
		for _, x := range v {
			if Unreadable(x) {
				return true
			}
		}
	}
	return false
}

// WrittenNull reports whether an assigned value is written as NULL.
func WrittenNull(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
