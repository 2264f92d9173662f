// Package shardidprom exports a shardid plugin's metrics to Prometheus: the
// statements it routed by physical database and kind, fan-outs, IDs issued
// and waited for, its snowflake worker leases, the map version it routes
// by, whether each physical database answers, their connection pools, the
// moves the process runs and the writes their cutovers held, and its writes
// over several databases committed in two phases. It is a module of its own, so that
// the library does not depend on client_golang.
//
//	prometheus.MustRegister(shardidprom.New(ids))
package shardidprom

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/strategies"
)

// Collector is a prometheus.Collector over one plugin.
type Collector struct {
	p           *shardid.Plugin
	pingTimeout time.Duration
}

// Option configures a Collector.
type Option func(*Collector)

// WithPingTimeout bounds how long a scrape waits for each physical database
// to answer for shardid_physical_up. Default (and for d <= 0): 1s.
func WithPingTimeout(d time.Duration) Option {
	return func(c *Collector) {
		if d > 0 {
			c.pingTimeout = d
		}
	}
}

// New returns the collector of p; it makes p count its statements. A nil p
// collects nothing.
func New(p *shardid.Plugin, opts ...Option) *Collector {
	if p != nil {
		p.CountStatements()
	}
	c := &Collector{p: p, pingTimeout: time.Second}
	for _, o := range opts {
		o(c)
	}
	return c
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	statements      = desc("shardid_statements_total", "Statements run on a physical database, by kind (a fan-out's parts each count on their own).", "physical", "kind")
	statementErrors = desc("shardid_statement_errors_total", "Statements that failed on a physical database, by kind.", "physical", "kind")
	durations       = desc("shardid_statement_duration_seconds", "How long statements took, from the plugin's first callback to its last.", "physical", "kind")
	fanOuts         = desc("shardid_fanout_statements_total", "Statements sent to more than one physical database, by kind.", "kind")
	issued          = desc("shardid_ids_issued_total", "IDs handed out, by strategy.", "strategy")
	waits           = desc("shardid_id_waits_total", "Times a caller waited for an ID, by strategy and reason.", "strategy", "reason")
	failovers       = desc("shardid_ticket_failovers_total", "Ticket requests that a failed server passed to the next.")
	up              = desc("shardid_physical_up", "Whether the physical database answered a ping during the scrape (1) or not (0).", "physical")
	pingSeconds     = desc("shardid_physical_ping_seconds", "The round trip of the scrape's ping of the physical database.", "physical")
	ticketUp        = desc("shardid_ticket_server_up", "Whether the ticket server answered a ping during the scrape (1) or not (0).", "server")
	poolOpen        = desc("shardid_pool_open_connections", "Connections open, in use or idle.", "physical")
	poolInUse       = desc("shardid_pool_in_use_connections", "Connections in use.", "physical")
	poolIdle        = desc("shardid_pool_idle_connections", "Idle connections.", "physical")
	poolWaits       = desc("shardid_pool_wait_count_total", "Times a statement waited for a connection.", "physical")
	poolWaitSeconds = desc("shardid_pool_wait_seconds_total", "Time statements waited for a connection.", "physical")
	moveCopied      = desc("shardid_move_rows_copied", "Rows a running move has copied, by table.", "from", "to", "logical", "table")
	moveBacklog     = desc("shardid_move_backlog", "Changes logged on a running move's source and not yet replayed.", "from", "to", "logical")
	moveFrozen      = desc("shardid_move_frozen_seconds", "How long a running move has refused writes of its range.", "from", "to", "logical")
	transactions    = desc("shardid_transactions_total", "Writes over several databases committed in two phases, and transactions begun AcrossShards, that their process ended, by outcome: committed, rolled_back, in_doubt (left to recovery).", "outcome")
	recovered       = desc("shardid_transaction_branches_recovered_total", "Prepared branches recovery finished, by outcome: commit, rollback.", "outcome")
	branches        = desc("shardid_transaction_branches_total", "Branches of the writes over several databases that ended.")
	inDoubt         = desc("shardid_transaction_in_doubt_seconds_total", "Time from a write's first prepare to its last commit, summed.")
	mapVersion      = desc("shardid_map_version", "The version of the shared map this process routes by (0 without Config.Shards).")
	leaseHeld       = desc("shardid_snowflake_lease_held", "Whether this process holds a snowflake worker lease on the physical database, so that its IDs there may be made (1) or not (0).", "physical")
	leaseWorker     = desc("shardid_snowflake_lease_worker", "The worker ID of this process's snowflake lease on the physical database.", "physical")
	leaseLost       = desc("shardid_snowflake_lease_lost_total", "Snowflake worker leases of this process found lost (expired or taken) on the physical database.", "physical")
	movedHeld       = desc("shardid_moved_writes_held_total", "Writes a move's cutover froze that the plugin held, to retry them where the map sends them.")
	movedRetried    = desc("shardid_moved_writes_retried_total", "Of the writes held, those written on the new database.")
	movedFailed     = desc("shardid_moved_writes_failed_total", "Of the writes held, those refused with ErrShardMoved.")
)

var all = []*prometheus.Desc{statements, statementErrors, durations, fanOuts, issued, waits, failovers, up, pingSeconds, ticketUp,
	poolOpen, poolInUse, poolIdle, poolWaits, poolWaitSeconds, moveCopied, moveBacklog, moveFrozen, transactions, recovered, branches, inDoubt,
	mapVersion, leaseHeld, leaseWorker, leaseLost, movedHeld, movedRetried, movedFailed}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range all {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.p == nil {
		return
	}
	c.collectStatements(ch)
	c.collectIDs(ch)
	c.collectTransactions(ch)
	c.collectHealth(ch)
	for name, s := range c.p.PoolStats() {
		ch <- prometheus.MustNewConstMetric(poolOpen, prometheus.GaugeValue, float64(s.OpenConnections), name)
		ch <- prometheus.MustNewConstMetric(poolInUse, prometheus.GaugeValue, float64(s.InUse), name)
		ch <- prometheus.MustNewConstMetric(poolIdle, prometheus.GaugeValue, float64(s.Idle), name)
		ch <- prometheus.MustNewConstMetric(poolWaits, prometheus.CounterValue, float64(s.WaitCount), name)
		ch <- prometheus.MustNewConstMetric(poolWaitSeconds, prometheus.CounterValue, s.WaitDuration.Seconds(), name)
	}
	ch <- prometheus.MustNewConstMetric(mapVersion, prometheus.GaugeValue, float64(c.p.MapVersion()))
	moved := c.p.MovedWrites()
	ch <- prometheus.MustNewConstMetric(movedHeld, prometheus.CounterValue, float64(moved.Held))
	ch <- prometheus.MustNewConstMetric(movedRetried, prometheus.CounterValue, float64(moved.Retried))
	ch <- prometheus.MustNewConstMetric(movedFailed, prometheus.CounterValue, float64(moved.Failed))
	for _, m := range c.p.MoveStats() {
		labels := []string{m.From, m.To, rangeLabel(m.Logical)}
		for table, n := range m.Copied {
			ch <- prometheus.MustNewConstMetric(moveCopied, prometheus.GaugeValue, float64(n), append(labels, table)...)
		}
		ch <- prometheus.MustNewConstMetric(moveBacklog, prometheus.GaugeValue, float64(m.Backlog), labels...)
		ch <- prometheus.MustNewConstMetric(moveFrozen, prometheus.GaugeValue, m.Frozen.Seconds(), labels...)
	}
}

func (c *Collector) collectStatements(ch chan<- prometheus.Metric) {
	for _, s := range c.p.StatementStats() {
		ch <- prometheus.MustNewConstMetric(statements, prometheus.CounterValue, float64(s.Count), s.Physical, s.Kind)
		ch <- prometheus.MustNewConstMetric(statementErrors, prometheus.CounterValue, float64(s.Errors), s.Physical, s.Kind)
		buckets := make(map[float64]uint64, len(shardid.StatementBounds()))
		var cumulative uint64
		for i, bound := range shardid.StatementBounds() {
			cumulative += s.Buckets[i]
			buckets[bound] = cumulative
		}
		ch <- prometheus.MustNewConstHistogram(durations, s.Count, s.Seconds, buckets, s.Physical, s.Kind)
	}
	for kind, n := range c.p.FanOutStats() {
		ch <- prometheus.MustNewConstMetric(fanOuts, prometheus.CounterValue, float64(n), kind)
	}
}

func (c *Collector) collectTransactions(ch chan<- prometheus.Metric) {
	t := c.p.TransactionStats()
	for outcome, n := range map[string]uint64{"committed": t.Committed, "rolled_back": t.RolledBack, "in_doubt": t.InDoubt} {
		ch <- prometheus.MustNewConstMetric(transactions, prometheus.CounterValue, float64(n), outcome)
	}
	ch <- prometheus.MustNewConstMetric(recovered, prometheus.CounterValue, float64(t.RecoveredCommit), "commit")
	ch <- prometheus.MustNewConstMetric(recovered, prometheus.CounterValue, float64(t.RecoveredRollback), "rollback")
	ch <- prometheus.MustNewConstMetric(branches, prometheus.CounterValue, float64(t.Branches))
	ch <- prometheus.MustNewConstMetric(inDoubt, prometheus.CounterValue, t.InDoubtSeconds)
}

func (c *Collector) collectIDs(ch chan<- prometheus.Metric) {
	var failed uint64
	for strategy, s := range c.p.Stats() {
		ch <- prometheus.MustNewConstMetric(issued, prometheus.CounterValue, float64(s.Issued), strategy)
		for reason, n := range waitReasons(s.Waits) {
			ch <- prometheus.MustNewConstMetric(waits, prometheus.CounterValue, float64(n), strategy, reason)
		}
		failed += s.Waits.Failover
		for _, l := range s.Leases {
			held := 0.0
			if l.Held {
				held = 1
			}
			ch <- prometheus.MustNewConstMetric(leaseHeld, prometheus.GaugeValue, held, l.Database)
			ch <- prometheus.MustNewConstMetric(leaseWorker, prometheus.GaugeValue, float64(l.Worker), l.Database)
			ch <- prometheus.MustNewConstMetric(leaseLost, prometheus.CounterValue, float64(l.Lost), l.Database)
		}
	}
	ch <- prometheus.MustNewConstMetric(failovers, prometheus.CounterValue, float64(failed))
}

func waitReasons(w strategies.Waits) map[string]uint64 {
	return map[string]uint64{"sequence_full": w.SequenceFull, "clock_behind": w.ClockBehind, "refill": w.Refill, "failover": w.Failover}
}

// collectHealth pings every physical database and ticket server, each
// within the ping timeout.
func (c *Collector) collectHealth(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.pingTimeout)
	defer cancel()
	results, err := c.p.Ping(ctx)
	if err != nil { // a closed plugin serves no database; an invalid metric would fail the whole scrape
		for _, name := range c.p.Physicals() {
			ch <- prometheus.MustNewConstMetric(up, prometheus.GaugeValue, 0, name)
		}
		return
	}
	for _, r := range results {
		value := 1.0
		if r.Err != nil {
			value = 0
		}
		if r.Kind == shardid.KindTicket {
			ch <- prometheus.MustNewConstMetric(ticketUp, prometheus.GaugeValue, value, r.Name)
			continue
		}
		ch <- prometheus.MustNewConstMetric(up, prometheus.GaugeValue, value, r.Name)
		if r.Err == nil {
			ch <- prometheus.MustNewConstMetric(pingSeconds, prometheus.GaugeValue, r.RTT.Seconds(), r.Name)
		}
	}
}

func rangeLabel(r shardid.Range) string {
	return strconv.Itoa(r.From) + "-" + strconv.Itoa(r.To)
}
