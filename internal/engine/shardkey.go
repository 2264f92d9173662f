package engine

import (
	"encoding/binary"
	"fmt"
	"reflect"
)

// FNV-1a, 64-bit: small, fast, and fixed by its published definition, so a
// key maps to the same shard in every process and every version.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// HashKey returns the hash that the tag option hash:Field uses: FNV-1a 64 of
// the key's canonical bytes. A string hashes as its UTF-8 bytes, a []byte as
// itself, any signed integer as its int64 value in 8 big-endian bytes, any
// unsigned integer as its uint64 value likewise, and a [16]byte (such as
// uuid.UUID) as its 16 bytes. The key's logical shard is
// HashKey(key) % ShardCount.
func HashKey(key any) (uint64, error) {
	if key == nil {
		return 0, fmt.Errorf("%w: a nil key has no shard", ErrNoShard)
	}
	return hashValue(reflect.ValueOf(key))
}

func hashable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.Uint8
	case reflect.Array:
		return t.Elem().Kind() == reflect.Uint8 && t.Len() == 16
	}
	return false
}

func hashValue(v reflect.Value) (uint64, error) {
	var word [8]byte
	switch v.Kind() {
	case reflect.String:
		return fnvString(v.String()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		binary.BigEndian.PutUint64(word[:], uint64(v.Int()))
		return fnvBytes(word[:]), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		binary.BigEndian.PutUint64(word[:], v.Uint())
		return fnvBytes(word[:]), nil
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return fnvBytes(v.Bytes()), nil
		}
	case reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 && v.Len() == 16 {
			var b [16]byte
			reflect.Copy(reflect.ValueOf(&b).Elem(), v)
			return fnvBytes(b[:]), nil
		}
	}
	return 0, fmt.Errorf("%w: a %s key cannot be hashed (allowed: string, []byte, integers, [16]byte)", ErrNoShard, v.Type())
}

func fnvString(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func fnvBytes(b []byte) uint64 {
	h := uint64(fnvOffset)
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}
