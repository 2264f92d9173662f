package shardrouter

import (
	"cmp"
	"database/sql/driver"
	"encoding/binary"
	"math"
	"math/big"
	"reflect"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// The values of the parts' rows as the merge reads them: their kinds,
// their group keys, their sums, averages and comparisons, each as the
// database computes it.

// valueKind is how the merge reads a value.
type valueKind int

const (
	kindNull valueKind = iota
	kindInt
	kindUint // unsigned columns (MySQL's driver)
	kindFloat
	kindDecimal // exact numbers as text: DECIMAL, NUMERIC, integers sent as text
	kindText
	kindTime
	kindBool
	kindOther
)

func kindOf(v any, c Column) valueKind {
	switch v.(type) {
	case nil:
		return kindNull
	case int64, int32, int, int16, int8:
		return kindInt
	case uint64, uint32, uint, uint16, uint8:
		return kindUint
	case float64, float32:
		return kindFloat
	case time.Time:
		return kindTime
	case bool:
		return kindBool
	case []byte, string:
		if exactNumberType(c.DatabaseType) {
			return kindDecimal
		}
		return kindText
	}
	return kindOther
}

// exactNumberType reports whether a column of the database type carries
// exact numbers (sent as text by some drivers).
func exactNumberType(t string) bool {
	t = strings.ToUpper(t)
	// PostgreSQL's arrays (_INT4), ranges and intervals, and the spatial
	// points, hold INT in their names but are not numbers.
	integer := strings.Contains(t, "INT") && !strings.HasPrefix(t, "_") &&
		!strings.Contains(t, "INTERVAL") && !strings.Contains(t, "POINT") && !strings.Contains(t, "RANGE")
	return integer || strings.Contains(t, "DECIMAL") || strings.Contains(t, "NUMERIC")
}

func asInt(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case int:
		return int64(v)
	case int16:
		return int64(v)
	case int8:
		return int64(v)
	}
	return 0
}

func asUint(v any) uint64 { return reflect.ValueOf(v).Uint() }

func asFloat(v any) float64 {
	if f, ok := v.(float32); ok {
		return float64(f)
	}
	return v.(float64)
}

func asText(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v.(string)
}

// asDecimal reads an exact number; its scale is the digits after its point.
func asDecimal(v any) (decimal.Decimal, error) {
	switch kindOf(v, Column{DatabaseType: "DECIMAL"}) {
	case kindInt:
		return decimal.NewFromInt(asInt(v)), nil
	case kindUint:
		return decimal.NewFromUint64(asUint(v)), nil
	}
	d, err := decimal.NewFromString(asText(v))
	if err != nil {
		return d, mergeError("%q is not an exact number: %v", asText(v), err)
	}
	return d, nil
}

// scaleOf is the number of digits after the point of an exact number.
func scaleOf(d decimal.Decimal) int32 { return max(-d.Exponent(), 0) }

// asTypeOf gives the decimal d, written with scale digits, the Go type of
// like ([]byte or string).
func asTypeOf(like any, d decimal.Decimal, scale int32) any {
	text := d.StringFixed(scale)
	if _, ok := like.([]byte); ok {
		return []byte(text)
	}
	return text
}

// appendKey appends to key the value v of a group column, as the database
// tells groups apart.
func appendKey(key []byte, v any, c Column) ([]byte, error) {
	switch kindOf(v, c) {
	case kindNull:
		return append(key, 'n'), nil
	case kindInt:
		return binary.BigEndian.AppendUint64(append(key, 'i'), uint64(asInt(v))), nil
	case kindUint:
		return binary.BigEndian.AppendUint64(append(key, 'u'), asUint(v)), nil
	case kindFloat:
		f := asFloat(v)
		switch {
		case f == 0:
			f = 0 // -0 groups with 0
		case math.IsNaN(f):
			f = math.NaN() // PostgreSQL's NaNs are one group
		}
		return binary.BigEndian.AppendUint64(append(key, 'f'), math.Float64bits(f)), nil
	case kindBool:
		if v.(bool) {
			return append(key, 'b', 1), nil
		}
		return append(key, 'b', 0), nil
	case kindTime:
		t := v.(time.Time)
		key = binary.BigEndian.AppendUint64(append(key, 't'), uint64(t.Unix()))
		return binary.BigEndian.AppendUint32(key, uint32(t.Nanosecond())), nil
	case kindDecimal:
		d, err := asDecimal(v)
		if err != nil {
			return nil, err
		}
		text := d.String() // 1.50 and 1.5 are one group
		return append(binary.BigEndian.AppendUint32(append(key, 'd'), uint32(len(text))), text...), nil
	case kindText:
		if !c.Text.Equal {
			return nil, textRefused(c, "groups")
		}
		text := asText(v)
		if c.Text.PadSpace || c.Text.TrimSpace {
			text = strings.TrimRight(text, " ") // equal however it orders
		}
		return append(binary.BigEndian.AppendUint32(append(key, 's'), uint32(len(text))), text...), nil
	}
	return nil, mergeError("%s: values of type %T", c.Name, v)
}

func textRefused(c Column, what string) error {
	collation := c.Text.Collation
	if collation == "" {
		collation = "unknown"
	}
	return mergeError("%s is text that the database %s by its collation (%s), which the merge does not reproduce in Go", c.Name, what, collation)
}

// add is the sum of two parts' sums (NULL when neither has any).
func add(a, b any, c Column) (any, error) {
	switch {
	case b == nil:
		return a, nil
	case a == nil:
		return b, nil
	}
	ka, kb := kindOf(a, c), kindOf(b, c)
	switch {
	case ka == kindInt && kb == kindInt:
		x, y := asInt(a), asInt(b)
		sum := x + y
		if (sum > x) != (y > 0) {
			return nil, mergeError("%s: the sum overflows a 64-bit integer", c.Name)
		}
		return sum, nil
	case ka == kindUint && kb == kindUint:
		x, y := asUint(a), asUint(b)
		if x+y < x {
			return nil, mergeError("%s: the sum overflows a 64-bit integer", c.Name)
		}
		return x + y, nil
	case ka == kindDecimal && kb == kindDecimal:
		x, err := asDecimal(a)
		if err != nil {
			return nil, err
		}
		y, err := asDecimal(b)
		if err != nil {
			return nil, err
		}
		return asTypeOf(a, x.Add(y), max(scaleOf(x), scaleOf(y))), nil
	case ka == kindFloat || kb == kindFloat:
		return nil, mergeError("%s: a sum of floating-point values depends on the order the rows are added in", c.Name)
	}
	return nil, mergeError("%s: sums of %T and %T", c.Name, a, b)
}

// average is an AVG from its group's merged SUM and COUNT, as the dialect
// computes it; like is a value one of the parts' AVGs gave, for its type.
func average(dialect string, like, sum, count any, sumColumn Column) (any, error) {
	n := asInt(count)
	if kindOf(count, Column{DatabaseType: "INT"}) == kindDecimal {
		d, err := asDecimal(count)
		if err != nil {
			return nil, err
		}
		n = d.IntPart()
	}
	if sum == nil || n == 0 {
		return nil, nil
	}
	kind := kindOf(sum, sumColumn)
	if kind == kindFloat {
		return nil, mergeError("%s: an average of floating-point values depends on the order the rows are added in", sumColumn.Name)
	}
	if !exact(kind) {
		return nil, mergeError("%s: an average of %T", sumColumn.Name, sum)
	}
	total, err := asDecimal(sum)
	if err != nil {
		return nil, err
	}
	switch like.(type) {
	case float64: // SQLite: the integer sum as a double, divided
		if kind != kindInt || math.Abs(float64(asInt(sum))) > 1<<53 {
			return nil, mergeError("%s: an average SQLite computes in floating point", sumColumn.Name)
		}
		return float64(asInt(sum)) / float64(n), nil
	case []byte, string:
		var scale int32
		switch dialect {
		case Postgres:
			scale = postgresDivScale(total, decimal.NewFromInt(n))
		case MySQL:
			d, err := asDecimal(like)
			if err != nil {
				return nil, err
			}
			scale = scaleOf(d) // the column's scale and div_precision_increment, as the part wrote it
		default:
			return nil, mergeError("%s: an average on %s", sumColumn.Name, dialect)
		}
		return asTypeOf(like, total.DivRound(decimal.NewFromInt(n), scale), scale), nil
	}
	return nil, mergeError("%s: an average of type %T", sumColumn.Name, like)
}

// postgresDivScale is the scale PostgreSQL gives a numeric quotient
// (select_div_scale in numeric.c): at least 16 significant digits, and no
// fewer decimals than either operand shows.
func postgresDivScale(dividend, divisor decimal.Decimal) int32 {
	const minSigDigits, decDigits = 16, 4
	w1, f1 := baseTenThousand(dividend)
	w2, f2 := baseTenThousand(divisor)
	qweight := w1 - w2
	if f1 <= f2 {
		qweight--
	}
	scale := int32(minSigDigits - qweight*decDigits)
	scale = max(scale, scaleOf(dividend), scaleOf(divisor), 0)
	return min(scale, 1000)
}

// baseTenThousand is the weight and first digit of |d| written in base
// 10000 digits aligned on the point, as PostgreSQL stores numerics.
func baseTenThousand(d decimal.Decimal) (weight int, first int64) {
	d = d.Abs()
	if d.IsZero() {
		return 0, 0
	}
	weight = 0
	for d.GreaterThanOrEqual(decimal.NewFromInt(10000)) {
		d = d.Div(decimal.NewFromInt(10000))
		weight++
	}
	for d.LessThan(decimal.NewFromInt(1)) {
		d = d.Mul(decimal.NewFromInt(10000))
		weight--
	}
	return weight, d.IntPart()
}

// compareValues orders two values of column c as the database does.
func compareValues(a, b any, c Column) (int, error) {
	ka, kb := kindOf(a, c), kindOf(b, c)
	switch {
	case ka == kindInt && kb == kindInt:
		return cmp.Compare(asInt(a), asInt(b)), nil
	case ka == kindUint && kb == kindUint:
		return cmp.Compare(asUint(a), asUint(b)), nil
	case ka == kindFloat && kb == kindFloat:
		x, y := asFloat(a), asFloat(b)
		if nx, ny := math.IsNaN(x), math.IsNaN(y); nx || ny { // above every number, as PostgreSQL orders NaN
			return cmp.Compare(b2i(nx), b2i(ny)), nil
		}
		return cmp.Compare(x, y), nil
	case ka == kindInt && kb == kindFloat || ka == kindFloat && kb == kindInt:
		// SQLite stores a number of a NUMERIC column as an integer or a real, row by row, and compares them as numbers.
		x, y, sign := a, b, 1
		if ka == kindFloat {
			x, y, sign = b, a, -1
		}
		f := asFloat(y)
		if math.IsNaN(f) {
			return -sign, nil // NaN above every number
		}
		return sign * new(big.Float).SetInt64(asInt(x)).Cmp(big.NewFloat(f)), nil
	case exact(ka) && exact(kb):
		x, err := asDecimal(a)
		if err != nil {
			return 0, err
		}
		y, err := asDecimal(b)
		if err != nil {
			return 0, err
		}
		return x.Cmp(y), nil
	case ka == kindTime && kb == kindTime:
		return a.(time.Time).Compare(b.(time.Time)), nil
	case ka == kindBool && kb == kindBool:
		x, y := a.(bool), b.(bool)
		switch {
		case x == y:
			return 0, nil
		case y:
			return -1, nil
		}
		return 1, nil
	case ka == kindText && kb == kindText:
		if !c.Text.Order {
			return 0, textRefused(c, "orders")
		}
		return CompareText(asText(a), asText(b), c.Text), nil
	}
	return 0, mergeError("%s: comparing %T with %T", c.Name, a, b)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func exact(k valueKind) bool { return k == kindInt || k == kindUint || k == kindDecimal }

// CompareText orders text as bytes, with trailing spaces as the collation
// reads them: dropped (SQLite's RTRIM, PostgreSQL's char(n)), or the
// shorter string padded with spaces (MySQL's PAD SPACE), which puts "a\t"
// before "a".
func CompareText(x, y string, how TextComparison) int {
	switch {
	case how.TrimSpace:
		return strings.Compare(strings.TrimRight(x, " "), strings.TrimRight(y, " "))
	case how.PadSpace:
		n := min(len(x), len(y))
		if d := strings.Compare(x[:n], y[:n]); d != 0 {
			return d
		}
		if len(x) > n {
			return comparedToSpaces(x[n:])
		}
		return -comparedToSpaces(y[n:])
	}
	return strings.Compare(x, y)
}

// comparedToSpaces orders the tail of the longer string against the spaces
// the shorter one is padded with.
func comparedToSpaces(tail string) int {
	for i := 0; i < len(tail); i++ {
		if tail[i] != ' ' {
			return cmp.Compare(tail[i], ' ')
		}
	}
	return 0
}

// compareParameter compares a merged value with a HAVING value: numbers
// with integers (and floating-point values with floating-point ones),
// compared exactly as the database compares them.
func compareParameter(v, p any, c Column) (int, error) {
	if valuer, ok := p.(driver.Valuer); ok { // sent as its Value, as database/sql sends it
		bound, err := valuer.Value()
		if err != nil {
			return 0, mergeError("HAVING compares %s with a %T whose Value fails: %v", c.Name, p, err)
		}
		p = bound
	}
	for rv := reflect.ValueOf(p); rv.Kind() == reflect.Pointer && !rv.IsNil(); rv = reflect.ValueOf(p) {
		p = rv.Elem().Interface()
	}
	var n int64
	switch number := reflect.ValueOf(p); {
	case number.CanInt():
		n = number.Int()
	case number.CanUint() && number.Uint() <= math.MaxInt64:
		n = int64(number.Uint())
	case number.CanFloat():
		if kindOf(v, c) != kindFloat {
			return 0, mergeError("HAVING compares %s with a fractional value, which the database may compare in floating point", c.Name)
		}
		return compareValues(v, number.Float(), c)
	default:
		return 0, mergeError("HAVING compares %s with a %T (the merge compares numbers with integers)", c.Name, p)
	}
	switch kindOf(v, c) {
	case kindInt, kindDecimal:
		return compareValues(v, n, c)
	case kindFloat:
		return compareValues(v, float64(n), c)
	}
	return 0, mergeError("HAVING compares %s, of %T, with a number", c.Name, v)
}

// IsText reports whether v, a value of column c, is text the merge compares
// by the column's collation.
func IsText(v any, c Column) bool { return kindOf(v, c) == kindText }
