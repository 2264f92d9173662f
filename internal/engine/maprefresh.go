package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/sqlerr"
	"github.com/shardid/shardid/shardrouter"
	"github.com/shardid/shardid/strategies"
)

// defaultMapTable is the shared map's table in the plugin's own database.
const defaultMapTable = mapstore.DefaultTable

// defaultMapRefresh is how often a process reads the shared map.
const defaultMapRefresh = time.Second

// mapStore is the shared map as this process follows it: the store in the
// plugin's database, and the refresh's state.
type mapStore struct {
	*mapstore.Store

	trust     mapTrust
	turn      chan struct{} // one refresh at a time, waited for as long as its caller's context allows
	version   int64         // the version this process follows; 0: the config's map
	stop      chan struct{}
	done      chan struct{}
	stopOnce  sync.Once
	closePool func() error // of the pool it runs on, once it stops
	idColumns atomic.Bool  // shardid_tables has its id_columns column
	placement atomic.Bool  // shardid_tables has its placement column
	hashKey   atomic.Bool  // shardid_tables has its hash_key column
	stamp     atomic.Bool  // shardid_tables has its stamp column
	// recordsSum is the sum of shardid_tables' stamps (recordsProbe) when
	// this process last read it: a refresh reading another reloads it.
	recordsSum atomic.Int64
}

// mapOfStored builds the router's map from a stored version: the physical
// databases in the order of Config.Shards, each with the ranges the table
// gives it (none if it names it not). A name the config lacks is an error:
// this process cannot reach that database.
func (e *Engine) mapOfStored(stored *mapstore.Map) (*shardrouter.Map, error) {
	if err := e.otherLayout(stored, e.maps.Table()); err != nil {
		return nil, err
	}
	names := make([]string, len(e.physical))
	for k, ph := range e.physical {
		names[k] = ph.name
	}
	physical := make([]shardrouter.Physical, len(names))
	for k, name := range names {
		physical[k].Name = name
	}
	for _, sp := range stored.Physical {
		k := slices.Index(names, sp.Name)
		if k < 0 {
			if len(sp.Logical) == 0 {
				continue
			}
			return nil, fmt.Errorf("%w: map version %d in %s maps logical shards to %s, which Config.Shards does not list (it lists %s)",
				ErrInvalidConfig, stored.Version, e.maps.Table(), sp.Name, strings.Join(names, ", "))
		}
		physical[k].Logical = sp.Logical
	}
	m, err := shardrouter.NewMap(e.layout.ShardCount(), physical)
	if err != nil {
		return nil, errs.Wrap(err, "map version %d in %s", stored.Version, e.maps.Table())
	}
	return m, nil
}

// otherLayout fails when stored, a version of the map in table, was made
// by processes of another layout than this one's.
func (e *Engine) otherLayout(stored *mapstore.Map, table string) error {
	if own := e.storedLayout(); stored.Layout != nil && *stored.Layout != *own {
		return fmt.Errorf("%w: map version %d in %s was made by processes whose IDs are laid out as %+v, and this one's Config.Layout is %+v: an ID would name another shard, or another worker, here; give every process of the map one layout",
			ErrInvalidConfig, stored.Version, table, *stored.Layout, *own)
	}
	return nil
}

// startMapStore loads the shared map, seeding it from the config on the
// first start, and starts refreshing it. A table it cannot read is tried
// again at each refresh; until then statements on sharded models are
// refused, as the config's map may be older than the table's.
func (e *Engine) startMapStore(ctx context.Context) error {
	app, err := e.db.DB()
	if err != nil {
		return fmt.Errorf("%w: Config.Shards keeps the shared map in the plugin's database, and its GORM handle has no *sql.DB: %w", ErrInvalidConfig, err)
	}
	heartbeat := e.mapRefresh()
	if heartbeat <= 0 {
		heartbeat = defaultMapRefresh
	}
	sqlDB, closePool := e.backgroundPool(ctx, app)
	s := &mapStore{Store: mapstore.New(sqlDB, e.db.Dialector.Name(), e.mapTable(), heartbeat), closePool: closePool, turn: make(chan struct{}, 1)}
	e.maps = s
	e.inflight.drained = make(chan struct{}, 1)
	start := time.Now()
	if _, err = e.readFirstMap(ctx); err == nil { // refreshMap noted this process at the version it read
		s.trust.readAt(start, s.trustWindow(), s.Table())
	} else {
		s.trust.failed(err, s.Table())
		s.trust.expire(s.trustWindow(), s.Table()) // never read: where shards are is not known
	}
	var invalid error
	if errors.Is(err, ErrInvalidConfig) {
		invalid = err
	} else if err != nil {
		e.config.Log.Warn("shardid: the shared map cannot be read; statements on sharded models are refused until it can", "table", s.Table(), "error", err)
	}
	if invalid != nil {
		return invalid
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go e.refreshLoop(s)
	return nil
}

// readFirstMap makes the map's table, seeds it from the config if it has no
// map, and reads it: at the start, and at each refresh until it succeeds.
// A conflict with another transaction (a mover writing the map) is tried
// again at once, for a while.
func (e *Engine) readFirstMap(ctx context.Context) (int64, error) {
	for pause := 10 * time.Millisecond; ; pause *= 2 {
		version, err := e.readFirstMapOnce(ctx)
		if !sqlerr.Transient(err) || pause > 400*time.Millisecond {
			return version, err
		}
		select { // until it is read, statements on sharded models are refused
		case <-ctx.Done():
			return version, err
		case <-time.After(pause):
		}
	}
}

// readFirstMapOnce is one attempt of readFirstMap.
func (e *Engine) readFirstMapOnce(ctx context.Context) (int64, error) {
	if err := e.maps.Prepare(ctx); err != nil {
		return 0, err
	}
	if err := e.seedMap(ctx); err != nil {
		return 0, err
	}
	if err := e.loadRecordedTables(ctx); err != nil {
		return 0, err
	}
	return e.refreshMap(ctx)
}

// seedMap writes the config's map as version 1 if the table has none; of
// processes starting at once one wins, and the others read its map.
func (e *Engine) seedMap(ctx context.Context) error {
	latest, err := e.maps.Latest(ctx)
	if err != nil || latest != nil {
		return err
	}
	first := mapstore.MapOf(e.router.Map(), 1)
	first.Layout = e.storedLayout()
	if err := e.maps.Write(ctx, first); err != nil {
		if latest, again := e.maps.Latest(ctx); again == nil && latest != nil {
			return nil
		}
		return err
	}
	return nil
}

// storedLayout is the plugin's ID layout as the map table keeps it.
func (e *Engine) storedLayout() *mapstore.Layout {
	l := e.layout
	return &mapstore.Layout{EpochMs: l.Epoch.UnixMilli(), UnitMs: l.TimeUnit.Milliseconds(),
		TimeBits: l.TimeBits, ShardBits: l.ShardBits, SequenceBits: l.SequenceBits, WorkerBits: l.WorkerBits}
}

// mapTable is Config.MapTable with its default.
func (e *Engine) mapTable() string {
	if e.config.MapTable != "" {
		return e.config.MapTable
	}
	return defaultMapTable
}

// MapTableProblem says what Config.MapTable t lacks to be one, or "" (for
// "" too, the default): the operators' command checks its file's map_table
// so.
func MapTableProblem(t string) string {
	if t == "" || plainTable.MatchString(t) && len(t) <= mapstore.MaxTableName {
		return ""
	}
	return fmt.Sprintf("letters, digits and _, at most %d, not starting with a digit: the map's other tables are named after it, as %s",
		mapstore.MaxTableName, mapstore.KeptTable(t, boundTokensTable, "_databases"))
}

// plainTable is a table name that needs no quoting in any dialect.
var plainTable = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// mapRefresh is Config.MapRefresh with its default.
func (e *Engine) mapRefresh() time.Duration {
	switch {
	case e.config.MapRefresh == 0:
		return defaultMapRefresh
	case e.config.MapRefresh < 0:
		return 0
	}
	return e.config.MapRefresh
}

func (e *Engine) refreshLoop(s *mapStore) {
	defer close(s.done)
	ticker := time.NewTicker(s.Heartbeat())
	defer ticker.Stop()
	for {
		drained := false
		select {
		case <-s.stop:
			return
		case <-ticker.C:
		case <-e.inflight.drained: // the last statement of an older map ended: say so now
			drained = true
		}
		ctx, cancel := context.WithTimeout(context.Background(), min(s.Heartbeat(), time.Minute)*4)
		start := time.Now()
		version, err := e.MapVersion(), error(nil)
		switch {
		case drained: // not a reading: it renews no trust
		case version == 0:
			version, err = e.readFirstMap(ctx)
		case e.mapRefresh() > 0: // else only a refused write reads the map; the process still says it lives
			version, err = e.refreshMap(ctx)
		}
		// The process is live, at the version it routes by, even when it
		// cannot follow a newer one (a map naming a database its config
		// lacks): a move's cleanup waits for it, not for its silence.
		if seen := s.Seen(ctx, e.oldestRouted(version)); err == nil {
			err = seen
		}
		cancel()
		if err == nil && version > 0 && !drained {
			s.trust.readAt(start, s.trustWindow(), s.Table())
		} else if err != nil {
			s.trust.failed(err, s.Table())
		}
		if errors.Is(err, sql.ErrConnDone) || err != nil && strings.Contains(err.Error(), "database is closed") {
			return // the application closed the plugin's database without Close
		}
		if err != nil {
			e.config.Log.Warn("shardid: the shared map cannot be refreshed; keeping the version routed by", "version", e.MapVersion(), "error", err)
		}
	}
}

// refreshMap reads the newest map and, if it is newer than the one followed,
// routes by it from now on. It returns the version followed afterwards.
func (e *Engine) refreshMap(ctx context.Context) (int64, error) {
	s := e.maps
	select {
	case s.turn <- struct{}{}:
		defer func() { <-s.turn }()
	case <-ctx.Done():
		return e.MapVersion(), ctx.Err()
	}
	stored, err := e.latestAndRecords(ctx)
	if err != nil {
		return s.version, err
	}
	// A version below the one followed is the table made anew (a teardown
	// and AutoMigrate, a restore): the table wins all the same.
	if stored != nil && stored.Version != s.version {
		next, err := e.mapOfStored(stored)
		if err != nil {
			s.trust.cannotRouteBy(err, s.Table()) // whoever read it: a refused write's reading too
			return s.version, err
		}
		if s.version == 0 {
			e.reportConfigDifference(ctx, next, stored)
		}
		e.prepareGenerators(e.router.Map(), next, stored)
		if err := e.router.Swap(next); err != nil {
			s.trust.cannotRouteBy(err, s.Table())
			return s.version, err
		}
		freezing := slices.Clone(stored.Freezing)
		e.freezing.Store(&freezing)
		if s.version > stored.Version {
			e.config.Log.Warn("shardid: the shared map's version went back: its table was made anew; following it", "from", s.version, "to", stored.Version, "table", s.Table())
		} else if s.version != 0 {
			e.config.Log.Info("shardid: map version changed", "from", s.version, "to", stored.Version)
		}
		s.version = stored.Version
		e.mapVersion.Store(stored.Version)
		e.routeBy(stored.Version)
		s.trust.routable()
		return s.version, s.Seen(ctx, e.oldestRouted(s.version))
	}
	s.trust.routable()
	return s.version, nil
}

// latestAndRecords reads the newest map and, in the same query, whether
// the record of sharded tables changed since this process read it, which
// it then reads again: a table another process sharded, dropped or
// renamed is routed (or refused) as such here too after the next refresh.
func (e *Engine) latestAndRecords(ctx context.Context) (*mapstore.Map, error) {
	s := e.maps
	if !s.stamp.Load() { // the record not prepared yet: readFirstMap reads it
		return s.Latest(ctx)
	}
	stored, probed, err := s.LatestAnd(ctx, s.recordsProbe())
	if err != nil {
		if stored, again := s.Latest(ctx); again == nil { // the record is gone, not the map
			e.config.Log.Warn("shardid: the record of sharded tables cannot be read; statements go on by the record read before", "table", s.tables(), "error", err)
			return stored, nil
		}
		return nil, err
	}
	if stored != nil {
		e.followRecordedTables(ctx, probed)
	}
	return stored, nil
}

// reportConfigDifference logs where the shared map differs from Config.Shards:
// the table wins.
func (e *Engine) reportConfigDifference(ctx context.Context, table *shardrouter.Map, stored *mapstore.Map) {
	config := e.router.Map()
	var differ []string
	for k := range config.Len() {
		if !slices.Equal(config.Logical(k), table.Logical(k)) {
			differ = append(differ, fmt.Sprintf("%s holds %s (Config.Shards: %s)", table.Name(k), describeRanges(mapstore.Ranges(table.Logical(k))), describeRanges(mapstore.Ranges(config.Logical(k)))))
		}
	}
	for _, sp := range stored.Physical { // one holding shards is refused; an empty one is left out, and neither read nor pinged
		if !slices.ContainsFunc(e.physical, func(ph *physical) bool { return ph.name == sp.Name }) {
			differ = append(differ, fmt.Sprintf("%s holds no logical shards and is not in Config.Shards: left out (its rows are not read)", sp.Name))
		}
	}
	if len(differ) > 0 {
		e.config.Log.Warn("shardid: the shared map differs from Config.Shards, and is followed", "version", stored.Version, "table", e.maps.Table(), "differences", strings.Join(differ, "; "))
	}
}

// describeRanges writes ranges as 0-99,200-299, or "no logical shards".
func describeRanges(ranges []Range) string {
	if len(ranges) == 0 {
		return "no logical shards"
	}
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = strconv.Itoa(r.From)
		if r.To != r.From {
			parts[i] += "-" + strconv.Itoa(r.To)
		}
	}
	return strings.Join(parts, ",")
}

// MapVersion returns the version of the shared map this process routes by;
// 0 while it routes by Config.Shards (no shards configured, or the table not
// read yet).
func (e *Engine) MapVersion() int64 { return e.mapVersion.Load() }

// RefreshMap reads the shared map now and routes by it if it is newer; it
// returns the version followed.
func (e *Engine) RefreshMap(ctx context.Context) (int64, error) {
	if err := e.notClosed(); err != nil {
		return 0, err
	}
	if e.maps == nil {
		return 0, fmt.Errorf("%w: no Config.Shards, so no shared map", ErrInvalidConfig)
	}
	return e.refreshMap(ctx)
}

// stopMapStore stops the refresh and takes this process off the list.
func (e *Engine) stopMapStore() error {
	s := e.maps
	if s == nil {
		return nil
	}
	var err error
	s.stopOnce.Do(func() {
		if s.stop != nil {
			close(s.stop)
			<-s.done
		}
		s.trust.stop()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = s.Forget(ctx)
		if s.closePool != nil {
			err = errors.Join(err, s.closePool())
		}
	})
	return err
}

// prepareGenerators readies the ID sources for a map in which databases gain
// logical shards, before any statement routes by it: segment blocks of those
// databases, reserved before the move advanced their counters, are dropped,
// and snowflake IDs of the moved shards pass the time the old database used.
func (e *Engine) prepareGenerators(current, next *shardrouter.Map, stored *mapstore.Map) {
	if segment, ok := e.generators[strategies.NameSegment].(*strategies.Segment); ok {
		for k := range next.Len() {
			if slices.ContainsFunc(next.Logical(k), func(s int) bool { return current.Physical(s) != k }) {
				segment.Forget(next.Name(k))
			}
		}
	}
	if snowflake, ok := e.generators[strategies.NameSnowflake].(*strategies.Snowflake); ok {
		for _, f := range stored.Floors {
			shards := make([]int, 0, f.Logical.To-f.Logical.From+1)
			for s := f.Logical.From; s <= f.Logical.To; s++ {
				shards = append(shards, s)
			}
			snowflake.SetFloor(shards, f.Tick)
		}
	}
}
