package mover

import (
	"context"
	"database/sql"
	"log/slog"
	"reflect"

	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/shardrouter"
	"github.com/shardid/shardid/strategies"
)

// Driver is what a move needs of the plugin that drives it. Physical
// databases are numbered as in [Driver.Databases]. An implementation must be
// safe for concurrent use: moves of different ranges run at once.
type Driver interface {
	// Layout is the layout of the IDs, defaults filled in.
	Layout() strategies.Layout
	// Fence is the fence of the plugin's dialect and layout; every physical
	// database is of that dialect.
	Fence() fence.Fence
	// Databases are the names of the physical databases, in their order.
	Databases() []string
	// Open returns the pool of physical database k, opened.
	Open(ctx context.Context, k int) (*sql.DB, error)
	// Store is the shared map's store in the plugin's own database.
	Store() *mapstore.Store
	// ShardMap is the map statements are routed by now.
	ShardMap() *shardrouter.Map
	// MapVersion is the version of the shared map routed by; 0 for the
	// configured one.
	MapVersion() int64
	// RefreshMap reads the shared map and routes by it if it is newer; it
	// returns the version followed.
	RefreshMap(ctx context.Context) (int64, error)
	// MapOf builds the router's map of a stored version.
	MapOf(stored *mapstore.Map) (*shardrouter.Map, error)
	// Tables returns the sharded tables of models, with their many2many join
	// tables; for no models, every sharded table the plugin has migrated.
	// Its errors for models that cannot move wrap [ErrInvalid].
	Tables(ctx context.Context, models []any) ([]Table, error)
	// Migrate makes the models' tables on the physical database target
	// alone, changing no other database.
	Migrate(ctx context.Context, target string, models []any) error
	// AdvanceIDs makes the ID source of strategy for table on database to
	// issue only IDs above those database from issued and above atLeast.
	// Its error names the table and the database.
	AdvanceIDs(ctx context.Context, table, strategy string, from, to int, atLeast int64) error
	// Events gets the plugin's own events: a move's phases and warnings.
	Events() *slog.Logger
	// HashShard returns how the plugin computes the logical shard of a
	// value of the hash column of t (t.Hash not ""), as the driver read it
	// from the database: the hash is computed in Go, as the plugin routes by
	// it. Its function's error wraps [ErrInvalid] for a value it cannot
	// read as the key's type; another error, a value of no shard (empty);
	// nil function: the table's record does not say how its key is hashed.
	HashShard(t Table) (func(value any) (int, error), error)
}

// Table is a sharded table as the plugin knows it. It is plain data, safe
// for concurrent reads.
type Table struct {
	Name     string
	Key      string        // the primary key column, which carries the shard; of a join table, its column of the owner's key
	Kind     fence.KeyKind // how the key carries it
	Strategy string        // the key's strategy, whose ID source a move advances
	Join     bool          // a many2many join table beside a sharded owner; Strategy says whether its other side is sharded too
	Model    reflect.Type  // the model, when the move was given it: to create the target's table
	// IDColumns are its other int64 columns that a strategy fills, whose ID
	// sources a move advances too.
	IDColumns []IDColumn
	// Colocate is the column of its colocate rule, whose ID's logical shard
	// a row the plugin writes takes: "" without one.
	Colocate string
	// Hash is the column of its hash rule, whose hash's logical shard a row
	// the plugin writes takes: "" without one. HashKey says how its value is
	// hashed (the plugin's record of it, "" if unknown), HashLoose whether
	// as its loose key (collation:loose).
	Hash      string
	HashKey   string
	HashLoose bool
}

// IDColumn is a column, not the key, that a strategy fills.
type IDColumn struct{ Column, Strategy string }
