package engine

import (
	"cmp"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/shardrouter"
)

// The k-way merge of the parts of a query over several databases, in the
// order the planner chose (shardrouter.PlanMerge).

var timeType = reflect.TypeOf(time.Time{})

// nullTimeType is sql.NullTime, which gorm.DeletedAt is too.
var nullTimeType = reflect.TypeOf(sql.NullTime{})

// orderValue is a column's value as the merge compares it: NULL, text
// (by bytes), or a number, a time or a UUID mapped onto two integers.
type orderValue struct {
	null bool
	text string
	hi   int64
	lo   uint64
	// offset is a time's UTC offset in seconds, +1 so that 0 is no time.
	offset int
}

// compare orders a before b as the database does; nullsLast says NULL is
// greater than every value (PostgreSQL) rather than smaller.
func (a orderValue) compare(b orderValue, nullsLast bool) int {
	switch {
	case a.null || b.null:
		if a.null == b.null {
			return 0
		}
		if a.null == nullsLast {
			return 1
		}
		return -1
	case a.text != b.text:
		return strings.Compare(a.text, b.text)
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

// orderText is an ORDER BY list as a message names it.
func orderText(columns []shardrouter.OrderColumn) string {
	names := make([]string, len(columns))
	for i, c := range columns {
		names[i] = c.Field.DBName
		if c.Desc {
			names[i] += " DESC"
		}
	}
	return strings.Join(names, ", ")
}

// merge merges parts, each already in the query's order, k-way into one
// slice of rowsType, skipping offset rows and stopping after limit: its work
// is linear in the rows the parts fetched. A part out of the order the merge
// reads fails it rather than being merged wrong. nulls, when a part has
// them, are the NULLs of its rows' ordered columns as scanned (nullNoting).
//
// kept holds, when track is set, per part, the indexes of its rows the merge
// kept, ascending.
func mergeOrdered(stmt *gorm.Statement, o *shardrouter.Order, order mergeOrder, rowsType reflect.Type, parts []reflect.Value, nulls [][]uint64, limit, offset int, limited, track bool) (_ reflect.Value, kept [][]int, _ error) {
	columns := o.Columns
	if o.TieKey {
		columns = append(columns[:len(columns):len(columns)], shardrouter.OrderColumn{Field: o.Key})
	}
	width := len(columns)
	keys := make([][]orderValue, len(parts))
	offsets := make([]int, width) // each column's first time's, for SQLite
	total := 0
	for i, part := range parts {
		keys[i] = make([]orderValue, part.Len()*width)
		for r := range part.Len() {
			row := keys[i][r*width : (r+1)*width]
			for c, column := range columns {
				v, err := orderValueAt(stmt, o, part.Index(r), column.Field)
				if err != nil {
					return reflect.Value{}, nil, err
				}
				if c < len(o.Columns) && i < len(nulls) && r < len(nulls[i]) && nulls[i][r]&(1<<c) != 0 {
					v = orderValue{null: true} // read as its zero value by a field that cannot hold NULL
				}
				if order.storedUUIDs && column.Field == o.Key && !v.null {
					v = mariadbUUIDOrder(v)
				}
				if order.textTimes && v.offset != 0 {
					if offsets[c] == 0 {
						offsets[c] = v.offset
					} else if offsets[c] != v.offset {
						return reflect.Value{}, nil, fmt.Errorf("%w: %s: ORDER BY %s over several physical databases: SQLite orders times as their text, and these carry different UTC offsets", ErrCrossShard, stmt.Schema.Name, column.Field.DBName)
					}
				}
				row[c] = v
			}
			if r > 0 && order.compareRows(keys[i][(r-1)*width:r*width], row, columns) > 0 {
				return reflect.Value{}, nil, fmt.Errorf("%w: %s: ORDER BY %s over several physical databases: a database returned its rows in an order the merge does not compare the same way (a collation or a type it orders otherwise than by bytes or value), so the merged rows could be out of order: order by a number, a time or text of a binary collation (docs/routing.md), or read each shard with OnShard and order the rows in Go", ErrCrossShard, stmt.Schema.Name, orderText(columns))
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
			if best < 0 || order.compareRows(keys[i][next[i]*width:(next[i]+1)*width], keys[best][next[best]*width:(next[best]+1)*width], columns) < 0 {
				best = i
			}
		}
		if n >= offset {
			merged = reflect.Append(merged, parts[best].Index(next[best]))
			if track {
				if kept == nil {
					kept = make([][]int, len(parts))
				}
				kept[best] = append(kept[best], next[best])
			}
		}
		next[best]++
	}
	return merged, kept, nil
}

// mergeOrder is what the merge of ordered rows reads of the databases:
// where their dialect puts NULLs, and how each text column compares.
type mergeOrder struct {
	nullsLast bool
	textTimes bool // SQLite: times order as their text, which holds their UTC offset
	text      map[*schema.Field]shardrouter.TextComparison
	// storedUUIDs: the key is of MariaDB's UUID type (mariadbuuid.go).
	storedUUIDs bool
}

// mergeOrderOf reads from physical database k, where a query's parts ran,
// how its rows order: its dialect's place for NULLs, and the collation of
// each text column, refused unless it orders as bytes do.
func (e *Engine) mergeOrderOf(db *gorm.DB, m *model, o *shardrouter.Order, k int) (mergeOrder, error) {
	how := mergeOrder{text: map[*schema.Field]shardrouter.TextComparison{}}
	ph, err := e.physical[k].open(db.Statement.Context)
	if err != nil {
		return how, err
	}
	dialect := ph.db.Dialector.Name()
	how.nullsLast = dialect == shardrouter.Postgres
	how.textTimes = dialect == shardrouter.SQLite
	for _, c := range o.Columns {
		if dialect == shardrouter.MySQL && isFloat(c.Field.FieldType) {
			if single, err := mysqlSinglePrecision(db.Statement.Context, ph.pool, fromTableParts(db.Statement), c.Field.DBName); err != nil || single {
				return how, cmp.Or(err, fmt.Errorf("%w: %s: ORDER BY %s over several physical databases: the column is a FLOAT, whose values MySQL and MariaDB send rounded to six digits, so that values apart in the table would order as equal", ErrCrossShard, m.schema.Name, c.Field.DBName))
			}
		}
		if !c.Text {
			continue
		}
		comparison, err := textComparison(db.Statement.Context, ph.pool, dialect, fromTableParts(db.Statement), c.Field.DBName)
		if err != nil {
			return how, e.partError(k, fmt.Errorf("reading the collation of %s.%s: %w", fromTable(db.Statement), c.Field.DBName, err))
		}
		if !comparison.Order {
			collation := cmp.Or(comparison.Collation, "unknown")
			return how, fmt.Errorf("%w: %s: ORDER BY %s over several physical databases: the column's collation (%s) does not order as bytes do, and the merge does not reproduce it in Go", ErrCrossShard, m.schema.Name, c.Field.DBName, collation)
		}
		how.text[c.Field] = comparison
	}
	if dialect == shardrouter.MySQL && isUUIDType(o.Key.FieldType) {
		if how.storedUUIDs, err = mariadbUUIDKey(db.Statement.Context, ph.pool, fromTableParts(db.Statement), o.Key.DBName); err != nil {
			return how, e.partError(k, err)
		}
	}
	return how, nil
}

func (order mergeOrder) compareRows(a, b []orderValue, columns []shardrouter.OrderColumn) int {
	for c, column := range columns {
		d := a[c].compare(b[c], order.nullsLast)
		if column.Text && !a[c].null && !b[c].null {
			d = shardrouter.CompareText(a[c].text, b[c].text, order.text[column.Field])
		}
		if d != 0 {
			if column.Desc {
				return -d
			}
			return d
		}
	}
	return 0
}

// orderValueAt reads a row's value of column f (a struct of the model, a
// map by column name, or a Pluck's value of f) as the merge compares it.
func orderValueAt(stmt *gorm.Statement, o *shardrouter.Order, row reflect.Value, f *schema.Field) (orderValue, error) {
	var v reflect.Value
	switch base := reflect.Indirect(row); {
	case base.Kind() == reflect.Map:
		if v = mapColumn(base, f.DBName, stmt.Dialector.Name() != shardrouter.Postgres); !v.IsValid() {
			return orderValue{}, fmt.Errorf("%w: %s: rows merged by %s must select it", ErrCrossShard, stmt.Schema.Name, f.DBName)
		}
		v = reflect.ValueOf(v.Interface()) // the map's element is an interface
	case base.Kind() == reflect.Struct && base.Type() == stmt.Schema.ModelType:
		v = f.ReflectValueOf(stmt.Context, base)
	default:
		v = row // a Pluck's value of the column it is ordered by (a time or an sql.NullInt64 is a struct too), maybe a nil pointer
	}
	value, err := orderValueOf(v, f == o.Key && isUUIDType(f.FieldType))
	if err != nil {
		return orderValue{}, errs.Wrap(err, "%s: a row's %s cannot be ordered", stmt.Schema.Name, f.DBName)
	}
	return value, nil
}

// signBit flips an integer's sign, for unsigned and signed values to
// compare alike as int64.
const signBit = 1 << 63

// orderValueOf maps an integer, a time or a UUID key to an orderValue that
// compares as the value does.
func orderValueOf(v reflect.Value, isUUID bool) (orderValue, error) {
	if v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return orderValue{null: true}, nil
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return orderValue{null: true}, nil // a map's NULL
	}
	if v.Type().ConvertibleTo(nullTimeType) { // sql.NullTime, gorm.DeletedAt
		nullable := v.Convert(nullTimeType).Interface().(sql.NullTime)
		if !nullable.Valid {
			return orderValue{null: true}, nil
		}
		v = reflect.ValueOf(nullable.Time)
	} else if shardrouter.IsSQLNull(v.Type()) { // sql.NullInt64, sql.Null[T], …
		if !v.Field(1).Bool() {
			return orderValue{null: true}, nil
		}
		v = v.Field(0)
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
	case v.CanFloat():
		f := v.Float()
		if math.IsNaN(f) {
			return orderValue{hi: math.MaxInt64}, nil // above +Inf, as PostgreSQL orders NaN (the only one that stores it)
		}
		if f == 0 {
			f = 0 // -0 orders as 0
		}
		bits := math.Float64bits(f)
		if bits&signBit != 0 { // IEEE 754 bits ordered as integers: negatives reversed
			return orderValue{hi: int64(^bits ^ signBit)}, nil
		}
		return orderValue{hi: int64(bits)}, nil
	case v.Kind() == reflect.String:
		return orderValue{text: v.String()}, nil
	case v.Kind() == reflect.Bool:
		if v.Bool() {
			return orderValue{hi: 1}, nil
		}
		return orderValue{}, nil
	case v.Type() == timeType:
		t := v.Interface().(time.Time)
		_, offset := t.Zone()
		return orderValue{hi: t.Unix(), lo: uint64(t.Nanosecond()), offset: offset + 1}, nil
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

// mapColumn is a map row's value of column name: its key, else, where the
// dialect names columns without case (MySQL, SQLite), the only key of the
// name in another case (Select("ID, name") returns id as ID); invalid when
// there is none.
func mapColumn(row reflect.Value, name string, fold bool) reflect.Value {
	if v := row.MapIndex(reflect.ValueOf(name)); v.IsValid() || !fold {
		return v
	}
	var found reflect.Value
	for it := row.MapRange(); it.Next(); {
		if strings.EqualFold(it.Key().String(), name) {
			if found.IsValid() {
				return reflect.Value{}
			}
			found = it.Value()
		}
	}
	return found
}
