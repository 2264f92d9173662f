package main

import (
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

func TestHealth(t *testing.T) {
	e := sqliteEnv(t)
	app := e.application(t)
	if err := app.plugin.AutoMigrate(app.db, &cmdItem{}); err != nil { // the application makes every shard's file
		t.Fatal(err)
	}
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

	out, _, err = runApart(t, "health", "--config", e.config, "--json") // stderr says c's file is missing
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

// TestHealthEndsWithinItsTimeout: health --timeout 1s, with a physical
// database or the plugin's own that accepts connections and never answers,
// reports it down (or fails to start) and returns soon after, not once the
// plugin's own dial bound (5 s) has passed, nor never.
func TestHealthEndsWithinItsTimeout(t *testing.T) {
	e := mysqlEnv(t)
	e.application(t) // the shared map
	cfg, err := mysql.ParseDSN(e.dsns["c"])
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = silentServer(t)
	e.dsns["c"] = cfg.FormatDSN()
	e = writeConfig(t, e.dsns)
	start := time.Now()
	out, err := run(t, "health", "--config", e.config, "--timeout", "1s") // time for the healthy ones on a busy machine
	took := time.Since(start)
	if err == nil || !strings.Contains(out, "down") {
		t.Fatalf("health with c silent: %v\n%s", err, out)
	}
	if took > 4*time.Second { // the plugin's dial bound is 5 s
		t.Errorf("health --timeout 1s, c silent, took %s to return\n%s", took.Round(time.Millisecond), out)
	}

	dir := t.TempDir()
	dsns := map[string]string{"main": "root@tcp(" + silentServer(t) + ")/app"}
	for _, name := range []string{"a", "b", "c"} {
		dsns[name] = "file:" + filepath.Join(dir, name+".db")
	}
	e = writeConfig(t, dsns)
	start = time.Now()
	out, err = run(t, "health", "--config", e.config, "--timeout", "1s")
	if took := time.Since(start); err == nil || took > 4*time.Second {
		t.Errorf("health --timeout 1s, main silent: %v after %s\n%s", err, took.Round(time.Millisecond), out)
	}
}

// silentServer listens on a local port until the test ends, accepting
// connections and never answering, and returns its address.
func silentServer(t *testing.T) string {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			accepted <- c // held open, never answered
		}
	}()
	t.Cleanup(func() {
		silent.Close()
		for len(accepted) > 0 {
			(<-accepted).Close()
		}
	})
	return silent.Addr().String()
}
