package main

import (
	"strings"
	"testing"
	"time"
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
