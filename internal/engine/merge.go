package engine

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/shardrouter"
)

// The k-way merge of the parts of a query over several databases, in the
// order the planner chose (shardrouter.PlanMerge).

var timeType = reflect.TypeOf(time.Time{})

// orderValue is a column's value as the merge compares it.
type orderValue struct {
	hi int64
	lo uint64
}

func (a orderValue) compare(b orderValue) int {
	switch {
	case a.hi != b.hi:
		if a.hi < b.hi {
			return -1
		}
		return 1
	case a.lo != b.lo:
		if a.lo < b.lo {
			return -1
		}
		return 1
	}
	return 0
}

// merge merges parts, each already in the query's order, k-way into one
// slice of rowsType, skipping offset rows and stopping after limit: its work
// is linear in the rows the parts fetched. A part out of the order the merge
// reads fails it rather than being merged wrong.
func mergeOrdered(stmt *gorm.Statement, o *shardrouter.Order, rowsType reflect.Type, parts []reflect.Value, limit, offset int, limited bool) (reflect.Value, error) {
	columns := o.Columns
	if o.TieKey {
		columns = append(columns[:len(columns):len(columns)], shardrouter.OrderColumn{Field: o.Key})
	}
	width := len(columns)
	keys := make([][]orderValue, len(parts))
	total := 0
	for i, part := range parts {
		keys[i] = make([]orderValue, part.Len()*width)
		for r := range part.Len() {
			row := keys[i][r*width : (r+1)*width]
			for c, column := range columns {
				v, err := orderValueAt(stmt, o, part.Index(r), column.Field)
				if err != nil {
					return reflect.Value{}, err
				}
				row[c] = v
			}
			if r > 0 && compareRows(keys[i][(r-1)*width:r*width], row, columns) > 0 {
				return reflect.Value{}, fmt.Errorf("%w: %s: a database returned its rows in an order the plugin does not read the same way", ErrCrossShard, stmt.Schema.Name)
			}
		}
		total += part.Len()
	}
	end := total
	if limited {
		end = min(total, offset+limit)
	}
	merged := reflect.MakeSlice(rowsType, 0, max(end-offset, 0))
	next := make([]int, len(parts)) // each part's next row
	for n := range end {
		best := -1
		for i, part := range parts {
			if next[i] == part.Len() {
				continue
			}
			if best < 0 || compareRows(keys[i][next[i]*width:(next[i]+1)*width], keys[best][next[best]*width:(next[best]+1)*width], columns) < 0 {
				best = i
			}
		}
		if n >= offset {
			merged = reflect.Append(merged, parts[best].Index(next[best]))
		}
		next[best]++
	}
	return merged, nil
}

func compareRows(a, b []orderValue, columns []shardrouter.OrderColumn) int {
	for c, column := range columns {
		if d := a[c].compare(b[c]); d != 0 {
			if column.Desc {
				return -d
			}
			return d
		}
	}
	return 0
}

// orderValueAt reads a row's value of column f (a struct of the model, or a
// map by column name) as the merge compares it.
func orderValueAt(stmt *gorm.Statement, o *shardrouter.Order, row reflect.Value, f *schema.Field) (orderValue, error) {
	row = reflect.Indirect(row)
	var v reflect.Value
	if row.Kind() == reflect.Map {
		if v = row.MapIndex(reflect.ValueOf(f.DBName)); !v.IsValid() {
			return orderValue{}, fmt.Errorf("%w: %s: rows merged by %s must select it", ErrCrossShard, stmt.Schema.Name, f.DBName)
		}
		v = reflect.ValueOf(v.Interface()) // the map's element is an interface
	} else {
		v = f.ReflectValueOf(stmt.Context, row)
	}
	value, err := orderValueOf(v, f == o.Key && isUUIDType(f.FieldType))
	if err != nil {
		return orderValue{}, fmt.Errorf("shardid: %s: a row's %s cannot be ordered: %w", stmt.Schema.Name, f.DBName, err)
	}
	return value, nil
}

// orderValueOf maps an integer, a time or a UUID key to an orderValue that
// compares as the value does.
func orderValueOf(v reflect.Value, isUUID bool) (orderValue, error) {
	const signBit = 1 << 63
	if !v.IsValid() {
		return orderValue{}, fmt.Errorf("NULL")
	}
	if isUUID {
		u, err := uuidOf(v.Interface())
		if err != nil {
			return orderValue{}, err
		}
		return orderValue{hi: int64(binary.BigEndian.Uint64(u[:8]) ^ signBit), lo: binary.BigEndian.Uint64(u[8:])}, nil
	}
	switch {
	case v.CanInt():
		return orderValue{hi: v.Int()}, nil
	case v.CanUint():
		return orderValue{hi: int64(v.Uint() ^ signBit)}, nil
	case v.Type() == timeType:
		t := v.Interface().(time.Time)
		return orderValue{hi: t.Unix(), lo: uint64(t.Nanosecond())}, nil
	}
	n, err := int64Of(v.Interface()) // an ID of a named type with a Valuer, or as text
	return orderValue{hi: n}, err
}

// sortKey is a primary key as the databases order it: an int64 ID by value,
// a UUID by its bytes (its text, lower-case hex, sorts the same).
type sortKey struct {
	id   int64
	uuid uuid.UUID
}

func sortKeyOf(v any, t reflect.Type) (sortKey, error) {
	if isUUIDType(t) {
		u, err := uuidOf(v)
		return sortKey{uuid: u}, err
	}
	id, err := int64Of(v)
	return sortKey{id: id}, err
}
