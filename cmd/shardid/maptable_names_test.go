package main

import (
	"encoding/json"
	"os"
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
