package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestACommandSaysWhichDatabaseOfTheMapItsFileLeavesOut: a database the
// shared map still names, emptied by a move and its cleanup, that the file
// leaves out is neither read nor pinged; map, health and verify say so,
// naming it, instead of reporting every row placed and every database up.
func TestACommandSaysWhichDatabaseOfTheMapItsFileLeavesOut(t *testing.T) {
	e := sqliteEnv(t)
	app, _ := e.applicationWithItems(t, 0, 4200)
	mustRun(t, "move", "--config", e.config, "--shards", "4096-8191", "--to", "c")
	mustRun(t, "move", "cleanup", "--config", e.config, "--shards", "4096-8191", "--wait", "30s")
	stray := app.plugin.Layout().Compose(time.Now(), 5000, 1) // written on b by a process that lagged
	must(t, direct(t, e.dsns["b"]).Exec("INSERT INTO shardid_cmd_items (id, name) VALUES (?, 'stray')", stray).Error)
	body, err := json.Marshal(map[string]any{"main": e.dsns["main"], "layout": map[string]int{"shard_bits": 13}, "shards": []map[string]string{
		{"name": "a", "dsn": e.dsns["a"], "logical": "0-4095"},
		{"name": "c", "dsn": e.dsns["c"], "logical": "4096-8191"},
	}})
	must(t, err)
	withoutB := filepath.Join(t.TempDir(), "without-b.json")
	must(t, os.WriteFile(withoutB, body, 0o600))
	for _, command := range []string{"map", "health", "verify"} {
		_, stderr, _ := runApart(t, command, "--config", withoutB)
		if !strings.Contains(stderr, "b holds no logical shards and is not in Config.Shards") {
			t.Errorf("shardid %s, b left out of the file: stderr %q; want a warning naming b", command, stderr)
		}
	}
}
