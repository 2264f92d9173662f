package integration

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid/strategies"
)

// The cross-process uniqueness proof: uniqueProcs OS processes (this test
// binary re-run as children) × uniqueGoroutines goroutines draw IDs from one
// strategy against two physical databases of a real server, and the parent
// checks that no ID repeats, each is in its shard, and each goroutine's IDs
// ascend where the strategy promises it.
const (
	uniqueProcs      = 8
	uniqueGoroutines = 8
	uniqueBatch      = 64                         // IDs per Generate call
	uniqueScaleVar   = "SHARDID_UNIQUENESS_SCALE" // e.g. 10 for the run started by hand
	uniqueChildVar   = "SHARDID_TEST_UNIQUE_CHILD"
	uniqueArgsVar    = "SHARDID_TEST_UNIQUE_ARGS"
)

// uniqueCase is one strategy: the IDs CI draws from it, in all processes
// together, and whether a goroutine's IDs in one shard must ascend.
type uniqueCase struct {
	strategy   string
	total      int
	ordered    bool
	duplicates bool // the control: the checker must find the repeats
}

// sharedWorker is the control case: snowflake with the same fixed worker ID
// in every process, as when two pods are given one worker ID.
const sharedWorker = "snowflake-shared-worker"

var uniqueCases = []uniqueCase{
	{strategy: strategies.NameSnowflake, total: 1_000_000, ordered: true},
	{strategy: strategies.NameSegment, total: 1_000_000, ordered: true},
	{strategy: strategies.NameInstagram, total: 100_000, ordered: true},
	// Each MariaDB ticket is a commit of its own (a flush of the server's log):
	// 100,000 took two minutes of CI's half hour. Tickets repeat when servers
	// share a series or a counter goes back, whatever the count.
	{strategy: strategies.NameTicket, total: 20_000},
	{strategy: sharedWorker, total: 100_000, ordered: true, duplicates: true},
}

// uniqueLayout gives snowflake 8 worker IDs, one per process.
var uniqueLayout = strategies.Layout{WorkerBits: 3}

// uniqueArgs is what a child needs, passed as one environment variable.
type uniqueArgs struct {
	Backend, Strategy, Dir, Name string
	Proc, PerGoroutine           int
}

func (a uniqueArgs) encode() string {
	return fmt.Sprintf("%s|%s|%s|%s|%d|%d", a.Backend, a.Strategy, a.Dir, a.Name, a.Proc, a.PerGoroutine)
}

func decodeUniqueArgs(s string) (a uniqueArgs, err error) {
	parts := strings.Split(s, "|")
	if len(parts) != 6 {
		return a, fmt.Errorf("%q: want 6 parts", s)
	}
	a.Backend, a.Strategy, a.Dir, a.Name = parts[0], parts[1], parts[2], parts[3]
	if a.Proc, err = strconv.Atoi(parts[4]); err == nil {
		a.PerGoroutine, err = strconv.Atoi(parts[5])
	}
	return a, err
}

// uniqueShard is goroutine g's logical shard; the goroutines of every process
// share the same eight shards, so the processes contend for each one.
func uniqueShard(g int) int { return g * 1000 }

func TestUniqueAcrossProcesses(t *testing.T) {
	scale := 1
	if s := os.Getenv(uniqueScaleVar); s != "" {
		scale, _ = strconv.Atoi(s)
	}
	for _, b := range backends {
		if b.name == "sqlite" {
			continue // the proof is against the servers; SQLite's multi-process test is TestInstagramTwoProcessesOneShard
		}
		for _, c := range uniqueCases {
			t.Run(b.name+"/"+c.strategy, func(t *testing.T) {
				b.dialector(t, "") // skips, or in CI fails, without the server's variable
				dir := t.TempDir()
				name := fmt.Sprintf("uniq_%08x", rand.Uint32())
				perGoroutine := (c.total*scale + uniqueProcs*uniqueGoroutines - 1) / (uniqueProcs * uniqueGoroutines)
				t.Cleanup(func() { dropUniqueTables(t, b, name) })
				var wg sync.WaitGroup
				outputs := make([][]byte, uniqueProcs)
				errs := make([]error, uniqueProcs)
				for proc := range uniqueProcs {
					args := uniqueArgs{b.name, c.strategy, dir, name, proc, perGoroutine}
					wg.Go(func() {
						cmd := exec.Command(os.Args[0], "-test.run=^TestUniqueChild$", "-test.count=1")
						cmd.Env = append(os.Environ(), uniqueChildVar+"=1", uniqueArgsVar+"="+args.encode())
						outputs[proc], errs[proc] = cmd.CombinedOutput()
					})
				}
				wg.Wait()
				for proc := range uniqueProcs {
					if errs[proc] != nil {
						t.Fatalf("child %d: %v\n%s", proc, errs[proc], outputs[proc])
					}
				}
				all := make([]int64, 0, perGoroutine*uniqueProcs*uniqueGoroutines)
				for proc := range uniqueProcs {
					for g := range uniqueGoroutines {
						ids := readIDs(t, filepath.Join(dir, fmt.Sprintf("%d-%d.ids", proc, g)))
						if len(ids) != perGoroutine {
							t.Fatalf("proc %d goroutine %d wrote %d IDs, want %d", proc, g, len(ids), perGoroutine)
						}
						for i, id := range ids {
							if s := uniqueLayout.Shard(id); s != uniqueShard(g) {
								t.Fatalf("proc %d goroutine %d: ID %d is in shard %d, want %d", proc, g, id, s, uniqueShard(g))
							}
							if c.ordered && i > 0 && id <= ids[i-1] {
								t.Fatalf("proc %d goroutine %d: ID %d after %d", proc, g, id, ids[i-1])
							}
						}
						all = append(all, ids...)
					}
				}
				slices.Sort(all)
				repeats := 0
				for i := 1; i < len(all); i++ {
					if all[i] == all[i-1] {
						repeats++
					}
				}
				switch {
				case c.duplicates && repeats == 0:
					t.Fatal("the processes shared a worker ID, yet no repeat was found: the check cannot see collisions")
				case c.duplicates:
					t.Logf("control: %d of %d IDs repeated with one worker ID in every process", repeats, len(all))
				case repeats > 0:
					t.Fatalf("%d of %d IDs were issued twice", repeats, len(all))
				default:
					t.Logf("%d IDs from %d processes × %d goroutines, none twice", len(all), uniqueProcs, uniqueGoroutines)
				}
			})
		}
	}
}

// TestUniqueChild is the body of a child process of
// TestUniqueAcrossProcesses; run on its own it skips.
func TestUniqueChild(t *testing.T) {
	if os.Getenv(uniqueChildVar) == "" {
		t.Skip("runs only as a child process of TestUniqueAcrossProcesses")
	}
	args, err := decodeUniqueArgs(os.Getenv(uniqueArgsVar))
	if err != nil {
		t.Fatal(err)
	}
	b := backends[slices.IndexFunc(backends, func(b backend) bool { return b.name == args.Backend })]
	targets := uniqueTargets(t, b, args.Name)
	g, closeGenerator := uniqueGenerator(t, b, args.Strategy, args.Name)
	defer closeGenerator()
	startTogether(args.Dir, args.Proc)
	var wg sync.WaitGroup
	for gor := range uniqueGoroutines {
		wg.Go(func() {
			target := targets[gor%len(targets)]
			f, err := os.Create(filepath.Join(args.Dir, fmt.Sprintf("%d-%d.ids", args.Proc, gor)))
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			w := bufio.NewWriter(f)
			shards := make([]int, uniqueBatch)
			for i := range shards {
				shards[i] = uniqueShard(gor)
			}
			ids := make([]int64, uniqueBatch)
			for left := args.PerGoroutine; left > 0; left -= len(ids) {
				n := min(left, uniqueBatch)
				if err := g.Generate(context.Background(), target, shards[:n], ids[:n]); err != nil {
					t.Errorf("goroutine %d: %v", gor, err)
					return
				}
				for _, id := range ids[:n] {
					_ = binary.Write(w, binary.LittleEndian, id)
				}
			}
			if err := w.Flush(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// startTogether waits, once this child is ready to draw, for every child to
// be, for a minute at most: the processes then draw at once, as pods do, and
// the shared worker's control repeats IDs (staggered starts on a busy
// machine once drew apart and repeated none).
func startTogether(dir string, proc int) {
	_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("ready-%d", proc)), nil, 0o644)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if ready, _ := filepath.Glob(filepath.Join(dir, "ready-*")); len(ready) >= uniqueProcs {
			return
		}
	}
}

// uniqueTargets opens the first two physical databases of b.
func uniqueTargets(t *testing.T, b backend, table string) []strategies.Target {
	t.Helper()
	targets := make([]strategies.Target, 2)
	for i := range targets {
		db := sqlDB(t, b, i)
		targets[i] = strategies.Target{Name: fmt.Sprintf("%s-%d", b.name, i), Table: table, Dialect: dialectOf(b), Conn: db, DB: db}
	}
	return targets
}

func uniqueGenerator(t *testing.T, b backend, strategy, name string) (strategies.Generator, func()) {
	t.Helper()
	var g strategies.Generator
	var err error
	switch strategy {
	case strategies.NameSnowflake:
		g, err = strategies.NewLeasedSnowflake(uniqueLayout, strategies.LeaseOptions{Table: name})
	case strategies.NameSegment:
		g, err = strategies.NewSegment(uniqueLayout, strategies.SegmentOptions{InitialStep: 500, MinStep: 100, MaxStep: 20_000})
	case strategies.NameInstagram:
		g, err = strategies.NewInstagram(uniqueLayout)
	case strategies.NameTicket:
		servers := ticketServers(t, b, 3)
		if err = strategies.PrepareTicketServers(context.Background(), 0, servers); err == nil {
			g, err = strategies.NewTicket(uniqueLayout, servers, strategies.TicketOptions{})
		}
	case sharedWorker:
		g, err = strategies.NewSnowflake(uniqueLayout, 5)
	default:
		t.Fatalf("no uniqueness case for strategy %s", strategy)
	}
	if err != nil {
		t.Fatal(err)
	}
	return g, func() {
		if c, ok := g.(io.Closer); ok {
			if err := c.Close(); err != nil {
				t.Error(err)
			}
		}
	}
}

// ticketServers are n ticket servers on b: physical database k, with offset
// k+1 (always the same, as a ticket server's offset must stay).
func ticketServers(t *testing.T, b backend, n int) []strategies.TicketServer {
	t.Helper()
	servers := make([]strategies.TicketServer, n)
	for k := range servers {
		db := sqlDB(t, b, k)
		db.SetMaxIdleConns(8)
		servers[k] = strategies.TicketServer{Name: fmt.Sprintf("%s-tickets-%d", b.name, k), Dialect: dialectOf(b), DB: db, Offset: k + 1}
	}
	return servers
}

// dropUniqueTables removes the lease table and the segment row a run made.
func dropUniqueTables(t *testing.T, b backend, name string) {
	for i := range 2 {
		db := sqlDB(t, b, i)
		_, _ = db.Exec("DROP TABLE IF EXISTS " + name)
		_, _ = db.Exec("DELETE FROM shardid_segments WHERE name = '" + name + "'")
	}
}

func readIDs(t *testing.T, path string) []int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(data)/8)
	for i := range ids {
		ids[i] = int64(binary.LittleEndian.Uint64(data[i*8:]))
	}
	return ids
}

// sqlDB opens physical database i of b as a plain pool, closed with the test.
func sqlDB(t *testing.T, b backend, i int) *sql.DB {
	t.Helper()
	gdb, err := gorm.Open(b.physical(t, t.TempDir(), i), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	db, err := gdb.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func dialectOf(b backend) string {
	if b.name == "mariadb" {
		return "mysql"
	}
	return b.name
}
