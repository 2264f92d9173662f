package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/shardid/shardid"
)

// jsonOf runs the command and reads its output as JSON into v.
func jsonOf(t *testing.T, v any, args ...string) {
	t.Helper()
	out, errOut, err := runApart(t, args...)
	if err != nil {
		t.Fatalf("shardid %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("shardid %s printed no JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestDecodeJSON(t *testing.T) {
	v4 := uuid.NewString()
	var got []map[string]any
	jsonOf(t, &got, "decode", "506214187877944320", v4, "--map", "a=0-4095", "--map", "b=4096-8191", "--worker-bits", "4", "--json")
	if len(got) != 2 {
		t.Fatalf("decode --json of 2 arguments: %v", got)
	}
	id := got[0]
	for field, want := range map[string]any{"id": "506214187877944320", "kind": "id", "time": "2026-11-30T10:37:13.697Z", "logical_shard": 3731.0,
		"physical": "a", "sequence": 0.0, "worker": 0.0, "worker_sequence": 0.0} {
		if id[field] != want {
			t.Errorf("decode --json: %q is %v, want %v (%v)", field, id[field], want, id)
		}
	}
	if u := got[1]; u["id"] != v4 || u["kind"] != "uuidv4" || u["time"] != nil || u["sequence"] != nil || u["physical"] == nil {
		t.Errorf("decode --json of a v4 UUID: %v", u)
	}
}

func TestLayoutJSON(t *testing.T) {
	var got map[string]any
	jsonOf(t, &got, "layout", "--json")
	for field, want := range map[string]any{"time_bits": 40.0, "shard_bits": 13.0, "sequence_bits": 10.0, "worker_bits": 6.0, "epoch": "2025-01-01T00:00:00Z",
		"unit": "1ms", "logical_shards": 8192.0, "ids_per_tick": 1024.0, "ids_per_second": 1024000.0, "workers": 64.0, "worker_ids_per_tick": 16.0,
		"worker_ids_per_second": 16000.0} {
		if got[field] != want {
			t.Errorf("layout --json: %q is %v, want %v", field, got[field], want)
		}
	}
	if runsOut, _ := got["runs_out"].(string); !strings.HasPrefix(runsOut, "2059-11-04T") {
		t.Errorf("layout --json: runs_out is %v", got["runs_out"])
	}
	if years, _ := got["runs_out_in_years"].(float64); years < 30 || years > 40 {
		t.Errorf("layout --json: runs_out_in_years is %v", got["runs_out_in_years"])
	}
	// A tick of ten seconds: a tenth of its IDs per second, and a date past 9999.
	jsonOf(t, &got, "layout", "--unit", "10s", "--json")
	if got["ids_per_second"] != 102.4 || !strings.HasPrefix(got["runs_out"].(string), "350446-") || got["runs_out_in_years"].(float64) < 348000 {
		t.Errorf("layout --json of a 10 s tick: %v", got)
	}
	jsonOf(t, &got, "layout", "--shard-bits", "12", "--json")
	if got["shard_bits"] != 12.0 || got["sequence_bits"] != 11.0 || got["ids_per_tick"] != 2048.0 {
		t.Errorf("layout --json of a partly given layout: %v", got)
	}
}

// TestLayoutFlagsSayHowTheyFill checks that the width flags' help says what
// a width left out becomes (--sequence-bits is 11, not its default 10, beside
// --shard-bits 12) and how to give snowflake no worker bits, as the commands do.
func TestLayoutFlagsSayHowTheyFill(t *testing.T) {
	for _, name := range []string{"decode", "layout"} {
		cmd, _, err := rootCommand().Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		for _, flag := range []string{"time-bits", "shard-bits", "sequence-bits"} {
			if usage := cmd.Flags().Lookup(flag).Usage; !strings.Contains(usage, "what the others leave of 63") {
				t.Errorf("%s --%s: %q does not say a width left out may fill 63", name, flag, usage)
			}
		}
		if usage := cmd.Flags().Lookup("worker-bits").Usage; !strings.Contains(usage, "default 6") || !strings.Contains(usage, "-1 for none") {
			t.Errorf("%s --worker-bits: %q names neither its default nor -1", name, usage)
		}
	}
	var got map[string]any
	jsonOf(t, &got, "layout", "--worker-bits", "-1", "--json")
	if got["worker_bits"] != 0.0 || got["workers"] != nil {
		t.Errorf("layout --worker-bits -1 --json: %v", got)
	}
}

func TestMapJSON(t *testing.T) {
	e := sqliteEnv(t)
	e.application(t)
	var got mapInfo
	jsonOf(t, &got, "map", "--config", e.config, "--json")
	want := mapInfo{Version: 1, LogicalShards: 8192, Moves: []mapMove{}, Physical: []mapPhysical{
		{Name: "a", Ranges: []shardRange{{0, 4095}}, LogicalShards: 4096},
		{Name: "b", Ranges: []shardRange{{4096, 8191}}, LogicalShards: 4096},
		{Name: "c", Ranges: []shardRange{}, LogicalShards: 0},
	}}
	processes := got.Processes
	got.Processes = nil // each run's own: the application's and this command's
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("map --json:\n%+v\nwant\n%+v", got, want)
	}
	if len(processes) != 2 || processes[0].ThisCommand == processes[1].ThisCommand || !processes[0].Live || !processes[1].Live || processes[0].MapVersion != 1 || processes[1].MapVersion != 1 {
		t.Errorf("map --json lists the processes %+v; want the application's and this command's, live at version 1", processes)
	}
}

func TestVerifyJSON(t *testing.T) {
	e := sqliteEnv(t)
	app := e.application(t)
	if err := app.plugin.AutoMigrate(app.db, &cmdItem{}); err != nil {
		t.Fatal(err)
	}
	var clean verifyReport
	jsonOf(t, &clean, "verify", "--config", e.config, "--json")
	if clean.MapVersion != 1 || clean.Misplaced != 0 || len(clean.Tables) != 0 {
		t.Fatalf("verify --json with every row in place: %+v", clean)
	}

	stray := app.plugin.Layout().Compose(time.Now(), 5, 1) // shard 5 is on a
	if err := direct(t, e.dsns["b"]).Exec("INSERT INTO shardid_cmd_items (id, name) VALUES (?, ?)", stray, "stray").Error; err != nil {
		t.Fatal(err)
	}
	out, _, err := runApart(t, "verify", "--config", e.config, "--json")
	if err == nil || !strings.Contains(err.Error(), "1 row on a database") {
		t.Fatalf("verify --json with a stray row: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, out)
	}
	tables, _ := got["tables"].([]any)
	if unread, ok := got["unread_databases"].([]any); !ok || len(unread) != 0 {
		t.Errorf("verify --json with every database read: unread_databases %v, want []", got["unread_databases"])
	}
	if got["misplaced_rows"] != 1.0 || got["left_by_moves_rows"] != 0.0 || len(tables) != 1 {
		t.Fatalf("verify --json: %v", got)
	}
	table := tables[0].(map[string]any)
	keys, _ := table["keys"].([]any)
	if table["table"] != "shardid_cmd_items" || table["database"] != "b" || table["rows"] != 1.0 || table["left_by_move"] != false || len(keys) != 1 {
		t.Fatalf("verify --json, the table: %v", table)
	}
	if key := keys[0].(map[string]any); key["key"] != fmt.Sprint(stray) || key["logical_shard"] != 5.0 || key["belongs_on"] != "a" {
		t.Errorf("verify --json, the key: %v", key)
	}
}

func TestMoveStatusSaysWhetherARunHoldsTheMove(t *testing.T) {
	cases := []struct {
		move shardid.MoveStatus
		want string
	}{
		{shardid.MoveStatus{Phase: shardid.PhaseCopy, Running: true}, "running"},
		{shardid.MoveStatus{Phase: shardid.PhaseCopy}, "stopped"},
		{shardid.MoveStatus{Phase: shardid.PhaseServing}, "-"},
		{shardid.MoveStatus{Phase: shardid.PhaseServing, Running: true}, "running"}, // its cleanup
	}
	for _, c := range cases {
		var out strings.Builder
		c.move.From, c.move.To = "a", "b"
		printMoves(&out, []shardid.MoveStatus{c.move})
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if got := strings.Fields(lines[len(lines)-1])[4]; got != c.want {
			t.Errorf("a move in phase %s, running %v: RUN %q, want %q\n%s", c.move.Phase, c.move.Running, got, c.want, out.String())
		}
	}
}

// Every field a command prints with --json is named in its --help.
func TestJSONHelpNamesEveryField(t *testing.T) {
	for _, c := range []struct {
		cmd    *cobra.Command
		output any
	}{
		{mapCommand(), mapInfo{}}, {verifyCommand(), verifyReport{}}, {healthCommand(), healthReport{}},
		{decodeCommand(), decoded{}}, {layoutCommand(), layoutInfo{}},
	} {
		for _, field := range jsonFields(reflect.TypeOf(c.output)) {
			if !strings.Contains(c.cmd.Long, `"`+field+`"`) {
				t.Errorf("shardid %s --help does not name the field %q of its --json", c.cmd.Name(), field)
			}
		}
	}
}

// jsonFields lists the JSON names of t's fields, and of the structs within.
func jsonFields(t reflect.Type) []string {
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == reflect.TypeOf(time.Time{}) {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
			names = append(names, jsonFields(f.Type)...)
		}
	}
	return names
}
