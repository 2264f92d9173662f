package main

import (
	"runtime/debug"
	"testing"
)

func TestVersion(t *testing.T) {
	out := mustRun(t, "--version")
	if want := "shardid version " + version() + "\n"; out != want {
		t.Fatalf("--version said %q, want %q", out, want)
	}
	for _, c := range []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{nil, false, "(devel)"},               // no build information
		{&debug.BuildInfo{}, true, "(devel)"}, // a test binary
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "(devel)"}, // go build in a source tree
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, true, "v1.4.0"},   // go install ...@v1.4.0
	} {
		if got := versionOf(c.info, c.ok); got != c.want {
			t.Errorf("versionOf(%+v, %v) = %q, want %q", c.info, c.ok, got, c.want)
		}
	}
}
