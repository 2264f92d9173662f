package shardid

import (
	"context"
	"database/sql"
	"fmt"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/engine"
)

// What operators and exporters (the shardidprom and shardidotel modules)
// read of the plugin: its databases' health, its statements' counts and
// routes, the writes a move held.

// DatabaseKind says what a database is to the plugin, in a [PingResult].
type DatabaseKind = engine.DatabaseKind

const (
	// KindPhysical is a physical database of the shard map.
	KindPhysical = engine.KindPhysical
	// KindTicket is a ticket server of the ticket strategy.
	KindTicket = engine.KindTicket
)

// PingResult is one database's answer to [Plugin.Ping]: its Name and Kind,
// Err (nil when it answered; for a physical database it wraps
// [ErrShardUnavailable]) and RTT, the ping's round trip (a new
// connection's too, when the pool had no idle one).
type PingResult = engine.PingResult

// Ping pings every physical database of the shard map and every ticket
// server, concurrently, and returns one result for each: the physical
// databases in the map's order, then the ticket servers in the order they
// were configured and added. A MySQL/MariaDB database answers when its
// server does and it is still there: one dropped under a pooled connection,
// which keeps answering pings, is down. Each has until ctx's deadline to answer, or
// Config.ConnectTimeout when ctx has none; one that has not is reported down
// then, so Ping returns within that bound. A database that is down is in its
// result; Ping's own error is only [ErrPluginNotOpen].
func (p *Plugin) Ping(ctx context.Context) ([]PingResult, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: nil *Plugin", ErrPluginNotOpen)
	}
	return p.engine().Ping(ctx)
}

// StatementStats counts the statements of one kind (Kind, one of
// [StatementKinds]) that ran on one physical database (Physical): Count,
// Errors (a record not found is no failure), Buckets (statements that took
// at most StatementBounds()[i]; the last, longer) and Seconds, their time in
// all. A fan-out's parts and a split create's inserts each count on their
// own database; a statement the plugin refused before sending it
// (ErrNoShard, ErrCrossShard) ran nowhere, and is not counted.
type StatementStats = engine.StatementStats

// StatementBounds returns the upper bounds, in seconds, of the buckets of
// StatementStats.Buckets.
func StatementBounds() []float64 { return engine.StatementBounds() }

// StatementKinds returns the kinds of statement, as GORM's processors run
// them: Create; Find, First and the like (Raw(...).Find too); Update(s);
// Delete; Row, Rows and Scan (Raw(...).Scan too); Exec.
func StatementKinds() []string { return engine.StatementKinds() }

// CountStatements makes the plugin count the statements it routes, by
// physical database and kind, with their durations, for StatementStats,
// FanOutStats; exporters call it, before or after db.Use. It costs each
// statement one allocation and two atomic adds.
func (p *Plugin) CountStatements() { p.engine().CountStatements() }

// StatementStats returns the counts of the statements routed since
// CountStatements, one entry per physical database and kind, in the order of
// Config.Shards and StatementKinds; nil if the plugin does not count.
func (p *Plugin) StatementStats() []StatementStats { return p.engine().StatementStats() }

// FanOutStats returns, by kind, how many statements were sent to more than
// one physical database since CountStatements.
func (p *Plugin) FanOutStats() map[string]uint64 { return p.engine().FanOutStats() }

// PoolStats returns the connection pool statistics of each physical database
// that is open, by name.
func (p *Plugin) PoolStats() map[string]sql.DBStats { return p.engine().PoolStats() }

// Physicals returns the names of the physical databases, in the order of
// Config.Shards.
func (p *Plugin) Physicals() []string { return p.engine().Physicals() }

// Route is where a statement runs: its physical databases, and the logical
// shards its rows, conditions or shard clause name (nil when they name none,
// as for AllShards).
type Route = engine.Route

// TracedPart is a part of a statement over several physical databases, as
// a tracer is told of it: the database it runs on, its operation ("select",
// "insert", "update", "delete", or "preload" for the preloads of its rows)
// and its table.
type TracedPart = engine.TracedPart

// PartTracer is told of each part of a statement over several physical
// databases before it runs; the context it returns is the part's, and end
// is called when the part is done with the SQL it ran ("" when it ran
// several statements, or none) and its error.
type PartTracer = engine.PartTracer

// TraceParts makes the plugin tell t of the parts of statements over several
// databases, and follow each statement for RouteOf. Call it after db.Use.
func (p *Plugin) TraceParts(t PartTracer) { p.engine().TraceParts(t) }

// RouteOf returns where the statement db runs or ran, from the plugin's
// routing callback on: for tracers, which TraceParts makes it follow.
// It reports false for a statement the plugin did not send to a physical
// database (an unsharded model's, raw SQL without a shard clause).
func (p *Plugin) RouteOf(db *gorm.DB) (Route, bool) { return p.engine().RouteOf(db) }

// MovedStats counts the writes the plugin held because their shard was
// moving: Held (refused by a moving shard's fence and held), Retried (of
// them, written on the new database), Failed (refused with ErrShardMoved)
// and Longest, the longest a write was held.
type MovedStats = engine.MovedStats

// MovedWrites returns the counts of writes held at a move's cutover.
func (p *Plugin) MovedWrites() MovedStats { return p.engine().MovedWrites() }
