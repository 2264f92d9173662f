package shardid

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/strategies"
)

// registerCallbacks adds the plugin's hook. IDs are assigned before
// gorm:begin_transaction: the model's BeforeCreate sees them, and no
// transaction is opened for a row whose ID cannot be made.
func (p *Plugin) registerCallbacks(db *gorm.DB) error {
	if err := db.Callback().Create().Before("gorm:begin_transaction").Register("shardid:assign_ids", p.assignIDs); err != nil {
		return fmt.Errorf("shardid: registering shardid:assign_ids: %w", err)
	}
	return nil
}

// assignIDs fills every zero shardid field of the rows being created and
// validates the preset ones.
func (p *Plugin) assignIDs(db *gorm.DB) {
	stmt := db.Statement
	if db.Error != nil || stmt.Schema == nil {
		return
	}
	m, err := p.model(stmt.Schema)
	if err != nil || m == nil {
		db.AddError(err)
		return
	}
	rows, err := structRows(m, stmt.ReflectValue)
	if err != nil {
		db.AddError(err)
		return
	}
	db.AddError(p.fill(stmt.Context, db, m, rows))
}

// structRows returns the addressable structs behind a Create's value: one
// struct, or the elements of a slice or array of structs or pointers.
func structRows(m *model, rv reflect.Value) ([]reflect.Value, error) {
	rv = reflect.Indirect(rv)
	switch rv.Kind() {
	case reflect.Struct:
		return []reflect.Value{rv}, nil
	case reflect.Slice, reflect.Array:
		rows := make([]reflect.Value, 0, rv.Len())
		for i := range rv.Len() {
			if row := reflect.Indirect(rv.Index(i)); row.Kind() == reflect.Struct {
				rows = append(rows, row)
			}
		}
		return rows, nil
	}
	return nil, &FieldError{Model: m.schema.Name, Field: m.fields[0].field.Name, Err: ErrNoShard,
		Detail: fmt.Sprintf("cannot assign IDs when creating from a %s; create from the struct or a slice of it", rv.Kind())}
}

// fill validates the preset IDs of rows and gives the zero ones a new ID:
// one Generate call (for instagram, one round trip) per field. The IDs go
// into the rows once every field's are made, so a failure leaves them zero
// (a field colocated on another tagged field needs that one in place first).
func (p *Plugin) fill(ctx context.Context, db *gorm.DB, m *model, rows []reflect.Value) error {
	now := time.Now()
	type fieldIDs struct {
		values []reflect.Value // the zero fields to fill
		ids    []int64
	}
	made := make([]fieldIDs, 0, len(m.fields))
	for _, f := range m.fields {
		if f.colocate != nil && m.tagged(f.colocate) {
			// This field follows another ID of the same row: that one must be in place.
			for _, done := range made {
				writeIDs(done.values, done.ids)
			}
			made = made[:0]
		}
		values := make([]reflect.Value, 0, len(rows))
		shards := make([]int, 0, len(rows))
		for _, row := range rows {
			value := f.field.ReflectValueOf(ctx, row)
			id, err := readID(value)
			if err == nil && id != 0 {
				err = p.layout.Check(id, now)
			}
			if err != nil {
				return &FieldError{Model: m.schema.Name, Field: f.field.Name, Err: ErrInvalidID, Detail: fmt.Sprintf("preset value: %v", err)}
			}
			if id != 0 {
				continue
			}
			shard, err := p.shardOf(ctx, db, m, f, row)
			if err != nil {
				return err
			}
			values, shards = append(values, value), append(shards, shard)
		}
		if len(shards) == 0 {
			continue
		}
		if f.colocate == nil && f.hash == nil {
			// Uniform shards in ascending order are still uniform, and they make
			// the batch's IDs ascend, which B-tree indexes append cheaply.
			slices.Sort(shards)
		}
		ids := make([]int64, len(shards))
		if err := f.generator.Generate(ctx, p.target(db), shards, ids); err != nil {
			return fmt.Errorf("shardid: %s.%s: %w", m.schema.Name, f.field.Name, err)
		}
		made = append(made, fieldIDs{values, ids})
	}
	for _, done := range made {
		writeIDs(done.values, done.ids)
	}
	return nil
}

// shardOf picks the logical shard of a new row by the field's tag: the shard
// of the colocate ID, the hash of the hash field, or uniformly at random.
func (p *Plugin) shardOf(ctx context.Context, db *gorm.DB, m *model, f *idField, row reflect.Value) (int, error) {
	noShard := func(format string, args ...any) error {
		return &FieldError{Model: m.schema.Name, Field: f.field.Name, Err: ErrNoShard, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case f.colocate != nil:
		source := f.colocate.ReflectValueOf(ctx, row)
		id, err := readID(source)
		if err != nil {
			return 0, noShard("colocate:%s: %v", f.colocate.Name, err)
		}
		if id == 0 && f.parent != nil {
			if id, err = p.fillParent(ctx, db, f.parent, row); err != nil {
				return 0, err
			}
			writeID(source, id)
		}
		if id <= 0 {
			return 0, noShard("colocate:%s is %d; set %s (or the %s it belongs to) to the ID this row lives beside", f.colocate.Name, id, f.colocate.Name, parentName(f))
		}
		return p.layout.Shard(id), nil
	case f.hash != nil:
		key := f.hash.ReflectValueOf(ctx, row)
		if (key.Kind() == reflect.String || key.Kind() == reflect.Slice) && key.Len() == 0 {
			return 0, noShard("hash:%s is empty; the row's shard is the hash of its value", f.hash.Name)
		}
		h, err := hashValue(key)
		if err != nil {
			return 0, noShard("hash:%s: %v", f.hash.Name, err)
		}
		return int(h % uint64(p.layout.ShardCount())), nil
	}
	return rand.IntN(p.layout.ShardCount()), nil
}

// fillParent gives the belongs-to parent about to be created in the same call
// its ID first, so that its child can be colocated with it.
// It returns 0 when there is no such parent, or its ID is not a shardid field.
func (p *Plugin) fillParent(ctx context.Context, db *gorm.DB, rel *schema.Relationship, row reflect.Value) (int64, error) {
	parent := reflect.Indirect(rel.Field.ReflectValueOf(ctx, row))
	if parent.Kind() != reflect.Struct {
		return 0, nil
	}
	pm, err := p.model(rel.FieldSchema)
	if err != nil || pm == nil {
		return 0, err
	}
	if err := p.fill(ctx, db, pm, []reflect.Value{parent}); err != nil {
		return 0, err
	}
	return readID(rel.References[0].PrimaryKey.ReflectValueOf(ctx, parent))
}

func parentName(f *idField) string {
	if f.parent != nil {
		return f.parent.FieldSchema.Name
	}
	return "row"
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

// writeIDs stores ids[i] in values[i].
func writeIDs(values []reflect.Value, ids []int64) {
	for i, v := range values {
		writeID(v, ids[i])
	}
}

// writeID stores a positive id in an int64 or uint64 field.
func writeID(v reflect.Value, id int64) {
	if v.Kind() == reflect.Uint64 {
		v.SetUint(uint64(id))
	} else {
		v.SetInt(id)
	}
}

// target is the physical database the statement writes to. Strategies run
// their SQL on the database's pool, outside the statement's transaction, so
// no lock they take is held until that transaction ends; on SQLite, whose one
// writer may be that very transaction, they run on the statement's connection.
func (p *Plugin) target(db *gorm.DB) strategies.Target {
	t := strategies.Target{Name: "default", Dialect: p.db.Dialector.Name(), Conn: p.pool}
	if t.Dialect == "sqlite" {
		t.Conn = db.Statement.ConnPool
	}
	return t
}
