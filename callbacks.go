package shardid

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/strategies"
)

// registerCallbacks adds the plugin's hooks. IDs are requested before
// gorm:begin_transaction, so that a strategy's round trip to the database
// overlaps GORM's BEGIN, and are in the rows after it, before
// gorm:before_create, so the model's BeforeCreate sees them.
func (p *Plugin) registerCallbacks(db *gorm.DB) error {
	create := db.Callback().Create()
	if err := create.Before("gorm:begin_transaction").Register("shardid:assign_ids", p.assignIDs); err != nil {
		return fmt.Errorf("shardid: registering shardid:assign_ids: %w", err)
	}
	if err := create.After("gorm:begin_transaction").Before("gorm:before_create").Register("shardid:await_ids", awaitIDs); err != nil {
		return fmt.Errorf("shardid: registering shardid:await_ids: %w", err)
	}
	return nil
}

// pendingKey is the Statement.Settings key of the IDs still being fetched for
// one statement; GORM copies Settings into cloned statements, which must not
// take them over.
type pendingKey struct{ stmt *gorm.Statement }

// assignIDs fills every zero shardid field of the rows being created and
// validates the preset ones; IDs that need a round trip are left in flight for
// awaitIDs.
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
	inFlight, err := p.request(stmt.Context, db, m, rows)
	if len(inFlight) > 0 {
		stmt.Settings.Store(pendingKey{stmt}, inFlight)
	}
	db.AddError(err)
}

// awaitIDs writes the IDs requested by assignIDs into the rows. It runs even
// when the statement has failed, so that no request outlives it; the rows of
// a failed statement keep their zero IDs.
func awaitIDs(db *gorm.DB) {
	if v, ok := db.Statement.Settings.LoadAndDelete(pendingKey{db.Statement}); ok {
		db.AddError(awaitAll(v.([]*idRequest), db.Error == nil))
	}
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

// idRequest is the IDs of one field for the rows that need one, possibly
// still being generated.
type idRequest struct {
	model  *model
	field  *idField
	values []reflect.Value // the zero fields to fill
	ids    []int64
	done   chan struct{} // closed when ids and err are set; nil when generated in place
	err    error
}

// wait blocks until the IDs are known and, if write, puts them in the rows.
func (r *idRequest) wait(write bool) error {
	if r.done != nil {
		<-r.done
		r.done = nil
	}
	if r.err != nil {
		return fmt.Errorf("shardid: %s.%s: %w", r.model.schema.Name, r.field.field.Name, r.err)
	}
	if write {
		for i, value := range r.values {
			writeID(value, r.ids[i])
		}
	}
	r.values = nil
	return nil
}

// awaitAll waits for every request, writing the IDs only if write.
func awaitAll(requests []*idRequest, write bool) error {
	var first error
	for _, r := range requests {
		if err := r.wait(write); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// fill assigns IDs to the zero tagged fields of rows and returns when they
// are written.
func (p *Plugin) fill(ctx context.Context, db *gorm.DB, m *model, rows []reflect.Value) error {
	inFlight, err := p.request(ctx, db, m, rows)
	return errors.Join(err, awaitAll(inFlight, err == nil))
}

// request validates the preset IDs of rows and asks each field's generator
// for the missing ones: one Generate call (for instagram, one round trip) per
// field. IDs made in-process are written at once; it returns the requests
// still in flight, which the caller must wait for, even on error.
func (p *Plugin) request(ctx context.Context, db *gorm.DB, m *model, rows []reflect.Value) ([]*idRequest, error) {
	now := time.Now()
	var inFlight []*idRequest
	for _, f := range m.fields {
		if f.colocate != nil && m.tagged(f.colocate) {
			// This field follows another ID of the same row: that one must be known.
			if err := awaitAll(inFlight, true); err != nil {
				return nil, err
			}
			inFlight = nil
		}
		r := &idRequest{model: m, field: f, values: make([]reflect.Value, 0, len(rows))}
		shards := make([]int, 0, len(rows))
		for _, row := range rows {
			value := f.field.ReflectValueOf(ctx, row)
			id, err := readID(value)
			if err == nil && id != 0 {
				err = p.layout.Check(id, now)
			}
			if err != nil {
				return inFlight, &FieldError{Model: m.schema.Name, Field: f.field.Name, Err: ErrInvalidID, Detail: fmt.Sprintf("preset value: %v", err)}
			}
			if id != 0 {
				continue
			}
			shard, err := p.shardOf(ctx, db, m, f, row)
			if err != nil {
				return inFlight, err
			}
			r.values, shards = append(r.values, value), append(shards, shard)
		}
		if len(shards) == 0 {
			continue
		}
		r.ids = make([]int64, len(shards))
		target := p.target(db)
		if f.inProcess || target.Dialect == "sqlite" {
			r.err = f.generator.Generate(ctx, target, shards, r.ids)
			if err := r.wait(true); err != nil {
				return inFlight, err
			}
			continue
		}
		r.done = make(chan struct{})
		go func() {
			defer close(r.done)
			r.err = f.generator.Generate(ctx, target, shards, r.ids)
		}()
		inFlight = append(inFlight, r)
	}
	return inFlight, nil
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
