package shardid

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/mover"
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
	// MapTable names the shared map's table in the plugin's database, for
	// several sets of shards that share that database. Default:
	// shardid_shard_map.
	MapTable string
	// LogPhysical begins GORM's log line of each statement that ran on a
	// physical database with the database's name, as "[name] SELECT ...". A
	// statement over several databases is always logged so, one part after
	// another on one line. It costs each statement two allocations.
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

// Plugin is the GORM plugin. Register it with db.Use(shardid.New(cfg)). It is
// safe for concurrent use.
type Plugin struct {
	config     Config
	layout     Layout // normalized
	generators map[string]strategies.Generator
	uuids      *strategies.UUIDs
	db         *gorm.DB
	physical   []*physical // the databases logical shards live on
	openers    []*opener   // the physical databases the plugin opens, and closes
	router     *shardrouter.Router
	ticketMu   sync.Mutex
	ticketDBs  []*sql.DB                    // ticket servers the plugin opened, closed by Close
	txs        txRegistry[int]              // the physical database of each transaction known to be on one
	savepoints txRegistry[struct{}]         // transactions a nested Transaction has set a savepoint in
	implicit   txRegistry[struct{}]         // transactions GORM began for one routed statement, not the application
	txMaps     txRegistry[*shardrouter.Map] // the map a shard clause began each transaction by

	models        sync.Map // *schema.Schema → *modelEntry
	shardedTables sync.Map // lower-case table name → model name, for raw SQL
	joinTables    sync.Map // lower-case join tables of sharded models' many2many
	prepared      sync.Map // physical index (-1: the plugin's own) → *gorm.PreparedStmtDB, for prepared sessions
	poolOwners    sync.Map // gorm.ConnPool → the index of the physical database it is the pool of

	unshardedTables sync.Map // lower-case table name → model name, for raw SQL on a shard

	maps        *mapStore // the shared map; nil without Config.Shards
	copies      atomic.Pointer[frozenCopies]
	mapVersion  atomic.Int64 // the version of it routed by
	movedStats  movedCounters
	metrics     atomic.Pointer[statementMetrics] // nil until CountStatements
	moves       mover.Mover                      // the moves this process runs
	tracer      atomic.Pointer[PartTracer]       // nil until TraceParts
	countWanted atomic.Bool                      // CountStatements was called, maybe before Initialize
	closed      atomic.Bool                      // set by Close
}

// pluginName is the plugin's name in gorm.Config.Plugins.
const pluginName = "shardid"

var _ gorm.Plugin = (*Plugin)(nil)

// New returns the plugin for cfg; cfg is validated by db.Use.
func New(cfg Config) *Plugin { return &Plugin{config: cfg} }

// Name implements gorm.Plugin.
func (p *Plugin) Name() string { return pluginName }

// Layout returns the layout the plugin makes IDs with, defaults filled in.
func (p *Plugin) Layout() Layout { return p.layout }

// Initialize implements gorm.Plugin: it validates the Config, builds one
// generator per strategy and registers the callbacks. It fails with
// [ErrInvalidLayout] or [ErrInvalidConfig].
func (p *Plugin) Initialize(db *gorm.DB) error {
	if p.db != nil {
		// gorm.Open initializes again the plugins of a config it is given, as
		// when dbresolver opens its sources with a copy of this database's
		// config; the plugin serves the database it was registered on.
		return nil
	}
	if err := p.config.Layout.Validate(time.Now()); err != nil {
		return err
	}
	p.layout = p.config.Layout.Normalized()
	if p.config.Log == nil {
		p.config.Log = slog.Default()
	}
	if p.config.Snowflake.Lease.Log == nil {
		p.config.Snowflake.Lease.Log = p.config.Log
	}
	if p.config.Ticket.Options.Log == nil {
		p.config.Ticket.Options.Log = p.config.Log
	}
	if p.config.DefaultStrategy == "" {
		p.config.DefaultStrategy = strategies.NameInstagram
	}
	if p.config.MapTable != "" && !plainTable.MatchString(p.config.MapTable) {
		return fmt.Errorf("%w: MapTable %q (letters, digits and _, at most 63, not starting with a digit)", ErrInvalidConfig, p.config.MapTable)
	}
	if !slices.Contains(strategyNames, p.config.DefaultStrategy) {
		return fmt.Errorf("%w: DefaultStrategy %q (allowed: %s)", ErrInvalidConfig, p.config.DefaultStrategy, strings.Join(strategyNames, ", "))
	}
	if err := p.buildGenerators(); err != nil {
		return err
	}
	if err := p.openShards(db); err != nil {
		return err
	}
	if err := p.buildTicket(db); err != nil {
		return errors.Join(err, p.Close())
	}
	if err := p.registerCallbacks(db); err != nil {
		return errors.Join(err, p.Close())
	}
	p.db = db
	if p.countWanted.Load() {
		p.CountStatements()
	}
	if p.routed() {
		if err := p.startMapStore(context.Background()); err != nil {
			return errors.Join(err, p.Close())
		}
	}
	return nil
}

func (p *Plugin) buildGenerators() error {
	instagram, err := strategies.NewInstagram(p.layout)
	if err != nil {
		return err
	}
	var opts []strategies.SnowflakeOption
	if p.config.clock != nil {
		opts = append(opts, strategies.WithClock(p.config.clock))
	}
	var snowflake *strategies.Snowflake
	if sc := p.config.Snowflake; sc.FixedWorker {
		snowflake, err = strategies.NewSnowflake(p.layout, sc.WorkerID, opts...)
	} else {
		snowflake, err = strategies.NewLeasedSnowflake(p.layout, sc.Lease, opts...)
	}
	if err != nil {
		return fmt.Errorf("%w: Snowflake: %w", ErrInvalidConfig, err)
	}
	segmentOptions := p.config.Segment
	if segmentOptions.Clock == nil {
		segmentOptions.Clock = p.config.clock
	}
	segment, err := strategies.NewSegment(p.layout, segmentOptions)
	if err != nil {
		return fmt.Errorf("%w: Segment: %w", ErrInvalidConfig, err)
	}
	if p.uuids, err = strategies.NewUUIDs(p.layout); err != nil {
		return err
	}
	p.generators = map[string]strategies.Generator{
		strategies.NameInstagram: instagram,
		strategies.NameSnowflake: snowflake,
		strategies.NameSegment:   segment,
	}
	return nil
}

// buildTicket opens the ticket servers and builds the ticket generator, when
// there are any.
func (p *Plugin) buildTicket(db *gorm.DB) error {
	tc := p.config.Ticket
	if len(tc.Servers) == 0 {
		return nil
	}
	servers := make([]strategies.TicketServer, len(tc.Servers))
	for i, s := range tc.Servers {
		server, own, err := p.openTicketServer(db, s)
		if err != nil {
			return err
		}
		servers[i] = server
		p.keepTicketDB(own)
	}
	ticket, err := strategies.NewTicket(p.layout, servers, tc.Options)
	if err != nil {
		return fmt.Errorf("%w: Ticket: %w", ErrInvalidConfig, err)
	}
	p.generators[strategies.NameTicket] = ticket
	return nil
}

// openTicketServer opens s, which may be of another dialect than the shards:
// ticket SQL is written per dialect, not built by GORM.
// It returns the pool the plugin opened, if it opened one, for the caller to
// keep until Close or to close at once if the server is not used.
func (p *Plugin) openTicketServer(db *gorm.DB, s TicketServer) (strategies.TicketServer, *sql.DB, error) {
	if (s.DB == nil) == (s.Dialector == nil) {
		return strategies.TicketServer{}, nil, fmt.Errorf("%w: ticket server %s: give a Dialector or a DB", ErrInvalidConfig, s.Name)
	}
	opened := s.DB
	if opened == nil {
		var err error
		if opened, err = gorm.Open(s.Dialector, &gorm.Config{Logger: db.Logger, DisableAutomaticPing: true}); err != nil {
			return strategies.TicketServer{}, nil, fmt.Errorf("shardid: opening ticket server %s: %w", s.Name, err)
		}
	}
	sqlDB, err := opened.DB()
	if err != nil {
		return strategies.TicketServer{}, nil, fmt.Errorf("shardid: ticket server %s: %w", s.Name, err)
	}
	var own *sql.DB
	if s.DB == nil {
		own = sqlDB
	}
	return strategies.TicketServer{Name: s.Name, Dialect: opened.Dialector.Name(), DB: sqlDB, Offset: s.Offset}, own, nil
}

// keepTicketDB remembers a pool the plugin opened, for Close.
func (p *Plugin) keepTicketDB(db *sql.DB) {
	if db != nil {
		p.ticketMu.Lock()
		p.ticketDBs = append(p.ticketDBs, db)
		p.ticketMu.Unlock()
	}
}

// AddTicketServer prepares s and puts it on the ticket servers' ring, where
// it takes over about 1/(N+1) of the logical shards. Its Offset must be one
// that no server ever had, so that no ticket is issued twice. Add it to
// Config.Ticket.Servers too, for the next start.
func (p *Plugin) AddTicketServer(ctx context.Context, s TicketServer) error {
	ticket, ok := p.generators[strategies.NameTicket].(*strategies.Ticket)
	if !ok {
		return fmt.Errorf("%w: no ticket servers (Config.Ticket.Servers)", ErrInvalidConfig)
	}
	server, own, err := p.openTicketServer(p.db, s)
	if err != nil {
		return err
	}
	if err := ticket.AddServer(ctx, server); err != nil {
		if own != nil {
			err = errors.Join(err, own.Close())
		}
		return err
	}
	p.keepTicketDB(own)
	return nil
}

// PrepareTicketServers creates the ticket table (MySQL/MariaDB) or sequence
// (PostgreSQL) on every ticket server, with the server's offset and the
// step; AutoMigrate of a model that uses the ticket strategy does it too. It
// is idempotent, safe from several processes at once, and refuses a counter
// made for another offset or step.
func (p *Plugin) PrepareTicketServers(ctx context.Context) error {
	ticket, ok := p.generators[strategies.NameTicket].(*strategies.Ticket)
	if !ok {
		return fmt.Errorf("%w: no ticket servers (Config.Ticket.Servers)", ErrInvalidConfig)
	}
	return ticket.PrepareServers(ctx)
}

// preparer is a strategy that keeps tables in each physical database.
type preparer interface {
	Prepare(ctx context.Context, target strategies.Target) error
}

// prepareStrategies creates, in each physical database, what the strategies
// used keep there: the instagram clock-sequence, the snowflake leases, the
// segment counters.
func (p *Plugin) prepareStrategies(db *gorm.DB, used map[strategies.Generator]bool) error {
	if ticket := p.generators[strategies.NameTicket]; ticket != nil && used[ticket] {
		if err := p.PrepareTicketServers(db.Statement.Context); err != nil {
			return err
		}
	}
	for _, name := range strategyNames {
		g := p.generators[name]
		prep, ok := g.(preparer)
		if !ok || !used[g] {
			continue
		}
		for k, ph := range p.physical {
			target, err := p.target(db, nil, k)
			if err != nil {
				return err
			}
			if err := prep.Prepare(db.Statement.Context, target); err != nil {
				return fmt.Errorf("shardid: on %s: %w", ph.name, err)
			}
		}
	}
	return nil
}

// Stats returns each strategy's counters, by strategy name.
func (p *Plugin) Stats() map[string]strategies.Stats {
	stats := map[string]strategies.Stats{}
	for name, g := range p.generators {
		if r, ok := g.(strategies.Reporter); ok {
			stats[name] = r.Stats()
		}
	}
	for name, version := range uuidVersions {
		if p.uuids != nil { // nil before Initialize
			stats[name] = p.uuids.Stats(version)
		}
	}
	return stats
}

// modelEntry parses a schema's tags once, whichever goroutine gets there first.
type modelEntry struct {
	once  sync.Once
	model *model
	err   error
}

// model returns the plugin's view of s, parsing its tags and making its
// tagged primary key a plain column on first use. It returns nil for a model
// without shardid tags.
func (p *Plugin) model(s *schema.Schema) (*model, error) {
	v, ok := p.models.Load(s)
	if !ok {
		v, _ = p.models.LoadOrStore(s, &modelEntry{})
	}
	entry := v.(*modelEntry)
	entry.once.Do(func() {
		m, err := p.parseModel(s)
		if err != nil {
			entry.err = err
			return
		}
		if len(m.fields) > 0 {
			neverAutoIncrement(m)
			entry.model = m
		}
		if !m.sharded() {
			p.unshardedTables.Store(strings.ToLower(s.Table), s.Name)
		} else {
			p.shardedTables.Store(strings.ToLower(s.Table), s.Name)
			for _, rel := range s.Relationships.Many2Many {
				if rel.JoinTable != nil {
					p.joinTables.Store(strings.ToLower(rel.JoinTable.Table), struct{}{})
				}
			}
		}
	})
	return entry.model, entry.err
}

// ShardMap returns the current map of logical shards to physical databases;
// Name(Physical(Layout().Shard(id))) is where the row with id lives.
func (p *Plugin) ShardMap() *shardrouter.Map { return p.router.Map() }

// SwapShardMap replaces the map of logical shards to physical databases,
// atomically: statements routed after it returns use m. The map must name
// the same physical databases in the same order ([shardrouter.Router.Swap]).
// Moving a logical shard is more than a swap: its rows must be copied first,
// and, for instagram, the target database's clock-sequence advanced past the
// source's, so that no ID is made twice.
func (p *Plugin) SwapShardMap(m *shardrouter.Map) error { return p.router.Swap(m) }
