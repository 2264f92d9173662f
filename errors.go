package shardid

import (
	"github.com/shardid/shardid/internal/engine"
	"github.com/shardid/shardid/internal/mover"
	"github.com/shardid/shardid/internal/shardmigrator"
	"github.com/shardid/shardid/strategies"
)

var (
	// ErrInvalidTag is returned, at the first statement on a model, for a
	// shardid struct tag that cannot be used. The error names the model, the
	// field and the allowed values.
	ErrInvalidTag = engine.ErrInvalidTag
	// ErrNoShard is returned for a row or statement whose logical shard cannot
	// be determined.
	ErrNoShard = engine.ErrNoShard
	// ErrCrossShard is returned for a statement that needs a physical database
	// other than the one its transaction is on, or whose conditions name shards
	// on different physical databases in a way that cannot be merged.
	ErrCrossShard = engine.ErrCrossShard
	// ErrInvalidConfig is returned by Initialize (db.Use) for a Config that
	// cannot work.
	ErrInvalidConfig = engine.ErrInvalidConfig
	// ErrInvalidLayout is returned by Initialize for a bad [Layout].
	ErrInvalidLayout = engine.ErrInvalidLayout
	// ErrInvalidID is returned for a preset ID the layout cannot have made.
	ErrInvalidID = engine.ErrInvalidID
	// ErrTimeExhausted is returned once the layout's time field has run out.
	ErrTimeExhausted = strategies.ErrTimeExhausted
	// ErrShardUnavailable is returned for a statement whose physical database
	// could not be opened (it is down, or did not answer within
	// Config.ConnectTimeout). The error names the database; other databases'
	// statements are not affected. It is also returned for every statement on
	// a sharded model while the process has not read the shared map for three
	// Config.MapRefresh periods and a second, or reads one it cannot route by.
	ErrShardUnavailable = engine.ErrShardUnavailable
	// ErrShardMoved is returned for a write that the source database of a move
	// refused because its logical shard has moved: inside a transaction (retry
	// the transaction, which then runs on the new database), or outside one once
	// Config.MoveWait has passed without the new map.
	ErrShardMoved = engine.ErrShardMoved
	// ErrPluginNotOpen is returned by [Plugin.Ping] for a nil plugin, one never
	// registered with db.Use, or one closed; by the plugin's migrator
	// (AutoMigrate), RecoverTransactions and SwapShardMap before db.Use; and,
	// saying the plugin is closed, by every method that needs its databases
	// after Close (the migrator, the moves and their listings, Audit,
	// RefreshMap, RecoverTransactions, SwapShardMap and the ticket servers').
	ErrPluginNotOpen = engine.ErrPluginNotOpen
	// ErrNotAtomic is returned, before anything is written, for a write over
	// several physical databases that cannot commit atomically: SQLite, or a
	// PostgreSQL server with max_prepared_transactions = 0. Set
	// Config.Atomic to BestEffort to write it part by part.
	ErrNotAtomic = engine.ErrNotAtomic
	// ErrInDoubt is returned when a write over several databases prepared
	// everywhere but its commit decision could not be recorded: recovery
	// (RecoverTransactions) commits or rolls it back, wholly.
	ErrInDoubt = engine.ErrInDoubt
	// ErrShardsDisagree is returned by the shard-aware migrator when the physical
	// databases answer a question about a sharded table differently; the error
	// names them. The yes/no questions (HasTable, ...) cannot return it: they
	// answer false and log it as a warning.
	ErrShardsDisagree = shardmigrator.ErrShardsDisagree
	// ErrMoveInvalid is returned for a move that cannot be made as asked.
	ErrMoveInvalid = mover.ErrInvalid
	// ErrMoveVerify is returned when the copy of a table differs from the
	// source at the cutover; the range is thawed and stays on the source, and
	// running the move again replays and checks again.
	ErrMoveVerify = mover.ErrVerify
)

// FieldError is an error about one field of one model: the model's and the
// field's Go names, the sentinel it unwraps to (ErrInvalidTag, ErrNoShard,
// ErrInvalidID, ...) and what is wrong and how to fix it.
type FieldError = engine.FieldError

// MovedError is an [ErrShardMoved]: the shard (-1 where the database's
// message does not carry it), the database it moved to, why the plugin did
// not retry the write itself, and the database's own refusal.
type MovedError = engine.MovedError
