package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// runNoPanic runs the command, turning a panic into an error.
func runNoPanic(t *testing.T, args ...string) (out string, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("PANIC: %v", r)
		}
	}()
	return run(t, args...)
}

// TestDemoRefusesSizesItCannotHold: --rows, --workers or --photos below
// their least or above their most fails with an error, not a panic.
func TestDemoRefusesSizesItCannotHold(t *testing.T) {
	for _, args := range [][]string{
		{"--rows", "0"},
		{"--rows", "-1"},
		{"--rows", fmt.Sprint(math.MaxInt64)},
		{"--rows", "1", "--workers", fmt.Sprint(math.MaxInt64)},
		{"--rows", "1", "--photos", "-1"},
	} {
		out, err := runNoPanic(t, append([]string{"demo", "--dir", t.TempDir()}, args...)...)
		if err == nil || strings.HasPrefix(err.Error(), "PANIC") {
			t.Errorf("demo %v: %v\n%s", args, err, out)
		}
	}
}

// TestMoveRefusesWhatItCannotDo: a move to where the range is, of a range
// over two databases or outside the layout, a cleanup or cancel of no move
// or of one that ended, and unknown commands fail with an error.
func TestMoveRefusesWhatItCannotDo(t *testing.T) {
	e := sqliteEnv(t)
	e.applicationWithItems(t, 0, 10, 4000, 4200, 8191)
	for _, args := range [][]string{
		{"move", "--config", e.config, "--shards", "0-10", "--to", "a"},
		{"move", "--config", e.config, "--shards", "0-10", "--to", "a", "--dry-run"},
		{"move", "--config", e.config, "--shards", "4000-4200", "--to", "c"},
		{"move", "--config", e.config, "--shards", "4000-4200", "--to", "c", "--dry-run"},
		{"move", "--config", e.config, "--shards", "8191-8192", "--to", "c"},
		{"move", "--config", e.config, "--shards", "8192", "--to", "c"},
		{"move", "cleanup", "--config", e.config, "--shards", "0-10"},
		{"move", "cancel", "--config", e.config, "--shards", "0-10"},
		{"move", "nope", "--config", e.config},
		{"nope"},
	} {
		out, err := runNoPanic(t, args...)
		if err == nil {
			t.Errorf("shardid %s: no error\n%s", strings.Join(args, " "), out)
		}
	}
	// Ended moves: cancel, then cancel again, cleanup of a cancelled one; cleanup twice.
	mustRun(t, "move", "--config", e.config, "--shards", "0-10", "--to", "c")
	for _, args := range [][]string{
		{"move", "cancel", "--config", e.config, "--shards", "0-10"}, // after the cutover
	} {
		out, err := runNoPanic(t, args...)
		if err == nil {
			t.Errorf("shardid %s: no error\n%s", strings.Join(args, " "), out)
		}
	}
	mustRun(t, "move", "cleanup", "--config", e.config, "--shards", "0-10", "--wait", "30s")
	for _, args := range [][]string{
		{"move", "cleanup", "--config", e.config, "--shards", "0-10", "--wait", "5s"},
		{"move", "cancel", "--config", e.config, "--shards", "0-10"},
	} {
		out, err := runNoPanic(t, args...)
		if err == nil {
			t.Errorf("shardid %s: no error\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestAMoveWhoseSourceLacksATableNamesTheSource: a move (or its dry run)
// whose source lacks a sharded table, dropped there by hand, fails naming
// the source, as every other error of a physical database does.
func TestAMoveWhoseSourceLacksATableNamesTheSource(t *testing.T) {
	e := sqliteEnv(t)
	app, _ := e.applicationWithItems(t, 4096)
	_ = app.close()
	if err := direct(t, e.dsns["b"]).Exec("DROP TABLE shardid_cmd_items").Error; err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"move", "--config", e.config, "--shards", "4096-4100", "--to", "c"},
		{"move", "--config", e.config, "--shards", "4096-4100", "--to", "c", "--dry-run"},
	} {
		out, err := run(t, args...)
		if err == nil {
			t.Fatalf("shardid %s: no error\n%s", strings.Join(args, " "), out)
		}
		if !strings.Contains(err.Error(), "source b") {
			t.Errorf("shardid %s: %v; want the error to name b, the database whose table is missing", strings.Join(args, " "), err)
		}
	}
}

// TestADryRunRefusesWhatTheMoveWould: a dry run of a move whose target
// lacks a sharded table fails as the move would, in its prepare, instead of
// printing a plan; neither records a move.
func TestADryRunRefusesWhatTheMoveWould(t *testing.T) {
	e := sqliteEnv(t)
	app, _ := e.applicationWithItems(t, 4096)
	_ = app.close()
	if err := direct(t, e.dsns["c"]).Exec("DROP TABLE shardid_cmd_items").Error; err != nil {
		t.Fatal(err)
	}
	for _, dryRun := range []bool{true, false} {
		args := []string{"move", "--config", e.config, "--shards", "4096-4100", "--to", "c"}
		if dryRun {
			args = append(args, "--dry-run")
		}
		out, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "prepare") || !strings.Contains(err.Error(), "table shardid_cmd_items on c") {
			t.Errorf("shardid %s, c lacking the table: %v\n%s", strings.Join(args, " "), err, out)
		}
		var moves int64
		if err := direct(t, e.dsns["main"]).Raw("SELECT count(*) FROM shardid_moves WHERE phase <> 'prepare'").Scan(&moves).Error; err != nil || moves != 0 {
			t.Errorf("after shardid %s: %d moves past their prepare (%v)", strings.Join(args, " "), moves, err)
		}
	}
}
