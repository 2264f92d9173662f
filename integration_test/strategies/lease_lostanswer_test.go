package strategies_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardid/shardid/integration_test/internal/testdb"
	. "github.com/shardid/shardid/strategies"
)

// answerLoser is a driver.Connector whose next write (INSERT or UPDATE)
// naming the armed text runs on the server to its end, and whose answer is then lost: the
// caller gets its context's error, as when its deadline passes after the
// server applied the statement but before the answer came back, and the
// connection is dropped.
type answerLoser struct {
	driver.Connector
	mu    sync.Mutex
	armed string
	fired int
}

func (a *answerLoser) arm(text string) { a.mu.Lock(); a.armed = text; a.mu.Unlock() }

func (a *answerLoser) take(query string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	write := strings.HasPrefix(query, "INSERT") || strings.HasPrefix(query, "UPDATE")
	if a.armed == "" || !write || !strings.Contains(query, a.armed) {
		return false
	}
	a.armed = ""
	a.fired++
	return true
}

func (a *answerLoser) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := a.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &answerLoserConn{Conn: c, loser: a}, nil
}

type answerLoserConn struct {
	driver.Conn
	loser *answerLoser
	lost  bool
}

func (c *answerLoserConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.lost {
		return nil, driver.ErrBadConn
	}
	ctx = context.WithoutCancel(ctx)
	res, err := c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	if errors.Is(err, driver.ErrSkip) { // MySQL's driver prepares statements with arguments
		var stmt driver.Stmt
		if stmt, err = c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query); err != nil {
			return nil, err
		}
		res, err = stmt.(driver.StmtExecContext).ExecContext(ctx, args)
		_ = stmt.Close()
	}
	if err == nil && c.loser.take(query) {
		c.lost = true
		return nil, context.DeadlineExceeded
	}
	return res, err
}

func (c *answerLoserConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if c.lost {
		return nil, driver.ErrBadConn
	}
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *answerLoserConn) IsValid() bool { return !c.lost }

func (c *answerLoserConn) ResetSession(ctx context.Context) error {
	if c.lost {
		return driver.ErrBadConn
	}
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *answerLoserConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

// answerLosingTargets are MariaDB's and PostgreSQL's test databases, each in
// a pool whose statements' answers can be lost.
func answerLosingTargets(t *testing.T) (targets []Target, losers []*answerLoser) {
	t.Helper()
	add := func(name, dialect string, connector driver.Connector) {
		loser := &answerLoser{Connector: connector}
		db := sql.OpenDB(loser)
		t.Cleanup(func() { _ = db.Close() })
		targets = append(targets, Target{Name: name, Dialect: dialect, Conn: db, DB: db})
		losers = append(losers, loser)
	}
	open := func(name, dialect, driverName, dsn string) {
		db, err := sql.Open(driverName, dsn)
		must(t, err)
		connector, err := db.Driver().(driver.DriverContext).OpenConnector(dsn)
		must(t, err)
		_ = db.Close()
		add(name, dialect, connector)
	}
	if testdb.Set(t, mysqlDSNVar) {
		open("mysql", "mysql", "mysql", mysqlDSN(t, -1))
	}
	if testdb.Set(t, postgresDSNVar) {
		open("postgres", "postgres", "pgx", postgresDSN(t, -1))
	}
	return targets, losers
}

// A worker ID claim that the server applied but whose answer was lost leaves
// the lease row held under this process's owner. The process takes that
// row up again rather than another worker ID: lost answers never use up the
// worker IDs, and another process still finds the rest free.
func TestLeaseClaimWhoseAnswerWasLostIsTakenUpAgain(t *testing.T) {
	targets, losers := answerLosingTargets(t)
	for i, target := range targets {
		t.Run(target.Dialect, func(t *testing.T) {
			table := leaseTableFor(t, target)
			lo := LeaseOptions{Table: table, TTL: time.Minute} // no lease expires during the test
			twoWorkers := Layout{WorkerBits: 1}
			g := leased(t, twoWorkers, lo)
			ids := make([]int64, 3)
			for round := range 3 {
				losers[i].arm(table)
				err := g.Generate(context.Background(), target, []int{0, 1, 2}, ids)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("round %d: a claim whose answer was lost: %v, want the context's error", round, err)
				}
			}
			if err := g.Generate(context.Background(), target, []int{0, 1, 2}, ids); err != nil {
				t.Fatalf("after lost answers: %v", err)
			}
			other := leased(t, twoWorkers, lo)
			if err := other.Generate(context.Background(), target, []int{0}, ids[:1]); err != nil {
				t.Fatalf("another process, with one worker ID free: %v", err)
			}
			var n int
			must(t, target.DB.QueryRow("SELECT COUNT(*) FROM "+table+" WHERE expires_at > 0").Scan(&n))
			if n != 2 {
				t.Fatalf("%d live lease rows, want 2", n)
			}
		})
	}
}

// Close returns at once though a first ID's worker ID claim is stalled on a
// database that stopped answering (its caller has no deadline); that claim,
// once the database answers again, takes no lease after Close: it gives the
// worker ID back and fails (ErrLeaseLost, or the stall's own error), and no
// heartbeat runs on.
func TestLeaseCloseDoesNotWaitForAClaimStalledOnTheDatabase(t *testing.T) {
	for _, d := range ticketDBs(t) {
		t.Run(d.dialect, func(t *testing.T) {
			direct := openTarget(t, "direct", d.dialect, d.driver, d.dsn(-1))
			table := leaseTableFor(t, direct)
			proxy := newTCPProxy(t, d.target(d.dsn(-1)))
			target := openTarget(t, "stalled", d.dialect, d.driver, d.viaProxy(d.dsn(-1), proxy.Addr()))
			target.DB.SetMaxIdleConns(0) // every statement dials: through the stall
			g, err := NewLeasedSnowflake(oneWorker, LeaseOptions{Table: table, TTL: 3 * time.Second})
			must(t, err)
			must(t, g.Prepare(context.Background(), Target{Name: "direct", Dialect: d.dialect, Conn: direct.DB, DB: direct.DB})) // the table exists
			proxy.Stall()
			generated := make(chan error, 1)
			go func() { generated <- g.Generate(context.Background(), target, []int{0}, make([]int64, 1)) }()
			time.Sleep(200 * time.Millisecond) // the claim is under way
			start := time.Now()
			closed := make(chan error, 1)
			go func() { closed <- g.Close() }()
			select {
			case err := <-closed:
				must(t, err)
				if took := time.Since(start); took > time.Second {
					t.Fatalf("Close took %s", took)
				}
			case <-time.After(2 * time.Second):
				proxy.Restore()
				<-closed
				t.Fatal("Close waited for a claim stalled on the database")
			}
			proxy.Restore()
			if err := <-generated; err == nil {
				t.Fatal("the stalled claim took a lease after Close")
			}
			var held int
			must(t, direct.DB.QueryRow("SELECT COUNT(*) FROM "+table+" WHERE expires_at > 0").Scan(&held))
			if held != 0 {
				t.Fatalf("%d lease rows held after Close and the stalled claim's end", held)
			}
		})
	}
}

// Close does not wait either when the heartbeat, its lease taken over by
// another process, would take another while a first ID's claim stalls on
// the database: the heartbeat leaves the taking to that claim.
func TestLeaseCloseDoesNotWaitForAHeartbeatBehindAStalledClaim(t *testing.T) {
	for _, d := range ticketDBs(t) {
		t.Run(d.dialect, func(t *testing.T) {
			direct := openTarget(t, "direct", d.dialect, d.driver, d.dsn(-1))
			table := leaseTableFor(t, direct)
			proxy := newTCPProxy(t, d.target(d.dsn(-1)))
			target := openTarget(t, "stalled", d.dialect, d.driver, d.viaProxy(d.dsn(-1), proxy.Addr()))
			target.DB.SetMaxIdleConns(0) // every statement dials: through the stall
			// Each renewal, bounded by TTL/3, dials and logs in first: a
			// shorter TTL leaves a busy machine's renewals no time to finish.
			ttl := 1500 * time.Millisecond
			g, err := NewLeasedSnowflake(oneWorker, LeaseOptions{Table: table, TTL: ttl})
			must(t, err)
			generate(t, g, target, 1)
			// Another process takes the worker ID over; the heartbeat finds it.
			_, err = direct.DB.Exec("UPDATE " + table + " SET owner = 'another/w0', generation = generation + 1, expires_at = expires_at + 600000 WHERE worker_id = 0")
			must(t, err)
			deadline := time.Now().Add(10 * time.Second)
			for g.Stats().Leases[0].Lost == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the heartbeat did not find its lease taken")
				}
				time.Sleep(10 * time.Millisecond)
			}
			proxy.Stall()
			generated := make(chan error, 1)
			go func() { generated <- g.Generate(context.Background(), target, []int{0}, make([]int64, 1)) }()
			time.Sleep(2 * ttl) // the claim stalls; the heartbeat beats meanwhile
			start := time.Now()
			closed := make(chan error, 1)
			go func() { closed <- g.Close() }()
			select {
			case <-closed:
				if took := time.Since(start); took > time.Second {
					t.Fatalf("Close took %s", took)
				}
			case <-time.After(2 * time.Second):
				proxy.Restore()
				<-closed
				t.Fatal("Close waited for a heartbeat behind a claim stalled on the database")
			}
			proxy.Restore()
			if err := <-generated; err == nil {
				t.Fatal("the stalled claim took a lease after Close")
			}
		})
	}
}
