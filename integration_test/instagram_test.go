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
