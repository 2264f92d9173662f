package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardid/shardid"
)

// TestACommandCreatesNoSQLiteFileForAPathThatIsMissing: an operator's file
// whose SQLite path for main is mistyped does not make an empty database
// there (then reported as "map_table is not on main"): main is refused
// naming the missing file, and no file appears.
func TestACommandCreatesNoSQLiteFileForAPathThatIsMissing(t *testing.T) {
	e := sqliteEnv(t)
	e.application(t)
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.db")

	dsns := map[string]string{"main": "file:" + typo, "a": e.dsns["a"], "b": e.dsns["b"], "c": e.dsns["c"]}
	for _, args := range [][]string{{"map"}, {"health"}, {"verify"}, {"move", "status"}, {"recover"}} {
		args = append(args, "--config", writeConfig(t, dsns).config)
		out, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "main") || !strings.Contains(err.Error(), typo) {
			t.Errorf("shardid %s, main a missing file: %v; want an error naming main and %s\n%s", strings.Join(args, " "), err, typo, out)
		}
		if _, err := os.Stat(typo); err == nil {
			t.Fatalf("shardid %s created %s, main's missing file", strings.Join(args, " "), typo)
		}
	}
}

// TestACommandCreatesNoSQLiteFileForAShardPathThatIsMissing: the same for
// a shard: a mistyped path is not made a database given a shardid token,
// reported as "are two shards' DSNs swapped?"; the shard is down, and the
// command says which file it did not find.
func TestACommandCreatesNoSQLiteFileForAShardPathThatIsMissing(t *testing.T) {
	e := sqliteEnv(t)
	app := e.application(t)
	if err := app.plugin.AutoMigrate(app.db, &cmdItem{}); err != nil { // the application opens every shard
		t.Fatal(err)
	}
	typo := filepath.Join(t.TempDir(), "typo.db")
	dsns := map[string]string{"main": e.dsns["main"], "a": e.dsns["a"], "b": e.dsns["b"], "c": "file:" + typo}
	for _, args := range [][]string{{"health"}, {"verify"}, {"recover"}} {
		args = append(args, "--config", writeConfig(t, dsns).config)
		out, err := run(t, args...)
		failed := err != nil || args[0] == "recover" // SQLite has no prepared transactions to recover
		if !failed || strings.Contains(fmt.Sprint(out, err), "swapped") || !strings.Contains(out, "shard c: ") || !strings.Contains(out, typo) {
			t.Errorf("shardid %s, shard c a missing file: %v; want c down, its missing file named, not a database swapped\n%s", strings.Join(args, " "), err, out)
		}
		if _, err := os.Stat(typo); err == nil {
			t.Fatalf("shardid %s created %s, shard c's missing file", strings.Join(args, " "), typo)
		}
	}
}

// TestAMoveOfARangePastTheLayoutSaysSo: --shards beyond the layout's
// logical shards is refused naming the bounds on every kind of database,
// before any SQL takes the range (PostgreSQL refused a number past int4 in
// its own words: "failed to encode args[1]").
func TestAMoveOfARangePastTheLayoutSaysSo(t *testing.T) {
	for name, env := range map[string]func(*testing.T) opsEnv{"sqlite": sqliteEnv, "mysql": mysqlEnv, "postgres": postgresEnv} {
		t.Run(name, func(t *testing.T) {
			e := env(t)
			e.applicationWithItems(t, 0)
			for _, shards := range []string{"0-9223372036854775807", "0-2147483648", "8192"} {
				for _, extra := range [][]string{nil, {"--dry-run"}} {
					args := append([]string{"move", "--config", e.config, "--shards", shards, "--to", "c"}, extra...)
					out, err := runNoPanic(t, args...)
					if err == nil || !strings.Contains(err.Error(), "not within 0-8191") {
						t.Errorf("shardid %s: %v; want it refused as not within 0-8191\n%s", strings.Join(args, " "), err, out)
					}
				}
			}
		})
	}
}

// TestAMoveOffASourceAwaitingCleanupSaysToCleanItUp: a second move off a
// source whose earlier move serves its target and awaits its cleanup is
// refused telling to clean that move up, not to "finish or cancel" it: it is
// finished, and too late to cancel.
func TestAMoveOffASourceAwaitingCleanupSaysToCleanItUp(t *testing.T) {
	e := sqliteEnv(t)
	e.applicationWithItems(t, 0, 20)
	mustRun(t, "move", "--config", e.config, "--shards", "0-10", "--to", "c")
	for _, extra := range [][]string{nil, {"--dry-run"}} {
		args := append([]string{"move", "--config", e.config, "--shards", "20-30", "--to", "c"}, extra...)
		out, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "clean") || strings.Contains(err.Error(), "cancel") {
			t.Errorf("shardid %s, a's move of 0-10 awaiting its cleanup: %v; want it to say to clean that move up, and not to cancel it\n%s", strings.Join(args, " "), err, out)
		}
	}
	// As it says: cleaned up, the second move runs.
	mustRun(t, "move", "cleanup", "--config", e.config, "--shards", "0-10", "--wait", "30s")
	mustRun(t, "move", "--config", e.config, "--shards", "20-30", "--to", "c")
}

// TestACleanupWaitBoundsOnlyTheWaitForLaggingProcesses: move cleanup's help
// says --wait is how long it waits for processes that route by an older
// map, then deletes the copy; with no process behind, a short --wait does
// not stop the deletion part way ("context deadline exceeded", part of the
// copy deleted).
func TestACleanupWaitBoundsOnlyTheWaitForLaggingProcesses(t *testing.T) {
	e := sqliteEnv(t)
	app := e.application(t)
	if err := app.plugin.AutoMigrate(app.db, &cmdItem{}); err != nil {
		t.Fatal(err)
	}
	layout := app.plugin.Layout()
	rows, start := make([]cmdItem, 20000), time.Now().Add(-time.Hour)
	for i := range rows {
		rows[i] = cmdItem{ID: layout.Compose(start.Add(time.Duration(i/10)*time.Millisecond), i%10, 0), Name: "x"}
	}
	if err := direct(t, e.dsns["a"]).CreateInBatches(rows, 500).Error; err != nil {
		t.Fatal(err)
	}
	mustRun(t, "move", "--config", e.config, "--shards", "0-9", "--to", "c", "--chunk", "5000")
	_ = app.close() // no process behind the new map: nothing to wait for
	help := mustRun(t, "move", "cleanup", "--help")
	wantIn(t, help, "how long to wait for processes that still route by an older map")
	out, err := run(t, "move", "cleanup", "--config", e.config, "--shards", "0-9", "--wait", "50ms")
	if err != nil {
		t.Errorf("move cleanup --wait 50ms, no process behind: %v; --wait bounds the wait for processes, not the deletion\n%s", err, out)
	}
	if left := idsIn(t, direct(t, e.dsns["a"]), layout, shardid.Range{From: 0, To: 9}); err != nil && len(left) > 0 && len(left) < len(rows) {
		t.Errorf("the cleanup stopped part way: %d of %d rows of the copy left on a", len(left), len(rows))
	}
}

// TestADatabaseDownIsReportedOnce: a PostgreSQL shard that refuses
// connections is down with its driver's error said once, not twice (the
// creation of the token table, tried again, joined the same failure).
func TestADatabaseDownIsReportedOnce(t *testing.T) {
	e := postgresEnv(t)
	e.applicationWithItems(t, 0)
	e.dsns["c"] = "postgres://postgres@127.0.0.1:1/nowhere?connect_timeout=2"
	e = writeConfig(t, e.dsns)
	var health struct {
		Databases []struct{ Name, Error string } `json:"databases"`
	}
	var verify struct {
		Unread []struct{ Database, Error string } `json:"unread_databases"`
	}
	stdout, _, err := runApart(t, "health", "--config", e.config, "--json")
	if jsonErr := json.Unmarshal([]byte(stdout), &health); err == nil || jsonErr != nil || len(health.Databases) != 3 {
		t.Fatalf("health --json with c down: %v, %v\n%s", err, jsonErr, stdout)
	}
	stdout, _, err = runApart(t, "verify", "--config", e.config, "--json")
	if jsonErr := json.Unmarshal([]byte(stdout), &verify); err == nil || jsonErr != nil || len(verify.Unread) != 1 {
		t.Fatalf("verify --json with c down: %v, %v\n%s", err, jsonErr, stdout)
	}
	for what, text := range map[string]string{"health": health.Databases[2].Error, "verify": verify.Unread[0].Error} {
		if n := strings.Count(text, "failed to connect to"); n != 1 {
			t.Errorf("%s --json says c's failure %d times:\n%s", what, n, text)
		}
		if n := strings.Count(text, "physical database unavailable: c"); n != 1 {
			t.Errorf("%s --json says c is unavailable %d times:\n%s", what, n, text)
		}
	}
}

// TestACommandOnAMainThatIsNoDatabaseSaysSo: a main SQLite path that is a
// file of something else, or a directory, is refused saying so, not as a
// map table missing there ("map_table: shardid_shard_map is not on main",
// which sent the operator after the table's name), nor as SQLite's "out of
// memory (14)".
func TestACommandOnAMainThatIsNoDatabaseSaysSo(t *testing.T) {
	e := sqliteEnv(t)
	e.application(t)
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not an SQLite database. ", 10)), 0o600); err != nil {
		t.Fatal(err)
	}
	for main, want := range map[string]string{"file:" + junk: "main: reading its tables: file is not a database", "file:" + dir: "main: " + dir + " is a directory"} {
		dsns := map[string]string{"main": main, "a": e.dsns["a"], "b": e.dsns["b"], "c": e.dsns["c"]}
		for _, args := range [][]string{{"map"}, {"health"}, {"move", "status"}} {
			args = append(args, "--config", writeConfig(t, dsns).config)
			out, err := run(t, args...)
			if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "map_table") {
				t.Errorf("shardid %s, main %s: %v; want an error with %q\n%s", strings.Join(args, " "), main, err, want, out)
			}
		}
	}
}

// TestACommandThatOnlyReadsBindsNoShardNameToADatabase: a file naming a new
// shard (not yet in the shared map) by a mistyped DSN, given to the commands
// that only read, does not record that database for the name in the plugin's
// database, nor give it a token: the application that then opens the name
// with the right DSN is not refused as "opening another database".
func TestACommandThatOnlyReadsBindsNoShardNameToADatabase(t *testing.T) {
	for name, env := range map[string]func(*testing.T) opsEnv{"sqlite": sqliteEnv, "mysql": mysqlEnv, "postgres": postgresEnv} {
		t.Run(name, func(t *testing.T) { aCommandThatOnlyReadsBindsNoShardName(t, env(t)) })
	}
}

func aCommandThatOnlyReadsBindsNoShardName(t *testing.T, e opsEnv) {
	app := e.application(t)
	if err := app.plugin.AutoMigrate(app.db, &cmdItem{}); err != nil {
		t.Fatal(err)
	}
	right, typo := emptyDatabase(t, e, "_d"), emptyDatabase(t, e, "_d_typo") // a new shard's empty database, as the operator makes one
	withD := func(d string) string {
		body, err := json.Marshal(map[string]any{"main": e.dsns["main"], "layout": map[string]int{"shard_bits": 13}, "shards": []map[string]string{
			{"name": "a", "dsn": e.dsns["a"], "logical": "0-4095"},
			{"name": "b", "dsn": e.dsns["b"], "logical": "4096-8191"},
			{"name": "c", "dsn": e.dsns["c"]},
			{"name": "d", "dsn": d},
		}})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "with-d.json")
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	mistyped := withD(typo)
	for _, args := range [][]string{{"health"}, {"map"}, {"verify"}, {"move", "status"}, {"recover"}, {"move", "--shards", "0-10", "--to", "d", "--dry-run"}} {
		args = append(args, "--config", mistyped)
		if out, err := run(t, args...); err != nil && args[0] != "verify" && args[0] != "move" {
			t.Errorf("shardid %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if tables, err := direct(t, typo).Migrator().GetTables(); err != nil || len(tables) > 0 {
		t.Errorf("a command that only reads wrote to the mistyped database: tables %v (%v)", tables, err)
	}
	var bound int64
	if err := direct(t, e.dsns["main"]).Raw("SELECT COUNT(*) FROM shardid_shard_databases WHERE name = 'd'").Scan(&bound).Error; err != nil {
		t.Fatal(err)
	}
	if bound != 0 {
		t.Errorf("a command that only reads recorded a database for the shard name d")
	}
	c, err := readConfig(withD(right))
	if err != nil {
		t.Fatal(err)
	}
	later, err := openConfig(c, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer later.close()
	results, err := later.plugin.Ping(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Err != nil {
			t.Errorf("the application opening d by its right DSN: %s: %v", r.Name, r.Err)
		}
	}
	// Once the application has bound d, the commands still check it, and
	// every name: a and b swapped are both refused.
	out, err := run(t, "health", "--config", mistyped)
	if err == nil || !strings.Contains(out, "shard d opens another database than the one it named before") {
		t.Errorf("health, d mistyped after the application bound it: %v; want d down, as opening another database\n%s", err, out)
	}
	swapped := writeConfig(t, map[string]string{"main": e.dsns["main"], "a": e.dsns["b"], "b": e.dsns["a"], "c": e.dsns["c"]})
	out, err = run(t, "health", "--config", swapped.config)
	if err == nil || strings.Count(out, "are two shards' DSNs swapped?") != 2 {
		t.Errorf("health, a and b swapped: %v; want both down, as swapped\n%s", err, out)
	}
}

// TestAFileOfAnotherLayoutThanTheMapsIsRefusedForItsLayout: a file whose
// layout is not the application's, its ranges the map's, is refused naming
// the layouts, not the ranges ("range 4096..8191 is not within 0..4095"
// sent the operator to the ranges, which are right), whether its ranges
// fit its layout or not.
func TestAFileOfAnotherLayoutThanTheMapsIsRefusedForItsLayout(t *testing.T) {
	e := sqliteEnv(t)
	e.application(t) // the shared map, of 13 shard bits
	for _, layout := range []map[string]any{
		{"shard_bits": 12},
		{"shard_bits": 14},
		{"shard_bits": 13, "epoch": "2020-01-01T00:00:00Z"},
	} {
		body, err := json.Marshal(map[string]any{"main": e.dsns["main"], "layout": layout, "shards": []map[string]string{
			{"name": "a", "dsn": e.dsns["a"], "logical": "0-4095"},
			{"name": "b", "dsn": e.dsns["b"], "logical": "4096-8191"},
			{"name": "c", "dsn": e.dsns["c"]},
		}})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "other-layout.json")
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"map"}, {"move", "--shards", "0-10", "--to", "c"}} {
			args = append(args, "--config", path)
			out, err := run(t, args...)
			if err == nil || !strings.Contains(err.Error(), "laid out as") || strings.Contains(err.Error(), "Shards:") {
				t.Errorf("shardid %s, layout %v: %v; want it refused for its layout, not its ranges\n%s", strings.Join(args, " "), layout, err, out)
			}
		}
	}
}

// TestACommandThatOnlyReadsMakesNoTable: map, move status, health, verify,
// recover and a dry run, on databases the application has opened but not
// migrated (no move recorded, no moves table), list no moves and make no
// table, on the plugin's database or a shard: "shardid map" made the moves
// table.
func TestACommandThatOnlyReadsMakesNoTable(t *testing.T) {
	for name, env := range map[string]func(*testing.T) opsEnv{"sqlite": sqliteEnv, "mysql": mysqlEnv, "postgres": postgresEnv} {
		t.Run(name, func(t *testing.T) {
			e := env(t)
			must(t, e.application(t).close())
			tables := func() map[string][]string {
				all := map[string][]string{}
				for _, db := range []string{"main", "a", "b", "c"} {
					if path, ok := sqliteFile(e.dsns[db]); ok {
						if _, err := os.Stat(path); err != nil {
							continue // a shard's file the application has not made yet
						}
					}
					names, err := direct(t, e.dsns[db]).Migrator().GetTables()
					must(t, err)
					all[db] = names
				}
				return all
			}
			before := tables()
			for _, args := range [][]string{{"map"}, {"move", "status"}, {"health"}, {"verify"}, {"recover"}, {"move", "--shards", "0-10", "--to", "c", "--dry-run"}} {
				out, _ := run(t, append(args, "--config", e.config)...)
				if args[0] == "map" && !strings.Contains(out, "map version 1:") || len(args) == 2 && args[1] == "status" && !strings.Contains(out, "no moves recorded") {
					t.Errorf("shardid %s:\n%s", strings.Join(args, " "), out)
				}
				if after := tables(); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Errorf("shardid %s made tables: %v, before %v", strings.Join(args, " "), after, before)
					before = after
				}
			}
		})
	}
}
