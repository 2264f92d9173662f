package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/dsn"
	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/mover"
	"github.com/shardid/shardid/internal/sqlscan"
	"github.com/shardid/shardid/shardrouter"
	"github.com/shardid/shardid/strategies"
)

// Config is what the engine runs by: the user's shardid.Config, whose
// fields document each setting and its default.
type Config struct {
	Layout          strategies.Layout
	DefaultStrategy string
	Snowflake       SnowflakeConfig
	Segment         strategies.SegmentOptions
	Ticket          TicketConfig
	Shards          []Shard
	ConnectTimeout  time.Duration
	MapRefresh      time.Duration
	PoolIdleTimeout time.Duration
	MoveWait        time.Duration
	Atomic          Atomicity
	InDoubtAfter    time.Duration
	PartsAtOnce     int
	MapTable        string
	LogPhysical     bool
	Log             *slog.Logger
	Clock           strategies.Clock // the snowflake and segment clock; tests inject one
}

// SnowflakeConfig is shardid.SnowflakeConfig.
type SnowflakeConfig struct {
	Lease       strategies.LeaseOptions
	FixedWorker bool
	WorkerID    int
}

// TicketConfig is shardid.TicketConfig.
type TicketConfig struct {
	Servers []TicketServer
	Options strategies.TicketOptions
}

// TicketServer is shardid.TicketServer.
type TicketServer struct {
	Name      string
	Dialector gorm.Dialector
	DB        *gorm.DB
	Offset    int
}

// Shard is shardid.Shard: one physical database and the logical shards it
// holds.
type Shard struct {
	Name      string
	Dialector gorm.Dialector
	DB        *gorm.DB
	Logical   []Range
}

// Engine routes and runs the statements of one gorm.DB: the shardid
// plugin's callbacks call it, and it keeps what they share (the physical
// databases, the map, the generators, the transactions it knows). It is safe
// for concurrent use.
type Engine struct {
	identity   identityTables // which database each shard name opened (identity.go)
	config     Config
	owner      gorm.Plugin       // the shardid.Plugin registered in gorm.Config.Plugins
	layout     strategies.Layout // normalized
	generators map[string]strategies.Generator
	uuids      *strategies.UUIDs
	db         *gorm.DB
	physical   []*physical // the databases logical shards live on
	openers    []*opener   // the physical databases the plugin opens, and closes
	router     *shardrouter.Router
	ticketMu   sync.Mutex
	ticketDBs  []*sql.DB                    // ticket servers the plugin opened, closed by Close
	savepoints txRegistry[struct{}]         // transactions a nested Transaction has set a savepoint in
	txMaps     txRegistry[*shardrouter.Map] // the map a shard clause began each transaction by

	models sync.Map // *schema.Schema → *modelEntry
	// modelsKnown is models' parsed entries, copied on each change: a
	// look-up by a pointer costs a statement less than one by an interface.
	modelsKnown   atomic.Pointer[map[*schema.Schema]*modelEntry]
	modelsKnownMu sync.Mutex
	shardedTables sync.Map // lower-case table name → model name, for raw SQL
	// columnStrategies holds, by "table.column", the strategy and model
	// that fill it: two strategies make the same IDs within a tick.
	columnStrategies sync.Map
	joinTables       sync.Map  // lower-case join tables of sharded models' many2many
	prepared         sync.Map  // physical index (-1: the plugin's own) → *gorm.PreparedStmtDB, for prepared sessions
	scans            scanCache // what the last gate read of SQL texts
	poolOwners       sync.Map  // gorm.ConnPool → the index of the physical database it is the pool of
	// sqlDBOwners is poolOwners' *sql.DB pools, copied on each change: a
	// look-up by a pointer costs a statement less than one by an interface.
	sqlDBOwners   atomic.Pointer[map[*sql.DB]int]
	sqlDBOwnersMu sync.Mutex

	unshardedTables sync.Map // lower-case table name → unshardedTable, for raw SQL on a shard
	// unshardedJoinTables are the join tables GORM parsed from an unsharded
	// side: a table recorded as sharded is its sharded owner's all the same.
	unshardedJoinTables sync.Map
	// recordedTables holds, by each of tableKeys, the sharded tables
	// shardid_tables listed at the start, each as recorded, lower case (""
	// where two recorded tables share the key): a model (or its join table)
	// this process has not used yet is sharded all the same.
	recordedTables sync.Map
	recordedFull   sync.Map // the recorded tables' names, lower case
	// recordedPlacements holds, by lower-case table name, the rule that
	// placed each recorded table's rows (placed), where recorded.
	recordedPlacements sync.Map
	// recordsMu orders the changes of the three above against the record:
	// a reload (loadRecordedTables) never sees this process's write of the
	// record half done.
	recordsMu sync.Mutex

	maps        *mapStore    // the shared map; nil without Config.Shards
	mapVersion  atomic.Int64 // the version of it routed by
	freezing    atomic.Pointer[[]mapstore.Freezing]
	inflight    inflight // what statements running route by, for the version the process says it follows
	movedStats  movedCounters
	metrics     atomic.Pointer[statementMetrics] // nil until CountStatements
	moves       mover.Mover                      // the moves this process runs
	tracer      atomic.Pointer[PartTracer]       // nil until TraceParts
	countWanted atomic.Bool                      // CountStatements was called, maybe before Initialize
	closed      atomic.Bool                      // set by Close
	closeOnce   sync.Once                        // Close runs once
	closeErr    error                            // its error, for every call
	useFailed   error                            // the error of an Initialize that failed after registering its callbacks, set before closed
	background  sync.WaitGroup                   // work begun off a statement's path, waited for by Close
	twoPhase    sync.Map                         // physical index → error of its two-phase commit check (nil: usable)
	recovery    recoveryLoop
	cluster     string // the token of this plugin database's cluster, in its global transaction IDs
	txCounts    transactionCounters
	committing  sync.RWMutex    // held for reading by each two-phase commit under way; Close waits for them
	anchored    anchoredWrites  // writes that commit with a transaction on the plugin's database
	handOff     time.Duration   // parts faster than this run one after another (workers.go)
	lifetime    context.Context // ended by Close, for work off the statements' path
	endLifetime context.CancelFunc
}

// minPeriod is the shortest positive MapRefresh and InDoubtAfter: the
// periods of loops on the plugin's database.
const minPeriod = time.Millisecond

// New returns the engine of the plugin owner, for cfg; Initialize validates
// cfg.
func New(owner gorm.Plugin, cfg Config) *Engine {
	// The layout is the config's from the start: Layout() before db.Use
	// must not read as the default one.
	return &Engine{owner: owner, config: cfg, handOff: handOff, layout: cfg.Layout.Normalized()}
}

// Layout returns the layout the plugin makes IDs with, defaults filled in.
func (e *Engine) Layout() strategies.Layout { return e.layout }

// Initialize validates the Config, builds one generator per strategy, opens
// the databases given open, registers the callbacks and reads the shared
// map. It fails with [ErrInvalidLayout] or [ErrInvalidConfig].
func (e *Engine) Initialize(db *gorm.DB) error {
	if e.db != nil {
		// gorm.Open initializes again the plugins of a config it is given, as
		// when dbresolver opens its sources with a copy of this database's
		// config; the plugin serves the database it was registered on.
		if reflect.ValueOf(db.Config.Plugins).Pointer() == reflect.ValueOf(e.db.Config.Plugins).Pointer() {
			return nil // a copy of the config shares its plugins' map
		}
		return fmt.Errorf("%w: the plugin is registered on another *gorm.DB already, whose callbacks route its statements; give each database a plugin of its own (shardid.New)", ErrInvalidConfig)
	}
	if err := e.config.Layout.Validate(time.Now()); err != nil {
		return err
	}
	e.lifetime, e.endLifetime = context.WithCancel(context.Background())
	if e.config.Log == nil {
		e.config.Log = slog.Default()
	}
	if e.config.Snowflake.Lease.Log == nil {
		e.config.Snowflake.Lease.Log = e.config.Log
	}
	if e.config.Ticket.Options.Log == nil {
		e.config.Ticket.Options.Log = e.config.Log
	}
	if e.config.DefaultStrategy == "" {
		e.config.DefaultStrategy = strategies.NameInstagram
	}
	for name, d := range map[string]time.Duration{"ConnectTimeout": e.config.ConnectTimeout, "PoolIdleTimeout": e.config.PoolIdleTimeout, "MoveWait": e.config.MoveWait, "InDoubtAfter": e.config.InDoubtAfter} {
		if d < 0 {
			return fmt.Errorf("%w: %s %v is negative (zero is the default)", ErrInvalidConfig, name, d)
		}
	}
	for name, d := range map[string]time.Duration{"MapRefresh": e.config.MapRefresh, "InDoubtAfter": e.config.InDoubtAfter} {
		if d > 0 && d < minPeriod {
			// Each sets the period of a loop on the plugin's database: a few
			// nanoseconds (an untyped 5 meant as seconds) would spin it, and a
			// map read bounded by a few of them never completes.
			return fmt.Errorf("%w: %s %v is under %v: a time.Duration counts nanoseconds (write 5 * time.Second)", ErrInvalidConfig, name, d, minPeriod)
		}
	}
	if e.config.PartsAtOnce < 0 {
		return fmt.Errorf("%w: PartsAtOnce %d is negative (zero is the default, %d)", ErrInvalidConfig, e.config.PartsAtOnce, defaultPartsAtOnce)
	}
	if e.config.Atomic != TwoPhase && e.config.Atomic != BestEffort {
		return fmt.Errorf("%w: Atomic %d (allowed: shardid.TwoPhaseCommit, shardid.BestEffort)", ErrInvalidConfig, e.config.Atomic)
	}
	if problem := MapTableProblem(e.config.MapTable); problem != "" {
		return fmt.Errorf("%w: MapTable %q (%s)", ErrInvalidConfig, e.config.MapTable, problem)
	}
	if !slices.Contains(strategyNames, e.config.DefaultStrategy) {
		return fmt.Errorf("%w: DefaultStrategy %q (allowed: %s)", ErrInvalidConfig, e.config.DefaultStrategy, strings.Join(strategyNames, ", "))
	}
	if err := e.buildGenerators(); err != nil {
		return err
	}
	if err := e.openShards(db); err != nil {
		return err
	}
	if err := e.buildTicket(db); err != nil {
		return errors.Join(err, e.Close())
	}
	if err := e.registerCallbacks(db); err != nil {
		return e.failUse(err)
	}
	e.db = db
	if e.countWanted.Load() {
		e.CountStatements()
	}
	if e.routed() {
		if err := e.startMapStore(context.Background()); err != nil {
			return e.failUse(err)
		}
		if err := e.startRecovery(context.Background()); err != nil {
			return e.failUse(err)
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), e.config.connectTimeout())
		err := e.checkLayout(ctx)
		cancel()
		if err != nil {
			return e.failUse(err)
		}
	}
	return nil
}

// failUse closes the engine of an Initialize that failed once its callbacks
// were registered: GORM keeps them on the database, and they refuse the
// statements on sharded models with err rather than as closed.
func (e *Engine) failUse(err error) error {
	e.useFailed = err
	return errors.Join(err, e.Close())
}

// closedError is why a statement is refused once the engine is closed:
// Close, or the error of a db.Use that failed; name is the database's, if
// the statement has one.
func (e *Engine) closedError(name string) error {
	switch {
	case e.useFailed != nil:
		return fmt.Errorf("shardid: the statement is refused: db.Use failed: %w", e.useFailed)
	case name != "":
		return fmt.Errorf("%w: %s: the plugin is closed", ErrShardUnavailable, name)
	}
	return errClosed
}

func (e *Engine) buildGenerators() error {
	instagram, err := strategies.NewInstagram(e.layout)
	if err != nil {
		return err
	}
	var opts []strategies.SnowflakeOption
	if e.config.Clock != nil {
		opts = append(opts, strategies.WithClock(e.config.Clock))
	}
	var snowflake *strategies.Snowflake
	if sc := e.config.Snowflake; sc.FixedWorker {
		snowflake, err = strategies.NewSnowflake(e.layout, sc.WorkerID, opts...)
	} else {
		snowflake, err = strategies.NewLeasedSnowflake(e.layout, sc.Lease, append(opts, strategies.WithLeaseCheck(checkLeaseTable))...)
	}
	if err != nil {
		return fmt.Errorf("%w: Snowflake: %w", ErrInvalidConfig, err)
	}
	segmentOptions := e.config.Segment
	if segmentOptions.Clock == nil {
		segmentOptions.Clock = e.config.Clock
	}
	segment, err := strategies.NewSegment(e.layout, segmentOptions)
	if err != nil {
		return fmt.Errorf("%w: Segment: %w", ErrInvalidConfig, err)
	}
	if e.uuids, err = strategies.NewUUIDs(e.layout); err != nil {
		return err
	}
	e.generators = map[string]strategies.Generator{
		strategies.NameInstagram: instagram,
		strategies.NameSnowflake: snowflake,
		strategies.NameSegment:   segment,
	}
	return nil
}

// buildTicket opens the ticket servers and builds the ticket generator, when
// there are any.
func (e *Engine) buildTicket(db *gorm.DB) error {
	tc := e.config.Ticket
	if len(tc.Servers) == 0 {
		return nil
	}
	servers := make([]strategies.TicketServer, len(tc.Servers))
	for i, s := range tc.Servers {
		server, own, err := e.openTicketServer(db, s)
		if err != nil {
			return err
		}
		servers[i] = server
		if err := e.keepTicketDB(own); err != nil {
			return err
		}
	}
	ticket, err := strategies.NewTicket(e.layout, servers, tc.Options)
	if err != nil {
		return fmt.Errorf("%w: Ticket: %w", ErrInvalidConfig, err)
	}
	e.generators[strategies.NameTicket] = ticket
	return nil
}

// openTicketServer opens s, which may be of another dialect than the shards:
// ticket SQL is written per dialect, not built by GORM.
// It returns the pool the plugin opened, if it opened one, for the caller to
// keep until Close or to close at once if the server is not used.
func (e *Engine) openTicketServer(db *gorm.DB, s TicketServer) (strategies.TicketServer, *sql.DB, error) {
	if (s.DB == nil) == (s.Dialector == nil) {
		return strategies.TicketServer{}, nil, fmt.Errorf("%w: ticket server %s: give a Dialector or a DB", ErrInvalidConfig, s.Name)
	}
	opened := s.DB
	if opened == nil {
		var err error
		if opened, err = gorm.Open(s.Dialector, &gorm.Config{Logger: db.Logger, DisableAutomaticPing: true}); err != nil {
			return strategies.TicketServer{}, nil, errs.Wrap(dsn.RedactError(err, dsnOf(s.Dialector)), "opening ticket server %s", s.Name)
		}
	}
	sqlDB, err := opened.DB()
	if err != nil {
		return strategies.TicketServer{}, nil, errs.Wrap(err, "ticket server %s", s.Name)
	}
	var own *sql.DB
	if s.DB == nil {
		own = sqlDB
	}
	return strategies.TicketServer{Name: s.Name, Dialect: opened.Dialector.Name(), DB: sqlDB, Offset: s.Offset}, own, nil
}

// keepTicketDB remembers a pool the plugin opened, for Close; once Close
// has begun, which may have closed the pools it kept already, it closes db
// and refuses it.
func (e *Engine) keepTicketDB(db *sql.DB) error {
	if db == nil {
		return nil
	}
	e.ticketMu.Lock()
	defer e.ticketMu.Unlock()
	if err := e.notClosed(); err != nil {
		return errors.Join(err, db.Close())
	}
	e.ticketDBs = append(e.ticketDBs, db)
	return nil
}

// AddTicketServer prepares s and puts it on the ticket servers' ring, where
// it takes over about 1/(N+1) of the logical shards. Its Offset must be one
// that no server ever had, so that no ticket is issued twice. Add it to
// Config.Ticket.Servers too, for the next start.
func (e *Engine) AddTicketServer(ctx context.Context, s TicketServer) error {
	if err := e.notClosed(); err != nil {
		return err
	}
	ticket, ok := e.generators[strategies.NameTicket].(*strategies.Ticket)
	if !ok {
		return fmt.Errorf("%w: no ticket servers (Config.Ticket.Servers)", ErrInvalidConfig)
	}
	server, own, err := e.openTicketServer(e.db, s)
	if err != nil {
		return err
	}
	if err := ticket.AddServer(ctx, server); err != nil {
		if own != nil {
			err = errors.Join(err, own.Close())
		}
		return err
	}
	return e.keepTicketDB(own)
}

// PrepareTicketServers creates the ticket table (MySQL/MariaDB) or sequence
// (PostgreSQL) on every ticket server, with the server's offset and the
// step; AutoMigrate of a model that uses the ticket strategy does it too. It
// is idempotent, safe from several processes at once, and refuses a counter
// made for another offset or step.
func (e *Engine) PrepareTicketServers(ctx context.Context) error {
	if err := e.notClosed(); err != nil {
		return err
	}
	ticket, ok := e.generators[strategies.NameTicket].(*strategies.Ticket)
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
func (e *Engine) prepareStrategies(db *gorm.DB, used map[strategies.Generator]bool) error {
	if err := e.claimLayout(db.Statement.Context); err != nil {
		return err
	}
	if ticket := e.generators[strategies.NameTicket]; ticket != nil && used[ticket] {
		if err := e.PrepareTicketServers(db.Statement.Context); err != nil {
			return err
		}
	}
	for _, name := range strategyNames {
		g := e.generators[name]
		prep, ok := g.(preparer)
		if !ok || !used[g] {
			continue
		}
		for k, ph := range e.physical {
			target, err := e.target(db, nil, k)
			if err != nil {
				return err
			}
			if err := prep.Prepare(db.Statement.Context, target); err != nil {
				return errs.Wrap(err, "on %s", ph.name)
			}
		}
	}
	return nil
}

// Stats returns each strategy's counters, by strategy name.
func (e *Engine) Stats() map[string]strategies.Stats {
	stats := map[string]strategies.Stats{}
	for name, g := range e.generators {
		if r, ok := g.(strategies.Reporter); ok {
			stats[name] = r.Stats()
		}
	}
	for name, version := range uuidVersions {
		if e.uuids != nil { // nil before Initialize
			stats[name] = e.uuids.Stats(version)
		}
	}
	return stats
}

// maxKnownModels bounds modelsKnown; the schemas past it are looked up in models.
const maxKnownModels = 1024

// modelEntry parses a schema's tags once, whichever goroutine gets there first.
type modelEntry struct {
	once  sync.Once
	model *model
	err   error
	// parsed is the model as its tags make it, before the record of
	// sharded tables was consulted (samePlacement); nil if its tags are
	// refused. A change of the record checks it again (recheckModels).
	parsed *model
}

// model returns the plugin's view of s, parsing its tags and making its
// tagged primary key a plain column on first use. It returns nil for a model
// without shardid tags.
func (e *Engine) model(s *schema.Schema) (*model, error) {
	if known := e.modelsKnown.Load(); known != nil {
		if entry, ok := (*known)[s]; ok {
			return entry.model, entry.err
		}
	}
	v, ok := e.models.Load(s)
	if !ok {
		v, _ = e.models.LoadOrStore(s, &modelEntry{})
	}
	entry := v.(*modelEntry)
	entry.once.Do(func() { e.parseEntry(s, entry) })
	e.knowModel(s, entry)
	return entry.model, entry.err
}

// parseEntry parses s into entry, once.
func (e *Engine) parseEntry(s *schema.Schema, entry *modelEntry) {
	m, err := e.parseModel(s)
	if err != nil {
		entry.err = err
		return
	}
	if err := e.oneStrategyPerColumn(m); err != nil {
		entry.err = err
		return
	}
	if len(m.fields) > 0 {
		neverAutoIncrement(m)
	}
	entry.parsed = m
	entry.model, entry.err = e.placedAsRecorded(m, s.Table)
	// By its name as written and without its schema, as SQL names it
	// with any qualifier or none: a sharded model's table is sharded
	// whether or not the record refuses the model.
	for _, table := range e.tableKeys(s.Table) {
		if !m.sharded() {
			if s.ModelType.Name() == "" { // a many2many's join table, which GORM parses as a struct of its own making
				e.unshardedJoinTables.Store(table, s.Name)
				continue
			}
			e.unshardedTables.Store(table, unshardedTable{model: s.Name, table: strings.ToLower(s.Table)})
			continue
		}
		e.shardedTables.Store(table, s.Name)
		for _, rel := range s.Relationships.Many2Many {
			if rel.JoinTable != nil {
				for _, key := range e.tableKeys(rel.JoinTable.Table) {
					e.joinTables.Store(key, struct{}{})
				}
			}
		}
	}
}

// placedAsRecorded is the model of a parsed model m of table, checked
// against the placement the record of sharded tables gives table: m, or a
// copy of it whose Creates are refused (placedOtherwise), or an error
// refusing it whole. nil for a model without shardid tags.
func (e *Engine) placedAsRecorded(m *model, table string) (*model, error) {
	err := e.samePlacement(m, table)
	if err != nil && placementOf(m) != "" {
		return nil, err
	}
	if len(m.fields) == 0 {
		return nil, nil
	}
	if err != nil {
		c := *m                // the parsed model stays as its tags make it, for the next check
		c.createsRefused = err // a model without the rule finds rows by their IDs, or on every shard: its Creates only are refused
		return &c, nil
	}
	if refused := e.sameStrategy(m, table); refused != nil {
		c := *m // reads and changes find rows by any strategy's IDs, and a Create of preset IDs makes none
		c.strategyRefused = refused
		return &c, nil
	}
	return m, nil
}

// recheckModels checks the parsed models of tables again against the
// record of sharded tables, which another process changed: each one's
// entry is replaced by one of the model as the record now says, which the
// statements from now on read.
func (e *Engine) recheckModels(tables map[string]bool) {
	if len(tables) == 0 {
		return
	}
	e.models.Range(func(k, v any) bool {
		s, entry := k.(*schema.Schema), v.(*modelEntry)
		if !tables[strings.ToLower(s.Table)] {
			return true
		}
		entry.once.Do(func() { e.parseEntry(s, entry) }) // a parse under way ends first
		if entry.parsed == nil {
			return true // refused by its tags, whatever the record says
		}
		checked := &modelEntry{parsed: entry.parsed}
		checked.model, checked.err = e.placedAsRecorded(entry.parsed, s.Table)
		checked.once.Do(func() {})
		e.modelsKnownMu.Lock()
		defer e.modelsKnownMu.Unlock()
		if !e.models.CompareAndSwap(s, entry, checked) {
			return true // replaced meanwhile
		}
		if old := e.modelsKnown.Load(); old != nil && (*old)[s] != nil {
			known := maps.Clone(*old)
			known[s] = checked
			e.modelsKnown.Store(&known)
		}
		return true
	})
}

// knowModel adds a parsed schema's entry to modelsKnown, up to a bound: a
// program naming tables without end (Table("t_" + day)) parses a schema for each.
func (e *Engine) knowModel(s *schema.Schema, entry *modelEntry) {
	if known := e.modelsKnown.Load(); known != nil && len(*known) >= maxKnownModels {
		return // no lock for each statement past the bound
	}
	e.modelsKnownMu.Lock()
	defer e.modelsKnownMu.Unlock()
	old := e.modelsKnown.Load()
	if old != nil && len(*old) >= maxKnownModels {
		return
	}
	if current, _ := e.models.Load(s); current != entry {
		return // replaced by recheckModels since it was read
	}
	known := map[*schema.Schema]*modelEntry{s: entry}
	if old != nil {
		maps.Copy(known, *old)
	}
	e.modelsKnown.Store(&known)
}

// ShardMap returns the current map of logical shards to physical databases;
// Name(Physical(Layout().Shard(id))) is where the row with id lives.
// Before db.Use it is nil.
func (e *Engine) ShardMap() *shardrouter.Map {
	if e.router == nil {
		return nil
	}
	return e.router.Map()
}

// SwapShardMap replaces the map of logical shards to physical databases,
// atomically: statements routed after it returns use m. The map must name
// the same physical databases in the same order ([shardrouter.Router.Swap]).
// Moving a logical shard is more than a swap: its rows must be copied first,
// and, for instagram, the target database's clock-sequence advanced past the
// source's, so that no ID is made twice.
func (e *Engine) SwapShardMap(m *shardrouter.Map) error {
	if err := e.registered(); err != nil {
		return err
	}
	return e.router.Swap(m)
}

// Range is an inclusive range of logical shards.
type Range = shardrouter.Range

// bareTable is a table's name, lower case, without the schema or database
// that qualifies it: SQL text may name it either way.
func bareTable(table string) string {
	return strings.ToLower(table[strings.LastIndexByte(table, '.')+1:])
}

// tableKeys are the names, lower case, that SQL may give table by: as
// written, without its qualifier, and on PostgreSQL cut to 63 bytes as it
// cuts a longer name (and the SQL scanner with it).
func (e *Engine) tableKeys(table string) []string {
	keys := []string{strings.ToLower(table), bareTable(table)}
	if short := e.keptName(keys[1]); short != keys[1] {
		keys = append(keys, short)
	}
	return keys
}

// keptName is a name as the plugin's database keeps it, and the SQL scanner
// reads it: PostgreSQL cuts a long one.
func (e *Engine) keptName(name string) string {
	if e.db == nil || e.db.Dialector.Name() != "postgres" {
		return name
	}
	return sqlscan.PostgresName(name)
}

// sameTable says whether a table the SQL scanner read is own, a bare table
// name.
func (e *Engine) sameTable(scanned, own string) bool {
	return strings.EqualFold(scanned, own) || len(own) > len(scanned) && strings.EqualFold(scanned, e.keptName(own))
}
