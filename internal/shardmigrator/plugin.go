package shardmigrator

import (
	"context"
	"log/slog"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/strategies"
)

// Plugin is what the migrator asks of the shardid plugin: what its tags say
// of a model, where the physical databases are, and the work it keeps for
// itself. Implementations must be safe for concurrent use.
type Plugin interface {
	// Routed reports whether sharded tables live on physical databases of
	// their own (Config.Shards); if not, every table lives on the plugin's
	// database.
	Routed() bool
	// Physical names the physical databases, in the order OpenPhysical takes
	// them. When Routed is false there is one: the plugin's database.
	Physical() []string
	// OpenPhysical returns the handle of physical database k, opened, or an
	// error naming it; the migrator makes sessions of it.
	OpenPhysical(ctx context.Context, k int) (*gorm.DB, error)
	// LogOn is the logger of the statements the migrator runs on physical
	// database k: l, its lines begun with the database's name when the plugin
	// names the database of each statement it logs.
	LogOn(k int, l logger.Interface) logger.Interface
	// Reachable reports, within the plugin's connect timeout, the physical
	// databases that do not answer, each error naming one; a change made on
	// several databases asks first, so that one down changes none.
	Reachable(ctx context.Context) error
	// Model returns what the tags of s say, or nil for a schema with none. It
	// makes the tagged primary key of s a plain column on first use, and
	// fails for a tag that cannot be used, before anything is migrated.
	Model(s *schema.Schema) (*Model, error)
	// LockMigrations takes the lock under which one migration at a time
	// runs among the processes of the plugin's database, waiting for
	// another's; the returned function releases it.
	LockMigrations(ctx context.Context) (func(), error)
	// ShardedTable reports whether table holds the rows of a sharded model
	// the process has seen, or the join rows of its many2many relations.
	ShardedTable(table string) bool
	// OwnCopy is a session of db for a table the migrator found by name on
	// the plugin's database (a copy plain GORM left there): its statements
	// run there though the table's name is recorded as sharded.
	OwnCopy(db *gorm.DB) *gorm.DB
	// PrepareStrategies creates, in every physical database, what the ID
	// sources used keep there.
	PrepareStrategies(db *gorm.DB, used map[strategies.Generator]bool) error
	// CheckNewTables fails, before anything is made and under the
	// migrations' lock, when models have a sharded table the plugin has not
	// recorded while a move, which would not carry it, is under way.
	CheckNewTables(db *gorm.DB, models []any) error
	// CheckTableUnmoved fails when an unfinished move carries table, a
	// sharded table about to be dropped or renamed.
	CheckTableUnmoved(db *gorm.DB, table string) error
	// KeepFences begins a change of a physical database's tables on its
	// session db, which keeps the triggers a move has there: the change is
	// made on the session it returns, then ended, with its error, by end,
	// which returns the change's outcome.
	KeepFences(db *gorm.DB) (tx *gorm.DB, end func(error) error, err error)
	// RegisterTables records the sharded tables among models, once migrated,
	// where a move or an audit without Go models finds them.
	RegisterTables(db *gorm.DB, models []any) error
	// UnregisterTable forgets a sharded table dropped through the migrator,
	// so that a move no longer looks for it.
	UnregisterTable(db *gorm.DB, table string) error
	// RenameRegisteredTable records a sharded table renamed through the
	// migrator by its new name, so that a move and an audit read that one.
	RenameRegisteredTable(db *gorm.DB, oldName, newName string) error
	// RenameRegisteredColumn records a column of a sharded table renamed
	// through the migrator by its new name where the record names it (the
	// placement rule's, the key's), so that the model naming it is not
	// refused as placing the rows by another column.
	RenameRegisteredColumn(db *gorm.DB, table, oldName, newName string) error
	// TagError is the plugin's error for a field of a model whose tag cannot
	// be used as it is; detail says why and how to fix it.
	TagError(model, field, detail string) error
	// Events gets the migrator's own warnings (databases that disagree),
	// as every event of the plugin's: not GORM's logger, which logs statements.
	Events() *slog.Logger
}

// Model is what the shardid tags of one model say, as far as migrating it
// needs. It is a value: safe for concurrent use once made.
type Model struct {
	// Sharded: the primary key is a shardid field, so the rows are spread
	// over logical shards and the table lives on every physical database.
	Sharded bool
	// Key is the Go name of the tagged primary key of a sharded model.
	Key string
	// Colocate and Hash are the columns that choose a sharded row's shard,
	// if its tag names one; each routes reads, so each gets an index.
	Colocate, Hash *schema.Field
	// LooseHash: the Hash string is tagged collation:loose, so its column
	// may compare loosely and keeps the type it is given.
	LooseHash bool
	// Generators are the ID sources of the tagged fields, nil for a UUID
	// field; their tables are prepared with the model's.
	Generators []strategies.Generator
}
