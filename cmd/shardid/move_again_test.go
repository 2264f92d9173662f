package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardid/shardid"
)

// TestAMoveRunAgainAfterItsCutoverSaysItHasNothingToDo: a move whose target
// serves the range already, run again (or dry-run again), says so and copies
// nothing, instead of a plan or a report of a move.
func TestAMoveRunAgainAfterItsCutoverSaysItHasNothingToDo(t *testing.T) {
	e := sqliteEnv(t)
	e.applicationWithItems(t, 0, 10)
	mustRun(t, "move", "--config", e.config, "--shards", "0-10", "--to", "c")
	for _, args := range [][]string{
		{"move", "--config", e.config, "--shards", "0-10", "--to", "c", "--dry-run"},
		{"move", "--config", e.config, "--shards", "0-10", "--to", "c"},
	} {
		out, err := run(t, args...)
		if err != nil || !strings.Contains(out, "were moved from a to c already") || strings.Contains(out, "to copy") || strings.Contains(out, "moved (resumed)") {
			t.Errorf("shardid %s, once the target serves the range: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestAMoveToAnotherTargetThanTheStoppedOnesNamesThatTarget: a move of a
// range whose move to c stopped midway, asked to go to b, is refused, and
// its hint resumes the move to c, not the command just refused.
func TestAMoveToAnotherTargetThanTheStoppedOnesNamesThatTarget(t *testing.T) {
	e := sqliteEnv(t)
	app, _ := e.applicationWithItems(t, 0, 5, 700, 1023)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := app.plugin.Move(ctx, shardid.Move{Logical: shardid.Range{From: 0, To: 1023}, To: "c", ChunkSize: 1, Progress: func(p shardid.MoveProgress) {
		if p.Phase == shardid.PhaseCopy && p.Copied > 0 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the move to c, stopped in its copy: %v", err)
	}
	out, err := run(t, "move", "--config", e.config, "--shards", "0-1023", "--to", "b")
	if err == nil || strings.Contains(out, "run the same command again") || !strings.Contains(out, "resume it with --to c") {
		t.Errorf("shardid move --to b of a range whose move to c stopped: %v\n%s", err, out)
	}
}

// TestAMoveStoppedBySIGTERMKeepsItsStateAndResumes: SIGTERM, which a
// scheduler sends to stop a job, stops a move as Ctrl-C does: the command
// ends with the hint to resume, and running it again finishes the move.
func TestAMoveStoppedBySIGTERMKeepsItsStateAndResumes(t *testing.T) {
	e := sqliteEnv(t)
	e.applicationWithItems(t, 0, 5, 700, 1023)
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := run(t, "move", "--config", e.config, "--shards", "0-1023", "--to", "c", "--chunk", "1", "--throttle", "1h") // it cannot end before the signal
		done <- result{out, err}
	}()
	main := direct(t, e.dsns["main"])
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var copying int64
		if err := main.Raw("SELECT count(*) FROM shardid_moves WHERE phase = 'copy'").Scan(&copying).Error; err == nil && copying > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the move did not reach its copy")
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped := <-done
	if stopped.err == nil || !strings.Contains(stopped.out, "run the same command again to resume it") {
		t.Fatalf("the move sent SIGTERM in its copy: %v\n%s", stopped.err, stopped.out)
	}
	out, err := run(t, "move", "--config", e.config, "--shards", "0-1023", "--to", "c")
	if err != nil || !strings.Contains(out, "moved (resumed)") {
		t.Fatalf("the move run again: %v\n%s", err, out)
	}
}

// TestAMoveRunWhileAnotherCutsItOverSaysItHasNothingToDo: a move run while
// another run of it is in its cutover waits for the move's lock, then finds
// the target serving the range: it says it had nothing to do, as a move run
// again after its cutover does, not "moved (resumed)" with the other run's
// figures as its own.
func TestAMoveRunWhileAnotherCutsItOverSaysItHasNothingToDo(t *testing.T) {
	for name, env := range map[string]func(*testing.T) opsEnv{"mysql": mysqlEnv, "postgres": postgresEnv} {
		t.Run(name, func(t *testing.T) {
			e := env(t)
			app, _ := e.applicationWithItems(t, 0, 5)
			written, release, moved := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				_, err := app.plugin.Move(context.Background(), shardid.Move{Logical: shardid.Range{From: 0, To: 10}, To: "c", Progress: func(p shardid.MoveProgress) {
					if p.Phase == shardid.PhaseCutover && p.Step == "verified" {
						close(written)
						<-release
					}
				}})
				moved <- err
			}()
			<-written
			type result struct {
				out string
				err error
			}
			second := make(chan result, 1)
			go func() {
				out, err := run(t, "move", "--config", e.config, "--shards", "0-10", "--to", "c")
				second <- result{out, err}
			}()
			time.Sleep(1500 * time.Millisecond) // it read the move in its cutover, and waits for the lock (3 s)
			close(release)
			if err := <-moved; err != nil {
				t.Fatalf("the first run: %v", err)
			}
			got := <-second
			if got.err != nil || !strings.Contains(got.out, "were moved from a to c already") || strings.Contains(got.out, "moved (resumed)") {
				t.Errorf("shardid move while another run cut it over: %v; want it to say it had nothing to do\n%s", got.err, got.out)
			}
		})
	}
}

// TestTheCleanupHintOfAMoveRunsAsPrinted: the "next" line of a move's
// report, pasted into a shell, cleans the move up, though the config's path
// holds a space and a quote (it was printed bare: the shell split it).
func TestTheCleanupHintOfAMoveRunsAsPrinted(t *testing.T) {
	e := sqliteEnv(t)
	e.applicationWithItems(t, 0, 10)
	body, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "ops team's shards.json")
	if err := os.WriteFile(config, body, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"move", "--config", config, "--shards", "0-10", "--to", "c"},
		{"move", "--config", config, "--shards", "0-10", "--to", "c"}, // moved already: the same hint
	} {
		out := mustRun(t, args...)
		_, hint, found := strings.Cut(out, "keeps a frozen copy: shardid ")
		hint, _, _ = strings.Cut(hint, "\n")
		if !found {
			t.Fatalf("no cleanup hint:\n%s", out)
		}
		words, err := exec.Command("sh", "-c", `eval "set -- $1"; for w in "$@"; do printf '%s\0' "$w"; done`, "sh", hint).Output()
		if err != nil {
			t.Fatalf("the hint %q does not read in a shell: %v", hint, err)
		}
		got := strings.Split(strings.TrimSuffix(string(words), "\x00"), "\x00")
		want := []string{"move", "cleanup", "--config", config, "--shards", "0-10"}
		if !slices.Equal(got, want) {
			t.Errorf("the hint %q reads in a shell as %q, want %q", hint, got, want)
		}
	}
}

// TestAMoveWhoseCancelStoppedMidwaySaysToRunTheCancelAgain: a cancel that
// stopped midway (its target's copies not all deleted) leaves a move that
// cannot resume: run again, dry-run, listed by move status or map, every
// message says to run the cancel again, none to resume the move, and the
// cancel run again ends it.
func TestAMoveWhoseCancelStoppedMidwaySaysToRunTheCancelAgain(t *testing.T) {
	e := sqliteEnv(t)
	app, _ := e.applicationWithItems(t, 0, 5, 700, 1023)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := shardid.Range{From: 0, To: 1023}
	_, err := app.plugin.Move(ctx, shardid.Move{Logical: r, To: "c", ChunkSize: 1, Progress: func(p shardid.MoveProgress) {
		if p.Phase == shardid.PhaseCopy && p.Copied > 1 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the move to c, stopped in its copy: %v", err)
	}
	// The cancel stops at the deletes of c's copies: c's write lock is held, and its file waits 100ms for it.
	locked := direct(t, e.dsns["c"]).Begin()
	must(t, locked.Exec("DELETE FROM shardid_cmd_items WHERE id = -1").Error)
	impatient := map[string]string{"main": e.dsns["main"], "a": e.dsns["a"], "b": e.dsns["b"], "c": strings.Replace(e.dsns["c"], "busy_timeout(20000)", "busy_timeout(100)", 1)}
	out, err := run(t, "move", "cancel", "--config", writeConfig(t, impatient).config, "--shards", "0-1023")
	must(t, locked.Rollback().Error)
	if err == nil || !strings.Contains(out, "the cancel stopped midway: run the same command again to end it") {
		t.Fatalf("shardid move cancel, stopped at the target's deletes: %v\n%s", err, out)
	}

	for _, args := range [][]string{
		{"move", "--shards", "0-1023", "--to", "c"},
		{"move", "--shards", "0-1023", "--to", "c", "--dry-run"},
		{"move", "status"},
		{"map"},
	} {
		args = append(args, "--config", e.config)
		out, err := run(t, args...)
		text := fmt.Sprint(out, err)
		if !strings.Contains(text, "run the cancel again to end it") || strings.Contains(text, "resume it") || strings.Contains(text, "to copy") {
			t.Errorf("shardid %s, its cancel stopped midway: %v; want it to say to run the cancel again, and not to resume the move\n%s", strings.Join(args, " "), err, out)
		}
		if args[0] == "move" && args[1] != "status" && err == nil {
			t.Errorf("shardid %s, its cancel stopped midway, succeeded\n%s", strings.Join(args, " "), out)
		}
	}
	out = mustRun(t, "move", "cancel", "--config", e.config, "--shards", "0-1023")
	wantIn(t, out, "cancelled the move of logical shards 0-1023 to c")
	out = mustRun(t, "move", "--config", e.config, "--shards", "0-1023", "--to", "c")
	wantIn(t, out, "moved logical shards 0-1023 from a to c")
}
