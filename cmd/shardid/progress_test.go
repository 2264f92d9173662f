package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardid/shardid"
)

// A move's progress to a log or a pipe is plain lines, never a bar's frames.
func TestMoveProgressWithoutATerminal(t *testing.T) {
	var log bytes.Buffer
	p := newMoveProgress(&log)
	for copied := range int64(5) {
		p.update(shardid.MoveProgress{Phase: shardid.PhaseCopy, Table: "items", Copied: copied, Total: 4})
	}
	p.update(shardid.MoveProgress{Phase: shardid.PhaseCatchUp, Table: "items", Backlog: 3})
	p.update(shardid.MoveProgress{Phase: shardid.PhaseCutover, Table: "items", Backlog: 1})
	p.update(shardid.MoveProgress{Phase: shardid.PhaseCopy, Table: "one", Copied: 1, Total: 1})
	p.finish()
	out := log.String()
	if strings.ContainsAny(out, "\r\x1b") || strings.Contains(out, "█") {
		t.Fatalf("progress frames in a log:\n%q", out)
	}
	wantIn(t, out, "move: copy items: 0 of 4 rows\n", "move: catch-up items: 3 changes behind\n", "move: cutover items: 1 change behind\n", "move: copy one: 1 of 1 row\n")

	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Fatal("a file is taken for a terminal")
	}
}

// The demo's stderr, not a terminal here, gets no bar.
func TestDemoDrawsNoBarOffATerminal(t *testing.T) {
	out, errOut, err := runApart(t, "demo", "--rows", "50", "--workers", "2", "--dir", t.TempDir())
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	if errOut != "" {
		t.Fatalf("the demo wrote to a non-terminal stderr:\n%q", errOut)
	}
}

// A log shows where each phase or table of a move ended, not only the first
// report of it: a copy of a second or less printed its first chunk only.
func TestAMoveProgressLogShowsWhereEachPhaseEnded(t *testing.T) {
	var log bytes.Buffer
	p := newMoveProgress(&log)
	for copied := range int64(29) {
		p.update(shardid.MoveProgress{Phase: shardid.PhaseCopy, Table: "items", Copied: copied, Total: 28})
	}
	p.update(shardid.MoveProgress{Phase: shardid.PhaseCatchUp, Table: "items", Backlog: 3})
	p.update(shardid.MoveProgress{Phase: shardid.PhaseCatchUp, Table: "items", Backlog: 0})
	p.finish()
	want := "move: copy items: 0 of 28 rows\nmove: copy items: 28 of 28 rows\nmove: catch-up items: 3 changes behind\nmove: catch-up items: 0 changes behind\n"
	if log.String() != want {
		t.Fatalf("the log:\n%s\nwant:\n%s", log.String(), want)
	}
}
