package integration

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/strategies"
)

// Models of the pods test, one per strategy with a source outside the
// process: each pod writes rows of every one.
type (
	PodFlake struct {
		ID  int64  `shardid:"strategy:snowflake"`
		Pod string `gorm:"size:16"`
	}
	PodSegment struct {
		ID  int64  `shardid:"strategy:segment"`
		Pod string `gorm:"size:16"`
	}
	PodInstagram struct {
		ID  int64  `shardid:""`
		Pod string `gorm:"size:16"`
	}
	PodTicket struct {
		ID  int64  `shardid:"strategy:ticket"`
		Pod string `gorm:"size:16"`
	}
)

const (
	podsTTL = 1200 * time.Millisecond
	// Ticket servers: physical databases 2 and 3, offsets 1 and 2.
	podsTicketFirst = 2
	// The counter of the test's own: other tests give these servers other offsets.
	podsTicketTable = "shardid_pods_tickets"
)

// Two worker IDs per database: two pods hold both, and a third takes one
// only when a pod's lease has expired or was released.
var podsLayout = shardid.Layout{WorkerBits: 1}

// podsShards are the logical shards the pods write, two on each database,
// so that the pods contend for each.
func podsShards() []int {
	count := podsLayout.ShardCount()
	return []int{1, 2, count/2 + 1, count/2 + 2}
}

// idPod is one application process: its own gorm.DB and plugin, reaching
// each physical database and ticket server through a proxy of its own.
type idPod struct {
	name    string
	db      *gorm.DB
	p       *shardid.Plugin
	proxies []*chaosProxy // shard databases 0, 1, then ticket servers
	log     lockedBuffer
}

// podDialector opens b's i-th physical database through proxy; every
// statement is sent as one message with its text and its values (no
// prepared statements), so that a proxy can tell statements apart by it,
// and cut the connection once the server has run one.
func podDialector(t testing.TB, b backend, i int, proxy func(upstream string) string) gorm.Dialector {
	t.Helper()
	if b.name == "mariadb" {
		cfg, err := mysqldriver.ParseDSN(requireDSN(t, mysqlDSNVar))
		must(t, err)
		cfg.Addr = proxy(cfg.Addr)
		cfg.Timeout = time.Second
		cfg.InterpolateParams = true
		cfg.DBName = fmt.Sprintf("%s_%d", cfg.DBName, i)
		return mysql.Open(cfg.FormatDSN())
	}
	u, err := url.Parse(requireDSN(t, postgresDSNVar))
	must(t, err)
	u.Host = proxy(u.Host)
	u.Path = fmt.Sprintf("%s_%d", u.Path, i)
	q := u.Query()
	q.Set("connect_timeout", "1")
	q.Set("default_query_exec_mode", "simple_protocol")
	u.RawQuery = q.Encode()
	return postgres.Open(u.String())
}

func openIDPod(t *testing.T, b backend, name string, first bool) *idPod {
	t.Helper()
	pod := &idPod{name: name}
	via := func(i int) gorm.Dialector {
		return podDialector(t, b, i, func(upstream string) string {
			proxy := newChaosProxy(t, upstream)
			pod.proxies = append(pod.proxies, proxy)
			return proxy.listener.Addr().String()
		})
	}
	count := podsLayout.ShardCount()
	cfg := shardid.Config{
		Layout: podsLayout,
		Shards: []shardid.Shard{
			{Name: "pods-0", Dialector: via(0), Logical: []shardid.Range{{From: 0, To: count/2 - 1}}},
			{Name: "pods-1", Dialector: via(1), Logical: []shardid.Range{{From: count / 2, To: count - 1}}},
		},
		Snowflake: shardid.SnowflakeConfig{Lease: strategies.LeaseOptions{TTL: podsTTL, Owner: name}},
		Segment:   strategies.SegmentOptions{InitialStep: 10, MinStep: 10, MaxStep: 10}, // a block every few Creates
		Ticket: shardid.TicketConfig{Servers: []shardid.TicketServer{
			{Name: "pods-t1", Dialector: via(podsTicketFirst), Offset: 1},
			{Name: "pods-t2", Dialector: via(podsTicketFirst + 1), Offset: 2},
		}, Options: strategies.TicketOptions{Table: podsTicketTable}},
		ConnectTimeout: 2 * time.Second,
		Log:            slog.New(slog.NewTextHandler(&pod.log, nil)),
	}
	db, err := gorm.Open(b.dialector(t, ""), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	if first {
		firstStart(t, db)
	}
	pod.p = shardid.New(cfg)
	if err := db.Use(pod.p); err != nil {
		t.Fatalf("%s: db.Use: %v", name, err)
	}
	pod.db = db
	t.Cleanup(func() {
		_ = pod.p.Close()
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return pod
}

// podID is one ID a pod's Create got, in the order its goroutine got them.
type podID struct {
	pod      string
	strategy string
	routine  int
	shard    int
	id       int64
}

// podRun makes rows of every model on one pod until stopped, recording
// the IDs of the Creates that succeeded and the errors of the others.
type podRun struct {
	pod  *idPod
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	ids  []podID
	errs map[string]int
}

var podModels = []struct {
	strategy string
	row      func(pod string) any
	id       func(row any) int64
}{
	{strategies.NameSnowflake, func(p string) any { return &PodFlake{Pod: p} }, func(r any) int64 { return r.(*PodFlake).ID }},
	{strategies.NameSegment, func(p string) any { return &PodSegment{Pod: p} }, func(r any) int64 { return r.(*PodSegment).ID }},
	{strategies.NameInstagram, func(p string) any { return &PodInstagram{Pod: p} }, func(r any) int64 { return r.(*PodInstagram).ID }},
	{strategies.NameTicket, func(p string) any { return &PodTicket{Pod: p} }, func(r any) int64 { return r.(*PodTicket).ID }},
}

func startPodRun(pod *idPod, routines int) *podRun {
	r := &podRun{pod: pod, stop: make(chan struct{}), errs: map[string]int{}}
	shards := podsShards()
	for g := range routines {
		r.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-r.stop:
					return
				default:
				}
				m := podModels[(g+i)%len(podModels)]
				shard := shards[(g+i/len(podModels))%len(shards)]
				row := m.row(pod.name)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := pod.db.WithContext(ctx).Clauses(shardid.OnShard(shard)).Create(row).Error
				cancel()
				r.mu.Lock()
				if err != nil {
					r.errs[m.strategy+": "+errorClass(err)]++
				} else {
					r.ids = append(r.ids, podID{pod: pod.name, strategy: m.strategy, routine: g, shard: shard, id: m.id(row)})
				}
				r.mu.Unlock()
				if err != nil {
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	return r
}

func (r *podRun) halt() {
	close(r.stop)
	r.wg.Wait()
}

func (r *podRun) made() []podID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids)
}

// errorClass names an error by the sentinels it wraps, else by its text.
func errorClass(err error) string {
	for _, s := range []error{strategies.ErrLeaseLost, strategies.ErrNoWorkerID, strategies.ErrClockBackwards, strategies.ErrNoTicketServer, shardid.ErrShardUnavailable, context.DeadlineExceeded} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	msg := err.Error()
	if len(msg) > 160 {
		msg = msg[:160]
	}
	return msg
}

// waitFor polls cond until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("%s: not within %s", what, d)
			return
		}
	}
}

// TestPodsNeverShareAnIDUnderFaults runs application processes (pods: each
// its own gorm.DB and plugin, sharing the plugin's database, two shard
// databases and two ticket servers, each through proxies of its own) that
// make rows of a snowflake, a segment, an instagram and a ticket model in the
// same four logical shards, while:
//
//   - the answers of the ID sources' statements are lost after the server
//     ran them (a segment block, the clock-sequence, a ticket, a lease
//     renewal), so that the pod retries;
//   - one pod's lease renewals are held past its leases' expiry while it goes
//     on making rows, and a pod started meanwhile takes its worker IDs;
//   - a rolling restart: a pod closes while its successor starts, both
//     making rows.
//
// No ID is made twice, by any pod, of any strategy, and no Create fails on
// a duplicate key (the others fail with a lost lease, no worker ID free, a
// database unavailable); each goroutine's IDs of one shard ascend for the
// time-ordered strategies; and a worker ID of a database makes IDs for one
// pod at a time: in the time order of its IDs, a pod's run of them begins
// only where that pod took the worker ID (which a fence that let the held
// pod go on issuing after its lease expired breaks).
func TestPodsNeverShareAnIDUnderFaults(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		a := openIDPod(t, b, "pod-a", true)
		servers := []*sql.DB{sqlDB(t, b, podsTicketFirst), sqlDB(t, b, podsTicketFirst+1)}
		t.Cleanup(func() {
			drop := "DROP TABLE IF EXISTS " + podsTicketTable
			if b.name == "postgres" {
				drop = "DROP SEQUENCE IF EXISTS " + podsTicketTable
			}
			for _, server := range servers {
				if _, err := server.Exec(drop); err != nil {
					t.Errorf("dropping the ticket counter: %v", err)
				}
			}
		})
		for _, m := range []any{&PodFlake{}, &PodSegment{}, &PodInstagram{}, &PodTicket{}} {
			must(t, migrator(a.db).DropTable(m))
		}
		must(t, a.p.AutoMigrate(a.db, &PodFlake{}, &PodSegment{}, &PodInstagram{}, &PodTicket{}))
		bpod := openIDPod(t, b, "pod-b", false)
		runs := []*podRun{startPodRun(a, 4), startPodRun(bpod, 4)}
		time.Sleep(500 * time.Millisecond)

		// Lost answers: each ID source's statement runs on the server and
		// its answer never reaches pod a.
		texts := []string{"shardid_segments", "shardid_clock", podsTicketTable, "shardid_workers"}
		for _, text := range texts {
			before := 0
			for _, proxy := range a.proxies {
				before += proxy.fired()
				proxy.arm(text, true, 0)
			}
			time.Sleep(2 * time.Second)
			after := 0
			for _, proxy := range a.proxies {
				proxy.calm()
				after += proxy.fired()
			}
			if after == before {
				t.Errorf("no answer to a statement on %s was lost", text)
			}
		}
		fired := 0
		for _, proxy := range a.proxies {
			fired += proxy.fired()
		}
		t.Logf("%d statements of pod a lost their answers", fired)

		// Pod a's renewals are held past its leases' expiry; pod c, started
		// once they expired, takes its worker IDs while pod a makes rows.
		hold := 4 * podsTTL
		for _, proxy := range a.proxies[:2] {
			proxy.delayStatements("shardid_workers", hold)
		}
		time.Sleep(podsTTL + 300*time.Millisecond)
		c := openIDPod(t, b, "pod-c", false)
		runs = append(runs, startPodRun(c, 4))
		waitFor(t, 10*time.Second, "pod c makes a snowflake ID", func() bool {
			return slices.ContainsFunc(runs[2].made(), func(p podID) bool { return p.strategy == strategies.NameSnowflake })
		})
		time.Sleep(hold)
		held := a.proxies[0].delayedCount() + a.proxies[1].delayedCount()
		if held == 0 {
			t.Fatal("no lease renewal of pod a was held")
		}

		// Pod a stops (it would take the worker IDs pod b releases next).
		runs[0].halt()
		must(t, a.p.Close())

		// Rolling restart: pod b closes while pod d starts.
		runs[1].halt()
		closed := make(chan error, 1)
		go func() { closed <- bpod.p.Close() }()
		d := openIDPod(t, b, "pod-d", false)
		runs = append(runs, startPodRun(d, 4))
		must(t, <-closed)
		waitFor(t, 10*time.Second, "pod d makes a snowflake ID", func() bool {
			return slices.ContainsFunc(runs[3].made(), func(p podID) bool { return p.strategy == strategies.NameSnowflake })
		})
		time.Sleep(time.Second)
		for _, r := range runs {
			select {
			case <-r.stop:
			default:
				r.halt()
			}
		}

		var all []podID
		for _, r := range runs {
			all = append(all, r.made()...)
			for class, n := range r.errs {
				if strings.Contains(strings.ToLower(class), "duplicate") {
					t.Errorf("%s: %d Creates failed with %s", r.pod.name, n, class)
				}
				t.Logf("%s: %d× %s", r.pod.name, n, class)
			}
		}
		taken := map[string]int{}
		for _, pod := range []*idPod{a, bpod, c, d} {
			for _, line := range strings.Split(pod.log.String(), "\n") {
				if !strings.Contains(line, "lease") {
					continue
				}
				t.Logf("%s: %s", pod.name, line)
				var database string
				var worker int
				if i := strings.Index(line, "database="); i >= 0 && strings.Contains(line, "lease taken") {
					if _, err := fmt.Sscanf(line[i:], "database=%s worker=%d", &database, &worker); err == nil {
						taken[fmt.Sprintf("%s %s %d", pod.name, database, worker)]++
					}
				}
			}
		}
		if !strings.Contains(a.log.String(), "lost to another process") {
			t.Error("pod a never found a lease of its taken by another pod")
		}
		if taken["pod-c pods-0 0"]+taken["pod-c pods-1 0"]+taken["pod-c pods-0 1"]+taken["pod-c pods-1 1"] == 0 {
			t.Error("pod c took no worker ID")
		}
		checkPodIDs(t, all, taken)
		counts := map[string]int{}
		for _, p := range all {
			counts[p.pod+" "+p.strategy]++
		}
		t.Logf("IDs made: %v", counts)
		for _, pod := range []string{"pod-a", "pod-b", "pod-c", "pod-d"} {
			for _, m := range podModels {
				if counts[pod+" "+m.strategy] == 0 {
					t.Errorf("%s made no %s ID", pod, m.strategy)
				}
			}
		}
	})
}

// checkPodIDs fails on an ID made twice within a strategy, an ID outside its
// shard, a goroutine's IDs of one shard that do not ascend (for the
// time-ordered strategies), and a worker ID used by two pods at once:
// taken is how many times each pod took each worker ID of each database
// ("pod-a pods-0 0": 2), and in the time order of a worker ID's IDs each run
// of one pod's needs a lease that pod took.
func checkPodIDs(t *testing.T, all []podID, taken map[string]int) {
	t.Helper()
	count := podsLayout.ShardCount()
	type workerTick struct {
		database, worker int
		tick             int64
		pod              string
	}
	byWorker := map[[2]int][]workerTick{}
	for _, p := range all {
		if p.strategy != strategies.NameSnowflake {
			continue
		}
		parts := podsLayout.Decode(p.id)
		key := [2]int{p.shard * 2 / count, parts.Worker}
		byWorker[key] = append(byWorker[key], workerTick{key[0], key[1], parts.Ticks, p.pod})
	}
	for key, ticks := range byWorker {
		slices.SortStableFunc(ticks, func(a, b workerTick) int { return cmp.Compare(a.tick, b.tick) })
		runs := map[string]int{}
		for i, w := range ticks {
			if i > 0 && ticks[i-1].tick == w.tick && ticks[i-1].pod != w.pod {
				t.Errorf("worker %d of pods-%d made IDs of tick %d in %s and in %s", key[1], key[0], w.tick, ticks[i-1].pod, w.pod)
			}
			if i == 0 || ticks[i-1].pod != w.pod {
				runs[w.pod]++
			}
		}
		for pod, n := range runs {
			if took := taken[fmt.Sprintf("%s pods-%d %d", pod, key[0], key[1])]; n > took {
				t.Errorf("worker %d of pods-%d: %s made its IDs in %d runs between other pods' IDs, and took the worker %d times", key[1], key[0], pod, n, took)
			}
		}
	}
	seen := map[string]map[int64]podID{}
	last := map[string]int64{}
	for _, p := range all {
		if seen[p.strategy] == nil {
			seen[p.strategy] = map[int64]podID{}
		}
		if first, ok := seen[p.strategy][p.id]; ok {
			t.Errorf("%s ID %d (%+v) made twice: first by %s, then by %s", p.strategy, p.id, podsLayout.Decode(p.id), first.pod, p.pod)
		}
		seen[p.strategy][p.id] = p
		if got := podsLayout.Shard(p.id); got != p.shard {
			t.Errorf("%s ID %d of %s is in shard %d, want %d", p.strategy, p.id, p.pod, got, p.shard)
		}
		if p.strategy == strategies.NameTicket {
			continue
		}
		key := fmt.Sprintf("%s %s %d %d", p.pod, p.strategy, p.routine, p.shard)
		if prev, ok := last[key]; ok && p.id <= prev {
			t.Errorf("%s: ID %d (%+v) after %d (%+v): not ascending", key, p.id, podsLayout.Decode(p.id), prev, podsLayout.Decode(prev))
		}
		last[key] = p.id
	}
}
