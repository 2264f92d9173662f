package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// moverConfigVar names the config file of the mover process that
// TestASQLiteMoveRunningInAnotherProcessIsSeenRunning starts.
const moverConfigVar = "SHARDID_CMD_TEST_MOVER_CONFIG"

// TestASQLiteMoveRunningInAnotherProcessIsSeenRunning: on SQLite the
// move's lock held by a "shardid move" in one process is seen by the
// commands of another, as a server's named lock is: move status and map say
// the move runs (not "stopped, run the move again to resume it, or cancel
// it"), and a cancel or a second run of the move is refused while it does
// (a cancel from another process deleted the target's copy under the
// running mover, which copied on and overwrote the cancelled record). Once
// the mover is killed its lock goes with it: the move reads stopped, and
// resumes to its end.
func TestASQLiteMoveRunningInAnotherProcessIsSeenRunning(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SQLite's locks among processes are Linux's open file description locks")
	}
	e := sqliteEnv(t)
	e.applicationWithItems(t, 0, 5, 700, 1023)
	mover := exec.Command(os.Args[0], "-test.run=^TestRunAMoverUntilKilled$", "-test.count=1")
	mover.Env = append(os.Environ(), moverConfigVar+"="+e.config)
	mover.Stdout, mover.Stderr = os.Stderr, os.Stderr
	if err := mover.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = mover.Process.Kill()
			_ = mover.Wait()
		}
	}
	t.Cleanup(kill)
	main := direct(t, e.dsns["main"])
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var copying int64
		if err := main.Raw("SELECT count(*) FROM shardid_moves WHERE phase = 'copy'").Scan(&copying).Error; err == nil && copying > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the mover process did not reach its copy")
		}
	}

	if out := mustRun(t, "move", "status", "--config", e.config); !strings.Contains(out, "copy   running") {
		t.Errorf("move status while another process moves: want it running\n%s", out)
	}
	if out := mustRun(t, "map", "--config", e.config); !strings.Contains(out, "moving logical shards 0-1023 from a to c: phase copy") {
		t.Errorf("map while another process moves: want the move running\n%s", out)
	}
	for _, args := range [][]string{
		{"move", "cancel", "--config", e.config, "--shards", "0-1023"},
		{"move", "--config", e.config, "--shards", "0-1023", "--to", "c"},
	} {
		if out, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "another run holds the move of 0-1023") {
			t.Errorf("shardid %s while another process moves: %v; want it refused, another run holding the move\n%s", strings.Join(args, " "), err, out)
		}
	}

	kill()
	if out := mustRun(t, "move", "status", "--config", e.config); !strings.Contains(out, "copy   stopped") {
		t.Errorf("move status once the mover process was killed: want it stopped\n%s", out)
	}
	if out := mustRun(t, "move", "--config", e.config, "--shards", "0-1023", "--to", "c"); !strings.Contains(out, "moved (resumed) logical shards 0-1023 from a to c") {
		t.Errorf("the move resumed once its mover process was killed:\n%s", out)
	}
}

// TestRunAMoverUntilKilled is the mover process of
// TestASQLiteMoveRunningInAnotherProcessIsSeenRunning: a move that copies a
// row an hour.
func TestRunAMoverUntilKilled(t *testing.T) {
	config := os.Getenv(moverConfigVar)
	if config == "" {
		t.Skip("the mover process of another test")
	}
	out, err := run(t, "move", "--config", config, "--shards", "0-1023", "--to", "c", "--chunk", "1", "--throttle", "1h")
	t.Fatalf("the move ended before it was killed: %v\n%s", err, out)
}
