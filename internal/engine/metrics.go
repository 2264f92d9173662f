package engine

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/errs"
)

// Statement metrics: what exporters (the shardidprom module) read. Counting
// starts with CountStatements; until then a statement's clock callbacks only
// check whether anyone follows it.

var (
	statementBounds = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	statementKinds  = [...]string{kindCreate: "create", kindQuery: "query", kindUpdate: "update", kindDelete: "delete", kindRow: "row", kindRaw: "raw"}
)

// StatementBounds returns the upper bounds, in seconds, of the buckets of
// StatementStats.Buckets.
func StatementBounds() []float64 { return slices.Clone(statementBounds[:]) }

// StatementKinds returns the kinds of statement, as GORM's processors run
// them: Create; Find, First and the like (Raw(...).Find too); Update(s);
// Delete; Row, Rows and Scan (Raw(...).Scan too); Exec.
func StatementKinds() []string { return slices.Clone(statementKinds[:]) }

// StatementStats counts the statements of one kind that ran on one physical
// database: a fan-out's parts and a split create's inserts each count on
// their own database.
type StatementStats struct {
	Physical string
	Kind     string
	Count    uint64   // statements
	Errors   uint64   // of them failed (a record not found is no failure)
	Buckets  []uint64 // statements that took at most StatementBounds[i]; the last, longer
	Seconds  float64  // their time in all, from the plugin's first callback to its last
}

// statementCounter is one physical database's statements of one kind.
type statementCounter struct {
	buckets [len(statementBounds) + 1]atomic.Uint64
	nanos   atomic.Uint64
	errors  atomic.Uint64
}

// statementMetrics are the counters of a plugin that counts.
type statementMetrics struct {
	physical [][len(statementKinds)]statementCounter // by physical database, by kind
	fanOuts  [len(statementKinds)]atomic.Uint64      // statements sent to more than one database, by kind
	bounds   [len(statementBounds)]time.Duration
}

// statementClock is the context of a statement being followed (counted,
// logged with its database, traced): when it began and the physical
// database it was bound to (-1: none yet).
type statementClock struct {
	context.Context
	stmt     *gorm.Statement
	start    time.Time
	physical int
	fanOut   []int // the databases of its parts, if it has any
	kind     statementKind
	stopped  bool
	sent     bool   // it reached GORM's executor: it ran on its database, or failed there
	sql      string // what it ran, kept for a tracer's part span (GORM resets it after the last callback)
}

type clockKey struct{}

func (c *statementClock) Value(key any) any {
	if key == (clockKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// CountStatements makes the plugin count the statements it routes, by
// physical database and kind, with their durations, for StatementStats,
// FanOutStats; exporters call it, before or after db.Use. It costs each
// statement one allocation and two atomic adds.
func (e *Engine) CountStatements() {
	e.countWanted.Store(true)
	if e.metrics.Load() != nil || e.db == nil {
		return // Initialize starts the counting
	}
	m := &statementMetrics{physical: make([][len(statementKinds)]statementCounter, len(e.physical))}
	for i, b := range statementBounds {
		m.bounds[i] = time.Duration(b * float64(time.Second))
	}
	e.metrics.CompareAndSwap(nil, m)
}

// noting reports whether statements are followed from start to end: to
// count them, or to log the database each ran on.
func (e *Engine) noting() bool {
	return e.config.LogPhysical || e.metrics.Load() != nil || e.tracer.Load() != nil
}

// startClock is the first callback of every statement: it notes when the
// statement began.
func (e *Engine) startClock(kind statementKind) func(*gorm.DB) {
	return func(db *gorm.DB) {
		stmt := db.Statement
		if _, part := db.Logger.(partLogger); !part && !e.noting() || stmt.Context == nil {
			return // a part's statements, and theirs, are followed to name their database in its line
		}
		c := &statementClock{Context: stmt.Context, stmt: stmt, start: time.Now(), physical: -1, kind: kind}
		if db.Error != nil {
			if k, ok := loadSetting(stmt, unavailableKey{}); ok {
				c.physical = k.(int) // its shard clause's database, which did not open
			}
		}
		stmt.Context = c
	}
}

// clockOf returns the clock of a statement being counted; a statement made
// from it (a fan-out's part, a preload) has its own.
func clockOf(stmt *gorm.Statement) *statementClock {
	c, ok := stmt.Context.(*statementClock)
	if !ok && stmt.Context != nil {
		c, _ = stmt.Context.Value(clockKey{}).(*statementClock)
	}
	if c == nil || c.stmt != stmt || c.stopped {
		return nil
	}
	return c
}

// boundTo notes the physical database k the statement runs on.
func (e *Engine) boundTo(stmt *gorm.Statement, k int) {
	if c := clockOf(stmt); c != nil {
		c.physical = k
	}
}

// sending notes that a counted statement reached GORM's executor, which
// sends it to its database.
func (e *Engine) sending(stmt *gorm.Statement) {
	if e.metrics.Load() == nil {
		return
	}
	if c := clockOf(stmt); c != nil {
		c.sent = true
	}
}

// refusedUnsent reports whether a statement that failed before GORM's
// executor was refused by the plugin (by its routing, its last gate), not
// by its database: it ran nowhere, and is not counted as a statement there.
// One whose database could not be opened, or a transaction begun, failed
// there, and is counted.
func refusedUnsent(c *statementClock, err error) bool {
	return !c.sent && err != nil && (errors.Is(err, ErrCrossShard) || errors.Is(err, ErrNoShard))
}

// countFanOut counts a statement whose parts, on several databases, are
// being sent: not one built in DryRun, nor one refused before any was sent.
func (e *Engine) countFanOut(db *gorm.DB, kind statementKind, parts int) {
	if m := e.metrics.Load(); m != nil && parts > 1 && !db.DryRun {
		m.fanOuts[kind].Add(1)
	}
}

// unmarkPartEnd takes finish's mark of a part's end off err: also where a
// callback after it wrapped the mark (an application's error type), which
// would fail the part after it committed, or added or joined its own error
// to it, which is then the part's error as without the mark.
func unmarkPartEnd(err error) error {
	if !errors.Is(err, errPartEnded) {
		if strings.HasPrefix(errs.Text(err), errPartEnded.Error()+"; ") && errors.Unwrap(err) != nil { // gorm.DB.AddError's
			return errors.Unwrap(err)
		}
		return err
	}
	return errors.Join(othersThanTheMark(err)...)
}

// othersThanTheMark returns the errors err wraps, leaves of its tree, but
// the mark of a part's end.
func othersThanTheMark(err error) []error {
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		var others []error
		for _, inner := range e.Unwrap() {
			others = append(others, othersThanTheMark(inner)...)
		}
		return others
	case interface{ Unwrap() error }:
		return othersThanTheMark(e.Unwrap())
	}
	if err == nil || err == errPartEnded {
		return nil
	}
	return []error{err}
}

// stopClock is the last callback of every statement: it makes the line GORM
// logs for it, counts it on its physical database, if it was bound to one,
// and gives the statement back the context it came with. A clock that a
// plugin's context still wraps is left there stopped, for nothing to find.
func (e *Engine) stopClock(kind statementKind) func(*gorm.DB) {
	return func(db *gorm.DB) {
		if db.Error != nil {
			db.Error = unmarkPartEnd(db.Error) // after the callbacks that passed over the part (finish)
		}
		stmt := db.Statement
		physical := -1
		c := clockOf(stmt)
		if c != nil {
			c.stopped = true
			if stmt.Context == c {
				stmt.Context = c.Context
			}
			physical = c.physical
			if e.tracer.Load() != nil {
				c.sql = stmt.SQL.String()
				stmt.Settings.Store(routeKey{stmt}, c)
			}
		}
		e.logLine(db, physical)
		if m := e.metrics.Load(); m != nil && c != nil && physical >= 0 && !db.DryRun && !refusedUnsent(c, db.Error) {
			m.count(physical, kind, c.start, db.Error)
		}
	}
}

// countPart counts a part of a query or row statement over several
// databases, which the plugin runs on the pool itself.
func (e *Engine) countPart(k int, kind statementKind, start time.Time, err error) {
	if m := e.metrics.Load(); m != nil {
		m.count(k, kind, start, err)
	}
}

func (m *statementMetrics) count(k int, kind statementKind, start time.Time, err error) {
	if k >= len(m.physical) {
		return
	}
	counter := &m.physical[k][kind]
	took := time.Since(start)
	i := 0
	for i < len(m.bounds) && took > m.bounds[i] {
		i++
	}
	counter.buckets[i].Add(1)
	counter.nanos.Add(uint64(took))
	// A part rolled back because another part of its statement failed did
	// not fail on its database: the failure counts on the database that did.
	if err != nil && err != errRouted && !errors.Is(err, gorm.ErrRecordNotFound) && !errors.Is(err, errPartRolledBack) {
		counter.errors.Add(1)
	}
}

// StatementStats returns the counts of the statements routed since
// CountStatements, one entry per physical database and kind, in the order of
// Config.Shards and StatementKinds; nil if the plugin does not count.
func (e *Engine) StatementStats() []StatementStats {
	m := e.metrics.Load()
	if m == nil {
		return nil
	}
	var stats []StatementStats
	for k := range m.physical {
		for kind, name := range statementKinds {
			c := &m.physical[k][kind]
			s := StatementStats{Physical: e.physical[k].name, Kind: name, Buckets: make([]uint64, len(c.buckets)), Errors: c.errors.Load()}
			for i := range c.buckets {
				s.Buckets[i] = c.buckets[i].Load()
				s.Count += s.Buckets[i]
			}
			s.Seconds = time.Duration(c.nanos.Load()).Seconds()
			stats = append(stats, s)
		}
	}
	return stats
}

// FanOutStats returns, by kind, how many statements were sent to more than
// one physical database since CountStatements.
func (e *Engine) FanOutStats() map[string]uint64 {
	m := e.metrics.Load()
	if m == nil {
		return nil
	}
	stats := map[string]uint64{}
	for kind, name := range statementKinds {
		stats[name] = m.fanOuts[kind].Load()
	}
	return stats
}

// PoolStats returns the connection pool statistics of each physical database
// that is open, by name.
func (e *Engine) PoolStats() map[string]sql.DBStats {
	stats := map[string]sql.DBStats{}
	for _, ph := range e.physical {
		if opened := ph.loaded(); opened != nil && opened.sqlDB != nil {
			stats[ph.name] = opened.sqlDB.Stats()
		}
	}
	return stats
}

// Physicals returns the names of the physical databases, in the order of
// Config.Shards.
func (e *Engine) Physicals() []string {
	names := make([]string, len(e.physical))
	for k, ph := range e.physical {
		names[k] = ph.name
	}
	return names
}
