//go:build unix

package integration

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shardid/shardid/strategies"
)

const (
	fencingChildVar = "SHARDID_TEST_FENCING_CHILD" // backend|lease table|rows table|ID file
	fencingTTL      = 600 * time.Millisecond
	fencingShard    = 5
)

// Two worker IDs: the one the stopped process held, and one for it to take after.
var fencingLayout = strategies.Layout{WorkerBits: 1}

// TestLeaseFencingAcrossProcesses stops (SIGSTOP) a child process that holds
// worker 0 past its lease's expiry, lets this process take worker 0 and make
// IDs in the same shard, and resumes the child while it does: the child must
// issue no ID with worker 0 after its lease ran out (it takes worker 1), and
// no ID may be written twice. Both processes write a row for every ID they
// make, into one table without a key, which the test then searches for a
// repeated ID.
func TestLeaseFencingAcrossProcesses(t *testing.T) {
	for _, b := range backends {
		if b.name == "sqlite" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			target := uniqueTargets(t, b, "")[0]
			table := fmt.Sprintf("fence_%08x", rand.Uint32())
			rows := table + "_rows"
			t.Cleanup(func() {
				_, _ = target.DB.Exec("DROP TABLE IF EXISTS " + table)
				_, _ = target.DB.Exec("DROP TABLE IF EXISTS " + rows)
			})
			_, err := target.DB.Exec("CREATE TABLE " + rows + " (id BIGINT NOT NULL, proc INT NOT NULL)")
			must(t, err)
			idFile := filepath.Join(t.TempDir(), "child.ids")

			child := exec.Command(os.Args[0], "-test.run=^TestLeaseFencingChild$", "-test.count=1", "-test.v")
			child.Env = append(os.Environ(), fencingChildVar+"="+b.name+"|"+table+"|"+rows+"|"+idFile)
			stdin, _ := child.StdinPipe()
			stdout, _ := child.StdoutPipe()
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(stdout)
			var output []string
			for lines.Scan() && !strings.Contains(lines.Text(), "fencing: ready") {
				output = append(output, lines.Text())
			}
			time.Sleep(100 * time.Millisecond)
			must(t, child.Process.Signal(syscall.SIGSTOP))
			stoppedAt := len(readIDs(t, idFile))
			time.Sleep(fencingTTL + 300*time.Millisecond)

			// The lease has expired in the database: this process takes worker 0.
			// Only the stopped child's lease needs to lapse: this one's is long,
			// so a busy machine cannot make it lapse too.
			parent, err := strategies.NewLeasedSnowflake(fencingLayout, strategies.LeaseOptions{Table: table, TTL: time.Minute})
			must(t, err)
			defer parent.Close()
			var parentIDs []int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			first := make(chan int64, 1)
			wg.Go(func() {
				ids := make([]int64, 1)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := parent.Generate(context.Background(), target, []int{fencingShard}, ids); err != nil {
						t.Error(err)
						return
					}
					if err := writeRow(target, rows, ids[0], 0); err != nil {
						t.Error(err)
						return
					}
					parentIDs = append(parentIDs, ids[0])
					if len(parentIDs) == 1 {
						first <- ids[0]
					}
				}
			})
			firstID := <-first
			if w := fencingLayout.Decode(firstID).Worker; w != 0 {
				t.Fatalf("this process leased worker %d, want the stopped child's worker 0", w)
			}
			must(t, child.Process.Signal(syscall.SIGCONT))
			// Both make IDs in the same shard until the child has made one with
			// the worker it leased after finding its own taken.
			for deadline := time.Now().Add(time.Minute); !slices.ContainsFunc(readIDs(t, idFile)[stoppedAt:], func(id int64) bool { return fencingLayout.Decode(id).Worker == 1 }); {
				if time.Now().After(deadline) {
					t.Fatal("the child made no ID with worker 1 within a minute of resuming")
				}
				time.Sleep(50 * time.Millisecond)
			}
			close(stop)
			wg.Wait()
			_ = stdin.Close()
			for lines.Scan() {
				output = append(output, lines.Text())
			}
			if err := child.Wait(); err != nil {
				t.Fatalf("child: %v\n%s", err, strings.Join(output, "\n"))
			}
			if !slices.ContainsFunc(output, func(l string) bool { return strings.Contains(l, "fencing: lost=1") }) {
				t.Fatalf("the child did not find its lease lost once:\n%s", strings.Join(output, "\n"))
			}

			childIDs := readIDs(t, idFile)
			takenTick := fencingLayout.Decode(parentIDs[0]).Ticks
			resumed := 0
			for i, id := range childIDs {
				p := fencingLayout.Decode(id)
				if p.Worker == 0 && p.Ticks >= takenTick {
					t.Fatalf("child ID %d (#%d) has worker 0 and tick %d, at or after this process took worker 0 at tick %d", id, i, p.Ticks, takenTick)
				}
				if i > stoppedAt && p.Worker == 1 {
					resumed++
				}
			}
			if resumed == 0 {
				t.Fatalf("the child made no ID with worker 1 after it resumed (%d IDs before the stop, %d in all)", stoppedAt, len(childIDs))
			}
			all := append(slices.Clone(childIDs), parentIDs...)
			slices.Sort(all)
			for i := 1; i < len(all); i++ {
				if all[i] == all[i-1] {
					t.Fatalf("ID %d was made by both processes", all[i])
				}
			}
			var written, repeated int64
			must(t, target.DB.QueryRow("SELECT COUNT(*) FROM "+rows).Scan(&written))
			must(t, target.DB.QueryRow("SELECT COUNT(*) FROM (SELECT id FROM "+rows+" GROUP BY id HAVING COUNT(*) > 1) repeats").Scan(&repeated))
			if written != int64(len(all)) || repeated != 0 {
				t.Fatalf("%d rows written for %d IDs, %d IDs written twice", written, len(all), repeated)
			}
			t.Logf("child: %d IDs before the stop, %d with worker 1 after it; this process: %d with worker 0; none twice", stoppedAt, resumed, len(parentIDs))
		})
	}
}

// TestLeaseFencingChild is the body of the child process of
// TestLeaseFencingAcrossProcesses; run on its own it skips. It makes IDs in
// fencingShard, writing each to the ID file as soon as it is made, until its
// standard input closes.
func TestLeaseFencingChild(t *testing.T) {
	spec := os.Getenv(fencingChildVar)
	if spec == "" {
		t.Skip("runs only as a child process of TestLeaseFencingAcrossProcesses")
	}
	parts := strings.Split(spec, "|")
	b := backends[slices.IndexFunc(backends, func(b backend) bool { return b.name == parts[0] })]
	target := uniqueTargets(t, b, "")[0]
	g, err := strategies.NewLeasedSnowflake(fencingLayout, strategies.LeaseOptions{Table: parts[1], TTL: fencingTTL})
	must(t, err)
	f, err := os.Create(parts[3])
	must(t, err)
	defer f.Close()
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(done) }()
	ids := make([]int64, 1)
	buf := make([]byte, 8)
	ready := false
	for {
		select {
		case <-done:
			worker := g.Stats().Leases[0].Worker
			must(t, g.Close()) // waits for the heartbeat, which counts a lease lost only after dropping it
			fmt.Printf("fencing: lost=%d worker=%d\n", g.Stats().Leases[0].Lost, worker)
			return
		default:
		}
		err := g.Generate(context.Background(), target, []int{fencingShard}, ids)
		if errors.Is(err, strategies.ErrLeaseLost) || errors.Is(err, strategies.ErrNoWorkerID) {
			time.Sleep(time.Millisecond)
			continue
		}
		must(t, err)
		binary.LittleEndian.PutUint64(buf, uint64(ids[0]))
		if _, err := f.Write(buf); err != nil { // one write per ID: a stop cannot hold back a made ID
			t.Fatal(err)
		}
		must(t, writeRow(target, parts[2], ids[0], 1))
		if !ready {
			fmt.Println("fencing: ready")
			ready = true
		}
	}
}

// writeRow writes the row of one ID made by process proc.
func writeRow(target strategies.Target, table string, id int64, proc int) error {
	_, err := target.DB.Exec(fmt.Sprintf("INSERT INTO %s (id, proc) VALUES (%d, %d)", table, id, proc))
	return err
}
