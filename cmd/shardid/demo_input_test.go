package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDemoRefusesDSNsItCannotUse: a demo given a shard without --main, a
// --main without shards, the plugin's database as a shard, a shard twice or
// shards of another dialect fails with an error.
func TestDemoRefusesDSNsItCannotUse(t *testing.T) {
	dir := t.TempDir()
	f := func(n string) string { return "file:" + filepath.Join(dir, n) + "?_pragma=busy_timeout(5000)" }
	for _, args := range [][]string{
		{"demo", "--rows", "5", "--dsn", f("a.db")},                                           // missing --main
		{"demo", "--rows", "5", "--main", f("m.db")},                                          // missing --dsn
		{"demo", "--rows", "5", "--main", f("m.db"), "--dsn", f("m.db"), "--dsn", f("b.db")},  // main is a shard
		{"demo", "--rows", "5", "--main", f("m2.db"), "--dsn", f("c.db"), "--dsn", f("c.db")}, // the same shard twice
		{"demo", "--rows", "5", "--main", f("m3.db"), "--dsn", "root@tcp(127.0.0.1:1)/x"},     // other dialect than main
	} {
		out, err := runNoPanic(t, args...)
		if err == nil {
			t.Errorf("shardid %s: no error\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestDemoRunsAgainOnOtherDatabases: a demo run again with the same --main
// and other --dsn databases starts afresh, as the CI runs it on MariaDB
// with two strategies: the databases its shard names opened before are
// forgotten, not taken for swapped DSNs.
func TestDemoRunsAgainOnOtherDatabases(t *testing.T) {
	dir := t.TempDir()
	f := func(n string) string { return "file:" + filepath.Join(dir, n) + "?_pragma=busy_timeout(5000)" }
	mustRun(t, "demo", "--rows", "20", "--main", f("main.db"), "--dsn", f("a.db"), "--dsn", f("b.db"))
	if out, err := run(t, "demo", "--rows", "20", "--strategy", "snowflake", "--main", f("main.db"), "--dsn", f("c.db"), "--dsn", f("d.db")); err != nil {
		t.Fatalf("the demo again on other databases: %v\n%s", err, out)
	}
	// Its map is made again from the --dsn it is given, as many as they are:
	// each database holds users.
	for _, dsns := range [][]string{{"e.db", "f.db", "g.db"}, {"h.db", "i.db"}} {
		args := []string{"demo", "--rows", "60", "--main", f("main.db")}
		for _, d := range dsns {
			args = append(args, "--dsn", f(d))
		}
		out, err := run(t, args...)
		if err != nil {
			t.Fatalf("the demo again on %d databases: %v\n%s", len(dsns), err, out)
		}
		for k := range dsns {
			if holds := regexp.MustCompile(fmt.Sprintf(`physical-%d: [1-9]\d* users`, k)); !holds.MatchString(out) {
				t.Errorf("the demo again on %d databases: physical-%d holds no user\n%s", len(dsns), k, out)
			}
		}
	}
}
