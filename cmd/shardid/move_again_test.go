package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardid/shardid"
)

// TestAMoveRunAgainAfterItsCutoverSaysItHasNothingToDo: a move whose target
// serves the range already, run again (or dry-run again), says so and copies
// nothing, instead of a plan or a report of a move.
func TestAMoveRunAgainAfterItsCutoverSaysItHasNothingToDo(t *testing.T) {
	e := sqliteEnv(t)
	app := e.application(t)
	if err := app.plugin.AutoMigrate(app.db, &cmdItem{}); err != nil {
		t.Fatal(err)
	}
	layout := app.plugin.Layout()
	for i, shard := range []int{0, 10} {
		if err := app.db.Create(&cmdItem{ID: layout.Compose(time.Now(), shard, i), Name: "x"}).Error; err != nil {
			t.Fatal(err)
		}
	}
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
	app := e.application(t)
	if err := app.plugin.AutoMigrate(app.db, &cmdItem{}); err != nil {
		t.Fatal(err)
	}
	layout := app.plugin.Layout()
	for i, shard := range []int{0, 5, 700, 1023} {
		if err := app.db.Create(&cmdItem{ID: layout.Compose(time.Now(), shard, i), Name: "x"}).Error; err != nil {
			t.Fatal(err)
		}
	}
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
