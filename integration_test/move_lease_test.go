package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardid/shardid"
)

// moverChildVar, set, makes TestMoverKilledWhileFrozenCostsWritersOneLease
// and TestMoveStatusTellsARunningMoverFromAKilledOne the mover process of the
// backend it names, which its parent kills.
const moverChildVar = "SHARDID_TEST_MOVER_CHILD"

// childLease is the freeze lease of the killed mover.
const childLease = time.Second

// TestMoverKilledWhileFrozenCostsWritersOneLease: a mover process killed
// while the range is frozen leaves writers of the range blocked for at most
// its FreezeLease: the source's triggers then take their writes again, held
// ones included, and the move run again completes with them.
func TestMoverKilledWhileFrozenCostsWritersOneLease(t *testing.T) {
	if name := os.Getenv(moverChildVar); name != "" {
		runMoverUntilKilled(t, name)
		return
	}
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		users := r.seedUsers(t, 200)
		child := moverFrozenInChild(t, b, "TestMoverKilledWhileFrozenCostsWritersOneLease")
		// A writer whose held writes wait far past the lease: what ends
		// their wait is the lease's lapse, however slow the machine.
		writer, writes := r.open(t, shardid.Config{MoveWait: time.Minute})
		// Frozen: a write of the range is held, not taken.
		frozenWrite := make(chan error, 1)
		go func() {
			frozenWrite <- writer.Model(&MvUser{ID: users[0]}).Update("name", "written while frozen").Error
		}()
		for deadline := time.Now().Add(10 * time.Second); writes.MovedWrites().Held == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the write of the frozen range was not held")
			}
		}
		must(t, child.Process.Kill())
		killed := time.Now()
		_ = child.Wait()
		must(t, writer.Model(&MvUser{ID: users[1]}).Update("name", "written after the kill").Error)
		blocked := time.Since(killed)
		if err := <-frozenWrite; err != nil {
			t.Fatalf("the write held when the mover died: %v", err)
		}
		t.Logf("%s: a write after the mover died waited %v (lease %v); held writes: %+v", b.name, blocked, childLease, writes.MovedWrites())
		if blocked > childLease+15*time.Second { // a frozen range that never lapses holds it the whole minute
			t.Errorf("a write after the mover died waited %v, past the lease of %v", blocked, childLease)
		}
		var got MvUser
		must(t, r.source.First(&got, users[0]).Error)
		if got.Name != "written while frozen" {
			t.Errorf("the source has %q", got.Name)
		}

		// Run again, the move carries both writes.
		report := r.move(t, shardid.Move{})
		if !report.Resumed {
			t.Errorf("the move run again was not resumed: %s", describeReport(report))
		}
		for id, want := range map[int64]string{users[0]: "written while frozen", users[1]: "written after the kill"} {
			var got MvUser
			if err := r.target.First(&got, id).Error; err != nil || got.Name != want {
				t.Errorf("user %d on the target: %q (%v), want %q", id, got.Name, err, want)
			}
		}
	})
}

// TestMoveStatusTellsARunningMoverFromAKilledOne: Moves says a run holds the
// move while its mover process runs, and no more once it is killed, though
// the recorded phase stays where the mover stopped.
func TestMoveStatusTellsARunningMoverFromAKilledOne(t *testing.T) {
	if name := os.Getenv(moverChildVar); name != "" {
		runMoverUntilKilled(t, name)
		return
	}
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		r.seedUsers(t, 20)
		child := moverFrozenInChild(t, b, "TestMoveStatusTellsARunningMoverFromAKilledOne")
		status := func() shardid.MoveStatus {
			moves, err := r.p.Moves(context.Background())
			must(t, err)
			i := slices.IndexFunc(moves, func(m shardid.MoveStatus) bool { return m.Logical == movingRange })
			if i < 0 {
				t.Fatalf("no move of %v recorded: %+v", movingRange, moves)
			}
			return moves[i]
		}
		if st := status(); !st.Running || st.Phase != shardid.PhaseCutover {
			t.Fatalf("while its mover runs, the move is %q, running %v", st.Phase, st.Running)
		}
		must(t, child.Process.Kill())
		_ = child.Wait()
		// The server drops the lock once it sees the connection gone.
		st := status()
		for deadline := time.Now().Add(10 * time.Second); st.Running && time.Now().Before(deadline); st = status() {
			time.Sleep(50 * time.Millisecond)
		}
		if st.Running || st.Phase != shardid.PhaseCutover {
			t.Errorf("after its mover was killed, the move is %q, running %v", st.Phase, st.Running)
		}
		r.move(t, shardid.Move{}) // resumed to its end, the rig's range serves again
	})
}

// moverFrozenInChild starts this test binary's test as the mover process of
// backend b (runMoverUntilKilled), and returns it once the range is frozen;
// it is killed when the test ends, if not before.
func moverFrozenInChild(t *testing.T, b backend, test string) *exec.Cmd {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	child.Env = append(os.Environ(), moverChildVar+"="+b.name)
	out, err := child.StdoutPipe()
	must(t, err)
	child.Stderr = os.Stderr
	must(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() && !strings.Contains(lines.Text(), "FROZEN") {
	}
	if lines.Err() != nil || !strings.Contains(lines.Text(), "FROZEN") {
		t.Fatalf("the mover process ended before the freeze: %v", lines.Err())
	}
	return child
}

// runMoverUntilKilled moves the rig's range with a short lease and stops
// at the freeze, telling its parent, until it is killed.
func runMoverUntilKilled(t *testing.T, name string) {
	i := slices.IndexFunc(backends, func(b backend) bool { return b.name == name })
	if i < 0 {
		t.Fatalf("no backend %q", name)
	}
	r := &moveRig{b: backends[i], dir: t.TempDir()}
	_, p := r.open(t, shardid.Config{})
	_, err := p.Move(context.Background(), shardid.Move{Logical: movingRange, To: name + "-target", Models: moveModels, FreezeLease: childLease,
		Progress: func(pr shardid.MoveProgress) {
			if pr.Step == "frozen" {
				fmt.Println("FROZEN")
				select {} // the parent kills this process
			}
		}})
	t.Fatal(errors.Join(errors.New("the move ended before the freeze"), err))
}

// TestMoveCancelledWhileFrozenThawsAtOnce: a move whose context ends while
// the range is frozen (Ctrl-C) thaws it as it returns, without waiting out
// its lease, and the move run again completes.
func TestMoveCancelledWhileFrozenThawsAtOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		users := r.seedUsers(t, 50)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels, FreezeLease: time.Hour,
			Progress: func(pr shardid.MoveProgress) {
				if pr.Step == "frozen" {
					cancel()
				}
			}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled move: %v", err)
		}
		held := r.p.MovedWrites().Held
		must(t, r.db.Model(&MvUser{ID: users[0]}).Update("name", "after the cancel").Error)
		if r.p.MovedWrites().Held != held {
			t.Errorf("a write after the cancelled freeze was held: the range stayed frozen")
		}
		r.move(t, shardid.Move{})
		var got MvUser
		if err := r.target.First(&got, users[0]).Error; err != nil || got.Name != "after the cancel" {
			t.Errorf("user %d on the target: %q (%v)", users[0], got.Name, err)
		}
	})
}
