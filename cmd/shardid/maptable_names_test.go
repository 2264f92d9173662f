package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestACommandFollowsAMapTableNamedInCapitalsOrByAReservedWord: an
// application's Config.MapTable "AppMap" (which PostgreSQL folds to
// lower case) or "order" (a reserved word) holds its map, which the command
// given the same map_table reads.
func TestACommandFollowsAMapTableNamedInCapitalsOrByAReservedWord(t *testing.T) {
	for name, env := range map[string]func(*testing.T) opsEnv{"sqlite": sqliteEnv, "mysql": mysqlEnv, "postgres": postgresEnv} {
		for _, table := range []string{"AppMap", "order"} {
			t.Run(name+"/"+table, func(t *testing.T) {
				e := env(t)
				var c map[string]any
				body, _ := os.ReadFile(e.config)
				if err := json.Unmarshal(body, &c); err != nil {
					t.Fatal(err)
				}
				c["map_table"] = table
				body, _ = json.Marshal(c)
				if err := os.WriteFile(e.config, body, 0o600); err != nil {
					t.Fatal(err)
				}
				app, _ := e.applicationWithItems(t, 5)
				_ = app.close()
				out, err := run(t, "map", "--config", e.config)
				if err != nil {
					t.Fatalf("shardid map by map_table %q: %v\n%s", table, err, out)
				}
				wantIn(t, out, "map version 1: 8192 logical shards on 3 physical databases")
			})
		}
	}
}

// TestAMapTableNoApplicationCouldNameIsRefusedAsAName: a map_table that is
// no name Config.MapTable takes (not letters, digits and _, starting with a
// digit, too long) is refused as a name, saying what a name is, by every
// command that opens the databases: "is not on main" sent the operator to
// look for a table that no application could have made.
func TestAMapTableNoApplicationCouldNameIsRefusedAsAName(t *testing.T) {
	e := sqliteEnv(t)
	e.application(t)
	for _, table := range []string{"app-map", "1map", "app map", "map;drop", strings.Repeat("m", 54)} {
		var c map[string]any
		body, _ := os.ReadFile(e.config)
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatal(err)
		}
		c["map_table"] = table
		body, _ = json.Marshal(c)
		path := filepath.Join(t.TempDir(), "bad-map-table.json")
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"map"}, {"health"}, {"move", "status"}, {"move", "--shards", "0-10", "--to", "c"}} {
			args = append(args, "--config", path)
			out, err := run(t, args...)
			if err == nil || !strings.Contains(err.Error(), "map_table: ") || !strings.Contains(err.Error(), "letters, digits and _") || strings.Contains(err.Error(), "not on main") {
				t.Errorf("shardid %s, map_table %q: %v; want it refused as no table name\n%s", strings.Join(args, " "), table, err, out)
			}
		}
	}
}
