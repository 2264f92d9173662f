package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestACommandRefusesAMapTableHoldingNoMap: a shared map table that exists
// but holds no map (emptied by mistake, or a restore of main without its
// rows) is refused by a command that only reads, as a missing one is: it is
// not seeded from the operator's file, whose ranges may differ from the
// application's, so the application still finds its rows.
func TestACommandRefusesAMapTableHoldingNoMap(t *testing.T) {
	e := sqliteEnv(t)
	app, ids := e.applicationWithItems(t, 5) // shard 5: on a
	id := ids[0]
	_ = app.close()
	main := direct(t, e.dsns["main"])
	if err := main.Exec("DELETE FROM shardid_shard_map").Error; err != nil {
		t.Fatal(err)
	}
	// The operator's file has a and b the other way round.
	var c map[string]any
	body, _ := os.ReadFile(e.config)
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	c["shards"].([]any)[0].(map[string]any)["logical"] = "4096-8191"
	c["shards"].([]any)[1].(map[string]any)["logical"] = "0-4095"
	body, _ = json.Marshal(c)
	operator := filepath.Join(t.TempDir(), "operator.json")
	if err := os.WriteFile(operator, body, 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := run(t, "map", "--config", operator)
	var maps []string
	if err := main.Raw("SELECT map FROM shardid_shard_map").Scan(&maps).Error; err != nil {
		t.Fatal(err)
	}
	if err == nil || !strings.Contains(err.Error(), "holds no map") {
		t.Errorf("shardid map on a map table holding no map: %v, want it refused\n%s", err, out)
	}
	if len(maps) > 0 {
		t.Errorf("shardid map wrote the shared map from its file: %v\n%s", maps, out)
	}
	// What the application now reads: its row, by the map the command wrote.
	app = e.application(t)
	var back cmdItem
	if err := app.db.First(&back, id).Error; err != nil {
		t.Errorf("the application cannot read its row %d of shard 5 any more: %v", id, err)
	}
	if out, err := run(t, "verify", "--config", e.config); err != nil || !strings.Contains(out, "all rows are on the database") {
		t.Errorf("verify with the application's file: %v\n%s", err, out)
	}
}
