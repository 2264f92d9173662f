package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestHealth(t *testing.T) {
	e := sqliteEnv(t)
	e.application(t)
	out := mustRun(t, "health", "--config", e.config)
	wantIn(t, out, "NAME  KIND      STATE  RTT", "3 databases: 3 up, 0 down")
	for _, name := range []string{"a", "b", "c"} {
		wantIn(t, out, "\n"+name+"     physical  up     ")
	}

	// c on a file SQLite cannot open: down, named, and the exit status says so.
	e.dsns["c"] = "file:" + filepath.Join(t.TempDir(), "no-such-folder", "c.db")
	e = writeConfig(t, e.dsns)
	out, err := run(t, "health", "--config", e.config)
	if err == nil || err.Error() != "1 database down: c" {
		t.Fatalf("health with c down: %v\n%s", err, out)
	}
	wantIn(t, out, "c     physical  down   -\n", "\ndown: physical database unavailable: opening c: ", "3 databases: 2 up, 1 down")

	out, err = run(t, "health", "--config", e.config, "--json")
	if err == nil {
		t.Fatalf("health --json with c down succeeded:\n%s", out)
	}
	var report struct {
		Databases []map[string]any `json:"databases"`
		Down      int              `json:"down"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("health --json: %v\n%s", err, out)
	}
	if report.Down != 1 || len(report.Databases) != 3 {
		t.Fatalf("health --json: %+v", report)
	}
	for i, name := range []string{"a", "b", "c"} {
		d := report.Databases[i]
		up := name != "c"
		if d["name"] != name || d["kind"] != "physical" || (d["state"] == "up") != up || (d["rtt_ms"].(float64) > 0) != up || (d["error"] != nil) == up {
			t.Errorf("health --json, database %d: %v", i, d)
		}
	}
	if errText, _ := report.Databases[2]["error"].(string); !strings.Contains(errText, "c") {
		t.Errorf("the error of c does not name it: %q", errText)
	}
	if _, err := run(t, "health", "--config", e.config, "--timeout", "-1s"); err == nil || !strings.Contains(err.Error(), "--timeout") {
		t.Errorf("a negative --timeout: %v", err)
	}
}
