package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
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
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/shardrouter"
)

// physical is one physical database the plugin routes to. The first
// statement that needs it opens it, so that db.Use neither waits for nor
// fails on a database that is down; statements that need it wait for it up
// to the timeout. It is safe for concurrent use.
type physical struct {
	name   string
	ready  *openPhysical // a database given open, or nil
	opener *opener       // else the one that opens it
	parts  partTime      // how long its parts of queries over several databases take
}

// open returns the database, opened.
func (ph *physical) open(ctx context.Context) (*openPhysical, error) {
	if ph.ready != nil {
		return ph.ready, nil
	}
	return ph.opener.get(ctx)
}

// loaded returns the database if it is open, without waiting.
func (ph *physical) loaded() *openPhysical {
	if ph.ready != nil {
		return ph.ready
	}
	return ph.opener.opened.Load()
}

// openPhysical is an opened physical database.
type openPhysical struct {
	name  string
	db    *gorm.DB      // a handle of its own, for migrations
	pool  gorm.ConnPool // what a routed statement runs on
	sqlDB *sql.DB       // where strategies run their SQL; nil for a handle that only builds SQL
}

// newOpenPhysical keeps a handle without a connection pool (GORM's
// DummyDialector, which DryRun programs use to print SQL): statements that
// are only built still route, and what needs a connection fails naming the
// database. A pool that is not an *sql.DB is refused.
func newOpenPhysical(name string, db *gorm.DB) (*openPhysical, error) {
	sqlDB, err := db.DB()
	if err != nil && db.ConnPool != nil { // a pool of another kind: the plugin could not run strategies or moves on it
		return nil, fmt.Errorf("%w: shard %s has no *sql.DB: %w", ErrInvalidConfig, name, err)
	}
	return &openPhysical{name: name, db: db, pool: db.ConnPool, sqlDB: sqlDB}, nil
}

// database returns the *sql.DB, or an error naming the database when its
// handle has none.
func (o *openPhysical) database() (*sql.DB, error) {
	if o.sqlDB == nil {
		return nil, fmt.Errorf("%w: %s has no *sql.DB (its GORM handle only builds SQL)", ErrShardUnavailable, o.name)
	}
	return o.sqlDB, nil
}

// readyPhysical is a database that is open already.
func readyPhysical(name string, db *gorm.DB) (*physical, error) {
	opened, err := newOpenPhysical(name, db)
	if err != nil {
		return nil, err
	}
	return &physical{name: name, ready: opened}, nil
}

// opener opens one database in the background, one attempt at a time, and
// lets callers wait for it within a bound.
type opener struct {
	name    string
	timeout time.Duration
	dial    func() (*gorm.DB, error)
	ready   func(*openPhysical) // told of the database once it is open
	opened  atomic.Pointer[openPhysical]

	mu      sync.Mutex // protects the fields below
	attempt *attempt   // the running one; nil: none runs
	closed  bool
}

// attempt is one try at opening the database.
type attempt struct {
	done chan struct{} // closed when it ends
	err  error         // its failure, set before done is closed
}

// start begins an attempt unless one runs or the database is open (nil);
// begun says this call began it.
func (o *opener) start() (_ *attempt, begun bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.attempt != nil || o.opened.Load() != nil || o.closed {
		return o.attempt, false
	}
	a := &attempt{done: make(chan struct{})}
	o.attempt = a
	go func() {
		db, err := o.dial()
		var opened *openPhysical
		if err == nil {
			opened, err = newOpenPhysical(o.name, db)
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		o.attempt, a.err = nil, err
		switch {
		case err == nil && o.closed:
			_ = opened.close()
		case err == nil:
			o.ready(opened)
			o.opened.Store(opened)
		}
		close(a.done)
	}()
	return a, true
}

// get returns the open database, waiting for an attempt up to the timeout,
// or until ctx ends, which fails with ctx's error.
// An attempt it joined, begun before it, that fails is followed by one of its
// own within the same bound: the database may have come back since.
func (o *opener) get(ctx context.Context) (*openPhysical, error) {
	if opened := o.opened.Load(); opened != nil {
		return opened, nil
	}
	timer := time.NewTimer(o.timeout)
	defer timer.Stop()
	for {
		a, begun := o.start()
		if a == nil { // opened meanwhile, or closed
			if opened := o.opened.Load(); opened != nil {
				return opened, nil
			}
			return nil, fmt.Errorf("%w: %s: the plugin is closed", ErrShardUnavailable, o.name)
		}
		select {
		case <-a.done:
		case <-timer.C:
			return nil, fmt.Errorf("%w: %s did not answer within %v (Config.ConnectTimeout)", ErrShardUnavailable, o.name, o.timeout)
		case <-ctx.Done(): // the caller's end, not the database found down: as a connection's dial (dialbound.go)
			return nil, fmt.Errorf("shardid: %s: waiting for it to open: %w", o.name, ctx.Err())
		}
		if opened := o.opened.Load(); opened != nil {
			return opened, nil
		}
		if !begun || a.err == nil { // begun before this call (or opened as the plugin closed): once more, within the bound
			continue
		}
		if errors.Is(a.err, ErrShardUnavailable) {
			return nil, a.err // names the database already
		}
		return nil, fmt.Errorf("%w: opening %s: %w", ErrShardUnavailable, o.name, a.err)
	}
}

// close closes the database if it is open, and any that an attempt still
// running opens.
func (o *opener) close() error {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	if opened := o.opened.Load(); opened != nil {
		return opened.close()
	}
	return nil
}

func (o *openPhysical) close() error {
	if o.sqlDB == nil {
		return nil
	}
	return o.sqlDB.Close()
}

// defaultPhysicalName names the plugin's own database when Config.Shards is empty.
const defaultPhysicalName = "default"

// defaultConnectTimeout is how long a statement waits for its physical
// database to open.
const defaultConnectTimeout = 5 * time.Second

// connectTimeout is Config.ConnectTimeout, its default filled in.
func (c Config) connectTimeout() time.Duration {
	if c.ConnectTimeout <= 0 {
		return defaultConnectTimeout
	}
	return c.ConnectTimeout
}

// openShards validates the map and makes the physical databases of the
// config, each opened by the first statement that needs it. A database that
// is down fails only the statements that need it.
func (e *Engine) openShards(db *gorm.DB) error {
	if len(e.config.Shards) == 0 {
		own, err := readyPhysical(defaultPhysicalName, db)
		if err != nil {
			return err
		}
		e.physical = []*physical{own}
		e.notePool(own.ready, 0)
		m, err := shardrouter.NewMap(e.layout.ShardCount(), []shardrouter.Physical{{Name: defaultPhysicalName, Logical: []Range{{From: 0, To: e.layout.ShardCount() - 1}}}})
		if err != nil {
			return err
		}
		e.router = shardrouter.NewRouter(m)
		return nil
	}
	described := make([]shardrouter.Physical, len(e.config.Shards))
	seen := map[any]string{} // what identifies each shard's database, to the shard's name
	for i, s := range e.config.Shards {
		described[i] = shardrouter.Physical{Name: s.Name, Logical: s.Logical}
		if err := e.checkShard(db, s); err != nil {
			return err
		}
		for _, key := range identities(s.DB, s.Dialector) {
			if other, dup := seen[key]; dup && other != s.Name {
				return fmt.Errorf("%w: shards %s and %s are the same database (%s): a fan-out would read each row twice; give each shard a database of its own",
					ErrInvalidConfig, other, s.Name, describeIdentity(key))
			}
			seen[key] = s.Name
		}
	}
	m, err := shardrouter.NewMap(e.layout.ShardCount(), described)
	if err != nil {
		if other := e.sharedMapOfOtherLayout(db); other != nil {
			return other // the ranges are the map's, and the layout is wrong
		}
		return fmt.Errorf("%w: Shards: %w", ErrInvalidConfig, err)
	}
	e.router = shardrouter.NewRouter(m)
	timeout := e.config.connectTimeout()
	for k, s := range e.config.Shards {
		if s.DB != nil {
			ph, err := e.givenPhysical(s, k, timeout)
			if err != nil {
				return err
			}
			e.physical = append(e.physical, ph)
			continue
		}
		o := &opener{name: s.Name, timeout: timeout, dial: func() (_ *gorm.DB, err error) {
			defer func() { err = dsn.RedactError(err, dsnOf(s.Dialector)) }()      // a driver refusing a DSN prints it
			dialector, pool, err := boundedDialector(s.Dialector, s.Name, timeout) // each connection's dial and handshake bounded, now and later
			if err != nil {
				return nil, err
			}
			opened, err := gorm.Open(dialector, ownConfig(db.Config))
			if err != nil && pool != nil { // MySQL's asks the server its version: the next attempt makes a pool of its own
				_ = pool.Close()
			}
			if err != nil {
				return nil, err
			}
			if sqlDB, noPool := opened.DB(); noPool == nil {
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				if err := e.checkIdentity(ctx, s.Name, sqlDB, opened.Dialector.Name()); err != nil {
					return nil, errors.Join(err, sqlDB.Close())
				}
			}
			return opened, nil
		}}
		o.ready = func(opened *openPhysical) {
			if idle := e.config.PoolIdleTimeout; idle > 0 && opened.sqlDB != nil && !inMemory(opened) {
				opened.sqlDB.SetConnMaxIdleTime(idle)
			}
			e.notePool(opened, k)
		}
		e.physical = append(e.physical, &physical{name: s.Name, opener: o})
		e.openers = append(e.openers, o)
	}
	return nil
}

// sharedMapOfOtherLayout is the error of a shared map in db, the plugin's
// database, made by processes of another layout than this one's, or nil
// (none there, or none readable). Config.Shards that do not cover this
// layout's logical shards are refused so: ranges the map's processes share
// do not fit a layout of other shard bits.
func (e *Engine) sharedMapOfOtherLayout(db *gorm.DB) error {
	own, err := db.DB()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.config.connectTimeout())
	defer cancel()
	stored, err := mapstore.New(own, db.Dialector.Name(), e.mapTable(), defaultMapRefresh).Latest(ctx)
	if err != nil || stored == nil {
		return nil
	}
	return e.otherLayout(stored, e.mapTable())
}

// givenPhysical is shard s given open as DB, physical database k. Its
// first statement checks its token, as a shard given as Dialector is
// checked when opened; its pool stays the application's, never closed.
func (e *Engine) givenPhysical(s Shard, k int, timeout time.Duration) (*physical, error) {
	given, err := newOpenPhysical(s.Name, s.DB) // a pool of another kind is refused at db.Use
	if err != nil {
		return nil, err
	}
	e.notePool(given, k)
	o := &opener{name: s.Name, timeout: timeout, ready: func(*openPhysical) {}, dial: func() (*gorm.DB, error) {
		if given.sqlDB != nil {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if err := e.checkIdentity(ctx, s.Name, given.sqlDB, s.DB.Dialector.Name()); err != nil {
				return nil, err
			}
		}
		return s.DB, nil
	}}
	return &physical{name: s.Name, opener: o}, nil
}

// notePool remembers that opened, its statements' pool and its *sql.DB (on
// which its transactions begin), is physical database k.
func (e *Engine) notePool(opened *openPhysical, k int) {
	for _, pool := range []gorm.ConnPool{opened.pool, opened.sqlDB} {
		if pool == nil || pool == gorm.ConnPool((*sql.DB)(nil)) {
			continue
		}
		e.poolOwners.Store(pool, k)
		if sqlDB, ok := pool.(*sql.DB); ok {
			e.sqlDBOwnersMu.Lock()
			owners := map[*sql.DB]int{sqlDB: k}
			if old := e.sqlDBOwners.Load(); old != nil {
				maps.Copy(owners, *old)
				owners[sqlDB] = k
			}
			e.sqlDBOwners.Store(&owners)
			e.sqlDBOwnersMu.Unlock()
		}
	}
}

// physicalOfPool returns the physical database whose connection pool pool
// is, without a look at every database.
func (e *Engine) physicalOfPool(pool gorm.ConnPool) (int, bool) {
	if sqlDB, ok := pool.(*sql.DB); ok {
		if owners := e.sqlDBOwners.Load(); owners != nil {
			k, ok := (*owners)[sqlDB]
			return k, ok
		}
		return 0, false
	}
	if k, ok := e.poolOwners.Load(pool); ok {
		return k.(int), true
	}
	switch pool := pool.(type) {
	case *gorm.PreparedStmtDB:
		return e.physicalOfPool(pool.ConnPool)
	case *clausePool:
		return pool.physical(), true
	}
	return 0, false
}

// checkShard refuses a shard that cannot work: none or both of Dialector and
// DB, another dialect than the plugin's database, or the plugin's database
// itself (its unsharded tables would mix with a shard's rows).
func (e *Engine) checkShard(db *gorm.DB, s Shard) error {
	switch {
	case s.DB != nil && s.Dialector != nil:
		return fmt.Errorf("%w: shard %s: give Dialector or DB, not both", ErrInvalidConfig, s.Name)
	case s.DB == nil && s.Dialector == nil:
		return fmt.Errorf("%w: shard %s: no Dialector or DB", ErrInvalidConfig, s.Name)
	case s.DB != nil && (s.DB.Config == nil || s.DB.Statement == nil || s.DB.ConnPool == nil):
		return fmt.Errorf("%w: shard %s: its *gorm.DB was not opened by gorm.Open (a zero gorm.DB has no dialect or connections)", ErrInvalidConfig, s.Name)
	}
	dialector := s.Dialector
	if s.DB != nil {
		dialector = s.DB.Dialector
	}
	if dialector == nil || dialector.Name() != db.Dialector.Name() {
		name := "none"
		if dialector != nil {
			name = dialector.Name()
		}
		return fmt.Errorf("%w: shard %s is %s but the plugin's database is %s: GORM builds each statement's SQL for one dialect",
			ErrInvalidConfig, s.Name, name, db.Dialector.Name())
	}
	samePlugin := s.DB != nil && s.DB.Config.Plugins[e.owner.Name()] == e.owner
	own := identities(db, nil)
	if samePlugin || slices.ContainsFunc(identities(s.DB, s.Dialector), func(key any) bool { return slices.Contains(own, key) }) {
		return fmt.Errorf("%w: shard %s is the plugin's own database, which holds the unsharded tables; give each shard a database of its own", ErrInvalidConfig, s.Name)
	}
	if s.DB != nil && !sameNaming(s.DB.NamingStrategy, db.NamingStrategy) {
		return fmt.Errorf("%w: shard %s's *gorm.DB names tables and columns otherwise than the plugin's database (its NamingStrategy): statements, built by the plugin's database, would not find the tables its migrations made; give it the plugin's database's NamingStrategy",
			ErrInvalidConfig, s.Name)
	}
	return nil
}

// sameNaming reports whether two naming strategies name alike: the same
// value, or the same names for a model, its columns, join tables, indexes
// and constraints.
func sameNaming(a, b schema.Namer) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	probes := []func(schema.Namer) string{
		func(n schema.Namer) string { return n.TableName("ShardProbeItem") },
		func(n schema.Namer) string { return n.SchemaName("shard_probe_items") },
		func(n schema.Namer) string { return n.ColumnName("shard_probe_items", "OwnerID") },
		func(n schema.Namer) string { return n.JoinTableName("ShardProbeItemTags") },
		func(n schema.Namer) string { return n.CheckerName("shard_probe_items", "owner_id") },
		func(n schema.Namer) string { return n.IndexName("shard_probe_items", "owner_id") },
		func(n schema.Namer) string { return n.UniqueName("shard_probe_items", "owner_id") },
	}
	return !slices.ContainsFunc(probes, func(name func(schema.Namer) string) bool { return name(a) != name(b) })
}

// dsnKey is a DSN among a database's identities.
type dsnKey string

// identities returns what makes a configured database the same as another:
// its handle, config, connection pool and *sql.DB, its DSN, and a connection
// its dialector was given. Two databases sharing any of them are one.
func identities(db *gorm.DB, dialector gorm.Dialector) []any {
	var keys []any
	pointer := func(v any) { // only pointers: comparable, and the same only when shared
		if v != nil && reflect.ValueOf(v).Kind() == reflect.Pointer && !reflect.ValueOf(v).IsNil() {
			keys = append(keys, v)
		}
	}
	if db != nil {
		pointer(db)
		pointer(db.Config)
		pointer(db.ConnPool)
		if sqlDB, err := db.DB(); err == nil {
			pointer(sqlDB)
		}
		if dialector == nil {
			dialector = db.Dialector
		}
	}
	if dialector != nil {
		if dsn := dsnOf(dialector); dsn != "" {
			keys = append(keys, dsnKey(dsn))
			if key := databaseKeyOf(dialector.Name(), dsn); key != "" {
				keys = append(keys, key)
			}
		}
		pointer(fieldOf(dialector, "Conn"))
	}
	return keys
}

// describeIdentity says what two shards share.
func describeIdentity(key any) string {
	switch k := key.(type) {
	case dsnKey:
		return fmt.Sprintf("DSN %q", dsn.Redact(string(k)))
	case databaseKey:
		return fmt.Sprintf("the same database, %s, under two spellings of its DSN", strings.ReplaceAll(string(k), "|", " "))
	case *gorm.DB:
		return "the same *gorm.DB"
	case *gorm.Config:
		return "the same GORM session"
	}
	return "the same connection pool"
}

// dsnOf returns the DSN of a dialector of GORM's drivers (a field DSN, maybe
// in an embedded config), or "" when it has none.
func dsnOf(d gorm.Dialector) string {
	dsn, _ := fieldOf(d, "DSN").(string)
	return dsn
}

// fieldOf returns the exported field name of a dialector of GORM's drivers
// (maybe in an embedded config), or nil when it has none.
func fieldOf(d gorm.Dialector, name string) any {
	v := reflect.Indirect(reflect.ValueOf(d))
	if v.Kind() != reflect.Struct {
		return nil
	}
	field, ok := v.Type().FieldByName(name)
	if !ok || !field.IsExported() {
		return nil
	}
	value, err := v.FieldByIndexErr(field.Index)
	if err != nil { // a nil embedded config
		return nil
	}
	return value.Interface()
}

// ownConfig returns the GORM config a shard opened from a Dialector gets: the
// plugin database's settings, with a schema and prepared-statement cache of
// its own (a copy of the struct would share them) and no plugins.
func ownConfig(c *gorm.Config) *gorm.Config {
	return &gorm.Config{
		SkipDefaultTransaction:                   c.SkipDefaultTransaction,
		DefaultTransactionTimeout:                c.DefaultTransactionTimeout,
		DefaultContextTimeout:                    c.DefaultContextTimeout,
		NamingStrategy:                           c.NamingStrategy,
		FullSaveAssociations:                     c.FullSaveAssociations,
		Logger:                                   c.Logger,
		NowFunc:                                  c.NowFunc,
		DryRun:                                   c.DryRun,
		PrepareStmt:                              c.PrepareStmt,
		PrepareStmtMaxSize:                       c.PrepareStmtMaxSize,
		PrepareStmtTTL:                           c.PrepareStmtTTL,
		DisableAutomaticPing:                     true, // opening must not wait for the server
		DisableForeignKeyConstraintWhenMigrating: c.DisableForeignKeyConstraintWhenMigrating,
		IgnoreRelationshipsWhenMigrating:         c.IgnoreRelationshipsWhenMigrating,
		DisableNestedTransaction:                 c.DisableNestedTransaction,
		AllowGlobalUpdate:                        c.AllowGlobalUpdate,
		QueryFields:                              c.QueryFields,
		CreateBatchSize:                          c.CreateBatchSize,
		TranslateError:                           c.TranslateError,
		PropagateUnscoped:                        c.PropagateUnscoped,
		ClauseBuilders:                           maps.Clone(c.ClauseBuilders), // the dialector writes its own into it while opening
	}
}

// Close releases the snowflake worker leases and stops the strategies'
// background work, then closes the physical databases the plugin opened from
// a Dialector; those given as a DB, and the plugin's own database, stay open.
// It runs once: a call while another runs (a signal handler's and a
// deferred one) waits for it and returns its error, rather than closing the
// pools under the leases it is releasing.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() { e.closeErr = e.close() })
	return e.closeErr
}

func (e *Engine) close() error {
	e.closed.Store(true)
	e.stopRecovery()
	// Writes whose transaction has ended commit their branches before the
	// pools close; left prepared, they would hold their rows' locks until
	// another process's recovery.
	e.awaitEndedAnchors(context.Background())
	e.committing.Lock() // two-phase commits under way finish first: a decided one's branches commit on the pools
	e.committing.Unlock()
	if e.endLifetime != nil {
		e.endLifetime()
	}
	e.background.Wait()
	errs := []error{e.stopMapStore()}
	for _, name := range strategyNames {
		if c, ok := e.generators[name].(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	e.ticketMu.Lock()
	for _, db := range e.ticketDBs {
		errs = append(errs, db.Close())
	}
	e.ticketDBs = nil
	e.ticketMu.Unlock()
	for _, o := range e.openers {
		errs = append(errs, o.close())
	}
	return errors.Join(errs...)
}

// errClosed fails a statement on a sharded model after Close.
var errClosed = fmt.Errorf("%w: the plugin is closed", ErrShardUnavailable)

// physicalOf returns the physical database holding logical shard s.
func (e *Engine) physicalOf(s int) int { return e.router.Map().Physical(s) }

// opened returns physical database k, opened, or an error naming it.
func (e *Engine) opened(ctx context.Context, k int) (*openPhysical, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return e.physical[k].open(ctx)
}

// pool returns the connection pool of physical database k.
func (e *Engine) pool(ctx context.Context, k int) (gorm.ConnPool, error) {
	if e.closed.Load() { // its pools are closed, or closing: a statement says why, as one on a pool never opened does
		return nil, e.closedError(e.physical[k].name)
	}
	opened, err := e.opened(ctx, k)
	if err != nil {
		return nil, err
	}
	return opened.pool, nil
}

// inMemory reports whether a physical database is SQLite's in memory, which
// lives only while a connection to it is open: its idle connections are
// kept.
func inMemory(opened *openPhysical) bool {
	if opened.db == nil || opened.db.Dialector.Name() != "sqlite" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return !sqliteOnFile(ctx, opened.sqlDB)
}
