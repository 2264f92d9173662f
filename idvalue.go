package shardid

import (
	"database/sql/driver"
	"fmt"
	"math"
	"reflect"

	"github.com/google/uuid"
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

// uuidOf reads a UUID from its text, its 16 bytes, or a Valuer of either.
func uuidOf(v any) (uuid.UUID, error) {
	if rv := reflect.ValueOf(v); rv.IsValid() && rv.Kind() == reflect.Array && isUUIDType(rv.Type()) {
		var u uuid.UUID
		reflect.Copy(reflect.ValueOf(&u).Elem(), rv)
		return u, nil
	}
	if valuer, ok := v.(driver.Valuer); ok {
		var err error
		if v, err = valuer.Value(); err != nil {
			return uuid.Nil, err
		}
	}
	switch key := v.(type) {
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
func (p *Plugin) fieldShard(v reflect.Value) (shard int, zero bool, err error) {
	if isUUIDType(v.Type()) {
		if v.IsZero() {
			return 0, true, nil
		}
		u, err := uuidOf(v.Interface())
		if err != nil {
			return 0, false, err
		}
		return p.uuids.Shard(u), false, nil
	}
	id, err := readID(v)
	if err != nil || id == 0 {
		return 0, id == 0 && err == nil, err
	}
	if id < 0 {
		return 0, false, fmt.Errorf("%d is not an ID", id)
	}
	return p.layout.Shard(id), false, nil
}

// valueShard returns the logical shard of an ID given as a condition's value,
// read as the type t of the field it is compared with.
func (p *Plugin) valueShard(v any, t reflect.Type) (int, error) {
	if isUUIDType(t) {
		u, err := uuidOf(v)
		if err != nil {
			return 0, fmt.Errorf("%w: %v is not a UUID: %w", ErrNoShard, v, err)
		}
		return p.uuids.Shard(u), nil
	}
	id, err := int64Of(v)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%w: %v is not an ID", ErrNoShard, v)
	}
	return p.layout.Shard(id), nil
}

// writeUUID stores u in a string or [16]byte field.
func writeUUID(v reflect.Value, u uuid.UUID) {
	if v.Kind() == reflect.String {
		v.SetString(u.String())
		return
	}
	reflect.Copy(v, reflect.ValueOf(u[:]))
}
