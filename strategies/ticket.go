package strategies

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Ticket takes IDs from ticket servers, as Flickr does: each server is a
// database counter that steps by Step from its own Offset (an auto-increment
// column under auto_increment_increment/auto_increment_offset on
// MySQL/MariaDB, a sequence on PostgreSQL), so no two servers ever issue the
// same ticket. A ticket t becomes the ID
//
//	(t >> SequenceBits) << (ShardBits + SequenceBits) | shard << SequenceBits | t & (2^SequenceBits - 1)
//
// which keeps the logical shard where [Layout.Shard] reads it.
//
// Requests are spread over the servers by consistent hashing of the logical
// shard, with virtual nodes: while its server is up, one shard's IDs come
// from one counter and ascend. A shard that moves to another server (a
// failover, a server added) gets that server's tickets: still unique, but
// not necessarily above the ones it had. A server that fails is skipped, clockwise on
// the ring, until a back-off has passed (doubling with each consecutive
// failure, up to MaxBackoff); then one request tries it again.
//
// Step is the most servers there will ever be, not how many there are now:
// a server added later takes a free offset, so the series never overlap.
// Step and a server's Offset must never change once tickets were issued.
//
// Before the first Generate, [PrepareTicketServers] creates the counters.
// A Ticket is safe for concurrent use; [Ticket.Close] releases its pinned
// connections.
type Ticket struct {
	layout Layout
	opts   TicketOptions

	addMu  sync.Mutex // serializes AddServer
	state  atomic.Pointer[ticketState]
	closed atomic.Bool

	issued    atomic.Uint64
	failovers atomic.Uint64
}

var (
	_ Generator = (*Ticket)(nil)
	_ Reporter  = (*Ticket)(nil)
)

// TicketServer is one ticket server.
type TicketServer struct {
	// Name identifies the server on the ring and in errors and [Stats];
	// renaming a server moves its shards.
	Name string
	// Dialect is "mysql" (MySQL or MariaDB) or "postgres".
	Dialect string
	// DB is the server's pool. On MySQL/MariaDB the generator holds one
	// connection out of it, pinned to its session settings, and closes it
	// instead of giving it back.
	DB *sql.DB
	// Offset is the server's first ticket and its residue modulo Step:
	// 1..Step, distinct per server, never reused for another server.
	Offset int
}

// TicketOptions configure [NewTicket]; zero fields take the defaults.
type TicketOptions struct {
	// Step is the most ticket servers there will ever be. Default 16.
	Step int
	// VirtualNodes is the number of points per server on the ring. Default
	// 1000: with 3 or 4 servers each one's share of the ring is then within
	// about 3% of even (160 points: up to 11%; see BenchmarkTicketRingShare).
	VirtualNodes int
	// Backoff is how long a failed server is skipped; it doubles with each
	// consecutive failure up to MaxBackoff. Defaults 100ms and 5s.
	Backoff, MaxBackoff time.Duration
	// Timeout bounds each statement sent to a server, so that a server that
	// stopped answering fails over instead of holding the caller. Default 2s.
	Timeout time.Duration
	// Log gets an event when a server goes down and when it is back.
	// Default: slog.Default().
	Log *slog.Logger
	// Table is the counter on each server: a table on MySQL/MariaDB, a
	// sequence on PostgreSQL; a plain SQL identifier. Default
	// [DefaultTicketTable]. Generators of other layouts or steps on the same
	// servers need counters of their own.
	Table string
}

// Defaults of [TicketOptions].
const (
	DefaultTicketStep         = 16
	DefaultTicketVirtualNodes = 1000
	DefaultTicketBackoff      = 100 * time.Millisecond
	DefaultTicketMaxBackoff   = 5 * time.Second
	DefaultTicketTimeout      = 2 * time.Second
)

// maxTicketStep is MySQL's largest auto_increment_increment.
const maxTicketStep = 65535

func (o TicketOptions) normalized() (TicketOptions, error) {
	if o.Step == 0 {
		o.Step = DefaultTicketStep
	}
	if o.VirtualNodes == 0 {
		o.VirtualNodes = DefaultTicketVirtualNodes
	}
	if o.Backoff == 0 {
		o.Backoff = DefaultTicketBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = max(DefaultTicketMaxBackoff, o.Backoff)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTicketTimeout
	}
	if o.Table == "" {
		o.Table = DefaultTicketTable
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	switch {
	case o.Step < 1 || o.Step > maxTicketStep:
		return o, fmt.Errorf("strategies: ticket: Step %d must be between 1 and %d", o.Step, maxTicketStep)
	case o.VirtualNodes < 1:
		return o, fmt.Errorf("strategies: ticket: VirtualNodes %d must be positive", o.VirtualNodes)
	case o.Backoff < 0 || o.MaxBackoff < o.Backoff:
		return o, fmt.Errorf("strategies: ticket: Backoff %s and MaxBackoff %s must satisfy 0 < Backoff <= MaxBackoff", o.Backoff, o.MaxBackoff)
	case o.Timeout < 0:
		return o, fmt.Errorf("strategies: ticket: Timeout %s must be positive", o.Timeout)
	case !plainIdentifier.MatchString(o.Table):
		return o, fmt.Errorf("strategies: ticket: Table %q is not a plain SQL identifier", o.Table)
	}
	return o, nil
}

// NewTicket returns the generator for layout over servers. It checks the
// layout and the servers (at least one; names and offsets distinct; offsets
// in 1..Step; dialects known) but does not connect: see [PrepareTicketServers].
func NewTicket(layout Layout, servers []TicketServer, opts TicketOptions) (*Ticket, error) {
	if err := layout.Validate(time.Now()); err != nil {
		return nil, err
	}
	opts, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	if err := validateTicketServers(opts.Step, servers); err != nil {
		return nil, err
	}
	t := &Ticket{layout: layout.Normalized(), opts: opts}
	state := &ticketState{}
	for _, s := range servers {
		ts, err := newTicketServer(s, opts)
		if err != nil {
			return nil, err
		}
		state.servers = append(state.servers, ts)
	}
	state.ring = newRing(state.names(), opts.VirtualNodes)
	t.state.Store(state)
	return t, nil
}

// PrepareTicketServers creates the ticket counter on each server, the table
// or sequence [DefaultTicketTable] ([Ticket.PrepareServers] for another
// [TicketOptions.Table]), and checks that a counter already there
// was made for the server's Offset and this step (0 means the default). It is
// idempotent and safe to run from several processes at once; run it from
// migrations, before the first [Ticket.Generate].
func PrepareTicketServers(ctx context.Context, step int, servers []TicketServer) error {
	return prepareTicketServers(ctx, TicketOptions{Step: step}, servers)
}

func prepareTicketServers(ctx context.Context, opts TicketOptions, servers []TicketServer) error {
	opts, err := opts.normalized()
	if err != nil {
		return err
	}
	if err := validateTicketServers(opts.Step, servers); err != nil {
		return err
	}
	for _, s := range servers {
		sqls, err := ticketSQLFor(s.Dialect, opts.Table, opts.Step, s.Offset)
		if err != nil {
			return err
		}
		if err := prepareTicketServer(ctx, s, sqls); err != nil {
			return err
		}
	}
	return nil
}

// validateTicketServers checks what makes tickets unique: distinct offsets
// in 1..step, and distinct names for the ring.
func validateTicketServers(step int, servers []TicketServer) error {
	if len(servers) == 0 {
		return errors.New("strategies: ticket: no ticket server")
	}
	names := map[string]bool{}
	offsets := map[int]string{}
	for _, s := range servers {
		switch {
		case s.Name == "":
			return fmt.Errorf("strategies: ticket: a server with offset %d has no name", s.Offset)
		case names[s.Name]:
			return fmt.Errorf("strategies: ticket: two servers are named %q", s.Name)
		case s.DB == nil:
			return fmt.Errorf("strategies: ticket: server %q has no DB", s.Name)
		case s.Offset < 1 || s.Offset > step:
			return fmt.Errorf("strategies: ticket: server %q has offset %d, want 1..%d (the step)", s.Name, s.Offset, step)
		case offsets[s.Offset] != "":
			return fmt.Errorf("strategies: ticket: servers %q and %q both have offset %d", offsets[s.Offset], s.Name, s.Offset)
		}
		if s.Dialect != "mysql" && s.Dialect != "postgres" {
			return fmt.Errorf("%w: server %q is %q (ticket supports mysql and postgres)", ErrUnsupportedDialect, s.Name, s.Dialect)
		}
		names[s.Name], offsets[s.Offset] = true, s.Name
	}
	return nil
}

// PrepareServers runs [PrepareTicketServers] for t's servers with t's options.
func (t *Ticket) PrepareServers(ctx context.Context) error {
	return prepareTicketServers(ctx, t.opts, t.Servers())
}

// AddServer prepares s and puts it on the ring, where it takes over about
// 1/(N+1) of the shards. Its Offset must be one no server ever had.
func (t *Ticket) AddServer(ctx context.Context, s TicketServer) error {
	t.addMu.Lock()
	defer t.addMu.Unlock()
	old := t.state.Load()
	all := make([]TicketServer, 0, len(old.servers)+1)
	for _, ts := range old.servers {
		all = append(all, ts.TicketServer)
	}
	if err := validateTicketServers(t.opts.Step, append(all, s)); err != nil {
		return err
	}
	ts, err := newTicketServer(s, t.opts)
	if err != nil {
		return err
	}
	if err := prepareTicketServer(ctx, s, ts.sql); err != nil {
		return err
	}
	next := &ticketState{servers: append(slices.Clip(old.servers), ts)}
	next.ring = newRing(next.names(), t.opts.VirtualNodes)
	t.state.Store(next)
	return nil
}

// Generate implements [Generator]. target is not used: the tickets come from
// the ticket servers, each logical shard's from the server the ring gives it.
func (t *Ticket) Generate(ctx context.Context, _ Target, shards []int, ids []int64) error {
	if len(shards) != len(ids) {
		return fmt.Errorf("strategies: ticket: %d shards for %d ids", len(shards), len(ids))
	}
	if len(ids) == 0 {
		return nil
	}
	if t.closed.Load() {
		return errors.New("strategies: ticket: generator is closed")
	}
	call := &ticketCall{t: t, state: t.state.Load(), now: time.Now(), resort: -1}
	call.skip = make([]bool, len(call.state.servers))
	call.tried = make([]bool, len(call.state.servers))
	call.probes = make([]bool, len(call.state.servers))
	pending := make([]int, len(ids))
	for i := range pending {
		pending[i] = i
	}
	for len(pending) > 0 {
		groups, err := call.route(shards, pending)
		if err != nil {
			return err
		}
		pending = pending[:0]
		for server, group := range groups {
			if len(group) == 0 {
				continue
			}
			failed, err := call.fetch(ctx, server, shards, ids, group)
			if err != nil {
				return err
			}
			pending = append(pending, failed...)
		}
		if len(pending) > 0 {
			t.failovers.Add(1)
		}
	}
	t.issued.Add(uint64(len(ids)))
	return nil
}

// Stats implements [Reporter]. Waits.Failover counts the requests that found
// their server failing and went to another.
func (t *Ticket) Stats() Stats {
	st := Stats{Issued: t.issued.Load(), Waits: Waits{Failover: t.failovers.Load()}}
	for _, s := range t.state.Load().servers {
		st.Servers = append(st.Servers, s.stateOf())
	}
	return st
}

// Servers returns the servers on the ring, in the order they were given to
// [NewTicket] and then added, for a caller that checks on them.
func (t *Ticket) Servers() []TicketServer {
	state := t.state.Load()
	servers := make([]TicketServer, len(state.servers))
	for i, ts := range state.servers {
		servers[i] = ts.TicketServer
	}
	return servers
}

// Close releases the pinned connections. Generate fails afterwards.
func (t *Ticket) Close() error {
	t.closed.Store(true)
	for _, s := range t.state.Load().servers {
		s.closeIdle()
	}
	return nil
}

// ticketState is the servers and their ring, replaced whole by AddServer.
type ticketState struct {
	servers []*ticketServer
	ring    *ring
}

func (st *ticketState) names() []string {
	names := make([]string, len(st.servers))
	for i, s := range st.servers {
		names[i] = s.Name
	}
	return names
}

// ticketCall is the routing state of one Generate call.
type ticketCall struct {
	t     *Ticket
	state *ticketState
	now   time.Time
	skip  []bool // failed, or being probed by another caller, in this call
	tried []bool // asked in this call
	// probes are the servers this call tries although they are down: a
	// claimed retry, or the last resort
	probes []bool
	// resort is the server tried once when every server was down; -1 before.
	resort int
}

// route groups pending by the server each one's shard goes to now.
func (c *ticketCall) route(shards, pending []int) ([][]int, error) {
	groups := make([][]int, len(c.state.servers))
	mask := c.t.layout.ShardCount() - 1
	for _, i := range pending {
		key := uint64(shards[i] & mask)
		server, err := c.serverFor(key)
		if err != nil {
			return nil, err
		}
		groups[server] = append(groups[server], i)
	}
	return groups, nil
}

// serverFor finds key's server: the first one clockwise that is up, or
// down but due for another try, which this call then claims.
func (c *ticketCall) serverFor(key uint64) (int, error) {
	servers := c.state.servers
	for {
		i, ok := c.state.ring.lookup(key, func(i int) bool { return !c.skip[i] && servers[i].usable(c.now) })
		if !ok {
			return c.lastResortServer()
		}
		if c.tried[i] || c.probes[i] { // asked, or claimed for another row, in this call
			return i, nil
		}
		// A down server is probed by one request at a time.
		if ok, probe := servers[i].claim(c.now, c.t.opts.Timeout); ok {
			c.probes[i] = c.probes[i] || probe
			return i, nil
		}
		c.skip[i] = true
	}
}

// lastResortServer is, when every server is down, the one due first among
// those this call has not asked and no other request is trying: it is tried
// once, then ErrNoTicketServer. Like a retry, it is claimed, so a down
// server is tried by one request at a time: the requests that come
// meanwhile fail at once rather than each wait a Timeout behind the others
// (on MySQL/MariaDB, one after another, for the pinned connection).
func (c *ticketCall) lastResortServer() (int, error) {
	if c.resort >= 0 {
		if c.skip[c.resort] {
			return 0, c.noServer()
		}
		return c.resort, nil
	}
	considered := make([]bool, len(c.state.servers))
	for {
		best := -1
		var bestAt time.Time
		for i, s := range c.state.servers {
			if c.tried[i] || considered[i] {
				continue
			}
			if at := s.stateOf().RetryAt; best < 0 || at.Before(bestAt) {
				best, bestAt = i, at
			}
		}
		if best < 0 {
			return 0, c.noServer()
		}
		considered[best] = true
		if c.probes[best] || c.state.servers[best].claimLastResort(c.now, c.t.opts.Timeout) { // claimed by this call already, or now
			c.resort, c.skip[best], c.probes[best] = best, false, true
			return best, nil
		}
		c.skip[best] = true
	}
}

func (c *ticketCall) noServer() error {
	var errs []error
	for _, s := range c.state.servers {
		st := s.stateOf()
		s.mu.Lock()
		last := s.lastErr
		s.mu.Unlock()
		if last == nil {
			last = errors.New("being probed by another request")
		}
		errs = append(errs, fmt.Errorf("%q (up %t, retry at %s): %w", s.Name, st.Up, st.RetryAt.Format(time.RFC3339Nano), last))
	}
	return fmt.Errorf("%w: %w", ErrNoTicketServer, errors.Join(errs...))
}

// fetch fills ids[group] from server. A server failure marks it down and
// returns group for another server; the caller's cancellation and exhausted
// tickets are returned as errors.
func (c *ticketCall) fetch(ctx context.Context, server int, shards []int, ids []int64, group []int) ([]int, error) {
	s := c.state.servers[server]
	c.tried[server] = true
	tickets, err := s.tickets(ctx, c.t.opts, len(group), c.probes[server])
	if err != nil {
		if ctx.Err() != nil {
			// The caller gave up; the server may be fine.
			return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		c.skip[server] = true // marked down by tickets, unless it went down meanwhile
		return group, nil
	}
	if s.succeeded(uint64(len(tickets))) {
		c.t.opts.Log.Info("shardid: ticket server is back", "server", s.Name)
	}
	l := c.t.layout
	for k, i := range group {
		ticket := tickets[k]
		if ticket <= 0 || ticket>>l.SequenceBits >= 1<<l.TimeBits {
			return nil, fmt.Errorf("%w: ticket %d of %q does not fit %d time and %d sequence bits",
				ErrTimeExhausted, ticket, s.Name, l.TimeBits, l.SequenceBits)
		}
		ids[i] = l.ComposeTicks(ticket>>l.SequenceBits, shards[i], int(ticket&(1<<l.SequenceBits-1)))
	}
	return nil, nil
}

// errWentDown is returned to a request that queued for a server's pinned
// connection while the server was found down.
var errWentDown = errors.New("went down while the request waited")

// ticketServer is one server with its health and pinned connection.
type ticketServer struct {
	TicketServer
	sql ticketSQL

	issued, failures atomic.Uint64

	// protects the fields below
	mu       sync.Mutex
	down     bool
	probing  bool // a caller claimed the retry of a down server
	strikes  int  // consecutive failures
	retryAt  time.Time
	lastErr  error
	isClosed bool

	// pin holds the pinned connection (nil until opened) while no request
	// uses it. One request at a time: concurrent REPLACEs of the ticket row
	// deadlock on InnoDB, and one at a time gives more tickets per second.
	pin chan *sql.Conn
}

func newTicketServer(s TicketServer, opts TicketOptions) (*ticketServer, error) {
	sqls, err := ticketSQLFor(s.Dialect, opts.Table, opts.Step, s.Offset)
	if err != nil {
		return nil, err
	}
	ts := &ticketServer{TicketServer: s, sql: sqls, pin: make(chan *sql.Conn, 1)}
	ts.pin <- nil
	return ts, nil
}

func (s *ticketServer) usable(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.down || !now.Before(s.retryAt)
}

// claim reports whether the caller may ask the server now: it is up, or it
// is due for a retry that no other caller has claimed (then probe is set).
// The claim keeps others away while the probe runs, at most timeout.
func (s *ticketServer) claim(now time.Time, timeout time.Duration) (ok, probe bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down {
		return true, false
	}
	if now.Before(s.retryAt) {
		return false, false
	}
	s.retryAt, s.probing = now.Add(timeout), true
	return true, true
}

// claimLastResort claims a down server for a try before its back-off has
// passed, unless another request is trying it: the claim keeps others away
// while the try runs, at most timeout.
func (s *ticketServer) claimLastResort(now time.Time, timeout time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.probing && now.Before(s.retryAt) {
		return false
	}
	s.probing = true
	if until := now.Add(timeout); until.After(s.retryAt) {
		s.retryAt = until
	}
	return true
}

// abandon ends a claimed try of a down server that its caller gave up
// before the server answered: the next request may try it at once, rather
// than fail for the rest of the claim.
func (s *ticketServer) abandon(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down && s.probing {
		s.probing, s.retryAt = false, now
	}
}

// failed records a failed request. Only the first failure after the server
// was up, or a failed probe, lengthens the back-off: requests that were in
// flight when it went down fail together.
func (s *ticketServer) failed(err error, now time.Time, opts TicketOptions) {
	s.failures.Add(1)
	if s.markFailed(err, now, opts) {
		opts.Log.Warn("shardid: ticket server is down; its shards fail over to the next servers", "server", s.Name, "error", err)
	}
}

// markFailed records the failure; it reports whether the server was up.
func (s *ticketServer) markFailed(err error, now time.Time, opts TicketOptions) (wasUp bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = err
	wasUp = !s.down
	if !s.down || s.probing {
		s.strikes++
		d := opts.Backoff
		for i := 1; i < s.strikes && d < opts.MaxBackoff; i++ {
			d *= 2
		}
		s.down, s.probing, s.retryAt = true, false, now.Add(min(d, opts.MaxBackoff))
	}
	return wasUp
}

// succeeded records a served request; it reports whether the server was down.
func (s *ticketServer) succeeded(n uint64) (wasDown bool) {
	s.issued.Add(n)
	s.mu.Lock()
	defer s.mu.Unlock()
	wasDown = s.down
	s.down, s.probing, s.strikes, s.retryAt = false, false, 0, time.Time{}
	return wasDown
}

func (s *ticketServer) stateOf() ServerState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ServerState{Name: s.Name, Up: !s.down, Issued: s.issued.Load(), Failures: s.failures.Load(), RetryAt: s.retryAt}
}

// tickets takes n tickets, ascending; each statement gets opts.Timeout.
// probe says the caller is to try the server even if it is down. A failure
// that is the server's, not the caller's, marks it down, before the pinned
// connection passes to the next request queued for it.
func (s *ticketServer) tickets(ctx context.Context, opts TicketOptions, n int, probe bool) ([]int64, error) {
	out := make([]int64, 0, n)
	var err error
	serversFault := func(err error) bool {
		return err != nil && ctx.Err() == nil && !errors.Is(err, errWentDown)
	}
	if s.sql.session == "" {
		out, err = s.sql.next(ctx, s.DB, n, opts.Timeout, out)
		err = timedOut(ctx, err, opts.Timeout)
		if serversFault(err) {
			s.failed(err, time.Now(), opts)
		}
	} else {
		var conn *sql.Conn
		if conn, err = s.pinned(ctx, opts, probe, serversFault); err == nil {
			out, err = s.sql.next(ctx, conn, n, opts.Timeout, out)
			err = timedOut(ctx, err, opts.Timeout)
			if serversFault(err) {
				s.failed(err, time.Now(), opts)
			}
			s.release(conn, err)
		}
	}
	if err != nil {
		if probe && !serversFault(err) {
			s.abandon(time.Now()) // the caller gave up before the server answered
		}
		return nil, fmt.Errorf("strategies: ticket: server %q: %w", s.Name, err)
	}
	slices.Sort(out)
	return out, nil
}

// pinned waits for the pinned connection and opens it, with the session
// set, if there is none; a server that fails to open one is marked down
// before the next request may try. The caller gives it back with release.
func (s *ticketServer) pinned(ctx context.Context, opts TicketOptions, probe bool, serversFault func(error) bool) (*sql.Conn, error) {
	var conn *sql.Conn
	select {
	case conn = <-s.pin:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// The server went down while this request queued: the others queued
	// behind it should not each wait for it to time out.
	if !probe && !s.stateOf().Up {
		s.pin <- conn
		return nil, errWentDown
	}
	if conn != nil {
		return conn, nil
	}
	opening, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	conn, err := s.DB.Conn(opening)
	if err == nil {
		if _, err = conn.ExecContext(opening, s.sql.session); err == nil && s.sql.sessionCheck != nil {
			err = s.sql.sessionCheck(opening, conn)
		}
		if err != nil {
			discard(conn)
		}
	}
	if err != nil {
		err = timedOut(ctx, err, opts.Timeout)
		if serversFault(err) {
			s.failed(err, time.Now(), opts)
		}
		s.pin <- nil
		return nil, err
	}
	return conn, nil
}

// timedOut tells the end of a statement's own Timeout, while the caller's
// ctx is live, as the server's silence: that deadline is not the caller's,
// and an error wrapping context.DeadlineExceeded would read as if it were.
func timedOut(ctx context.Context, err error, timeout time.Duration) error {
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s, the Timeout (%v)", timeout, err)
	}
	return err
}

// release gives conn back, or closes it if it failed (its state is unknown:
// the server may be gone) or the generator is closed.
func (s *ticketServer) release(conn *sql.Conn, err error) {
	s.mu.Lock()
	closed := s.isClosed
	s.mu.Unlock()
	if err != nil || closed {
		discard(conn)
		conn = nil
	}
	s.pin <- conn
}

func (s *ticketServer) closeIdle() {
	s.mu.Lock()
	s.isClosed = true
	s.mu.Unlock()
	// A request holding the connection closes it in release.
	select {
	case conn := <-s.pin:
		if conn != nil {
			discard(conn)
		}
		s.pin <- nil
	default:
	}
}

// discard closes conn's driver connection instead of returning it to the
// pool: its session variables would number the application's own inserts.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}
