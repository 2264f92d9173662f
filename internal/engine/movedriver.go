package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
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
