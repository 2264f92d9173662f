package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/mover"
	"github.com/shardid/shardid/internal/shardmigrator"
	"github.com/shardid/shardid/shardrouter"
	"github.com/shardid/shardid/strategies"
)

// moverDriver is the plugin as the mover drives it. It is safe for
// concurrent use, as the plugin is.
type moverDriver struct{ p *Engine }

var _ mover.Driver = moverDriver{}

func (d moverDriver) Layout() strategies.Layout { return d.p.layout }

func (d moverDriver) Fence() fence.Fence {
	return fence.Fence{Dialect: d.p.db.Dialector.Name(), ShardBits: d.p.layout.ShardBits, SequenceBits: d.p.layout.SequenceBits}
}

func (d moverDriver) Databases() []string {
	names := make([]string, len(d.p.physical))
	for k, ph := range d.p.physical {
		names[k] = ph.name
	}
	return names
}

func (d moverDriver) Open(ctx context.Context, k int) (*sql.DB, error) {
	opened, err := d.p.opened(ctx, k)
	if err != nil {
		return nil, err
	}
	return opened.database()
}

func (d moverDriver) Store() *mapstore.Store { return d.p.maps.Store }

func (d moverDriver) ShardMap() *shardrouter.Map { return d.p.router.Map() }

func (d moverDriver) MapVersion() int64 { return d.p.MapVersion() }

func (d moverDriver) RefreshMap(ctx context.Context) (int64, error) { return d.p.refreshMap(ctx) }

func (d moverDriver) MapOf(stored *mapstore.Map) (*shardrouter.Map, error) {
	return d.p.mapOfStored(stored)
}

func (d moverDriver) Migrate(ctx context.Context, target string, models []any) error {
	return d.p.Migrator(shardmigrator.OnlyOn(d.p.db.WithContext(ctx), target)).AutoMigrate(models...)
}

func (d moverDriver) Events() *slog.Logger { return d.p.config.Log }

// Tables resolves the models of a move, or else the sharded tables the
// plugin has migrated, to their tables; a model is parsed as GORM does.
func (d moverDriver) Tables(ctx context.Context, models []any) ([]mover.Table, error) {
	p := d.p
	var list []shardedTable
	types := map[string]reflect.Type{}
	for _, value := range models {
		stmt := &gorm.Statement{DB: p.db}
		if err := stmt.Parse(value); err != nil {
			return nil, fmt.Errorf("%w: model %T: %w", mover.ErrInvalid, value, err)
		}
		m, err := p.model(stmt.Schema)
		if err != nil {
			return nil, err
		}
		if m == nil || !m.sharded() {
			return nil, fmt.Errorf("%w: %s is not a sharded model", mover.ErrInvalid, stmt.Schema.Name)
		}
		list = append(list, p.joinTablesOf(m)...)
		if key := m.pk().field; key.FieldType.Kind() == reflect.Array && !key.FieldType.Implements(valuerType) {
			return nil, fmt.Errorf("%w: %s.%s keeps its UUID as bytes; a move reads the shard of text UUIDs", mover.ErrInvalid, m.schema.Name, key.Name)
		}
		list = append(list, shardedTableOf(m))
		types[m.schema.Table] = m.schema.ModelType
	}
	registered, err := p.registeredTables(ctx)
	if err != nil {
		return nil, err
	}
	if len(models) == 0 {
		list = registered
	} else if err := leavesNone(list, registered); err != nil {
		return nil, err
	}
	tables := make([]mover.Table, len(list))
	for i, t := range list {
		tables[i] = mover.Table{Name: t.Name, Key: t.Key, Kind: t.Kind, Strategy: t.Strategy, Join: t.Strategy == joinRows || t.Strategy == joinShardedRows, Model: types[t.Name], IDColumns: t.IDColumns}
		if t.Placement != nil {
			tables[i].Colocate = colocateColumn(*t.Placement)
			tables[i].Hash, tables[i].HashLoose = hashColumn(*t.Placement)
		}
		if t.HashKey != nil {
			tables[i].HashKey = *t.HashKey
		}
	}
	return tables, nil
}

var valuerType = reflect.TypeFor[driver.Valuer]()
var scannerType = reflect.TypeFor[sql.Scanner]()

// leavesNone refuses a move given models that leave out a sharded table the
// plugin has migrated: every sharded table has rows in every logical shard,
// and those of the range would stay on the source, which the new map no
// longer reads.
func leavesNone(given, registered []shardedTable) error {
	var left []string
	for _, r := range registered {
		if !slices.ContainsFunc(given, func(g shardedTable) bool { return strings.EqualFold(g.Name, r.Name) }) {
			left = append(left, r.Name)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%w: the move's models leave out the sharded tables %v, whose rows of the range would stay on the source, unread once the range moves: give their models too, or no Models to move every sharded table",
			mover.ErrInvalid, left)
	}
	return nil
}

// AdvanceIDs moves the instagram clock-sequence or the segment counters of
// table on database to past those of database from and past atLeast.
func (d moverDriver) AdvanceIDs(ctx context.Context, table, strategy string, from, to int, atLeast int64) error {
	p := d.p
	if strategy == joinRows {
		return nil // join rows have no ID source
	}
	source, err := p.target(p.db.WithContext(ctx), nil, from)
	if err != nil {
		return err
	}
	target, err := p.target(p.db.WithContext(ctx), nil, to)
	if err != nil {
		return err
	}
	source.Table, target.Table = table, table
	switch g := p.generators[strategy].(type) {
	case *strategies.Instagram:
		err = g.Advance(ctx, source, target, atLeast)
	case *strategies.Segment:
		err = g.Advance(ctx, source, target, atLeast)
	}
	if err != nil {
		return fmt.Errorf("advancing the IDs of %s on %s: %w", table, p.physical[to].name, err)
	}
	return nil
}

// hashColumn is the column of a placement's hash rule, "" for another rule,
// and whether it hashes the column's loose key.
func hashColumn(placement string) (column string, loose bool) {
	rule, ok := strings.CutPrefix(placement, "hash:")
	if !ok {
		return "", false
	}
	column, options, _ := strings.Cut(rule, ";")
	return column, options == "collation:loose"
}

// HashShard computes the logical shard of a hash column's value as the
// database driver reads it, the way its record says the key is hashed: the
// text (or bytes) of a text key, the integer of an integer key (read as text
// too), the 16 bytes of a [16]byte key (stored as 16 bytes, or as a UUID's
// text). A key whose Go type's Value method stores another value than the
// one hashed cannot be read back so: such a table is left unchecked when
// the plugin has parsed its model (hashKeyStoredOtherwise).
func (d moverDriver) HashShard(t mover.Table) (func(value any) (int, error), error) {
	var convert func(v any) (reflect.Value, bool)
	text := func(v any) (string, bool) {
		switch x := v.(type) {
		case string:
			return x, true
		case []byte:
			return string(x), true
		}
		return "", false
	}
	switch t.HashKey {
	case hashKeyText:
		convert = func(v any) (reflect.Value, bool) {
			s, ok := text(v)
			return reflect.ValueOf(s), ok
		}
	case hashKeyInt:
		convert = func(v any) (reflect.Value, bool) {
			switch x := v.(type) {
			case int64, uint64:
				return reflect.ValueOf(x), true
			}
			s, ok := text(v)
			if !ok {
				return reflect.Value{}, false
			}
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return reflect.ValueOf(n), true
			}
			n, err := strconv.ParseUint(s, 10, 64)
			return reflect.ValueOf(n), err == nil
		}
	case hashKeyBytes16:
		convert = func(v any) (reflect.Value, bool) {
			var b [16]byte
			if raw, ok := v.([]byte); ok && len(raw) == 16 {
				copy(b[:], raw)
				return reflect.ValueOf(b), true
			}
			s, ok := text(v)
			if !ok {
				return reflect.Value{}, false
			}
			h, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
			if err != nil || len(h) != 16 {
				return reflect.Value{}, false
			}
			copy(b[:], h)
			return reflect.ValueOf(b), true
		}
	default:
		return nil, nil // recorded by a version that did not say how: not known here
	}
	if t.HashKey != hashKeyBytes16 && d.p.hashKeyStoredOtherwise(t.Name) {
		return nil, nil // the column holds what a Value method made of the key hashed
	}
	loose := t.HashLoose && t.HashKey == hashKeyText
	return func(value any) (int, error) {
		v, ok := convert(value)
		if !ok {
			return 0, fmt.Errorf("%w: %s.%s holds %T %v, which is not %s", mover.ErrInvalid, t.Name, t.Hash, value, value, describeHashKey(t.HashKey))
		}
		return d.p.hashShard(v, loose)
	}, nil
}

// hashKeyStoredOtherwise reports whether a model of table the plugin has
// parsed keeps its hash key in a type with a Value method: the plugin hashes
// the key as its Go value (rowHashShard), and the column holds what the
// method returns (an email lower-cased), so the stored value does not name
// the row's shard. A [16]byte's is its text, which HashShard reads back.
func (e *Engine) hashKeyStoredOtherwise(table string) bool {
	known := e.modelsKnown.Load()
	if known == nil {
		return false
	}
	for _, entry := range *known {
		m := entry.parsed
		if m == nil || m.pk() == nil || m.pk().hash == nil || !strings.EqualFold(m.schema.Table, table) {
			continue
		}
		t := m.pk().hash.FieldType
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Implements(valuerType) || reflect.PointerTo(t).Implements(valuerType) {
			return true
		}
	}
	return false
}
