package shardid

import (
	"database/sql"
	"errors"
	"fmt"
	"io"

	"gorm.io/gorm"

	"github.com/shardid/shardid/shardrouter"
)

// Range is an inclusive range of logical shards.
type Range = shardrouter.Range

// Shard is one physical database and the logical shards it holds.
type Shard struct {
	// Name identifies the database in errors, logs and the shard map; unique.
	Name string
	// Dialector opens the database, with the same GORM config as the plugin's
	// database. Give Dialector or DB, not both.
	Dialector gorm.Dialector
	// DB is an already opened database; its connection pool is used.
	DB *gorm.DB
	// Logical lists the logical shards the database holds.
	Logical []Range
}

// physical is one physical database the plugin routes to.
type physical struct {
	name  string
	db    *gorm.DB      // a handle of its own, for migrations
	pool  gorm.ConnPool // what a routed statement runs on
	sqlDB *sql.DB       // where strategies run their SQL
}

func newPhysical(name string, db *gorm.DB) (*physical, error) {
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("%w: shard %s has no *sql.DB: %w", ErrInvalidConfig, name, err)
	}
	return &physical{name: name, db: db, pool: db.ConnPool, sqlDB: sqlDB}, nil
}

// defaultPhysicalName names the plugin's own database when Config.Shards is empty.
const defaultPhysicalName = "default"

// openShards opens the physical databases of the config and validates the
// map. Opening does not connect: a database that is down fails only the
// statements that need it.
func (p *Plugin) openShards(db *gorm.DB) error {
	if len(p.config.Shards) == 0 {
		own, err := newPhysical(defaultPhysicalName, db)
		if err != nil {
			return err
		}
		p.physical = []*physical{own}
		m, err := shardrouter.NewMap(p.layout.ShardCount(), []shardrouter.Physical{{Name: defaultPhysicalName, Logical: []Range{{From: 0, To: p.layout.ShardCount() - 1}}}})
		if err != nil {
			return err
		}
		p.router = shardrouter.NewRouter(m)
		return nil
	}
	if len(p.config.Shards) > maxPhysical {
		return fmt.Errorf("%w: %d Shards, at most %d physical databases", ErrInvalidConfig, len(p.config.Shards), maxPhysical)
	}
	described := make([]shardrouter.Physical, len(p.config.Shards))
	for i, s := range p.config.Shards {
		described[i] = shardrouter.Physical{Name: s.Name, Logical: s.Logical}
	}
	m, err := shardrouter.NewMap(p.layout.ShardCount(), described)
	if err != nil {
		return fmt.Errorf("%w: Shards: %w", ErrInvalidConfig, err)
	}
	p.router = shardrouter.NewRouter(m)
	for _, s := range p.config.Shards {
		ph, err := openPhysical(db, s)
		if err != nil {
			return errors.Join(err, p.Close())
		}
		p.physical = append(p.physical, ph)
	}
	return nil
}

func openPhysical(db *gorm.DB, s Shard) (*physical, error) {
	switch {
	case s.DB != nil && s.Dialector != nil:
		return nil, fmt.Errorf("%w: shard %s: give Dialector or DB, not both", ErrInvalidConfig, s.Name)
	case s.DB != nil:
		return newPhysical(s.Name, s.DB)
	case s.Dialector == nil:
		return nil, fmt.Errorf("%w: shard %s: no Dialector or DB", ErrInvalidConfig, s.Name)
	case s.Dialector.Name() != db.Dialector.Name():
		return nil, fmt.Errorf("%w: shard %s is %s but the plugin's database is %s: GORM builds each statement's SQL for one dialect",
			ErrInvalidConfig, s.Name, s.Dialector.Name(), db.Dialector.Name())
	}
	config := *db.Config // same naming, logger and schema cache as the plugin's database
	config.DisableAutomaticPing = true
	config.Plugins = map[string]gorm.Plugin{}
	opened, err := gorm.Open(s.Dialector, &config)
	if err != nil {
		return nil, fmt.Errorf("shardid: opening shard %s: %w", s.Name, err)
	}
	return newPhysical(s.Name, opened)
}

// Close releases the snowflake worker leases and stops the strategies'
// background work, then closes the physical databases the plugin opened from
// a Dialector; those given as a DB, and the plugin's own database, stay open.
func (p *Plugin) Close() error {
	var errs []error
	for _, name := range strategyNames {
		if c, ok := p.generators[name].(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	p.ticketMu.Lock()
	for _, db := range p.ticketDBs {
		errs = append(errs, db.Close())
	}
	p.ticketDBs = nil
	p.ticketMu.Unlock()
	for i, ph := range p.physical {
		if i >= len(p.config.Shards) || p.config.Shards[i].Dialector == nil {
			continue
		}
		if sqlDB, err := ph.db.DB(); err == nil {
			errs = append(errs, sqlDB.Close())
		}
	}
	return errors.Join(errs...)
}

// physicalOf returns the physical database holding logical shard s.
func (p *Plugin) physicalOf(s int) int { return p.router.Map().Physical(s) }
