package engine

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/shardid/shardid/shardrouter"
)

// An ID field holds an int64 (int64, uint64, shardid.ID) made by an int
// strategy, or a UUID (a string, or a [16]byte such as uuid.UUID) made by a
// UUID strategy. These functions read and write both kinds.

// isUUIDType reports whether t holds a UUID: a string or a [16]byte.
func isUUIDType(t reflect.Type) bool {
	return t.Kind() == reflect.String || t.Kind() == reflect.Array && t.Len() == 16 && t.Elem().Kind() == reflect.Uint8
}

// readID returns the value of an integer field as an int64.
func readID(v reflect.Value) (int64, error) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if u := v.Uint(); u > math.MaxInt64 {
			return 0, fmt.Errorf("%d does not fit in 63 bits", u)
		}
		return int64(v.Uint()), nil
	}
	return 0, fmt.Errorf("a %s is not an integer ID", v.Type())
}

// errNull is a condition's value that binds as NULL: `col = NULL` and
// `col IN (NULL)` match no row, so it names no database.
var errNull = shardrouter.ErrNull

// boundValue returns v as database/sql hands it to the driver: the value of
// a driver.Valuer (NULL for a nil pointer whose Value has a value receiver),
// pointers followed, named types as their underlying kind. A gorm.Valuer
// writes SQL of its own, whose value the plugin cannot know.
func boundValue(v any) (value driver.Value, err error) {
	if _, ok := v.(gorm.Valuer); ok {
		return nil, fmt.Errorf("a %T writes its own SQL", v)
	}
	defer func() { // a Valuer of the application's that panics is an error, not a crash
		if r := recover(); r != nil {
			value, err = nil, fmt.Errorf("the Value method of %T panicked: %v", v, r)
		}
	}()
	value, err = driver.DefaultParameterConverter.ConvertValue(v)
	if err == nil && value == nil {
		err = errNull
	}
	return value, err
}

// uuidOf reads a UUID from its 16 bytes, or from the text or bytes it binds as.
func uuidOf(v any) (uuid.UUID, error) {
	if rv := reflect.ValueOf(v); rv.IsValid() && rv.Kind() == reflect.Array && isUUIDType(rv.Type()) {
		var u uuid.UUID
		reflect.Copy(reflect.ValueOf(&u).Elem(), rv)
		return u, nil
	}
	bound, err := boundValue(v)
	if err != nil {
		return uuid.Nil, err
	}
	switch key := bound.(type) {
	case string:
		return uuid.Parse(key)
	case []byte:
		if len(key) == 16 {
			return uuid.FromBytes(key)
		}
		return uuid.ParseBytes(key)
	}
	return uuid.Nil, fmt.Errorf("%v (%T) is not a UUID", v, v)
}

// fieldShard returns the logical shard the ID in field value v names, or
// zero true when v is not set.
func (e *Engine) fieldShard(v reflect.Value) (shard int, zero bool, err error) {
	if k := v.Kind(); (k == reflect.String || k == reflect.Array) && isUUIDType(v.Type()) { // the kind first: an integer ID costs no Type
		if v.IsZero() {
			return 0, true, nil
		}
		u, err := uuidOf(v.Interface())
		if err != nil {
			return 0, false, err
		}
		return e.uuids.Shard(u), false, nil
	}
	id, err := readID(v)
	if err != nil || id == 0 {
		return 0, id == 0 && err == nil, err
	}
	if id < 0 {
		return 0, false, fmt.Errorf("%d is not an ID", id)
	}
	return e.layout.Shard(id), false, nil
}

// valueShard returns the logical shard of an ID given as a condition's value,
// read as the type t of the field it is compared with. A value that binds as
// NULL fails with errNull.
func (e *Engine) valueShard(v any, t reflect.Type) (int, error) {
	if isUUIDType(t) {
		u, err := uuidOf(v)
		if errors.Is(err, errNull) {
			return 0, err
		}
		if err != nil {
			return 0, fmt.Errorf("%w: %v (%T) is not a UUID: %w", ErrNoShard, v, v, err)
		}
		if u == uuid.Nil { // no strategy issues it; GORM reads a NULL into a uuid.UUID as it
			return 0, fmt.Errorf("%w: the nil UUID is not an ID", ErrNoShard)
		}
		return e.uuids.Shard(u), nil
	}
	id, err := int64Of(v)
	if errors.Is(err, errNull) {
		return 0, err
	}
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%w: %v (%T) is not an ID", ErrNoShard, v, v)
	}
	return e.layout.Shard(id), nil
}

// writeUUID stores u in a string or [16]byte field.
func writeUUID(v reflect.Value, u uuid.UUID) {
	if v.Kind() == reflect.String {
		v.SetString(u.String())
		return
	}
	reflect.Copy(v, reflect.ValueOf(u[:]))
}
