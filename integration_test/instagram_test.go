package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/strategies"
)

// event is written by many goroutines of several processes into one logical
// shard: the shard of OwnerID.
type event struct {
	ID      int64 `shardid:"strategy:instagram;colocate:OwnerID"`
	OwnerID int64
	Proc    int
	Worker  int
	Seq     int
}

const (
	childEnv        = "SHARDID_TEST_CHILD"      // set in a child process: the backend's name
	childDirEnv     = "SHARDID_TEST_CHILD_DIR"  // the parent's folder (the SQLite file lives there)
	childProcEnv    = "SHARDID_TEST_CHILD_PROC" // the child's number
	childRowsEnv    = "SHARDID_TEST_CHILD_ROWS" // single-row creates per goroutine
	eventShard      = 42                        // the one logical shard every event is in
	childGoroutines = 8
	childBatch      = 2048 // rows of one CreateInBatches: more than the 1024 IDs one tick holds
)

// owner is an ID in eventShard, for colocate.
var owner = strategies.Layout{}.Compose(time.Now(), eventShard, 0)

// TestInstagramTwoProcessesOneShard runs two OS processes (this test binary
// re-run as children), each with 8 goroutines creating rows in the same
// logical shard as fast as they can, single rows and batches of 2048, and
// checks that no ID repeats, every row is there, each is in the shard, and
// each goroutine's IDs increase.
func TestInstagramTwoProcessesOneShard(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db := open(t, b, dir, shardid.Config{})
		fresh(t, db, &event{})
		rows := 150
		if b.name == "sqlite" {
			rows = 40
		}
		const procs = 2
		var wg sync.WaitGroup
		outputs := make([][]byte, procs)
		errs := make([]error, procs)
		for proc := range procs {
			wg.Go(func() {
				cmd := exec.Command(os.Args[0], "-test.run=^TestInstagramChild$", "-test.count=1", "-test.v")
				cmd.Env = append(os.Environ(), childEnv+"="+b.name, childDirEnv+"="+dir,
					childProcEnv+"="+strconv.Itoa(proc), childRowsEnv+"="+strconv.Itoa(rows))
				outputs[proc], errs[proc] = cmd.CombinedOutput()
			})
		}
		wg.Wait()
		for proc := range procs {
			if errs[proc] != nil {
				t.Fatalf("child %d: %v\n%s", proc, errs[proc], outputs[proc])
			}
		}

		var got []event
		if err := db.Order("proc, worker, seq").Find(&got).Error; err != nil {
			t.Fatal(err)
		}
		want := procs * childGoroutines * (rows + childBatch)
		if len(got) != want {
			t.Fatalf("found %d rows, want %d", len(got), want)
		}
		seen := make(map[int64]bool, len(got))
		layout := strategies.Layout{}
		perTick := map[int64]int{}
		for i, e := range got {
			if seen[e.ID] {
				t.Fatalf("duplicate ID %d", e.ID)
			}
			seen[e.ID] = true
			if s := layout.Shard(e.ID); s != eventShard {
				t.Fatalf("ID %d is in shard %d, want %d", e.ID, s, eventShard)
			}
			if i > 0 && got[i-1].Proc == e.Proc && got[i-1].Worker == e.Worker && got[i-1].ID >= e.ID {
				t.Fatalf("proc %d worker %d: ID %d (seq %d) is not above %d (seq %d)", e.Proc, e.Worker, e.ID, e.Seq, got[i-1].ID, got[i-1].Seq)
			}
			perTick[layout.Decode(e.ID).Ticks]++
		}
		busiest := 0
		for _, n := range perTick {
			busiest = max(busiest, n)
		}
		if busiest != layout.IDsPerTick() {
			t.Errorf("the busiest tick has %d IDs; the batches should fill ticks to exactly %d", busiest, layout.IDsPerTick())
		}
		var one event
		if err := db.First(&one, got[len(got)/2].ID).Error; err != nil || one.ID != got[len(got)/2].ID {
			t.Fatalf("reading back ID %d: %v (got %d)", got[len(got)/2].ID, err, one.ID)
		}
	})
}

// TestInstagramChild is the body of a child process of
// TestInstagramTwoProcessesOneShard; run on its own it skips.
func TestInstagramChild(t *testing.T) {
	name := os.Getenv(childEnv)
	if name == "" {
		t.Skip("runs only as a child process of TestInstagramTwoProcessesOneShard")
	}
	proc, _ := strconv.Atoi(os.Getenv(childProcEnv))
	rows, _ := strconv.Atoi(os.Getenv(childRowsEnv))
	i := slices.IndexFunc(backends, func(b backend) bool { return b.name == name })
	db := open(t, backends[i], os.Getenv(childDirEnv), shardid.Config{})
	var wg sync.WaitGroup
	errs := make(chan error, childGoroutines)
	for worker := range childGoroutines {
		wg.Go(func() {
			last := int64(0)
			for seq := range rows {
				e := event{OwnerID: owner, Proc: proc, Worker: worker, Seq: seq}
				if err := db.Create(&e).Error; err != nil {
					errs <- fmt.Errorf("worker %d row %d: %w", worker, seq, err)
					return
				}
				if e.ID <= last {
					errs <- fmt.Errorf("worker %d: ID %d after %d", worker, e.ID, last)
					return
				}
				last = e.ID
			}
			batch := make([]event, childBatch)
			for j := range batch {
				batch[j] = event{OwnerID: owner, Proc: proc, Worker: worker, Seq: rows + j}
			}
			if err := db.CreateInBatches(&batch, childBatch).Error; err != nil {
				errs <- fmt.Errorf("worker %d batch: %w", worker, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestInstagramResumesAboveTheMark loses the clock-sequence, as a database
// restart loses a MEMORY or UNLOGGED table, after it has run far ahead of the
// clock, and checks that the next IDs are still above every ID issued.
func TestInstagramResumesAboveTheMark(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if b.name == "sqlite" {
			t.Skip("SQLite keeps the clock-sequence in an ordinary table, which a restart does not lose")
		}
		db := open(t, b, t.TempDir(), shardid.Config{})
		gen, err := strategies.NewInstagram(strategies.Layout{})
		if err != nil {
			t.Fatal(err)
		}
		sqlDB, _ := db.DB()
		target := strategies.Target{Name: b.name, Dialect: db.Dialector.Name(), Conn: sqlDB}
		ctx := context.Background()
		// 300,000 IDs in one call run the clock-sequence ~300 ms ahead of the clock.
		ahead := make([]int64, 300_000)
		if err := gen.Generate(ctx, target, make([]int, len(ahead)), ahead); err != nil {
			t.Fatal(err)
		}
		if err := db.Exec("DELETE FROM shardid_clock").Error; err != nil {
			t.Fatal(err)
		}
		// A fresh generator, as after the process restarts too.
		gen, _ = strategies.NewInstagram(strategies.Layout{})
		after := make([]int64, 1)
		if err := gen.Generate(ctx, target, []int{0}, after); err != nil {
			t.Fatal(err)
		}
		if after[0] <= ahead[len(ahead)-1] {
			t.Fatalf("after losing the clock row, ID %d is not above the last one issued, %d", after[0], ahead[len(ahead)-1])
		}
	})
}

// TestInstagramRepairsAMarkThatWentBack: a running generator must not trust
// the mark it remembers when the database's mark has gone back under it (a
// failover to a lagging replica, a restore): the clock row lost, or merely
// half a second passing, makes it write the mark again above what it issued.
func TestInstagramRepairsAMarkThatWentBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if b.name == "sqlite" {
			t.Skip("SQLite's clock-sequence is durable itself and has no mark")
		}
		db := open(t, b, t.TempDir(), shardid.Config{})
		sqlDB, _ := db.DB()
		target := strategies.Target{Name: b.name, Dialect: db.Dialector.Name(), Conn: sqlDB}
		ctx := context.Background()
		gen, _ := strategies.NewInstagram(strategies.Layout{})
		generate := func(n int) []int64 {
			ids := make([]int64, n)
			if err := gen.Generate(ctx, target, make([]int, n), ids); err != nil {
				t.Fatal(err)
			}
			return ids
		}
		markAbove := func(id int64, when string) {
			var mark int64
			if err := db.Raw("SELECT v FROM shardid_clock_mark").Row().Scan(&mark); err != nil {
				t.Fatal(err)
			}
			v := id>>23<<10 | id&1023 // the clock-sequence value of an ID of the default layout
			if mark <= v {
				t.Fatalf("%s: the durable mark %d is not above the issued value %d", when, mark, v)
			}
		}
		generate(10) // warm: the generator now remembers a mark

		// The mark goes back and the clock row is lost.
		must(t, db.Exec("UPDATE shardid_clock_mark SET v = 0").Error)
		must(t, db.Exec("DELETE FROM shardid_clock").Error)
		ahead := generate(300_000)
		markAbove(ahead[len(ahead)-1], "after reseeding")

		// The mark goes back while the clock row stays.
		must(t, db.Exec("UPDATE shardid_clock_mark SET v = 0").Error)
		time.Sleep(600 * time.Millisecond)
		later := generate(1)
		markAbove(later[0], "half a second later")
	})
}

// TestInstagramDatabaseClockStepsBack: on MariaDB a session's clock can be
// set back (SET timestamp); IDs made after it still rise, their time field
// held where it was rather than sent back an hour.
func TestInstagramDatabaseClockStepsBack(t *testing.T) {
	b := backends[slices.IndexFunc(backends, func(b backend) bool { return b.name == "mariadb" })]
	db := open(t, b, t.TempDir(), shardid.Config{})
	sqlDB, _ := db.DB()
	ctx := context.Background()
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	target := strategies.Target{Name: "stepped", Dialect: "mysql", Conn: conn}
	gen, _ := strategies.NewInstagram(strategies.Layout{})
	before := make([]int64, 1)
	must(t, gen.Generate(ctx, target, []int{5}, before))
	if _, err := conn.ExecContext(ctx, "SET timestamp = UNIX_TIMESTAMP() - 3600"); err != nil {
		t.Fatal(err)
	}
	after := make([]int64, 1000)
	sameShard := make([]int, len(after))
	for i := range sameShard {
		sameShard[i] = 5
	}
	must(t, gen.Generate(ctx, target, sameShard, after))
	layout := strategies.Layout{}
	if after[0] <= before[0] {
		t.Fatalf("after the clock stepped back an hour, ID %d is not above %d", after[0], before[0])
	}
	if d := layout.Decode(before[0]).Time.Sub(layout.Decode(after[0]).Time); d > 0 {
		t.Fatalf("the time field went back %s", d)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
