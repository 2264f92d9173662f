package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/internal/twophase"
)

// cmdItem is the sharded model the operators' commands move.
type cmdItem struct {
	ID   int64 `shardid:"strategy:instagram"`
	Name string
}

func (cmdItem) TableName() string { return "shardid_cmd_items" }

// opsEnv is a config file on databases of one kind: a main database and the
// physical databases a (0-4095), b (4096-8191) and c (none).
type opsEnv struct {
	config string            // the file's path
	dsns   map[string]string // by shard name, and "main"
}

func writeConfig(t *testing.T, dsns map[string]string) opsEnv {
	t.Helper()
	body, err := json.MarshalIndent(map[string]any{
		"main": dsns["main"],
		"shards": []map[string]string{
			{"name": "a", "dsn": dsns["a"], "logical": "0-4095"},
			{"name": "b", "dsn": dsns["b"], "logical": "4096-8191"},
			{"name": "c", "dsn": dsns["c"]},
		},
		"layout":      map[string]int{"shard_bits": 13},
		"map_refresh": "100ms",
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "shards.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return opsEnv{config: path, dsns: dsns}
}

func sqliteEnv(t *testing.T) opsEnv {
	dir := t.TempDir()
	dsns := map[string]string{}
	for _, name := range []string{"main", "a", "b", "c"} {
		dsns[name] = "file:" + filepath.Join(dir, name+".db") + "?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)"
	}
	return writeConfig(t, dsns)
}

// requireDSN reads a database test's DSN, skipping without it (failing in CI).
func requireDSN(t *testing.T, variable string) string {
	t.Helper()
	dsn := os.Getenv(variable)
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set; CI requires the database tests", variable)
		}
		t.Skipf("set %s to run this test against a real database", variable)
	}
	return dsn
}

// mysqlEnv uses databases of their own beside that of
// SHARDID_TEST_MYSQL_DSN, NAME_ops and NAME_ops_0, _1, _2 as main, a, b and
// c, creating them if missing and dropping every table in them: the other
// packages' tests use NAME and its shards at the same time.
func mysqlEnv(t *testing.T) opsEnv {
	cfg, err := mysql.ParseDSN(requireDSN(t, "SHARDID_TEST_MYSQL_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	base := cfg.DBName + "_ops"
	server := direct(t, cfg.FormatDSN())
	dsns := map[string]string{}
	for name, suffix := range map[string]string{"main": "", "a": "_0", "b": "_1", "c": "_2"} {
		cfg.DBName = base + suffix
		if err := server.Exec("CREATE DATABASE IF NOT EXISTS `" + cfg.DBName + "`").Error; err != nil {
			t.Fatal(err)
		}
		dsns[name] = cfg.FormatDSN()
	}
	rollBackLeftBranches(t, dsns)
	for name := range dsns {
		db := direct(t, dsns[name])
		var tables []string
		if err := db.Raw("SHOW TABLES").Scan(&tables).Error; err != nil {
			t.Fatal(err)
		}
		for _, table := range tables {
			if err := db.Exec("DROP TABLE `" + table + "`").Error; err != nil {
				t.Fatal(err)
			}
		}
	}
	return writeConfig(t, dsns)
}

// postgresEnv is mysqlEnv for SHARDID_TEST_POSTGRES_DSN (a postgres:// URL):
// it empties the public schema of its own four databases.
func postgresEnv(t *testing.T) opsEnv {
	u, err := url.Parse(requireDSN(t, "SHARDID_TEST_POSTGRES_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	server := direct(t, u.String())
	base := strings.TrimPrefix(u.Path, "/") + "_ops"
	dsns := map[string]string{}
	for name, suffix := range map[string]string{"main": "", "a": "_0", "b": "_1", "c": "_2"} {
		var exists bool
		if err := server.Raw("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = ?)", base+suffix).Scan(&exists).Error; err != nil {
			t.Fatal(err)
		}
		if !exists {
			if err := server.Exec(`CREATE DATABASE "` + base + suffix + `"`).Error; err != nil {
				t.Fatal(err)
			}
		}
		u.Path = "/" + base + suffix
		dsns[name] = u.String()
	}
	rollBackLeftBranches(t, dsns)
	for name := range dsns {
		if err := direct(t, dsns[name]).Exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public").Error; err != nil {
			t.Fatal(err)
		}
	}
	return writeConfig(t, dsns)
}

// emptyDatabase is the DSN of a database beside e's main, named after it
// with suffix, made if missing (on SQLite an empty file) and emptied.
func emptyDatabase(t *testing.T, e opsEnv, suffix string) string {
	t.Helper()
	main := e.dsns["main"]
	if path, ok := sqliteFile(main); ok {
		path = filepath.Join(t.TempDir(), filepath.Base(path)+suffix)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return "file:" + path
	}
	if u, err := url.Parse(main); err == nil && u.Scheme == "postgres" {
		name := strings.TrimPrefix(u.Path, "/") + suffix
		server := direct(t, main)
		var exists bool
		if err := server.Raw("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = ?)", name).Scan(&exists).Error; err != nil {
			t.Fatal(err)
		}
		if !exists {
			must(t, server.Exec(`CREATE DATABASE "`+name+`"`).Error)
		}
		u.Path = "/" + name
		must(t, direct(t, u.String()).Exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public").Error)
		return u.String()
	}
	cfg, err := mysql.ParseDSN(main)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName += suffix
	server := direct(t, main)
	must(t, server.Exec("DROP DATABASE IF EXISTS `"+cfg.DBName+"`").Error)
	must(t, server.Exec("CREATE DATABASE `"+cfg.DBName+"`").Error)
	return cfg.FormatDSN()
}

// rollBackLeftBranches rolls back the plugin's branches that a run which
// failed or was killed (TestRecover's, say) left prepared on the package's
// databases: they keep their rows locked, so the tables could not be
// dropped, and once the decisions table is dropped no recovery finds them.
func rollBackLeftBranches(t *testing.T, dsns map[string]string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range []string{"main", "a", "b", "c"} {
		db := direct(t, dsns[name])
		sqlDB, err := db.DB()
		if err != nil {
			t.Fatal(err)
		}
		dialect, cluster := db.Dialector.Name(), ""
		if dialect == "mysql" {
			// XA RECOVER lists every database's branches, other packages' too: only those of the cluster main records are this package's.
			if err := sqlDB.QueryRowContext(ctx, "SELECT outcome FROM shardid_transactions WHERE gid = 'cluster'").Scan(&cluster); err != nil {
				return // no decisions table or no cluster yet: no branch of the package's
			}
		}
		xids, err := twophase.InDoubt(ctx, sqlDB, dialect)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range xids {
			if g, ok := twophase.ParseGID(x.GID); dialect == "mysql" && (!ok || g.Cluster != cluster) {
				continue
			}
			if err := twophase.RollbackPrepared(ctx, sqlDB, dialect, x); err != nil && !twophase.UnknownBranch(err) {
				t.Fatalf("rolling back %s left prepared on %s: %v", x.GID, name, err)
			}
		}
		if dialect == "mysql" {
			return // the server's whole list was read on main
		}
	}
}

// direct opens a database without the plugin, as an operator would.
func direct(t *testing.T, dsn string) *gorm.DB {
	t.Helper()
	d, err := dialectorFor(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeDB(db) })
	return db
}

// application opens the plugin on the config, as the application would.
func (e opsEnv) application(t *testing.T) *opsSetup {
	t.Helper()
	c, err := readConfig(e.config)
	if err != nil {
		t.Fatal(err)
	}
	s, err := openConfig(c, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.close() })
	return s
}

// applicationWithItems is the application with cmdItem migrated and an item
// in each of the logical shards, whose IDs it returns in their order.
func (e opsEnv) applicationWithItems(t *testing.T, shards ...int) (*opsSetup, []int64) {
	t.Helper()
	app := e.application(t)
	if err := app.plugin.AutoMigrate(app.db, &cmdItem{}); err != nil {
		t.Fatal(err)
	}
	layout := app.plugin.Layout()
	ids := make([]int64, len(shards))
	for i, shard := range shards {
		ids[i] = layout.Compose(time.Now(), shard, i)
		if err := app.db.Create(&cmdItem{ID: ids[i], Name: "x"}).Error; err != nil {
			t.Fatal(err)
		}
	}
	return app, ids
}

// idsIn returns the keys of shardid_cmd_items on db whose logical shard is in r.
func idsIn(t *testing.T, db *gorm.DB, layout shardid.Layout, r shardid.Range) []int64 {
	t.Helper()
	var all, in []int64
	if err := db.Table("shardid_cmd_items").Order("id").Pluck("id", &all).Error; err != nil {
		t.Fatal(err)
	}
	for _, id := range all {
		if s := layout.Shard(id); s >= r.From && s <= r.To {
			in = append(in, id)
		}
	}
	return in
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("shardid %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func wantIn(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
}

func TestOperatorsCommands(t *testing.T) {
	for name, env := range map[string]func(*testing.T) opsEnv{"sqlite": sqliteEnv, "mysql": mysqlEnv, "postgres": postgresEnv} {
		t.Run(name, func(t *testing.T) { testOperatorsCommands(t, env(t)) })
	}
}

func testOperatorsCommands(t *testing.T, e opsEnv) {
	app := e.application(t)
	if err := app.plugin.AutoMigrate(app.db, &cmdItem{}); err != nil {
		t.Fatal(err)
	}
	layout := app.plugin.Layout()
	a, b, c := direct(t, e.dsns["a"]), direct(t, e.dsns["b"]), direct(t, e.dsns["c"])
	moving, cancelled := shardid.Range{From: 0, To: 1023}, shardid.Range{From: 4096, To: 5000}
	now := time.Now()
	var want []int64
	for i, shard := range []int{0, 5, 700, 1023, 1024, 4095, 4096, 4500, 5000, 6000} {
		item := cmdItem{ID: layout.Compose(now, shard, i), Name: fmt.Sprint("item ", i)}
		if err := app.db.Create(&item).Error; err != nil {
			t.Fatal(err)
		}
		if shard <= moving.To {
			want = append(want, item.ID)
		}
	}
	if got := idsIn(t, a, layout, moving); len(got) != len(want) {
		t.Fatalf("a holds %v of the range before the move, want %v", got, want)
	}

	// A dry run prints the plan and changes nothing.
	args := []string{"move", "--config", e.config, "--shards", "0-1023", "--to", "c"}
	out := mustRun(t, append(args, "--dry-run")...)
	wantIn(t, out, "plan: move logical shards 0-1023 from a to c", "shardid_cmd_items", "4 rows to copy")
	if got := idsIn(t, c, layout, moving); len(got) != 0 {
		t.Fatalf("the dry run copied %v to c", got)
	}
	wantIn(t, mustRun(t, "map", "--config", e.config), "map version 1:", "c  no logical shards")
	wantIn(t, mustRun(t, "move", "status", "--config", e.config), "no moves recorded")

	// The move: a report, the rows on c, the new map.
	out = mustRun(t, append(args, "--chunk", "2")...)
	wantIn(t, out, "moved logical shards 0-1023 from a to c", "shardid_cmd_items  4 rows copied", "changes replayed  0", "frozen  ", "map version       5", // 2 to 4 announced the triggers and the cutover
		"move: copy shardid_cmd_items") // the plain progress line, stderr not being a terminal
	if got := idsIn(t, c, layout, moving); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("c holds %v of the range after the move, want %v", got, want)
	}
	out = mustRun(t, "map", "--config", e.config)
	wantIn(t, out, "map version 5: 8192 logical shards on 3 physical databases", "a  1024-4095  3072 logical shards",
		"b  4096-8191  4096 logical shards", "c  0-1023     1024 logical shards", "a keeps a frozen copy")
	mapListsItsProcesses(t, e.config)
	wantIn(t, mustRun(t, "move", "status", "--config", e.config), "0-1023  a     c   serving  -    4")

	// Before the cleanup, verify marks a's copy and passes.
	wantIn(t, mustRun(t, "verify", "--config", e.config), "shardid_cmd_items on a: 4 rows whose logical shard maps elsewhere (a move's copy",
		"all other rows are on the database their shard maps to")
	out = mustRun(t, "move", "cleanup", "--config", e.config, "--shards", "0-1023", "--wait", "30s")
	wantIn(t, out, "cleaned up the move of logical shards 0-1023: their copies on a are deleted")
	if got := idsIn(t, a, layout, moving); len(got) != 0 {
		t.Fatalf("a still holds %v of the range after the cleanup", got)
	}
	if got := idsIn(t, a, layout, shardid.Range{From: 1024, To: 4095}); len(got) != 2 {
		t.Fatalf("a holds %v of its own shards after the cleanup, want 2 rows", got)
	}
	wantIn(t, mustRun(t, "move", "status", "--config", e.config), "0-1023  a     c   cleaned")
	// The cleanup wrote the map without a's copy: version 6.
	wantIn(t, mustRun(t, "verify", "--config", e.config), "all rows are on the database their shard maps to (map version 6)")

	// A row written on a wrong database on purpose is found, and nothing once it is gone.
	stray := layout.Compose(now, 5, 999) // shard 5 is on c now
	if err := b.Exec("INSERT INTO shardid_cmd_items (id, name) VALUES (?, ?)", stray, "stray").Error; err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "verify", "--config", e.config)
	if err == nil || !strings.Contains(err.Error(), "1 row on a database their logical shard does not map to") {
		t.Fatalf("verify with a stray row: %v\n%s", err, out)
	}
	wantIn(t, out, "shardid_cmd_items on b: 1 row whose logical shard maps elsewhere\n", fmt.Sprintf("keys %d (logical shard 5, on c)", stray))
	if err := b.Exec("DELETE FROM shardid_cmd_items WHERE id = ?", stray).Error; err != nil {
		t.Fatal(err)
	}
	wantIn(t, mustRun(t, "verify", "--config", e.config), "all rows are on the database their shard maps to")

	// A move stopped during its copy, then cancelled: b serves as before, c holds none of it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = app.plugin.Move(ctx, shardid.Move{Logical: cancelled, To: "c", ChunkSize: 1, Throttle: time.Millisecond,
		Progress: func(p shardid.MoveProgress) {
			if p.Phase == shardid.PhaseCopy && p.Copied > 0 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the move stopped during its copy returned %v", err)
	}
	if got := idsIn(t, c, layout, cancelled); len(got) == 0 {
		t.Fatal("the stopped move copied nothing to c: cancel would have nothing to remove")
	}
	wantIn(t, mustRun(t, "move", "status", "--config", e.config), "4096-5000  b     c   copy")
	out = mustRun(t, "move", "cancel", "--config", e.config, "--shards", "4096-5000")
	wantIn(t, out, "cancelled the move of logical shards 4096-5000 to c: b serves them as before")
	if got := idsIn(t, c, layout, cancelled); len(got) != 0 {
		t.Fatalf("c holds %v of the cancelled range", got)
	}
	if got := idsIn(t, b, layout, cancelled); len(got) != 3 {
		t.Fatalf("b holds %v of the cancelled range, want its 3 rows", got)
	}
	var back cmdItem
	if err := app.db.First(&back, layout.Compose(now, 4500, 7)).Error; err != nil || back.Name != "item 7" {
		t.Fatalf("reading a row of the cancelled range through the plugin: %v, %+v", err, back)
	}
	wantIn(t, mustRun(t, "move", "status", "--config", e.config), "4096-5000  b     c   cancelled")
	wantIn(t, mustRun(t, "verify", "--config", e.config), "all rows are on the database their shard maps to")

	// A move stopped during its copy is resumed by the command.
	resumed := shardid.Range{From: 6000, To: 6100}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	_, err = app.plugin.Move(ctx, shardid.Move{Logical: resumed, To: "c", ChunkSize: 1, Throttle: time.Millisecond,
		Progress: func(p shardid.MoveProgress) {
			if p.Phase == shardid.PhaseCopy && p.Copied > 0 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the move stopped during its copy returned %v", err)
	}
	out = mustRun(t, "move", "--config", e.config, "--shards", "6000-6100", "--to", "c")
	wantIn(t, out, "moved (resumed) logical shards 6000-6100 from b to c", "shardid_cmd_items  1 row copied", "map version       12") // each prepare and cutover announces itself in a version of its own
	if got := idsIn(t, c, layout, resumed); len(got) != 1 {
		t.Fatalf("c holds %v of the resumed range, want its row", got)
	}
}

// mapListsItsProcesses checks that map --json lists the processes that
// follow the map: the application's, live, and this command's own.
func mapListsItsProcesses(t *testing.T, config string) {
	t.Helper()
	var listed struct {
		Processes []struct {
			MapVersion  int64 `json:"map_version"`
			Live        bool  `json:"live"`
			ThisCommand bool  `json:"this_command"`
		} `json:"processes"`
	}
	stdout, _, err := runApart(t, "map", "--config", config, "--json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(stdout), &listed); err != nil {
		t.Fatal(err)
	}
	var application, command int
	for _, pr := range listed.Processes {
		switch {
		case pr.ThisCommand:
			command++
		case pr.Live && pr.MapVersion >= 1:
			application++
		}
	}
	if command != 1 || application < 1 {
		t.Errorf("map --json lists the processes %+v; want the application's, live, and this command's", listed.Processes)
	}
}

// Bad input fails with an error naming what is wrong, and no panic.
func TestOperatorsBadInput(t *testing.T) {
	e := sqliteEnv(t)
	e.application(t) // the shared map the application keeps
	dir := t.TempDir()
	file := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	edits := 0
	good := func(edit func(map[string]any)) string {
		var c map[string]any
		body, _ := os.ReadFile(e.config)
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatal(err)
		}
		edit(c)
		body, _ = json.Marshal(c)
		edits++
		return file(fmt.Sprintf("edited-%d.json", edits), string(body))
	}
	shard := func(c map[string]any, i int) map[string]any { return c["shards"].([]any)[i].(map[string]any) }
	missing := filepath.Join(dir, "missing.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"move", "--shards", "0-10", "--to", "c"}, "--config: give the config file"},
		{[]string{"map"}, "--config: give the config file"},
		{[]string{"verify", "--config", missing}, missing},
		{[]string{"move", "status", "--config", file("bad.json", "{\"main\": \"x\",\n\"shards\": [}")}, "bad.json: line 2"},
		{[]string{"map", "--config", file("unknown.json", `{"main": "file:m.db", "shrads": []}`)}, `unknown.json: json: unknown field "shrads"`},
		{[]string{"map", "--config", file("twice.json", `{"main": "file:m.db", "shards": [{"name": "a", "name": "b"}]}`)}, `twice.json: "name" is given twice in one object`},
		{[]string{"map", "--config", file("twice-main.json", `{"main": "file:a.db", "shards": [], "main": "file:b.db"}`)}, `twice-main.json: "main" is given twice`},
		// encoding/json reads a key whatever its case: the second spelling won without a word.
		{[]string{"map", "--config", file("twice-case.json", `{"main": "file:a.db", "shards": [], "Main": "file:b.db"}`)}, `twice-case.json: "main" and "Main" are one key, given twice`},
		{[]string{"map", "--config", file("twice-case-layout.json", `{"main": "file:a.db", "shards": [], "layout": {"shard_bits": 13, "SHARD_BITS": 12}}`)}, `"shard_bits" and "SHARD_BITS" are one key`},
		{[]string{"map", "--config", file("empty.json", "")}, "empty.json: the file is empty"},
		{[]string{"map", "--config", file("blank.json", " \n")}, "blank.json: the file is empty"},
		{[]string{"map", "--config", file("array.json", `[{"main": "file:a.db"}]`)}, "array.json: want a JSON object"},
		{[]string{"map", "--config", file("null.json", `null`)}, "null.json: want a JSON object"},
		{[]string{"map", "--config", good(func(c map[string]any) { delete(c, "main") })}, ": main: missing"},
		{[]string{"map", "--config", good(func(c map[string]any) { shard(c, 1)["dsn"] = "nonsense" })}, `: shards[1].dsn: "nonsense": write a MySQL DSN`},
		{[]string{"map", "--config", good(func(c map[string]any) { shard(c, 0)["logical"] = "0-x" })}, `: shards[0].logical: "0-x" is not FROM-TO`},
		{[]string{"map", "--config", good(func(c map[string]any) { shard(c, 2)["name"] = "a" })}, `: shards[2].name: "a" is listed twice`},
		{[]string{"map", "--config", good(func(c map[string]any) { c["map_refresh"] = "soon" })}, `: map_refresh: time: invalid duration`},
		{[]string{"map", "--config", good(func(c map[string]any) { c["layout"] = map[string]any{"shard_bits": 30} })}, `: layout: `},
		{[]string{"move", "--config", e.config, "--shards", "0-10", "--to", "zz"}, `--to "zz": ` + e.config + ` names no such shard (it lists a, b and c)`},
		{[]string{"move", "--config", e.config, "--shards", "9-3", "--to", "c"}, `--shards "9-3": want 0 <= FROM <= TO`},
		{[]string{"move", "--config", e.config, "--shards", "zero", "--to", "c"}, `--shards "zero" is not FROM-TO`},
		{[]string{"move", "--config", e.config, "--to", "c"}, "--shards: give the range"},
		{[]string{"move", "--config", e.config, "--shards", "0-10"}, "--to: name the physical database"},
		{[]string{"move", "--config", e.config, "--shards", "0-9000", "--to", "c"}, "not within 0-8191"},
		{[]string{"move", "cancel", "--config", e.config, "--shards", "0-10"}, "--shards 0-10: no move of these logical shards is recorded"},
		{[]string{"move", "cleanup", "--config", e.config, "--shards", "3-1"}, `--shards "3-1"`},
		{[]string{"move", "statsu", "--config", e.config}, `unknown command "statsu"`},
		{[]string{"move", "--config", good(func(c map[string]any) { c["map_table"] = "shardid_other_map" }), "--shards", "0-10", "--to", "c"}, "map_table: shardid_other_map is not on main"},
		{[]string{"move", "cleanup", "--config", good(func(c map[string]any) { c["map_table"] = "shardid_other_map" }), "--shards", "0-10"}, "map_table: shardid_other_map is not on main"},
		{[]string{"move", "--config", good(func(c map[string]any) { c["map_table"], c["map_refresh"] = "shardid_other_map", "-1s" }), "--shards", "0-10", "--to", "c"}, "map_table: shardid_other_map is not on main"},
	} {
		out, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("shardid %s: %v, want an error with %q\n%s", strings.Join(tc.args, " "), err, tc.want, out)
		}
	}
	// Nor does a command that only reads: it would seed the table, and a
	// move by it would then pass.
	other := good(func(c map[string]any) { c["map_table"] = "shardid_other_map" })
	for _, args := range [][]string{{"map"}, {"health"}, {"verify"}, {"move", "status"}, {"recover"}} {
		args = append(args, "--config", other)
		if out, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "map_table: shardid_other_map is not on main") {
			t.Errorf("shardid %s: %v, want it refused for its map table\n%s", strings.Join(args, " "), err, out)
		}
	}
	if direct(t, e.dsns["main"]).Migrator().HasTable("shardid_other_map") {
		t.Error("a command by a map table no application shares created it")
	}
}

// The command's plugin follows the shared map, not the file's ranges.
func TestMapFollowsTheTable(t *testing.T) {
	e := sqliteEnv(t)
	e.application(t) // which makes the shared map
	out := mustRun(t, "map", "--config", e.config)
	wantIn(t, out, "map version 1: 8192 logical shards on 3 physical databases", "a  0-4095     4096 logical shards", "c  no logical shards")
	main := direct(t, e.dsns["main"])
	moved := `{"physical":[{"name":"a","logical":[{"From":0,"To":4095}]},{"name":"b","logical":[{"From":4096,"To":8190}]},{"name":"c","logical":[{"From":8191,"To":8191}]}]}`
	if err := main.Exec("INSERT INTO shardid_shard_map (version, map, created_ms) VALUES (2, ?, 0)", moved).Error; err != nil {
		t.Fatal(err)
	}
	out = mustRun(t, "map", "--config", e.config)
	wantIn(t, out, "map version 2:", "b  4096-8190  4095 logical shards", "c  8191       1 logical shard\n",
		"warning: shardid: the shared map differs from Config.Shards, and is followed version=2 table=shardid_shard_map")
}

// TestVerifyWithADatabaseDownReportsTheOthers: a physical database that
// cannot be opened fails verify, naming it once, and does not hide a stray
// row found on another; with nothing found elsewhere, verify says what it
// read and does not claim every row is in place; --json prints the report
// with the database under unread_databases; with every database down it
// says nothing was verified.
func TestVerifyWithADatabaseDownReportsTheOthers(t *testing.T) {
	e := sqliteEnv(t)
	app := e.application(t)
	if err := app.plugin.AutoMigrate(app.db, &cmdItem{}); err != nil {
		t.Fatal(err)
	}
	stray := app.plugin.Layout().Compose(time.Now(), 5, 999) // shard 5 maps to a
	if err := direct(t, e.dsns["b"]).Exec("INSERT INTO shardid_cmd_items (id, name) VALUES (?, ?)", stray, "stray").Error; err != nil {
		t.Fatal(err)
	}
	e.dsns["c"] = "file:" + filepath.Join(t.TempDir(), "no-such-folder", "c.db")
	e = writeConfig(t, e.dsns)
	out, err := run(t, "verify", "--config", e.config)
	if err == nil || !strings.HasPrefix(err.Error(), "shardid: on c: ") || strings.Count(err.Error(), "shardid:") != 1 {
		t.Errorf("verify with c down: %v; want an error naming c, with one prefix", err)
	}
	wantIn(t, out, "shardid_cmd_items on b: 1 row whose logical shard maps elsewhere\n", fmt.Sprintf("keys %d (logical shard 5, on a)", stray), "c could not be read: shardid: on c: ")

	if err := direct(t, e.dsns["b"]).Exec("DELETE FROM shardid_cmd_items").Error; err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "verify", "--config", e.config)
	if err == nil || strings.Contains(out, "all rows are on") {
		t.Errorf("verify with c down and nothing misplaced elsewhere: %v\n%s", err, out)
	}
	wantIn(t, out, "c could not be read: ", "all rows of the databases read are on the database their shard maps to (map version 1)\n")
	stdout, _, err := runApart(t, "verify", "--config", e.config, "--json")
	var report struct {
		Misplaced *int64           `json:"misplaced_rows"`
		Unread    []map[string]any `json:"unread_databases"`
	}
	if jsonErr := json.Unmarshal([]byte(stdout), &report); jsonErr != nil || err == nil {
		t.Fatalf("verify --json with c down: %v, %v\n%s", err, jsonErr, stdout)
	}
	if report.Misplaced == nil || *report.Misplaced != 0 || len(report.Unread) != 1 || report.Unread[0]["database"] != "c" ||
		!strings.Contains(fmt.Sprint(report.Unread[0]["error"]), "unable to open database file") {
		t.Errorf("verify --json with c down: %s", stdout)
	}

	for _, name := range []string{"a", "b"} {
		e.dsns[name] = "file:" + filepath.Join(t.TempDir(), "no-such-folder", name+".db")
	}
	e = writeConfig(t, e.dsns)
	out, err = run(t, "verify", "--config", e.config)
	if err == nil || strings.Contains(out, "all rows") {
		t.Errorf("verify with every database down claims rows are in place: %v\n%s", err, out)
	}
	wantIn(t, out, "a could not be read: ", "b could not be read: ", "c could not be read: ", "no database could be read: no row was verified\n")
}

// Verify says of the rows a move under way has copied to its target that a
// cancel deletes them, not that its cleanup deletes the source's copy, and
// counts them as the target holds them.
func TestVerifySaysWhatAMoveUnderWayLeavesOnItsTarget(t *testing.T) {
	for name, env := range map[string]func(*testing.T) opsEnv{"sqlite": sqliteEnv, "mysql": mysqlEnv, "postgres": postgresEnv} {
		t.Run(name, func(t *testing.T) {
			e := env(t)
			app, _ := e.applicationWithItems(t, 4096, 4200, 4500, 4900)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, err := app.plugin.Move(ctx, shardid.Move{Logical: shardid.Range{From: 4096, To: 5000}, To: "c", ChunkSize: 1,
				Progress: func(p shardid.MoveProgress) {
					if p.Phase == shardid.PhaseCopy && p.Copied > 1 {
						cancel()
					}
				}})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("the move stopped during its copy returned %v", err)
			}
			var onC int64
			if err := direct(t, e.dsns["c"]).Table("shardid_cmd_items").Count(&onC).Error; err != nil || onC == 0 {
				t.Fatalf("c holds %d rows of the stopped move: %v", onC, err)
			}
			out := mustRun(t, "verify", "--config", e.config)
			wantIn(t, out, fmt.Sprintf("shardid_cmd_items on c: %s whose logical shard maps elsewhere (a move's copy under way: its cutover serves them here, shardid move cancel deletes them)\n", plural(onC, "row")))
			if strings.Contains(out, "cleanup") {
				t.Errorf("verify says a cleanup deletes the target's copy of a move under way:\n%s", out)
			}
		})
	}
}
