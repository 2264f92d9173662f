package shardid

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/engine"
	"github.com/shardid/shardid/shardrouter"
	"github.com/shardid/shardid/strategies"
)

// Layout says how an ID is cut into time, logical shard and sequence; the zero
// value is the default 40/13/10 layout. See [strategies.Layout].
type Layout = strategies.Layout

// Config configures the plugin. The zero value is ready to use.
type Config struct {
	// Layout of the IDs. Default: the zero Layout, 40 bits of milliseconds
	// since 2025-01-01, 13 bits of logical shard, 10 bits of sequence.
	Layout Layout
	// DefaultStrategy is the strategy of a tag that names none: "instagram",
	// "snowflake", "segment" or "ticket" (UUID fields name theirs). Default: "instagram", whose uniqueness needs no
	// coordination between processes.
	DefaultStrategy string
	// Snowflake configures the worker IDs of the snowflake strategy.
	// Default: leased from each physical database, valid for 10s and renewed
	// every third of that.
	Snowflake SnowflakeConfig
	// Segment configures the segment strategy's blocks. Default: blocks of
	// 1000 values, doubled while a block lasts under 15 minutes, up to 1e6.
	Segment strategies.SegmentOptions
	// Ticket lists the ticket servers of the ticket strategy. Default: none,
	// and a tag naming ticket is refused.
	Ticket TicketConfig
	// Shards lists the physical databases and the logical shards each holds;
	// together they must map every logical shard exactly once. Default: none,
	// and every logical shard lives on the plugin's own database, which then
	// also holds the unsharded models.
	Shards []Shard
	// ConnectTimeout bounds how long a statement waits for its physical
	// database to open (each opens when a statement first needs it, so that
	// db.Use neither waits for nor fails on one that is down). Default: 5s.
	ConnectTimeout time.Duration
	// MapRefresh is how often the process reads the shared map of logical
	// shards (a table in the plugin's database that moves change); a write
	// refused as moved reads it at once. Negative: only then. Default: 1s.
	MapRefresh time.Duration
	// PoolIdleTimeout closes a connection of a physical database the plugin
	// opened from a Dialector once it has been idle this long
	// (sql.DB.SetConnMaxIdleTime), so that a plugin over thousands of
	// databases holds connections only to those in use; the pool reconnects
	// on the next statement. Default: 0, database/sql's default (idle
	// connections are kept, up to its MaxIdleConns).
	PoolIdleTimeout time.Duration
	// MoveWait bounds how long a write outside a transaction, refused because
	// its logical shard has just moved, is held for the new map and retried
	// on the new database before it fails with ErrShardMoved. Default: 5s.
	MoveWait time.Duration
	// Atomic says what a write over several physical databases promises (a
	// Create batch split over them, an update or delete over several, a
	// transaction begun with AcrossShards). Default: TwoPhaseCommit, all of
	// it or none, with the servers' two-phase commit (MySQL/MariaDB XA,
	// PostgreSQL PREPARE TRANSACTION, which needs max_prepared_transactions
	// above 0); on SQLite, which has none, such a write is refused with
	// ErrNotAtomic. BestEffort writes each database's part in a transaction
	// of its own, as before: a part that fails leaves the others written.
	Atomic Atomicity
	// InDoubtAfter is how long RecoverTransactions leaves a prepared branch
	// without a decision to its coordinator while that process still runs;
	// a coordinator that stopped has its branches rolled back at once.
	// Recovery runs at db.Use and every half of it. Default: 1m.
	InDoubtAfter time.Duration
	// PartsAtOnce bounds how many parts of one query over several physical
	// databases (AllShards, a Count, an IN list of IDs over several) run at
	// once, each on a connection of its database; the next part starts as
	// one ends, and once a part failed or the context ended, the parts not
	// begun do not run. Default (0): 16, as recovery opens databases: enough
	// to keep a few servers busy, while a query over 1,024 databases on 4
	// servers takes 16 connections, not 256 of a server's, above MySQL's
	// default max_connections of 151. 1 runs the parts one after another;
	// negative is refused. A write over several databases runs its parts in
	// turns, but holds a transaction, so a connection, on each of them until
	// it commits.
	PartsAtOnce int
	// MapTable names the shared map's table in the plugin's database, for
	// several sets of shards that share that database. Default:
	// shardid_shard_map.
	MapTable string
	// LogPhysical begins GORM's log line of each statement that ran on a
	// physical database with the database's name, as "[name] SELECT ...", a
	// migration's DDL too. A statement over several databases is always
	// logged so, one part after another on one line. It costs each statement
	// two allocations.
	LogPhysical bool
	// Log gets the plugin's own events: a snowflake worker lease taken or
	// lost, a ticket server down or back, a new map version, a move's
	// phases. Default: slog.Default().
	Log *slog.Logger

	clock strategies.Clock // the snowflake clock; tests inject one
}

// SnowflakeConfig configures the snowflake strategy's worker IDs.
type SnowflakeConfig struct {
	// Lease configures the worker leases: their TTL, how long a restart
	// waits for a clock that is behind, the owner's name, the table.
	Lease strategies.LeaseOptions
	// FixedWorker gives the process the worker ID WorkerID instead of
	// leasing one. The caller then keeps worker IDs unique across
	// processes, and time used is not remembered across restarts.
	FixedWorker bool
	// WorkerID is the fixed worker ID, below 2^Layout.WorkerBits.
	WorkerID int
}

// TicketConfig configures the ticket strategy.
type TicketConfig struct {
	// Servers are the ticket servers, MySQL/MariaDB or PostgreSQL databases
	// of their own. Each has an Offset in 1..Options.Step that no other
	// server ever had: a server added later takes a new one.
	Servers []TicketServer
	// Options: the step (the most servers there will ever be, default 16),
	// virtual nodes on the ring, back-off and timeout.
	Options strategies.TicketOptions
}

// TicketServer is one ticket server: its Name (on the ring and in errors), a
// Dialector to open or an opened DB, and its Offset.
type TicketServer struct {
	Name      string
	Dialector gorm.Dialector
	DB        *gorm.DB
	Offset    int
}

// Range is an inclusive range of logical shards.
type Range = shardrouter.Range

// Shard is one physical database and the logical shards it holds.
type Shard struct {
	// Name identifies the database in errors, logs and the shard map; unique,
	// of at most 191 characters.
	Name string
	// Dialector opens the database, with the same GORM config as the plugin's
	// database but a connection pool and caches of its own. Give Dialector or
	// DB, not both.
	Dialector gorm.Dialector
	// DB is an already opened database; its connection pool is used, and it
	// must name tables as the plugin's database does (its NamingStrategy).
	DB *gorm.DB
	// Logical lists the logical shards the database holds.
	Logical []Range
}

// Plugin is the GORM plugin. Register it with db.Use(shardid.New(cfg)). It is
// safe for concurrent use.
type Plugin struct {
	config Config
	once   sync.Once
	e      *engine.Engine // made once, by New or the first call
}

// pluginName is the plugin's name in gorm.Config.Plugins.
const pluginName = "shardid"

var _ gorm.Plugin = (*Plugin)(nil)

// New returns the plugin for cfg; cfg is validated by db.Use.
func New(cfg Config) *Plugin {
	p := &Plugin{config: cfg}
	p.engine()
	return p
}

// unregistered is the engine of a nil *Plugin: never initialized, so that
// each method says the plugin is not open, as one before db.Use does.
var unregistered = engine.New(nil, engine.Config{})

// engine returns the plugin's engine, which routes and runs its statements.
func (p *Plugin) engine() *engine.Engine {
	if p == nil {
		return unregistered
	}
	p.once.Do(func() { p.e = engine.New(p, p.config.engine()) })
	return p.e
}

// engine is the Config as the engine takes it.
func (c Config) engine() engine.Config {
	servers := make([]engine.TicketServer, len(c.Ticket.Servers))
	for i, s := range c.Ticket.Servers {
		servers[i] = engine.TicketServer(s)
	}
	shards := make([]engine.Shard, len(c.Shards))
	for i, s := range c.Shards {
		shards[i] = engine.Shard(s)
	}
	return engine.Config{
		Layout: c.Layout, DefaultStrategy: c.DefaultStrategy, Snowflake: engine.SnowflakeConfig(c.Snowflake),
		Segment: c.Segment, Ticket: engine.TicketConfig{Servers: servers, Options: c.Ticket.Options}, Shards: shards,
		ConnectTimeout: c.ConnectTimeout, MapRefresh: c.MapRefresh, PoolIdleTimeout: c.PoolIdleTimeout, MoveWait: c.MoveWait,
		Atomic: engine.Atomicity(c.Atomic), InDoubtAfter: c.InDoubtAfter, PartsAtOnce: c.PartsAtOnce, MapTable: c.MapTable, LogPhysical: c.LogPhysical, Log: c.Log, Clock: c.clock,
	}
}

// Name implements gorm.Plugin.
func (p *Plugin) Name() string { return pluginName }

// Layout returns the layout the plugin makes IDs with, defaults filled in.
func (p *Plugin) Layout() Layout { return p.engine().Layout() }

// Initialize implements gorm.Plugin: it validates the Config, builds one
// generator per strategy and registers the callbacks. It fails with
// [ErrInvalidLayout] or [ErrInvalidConfig].
func (p *Plugin) Initialize(db *gorm.DB) error {
	if p == nil {
		return fmt.Errorf("%w: db.Use was given a nil *shardid.Plugin (make it with shardid.New)", ErrInvalidConfig)
	}
	return p.engine().Initialize(db)
}

// RecoverTransactions finishes the writes over several databases that a
// process left prepared when it stopped or lost a database midway: a branch
// whose commit was recorded is committed, one without a decision whose
// process no longer runs (or has had it for Config.InDoubtAfter) is rolled
// back. Each action is logged through Config.Log with its global
// transaction ID. The plugin runs it at db.Use and then periodically; the
// command `shardid recover` runs it once.
func (p *Plugin) RecoverTransactions(ctx context.Context) error {
	return p.engine().RecoverTransactions(ctx)
}

// TransactionStats counts the writes over several databases committed in
// two phases, and the transactions begun AcrossShards (one that wrote on
// one database commits there in one phase), by outcome.
func (p *Plugin) TransactionStats() TransactionStats { return p.engine().TransactionStats() }

// Close releases the snowflake worker leases and stops the strategies'
// background work, then closes the physical databases the plugin opened from
// a Dialector; those given as a DB, and the plugin's own database, stay open.
func (p *Plugin) Close() error { return p.engine().Close() }

// AddTicketServer prepares s and puts it on the ticket servers' ring, where
// it takes over about 1/(N+1) of the logical shards. Its Offset must be one
// that no server ever had, so that no ticket is issued twice. Add it to
// Config.Ticket.Servers too, for the next start.
func (p *Plugin) AddTicketServer(ctx context.Context, s TicketServer) error {
	return p.engine().AddTicketServer(ctx, engine.TicketServer(s))
}

// PrepareTicketServers creates the ticket table (MySQL/MariaDB) or sequence
// (PostgreSQL) on every ticket server, with the server's offset and the
// step; AutoMigrate of a model that uses the ticket strategy does it too. It
// is idempotent, safe from several processes at once, and refuses a counter
// made for another offset or step.
func (p *Plugin) PrepareTicketServers(ctx context.Context) error {
	return p.engine().PrepareTicketServers(ctx)
}

// Stats returns each strategy's counters, by strategy name.
func (p *Plugin) Stats() map[string]strategies.Stats { return p.engine().Stats() }

// ShardMap returns the current map of logical shards to physical databases;
// Name(Physical(Layout().Shard(id))) is where the row with id lives. It is
// nil before db.Use.
func (p *Plugin) ShardMap() *shardrouter.Map { return p.engine().ShardMap() }

// SwapShardMap replaces the map of logical shards to physical databases,
// atomically: statements routed after it returns use m. The map must name
// the same physical databases in the same order ([shardrouter.Router.Swap]).
// Moving a logical shard is more than a swap: its rows must be copied first,
// and, for instagram, the target database's clock-sequence advanced past the
// source's, so that no ID is made twice.
func (p *Plugin) SwapShardMap(m *shardrouter.Map) error { return p.engine().SwapShardMap(m) }

func init() {
	engine.Of = func(p gorm.Plugin) *engine.Engine {
		if p, ok := p.(*Plugin); ok {
			return p.engine()
		}
		return nil
	}
}
