package integration

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// canonOptions says what two results that should be equal may differ in,
// for writing each as text to compare. Creation and update stamps are left
// out (each side's clock sets them), a soft-delete stamp counts as set or
// null, and every slice below the top is sorted (GORM gives preloads in no
// defined order).
type canonOptions struct {
	times  bool // time values compared, in UTC, not only their presence
	typed  bool // a map's values compared with the Go types the driver scanned them as
	padded bool // text compared without its trailing spaces (a PAD SPACE collation's equal values)
}

// canon writes v for the differential tests, the top slice sorted unless
// ordered.
func canon(v any, ordered bool) string {
	return canonOptions{}.text(v, ordered)
}

func (o canonOptions) text(v any, ordered bool) string {
	var b strings.Builder
	o.write(&b, reflect.ValueOf(v), !ordered)
	return b.String()
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	deletedAtType = reflect.TypeFor[gorm.DeletedAt]()
)

func (o canonOptions) write(b *strings.Builder, v reflect.Value, sortSlice bool) {
	if !v.IsValid() {
		b.WriteString("nil")
		return
	}
	switch v.Type() {
	case timeType:
		if o.times {
			b.WriteString(v.Interface().(time.Time).UTC().Format(time.RFC3339Nano))
		} else {
			b.WriteString("T")
		}
		return
	case deletedAtType:
		if v.Interface().(gorm.DeletedAt).Valid {
			b.WriteString("deleted")
		} else {
			b.WriteString("null")
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		o.write(b, v.Elem(), sortSlice)
	case reflect.Struct:
		b.WriteString("{")
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Name == "CreatedAt" || f.Name == "UpdatedAt" {
				continue
			}
			b.WriteString(f.Name + ":")
			o.write(b, v.Field(i), true)
			b.WriteString(" ")
		}
		b.WriteString("}")
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			fmt.Fprintf(b, "b%q", v.Bytes())
			return
		}
		parts := make([]string, v.Len())
		for i := range parts {
			var e strings.Builder
			o.write(&e, v.Index(i), true)
			parts[i] = e.String()
		}
		if sortSlice {
			slices.Sort(parts)
		}
		b.WriteString("[" + strings.Join(parts, ", ") + "]")
	case reflect.Map:
		o.writeMap(b, v)
	case reflect.String:
		if o.padded {
			b.WriteString(strings.TrimRight(v.String(), " "))
		} else {
			b.WriteString(v.String())
		}
	default:
		fmt.Fprintf(b, "%v", v.Interface())
	}
}

// writeMap writes a row scanned into a map, its columns by name.
func (o canonOptions) writeMap(b *strings.Builder, v reflect.Value) {
	byName := map[string]reflect.Value{}
	for _, k := range v.MapKeys() {
		byName[fmt.Sprint(k.Interface())] = v.MapIndex(k)
	}
	names := slices.Sorted(maps.Keys(byName))
	b.WriteString("map{")
	for _, name := range names {
		e := byName[name]
		if !o.typed {
			b.WriteString(name + ":" + cell(name, e.Interface()) + " ")
			continue
		}
		if name == "created_at" || name == "updated_at" || name == "deleted_at" {
			continue
		}
		b.WriteString(name + ":")
		if e.Kind() == reflect.Interface && !e.IsNil() {
			fmt.Fprintf(b, "%T=", e.Elem().Interface())
		}
		o.write(b, e, false)
		b.WriteString(" ")
	}
	b.WriteString("}")
}
