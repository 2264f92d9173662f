package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/strategies"
)

// DatabaseKind says what a database is to the plugin, in a [PingResult].
type DatabaseKind string

const (
	// KindPhysical is a physical database of the shard map.
	KindPhysical DatabaseKind = "physical"
	// KindTicket is a ticket server of the ticket strategy.
	KindTicket DatabaseKind = "ticket"
)

// PingResult is one database's answer to [Plugin.Ping].
type PingResult struct {
	Name string // the shard's or the ticket server's name
	Kind DatabaseKind
	// Err is nil when the database answered; for a physical database it
	// wraps ErrShardUnavailable.
	Err error
	// RTT is the ping's round trip (a new connection's too, when the pool
	// had no idle one); zero when Err is set.
	RTT time.Duration
}

// Ping pings every physical database of the shard map and every ticket
// server, concurrently, and returns one result for each: the physical
// databases in the map's order, then the ticket servers in the order they
// were configured and added. A MySQL/MariaDB database answers when its
// server does and it is still there: one dropped under a pooled connection,
// which keeps answering pings, is down. Each has until ctx's deadline to answer, or
// Config.ConnectTimeout when ctx has none; one that has not is reported down
// then, so Ping returns within that bound. A database that is down is in its
// result; Ping's own error is only [ErrPluginNotOpen].
func (e *Engine) Ping(ctx context.Context) ([]PingResult, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.config.connectTimeout())
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	bound := time.Until(deadline).Round(time.Millisecond)
	targets := e.pingTargets()
	results := make([]PingResult, len(targets))
	answered := make([]bool, len(targets))
	answers := make(chan pingAnswer, len(targets)) // buffered: a ping answering after the deadline does not block
	for i, target := range targets {
		results[i] = PingResult{Name: target.name, Kind: target.kind}
		go func() {
			rtt, err := target.ping(ctx)
			if err != nil && ctx.Err() != nil { // the driver's error is the deadline's echo
				err = noAnswer(ctx, bound)
			}
			answers <- pingAnswer{index: i, rtt: rtt, err: err}
		}()
	}
	record := func(a pingAnswer) {
		answered[a.index] = true
		if a.err != nil {
			results[a.index].Err = targets[a.index].failure(a.err)
		} else {
			results[a.index].RTT = a.rtt
		}
	}
collect:
	for range targets {
		select {
		case a := <-answers:
			record(a)
		case <-ctx.Done():
			break collect
		}
	}
	for drained := false; !drained; { // answers already in say more than "did not answer"
		select {
		case a := <-answers:
			record(a)
		default:
			drained = true
		}
	}
	for i := range targets {
		if !answered[i] {
			results[i].Err = targets[i].failure(noAnswer(ctx, bound))
		}
	}
	return results, nil
}

// registered refuses, with ErrPluginNotOpen, what needs the database of
// db.Use before it: the migrator, the shard map.
func (e *Engine) registered() error {
	if e.db == nil || e.router == nil {
		return fmt.Errorf("%w: not registered with db.Use (register it before migrating or swapping its map)", ErrPluginNotOpen)
	}
	return e.notClosed()
}

// checkOpen refuses a plugin that has no databases to ping.
func (e *Engine) checkOpen() error {
	switch {
	case e == nil:
		return fmt.Errorf("%w: nil *Engine", ErrPluginNotOpen)
	case e.db == nil:
		return fmt.Errorf("%w: not registered with db.Use", ErrPluginNotOpen)
	}
	return e.notClosed()
}

// pingTarget is one database Ping asks.
type pingTarget struct {
	name string
	kind DatabaseKind
	// open returns the database's pool and its dialect.
	open func(ctx context.Context) (*sql.DB, string, error)
}

type pingAnswer struct {
	index int
	rtt   time.Duration
	err   error
}

// pingTargets lists the physical databases, then the ticket servers.
func (e *Engine) pingTargets() []pingTarget {
	var targets []pingTarget
	for _, ph := range e.physical {
		targets = append(targets, pingTarget{name: ph.name, kind: KindPhysical, open: func(ctx context.Context) (*sql.DB, string, error) {
			opened, err := ph.open(ctx)
			if err != nil {
				return nil, "", err
			}
			db, err := opened.database()
			return db, opened.db.Dialector.Name(), err
		}})
	}
	if ticket, ok := e.generators[strategies.NameTicket].(*strategies.Ticket); ok {
		for _, s := range ticket.Servers() {
			targets = append(targets, pingTarget{name: s.Name, kind: KindTicket, open: func(context.Context) (*sql.DB, string, error) { return s.DB, s.Dialect, nil }})
		}
	}
	return targets
}

// ping opens the database if it is not open yet, and times one ping (the
// round trip reported, not the check that follows it on MySQL).
func (t pingTarget) ping(ctx context.Context) (time.Duration, error) {
	db, dialect, err := t.open(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := db.PingContext(ctx); err != nil {
		return 0, err
	}
	took := time.Since(start)
	if dialect == "mysql" { // a pooled connection answers a ping after its database was dropped, where every statement fails
		var found int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = DATABASE()").Scan(&found); err != nil {
			return 0, err
		}
		if found == 0 {
			return 0, errors.New("its database is not on the server (dropped?), though the server answers")
		}
	}
	return took, nil
}

// failure names the database in err, and for a physical one wraps
// ErrShardUnavailable (the opener's errors do already).
func (t pingTarget) failure(err error) error {
	switch {
	case t.kind == KindTicket:
		return errs.Wrap(err, "ticket server %s", t.name)
	case errors.Is(err, ErrShardUnavailable):
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrShardUnavailable, t.name, err)
}

// noAnswer is the error of a database that had not answered when ctx ended.
func noAnswer(ctx context.Context, bound time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("did not answer within %v: %w", bound, ctx.Err())
	}
	return fmt.Errorf("did not answer: %w", ctx.Err())
}
