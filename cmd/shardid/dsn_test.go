package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A database's error names the flag and the DSN it was given as, without
// the password.
func TestDemoErrorsNameTheDSN(t *testing.T) {
	_, err := run(t, "demo", "--main", "root:s3cret@tcp(127.0.0.1:1)/app", "--dsn", "root:s3cret@tcp(127.0.0.1:1)/a")
	if err == nil || !strings.Contains(err.Error(), "--main root:xxxxx@tcp(127.0.0.1:1)/app: ") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the demo on an unreachable --main: %v", err)
	}
	missing := "file:" + filepath.Join(t.TempDir(), "no-such-folder", "b.db")
	_, err = run(t, "demo", "--main", "file:"+filepath.Join(t.TempDir(), "main.db"), "--dsn", "file:"+filepath.Join(t.TempDir(), "a.db"), "--dsn", missing)
	if err == nil || !strings.Contains(err.Error(), "physical-1 is --dsn "+missing) {
		t.Fatalf("the demo on a --dsn it cannot open: %v", err)
	}
	_, err = run(t, "demo", "--dsn", "user:s3cret@nowhere")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("an unknown kind of DSN: %v", err)
	}
	_, err = run(t, "demo", "--main", "root:s3cret@tcp(127.0.0.1:3306)", "--dsn", "file:"+filepath.Join(t.TempDir(), "a.db"))
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a MySQL DSN the driver cannot read: %v", err)
	}
}

// TestAPasswordADriverPrintsIsHidden: a DSN the driver refuses, which it
// prints whole in its error (pgx: "cannot parse `…`"), is printed without
// its password, given as a parameter or in the user info (even badly
// escaped, where pgx hides only part of it), for main and for a physical
// database, in text and JSON.
func TestAPasswordADriverPrintsIsHidden(t *testing.T) {
	dir := t.TempDir()
	shards := func() map[string]string {
		return map[string]string{"a": "file:" + filepath.Join(dir, "a.db"), "b": "file:" + filepath.Join(dir, "b.db"), "c": "file:" + filepath.Join(dir, "c.db")}
	}
	refused := []string{
		"postgres://postgres@127.0.0.1:5432/app?password=s3cretpw&sslmode=bogus",
		"postgres://postgres:s3cretpw:s3cr%zzet@127.0.0.1:5432/app",
	}
	for _, main := range refused {
		dsns := shards()
		dsns["main"] = main
		e := writeConfig(t, dsns)
		for _, args := range [][]string{{"map"}, {"health"}, {"verify"}, {"move", "status"}} {
			out, err := run(t, append(args, "--config", e.config)...)
			if err == nil {
				t.Fatalf("shardid %v with main %s: no error", args, main)
			}
			if strings.Contains(err.Error()+out, "s3cr") {
				t.Errorf("shardid %s prints the password: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	}
	e := sqliteEnv(t)
	e.application(t) // the shared map, as the application keeps it
	for _, shard := range refused {
		e.dsns["c"] = shard
		e = writeConfig(t, e.dsns)
		for _, args := range [][]string{{"health"}, {"health", "--json"}, {"verify"}, {"verify", "--json"}} {
			out, err := run(t, append(args, "--config", e.config)...)
			msg := out
			if err != nil {
				msg += err.Error()
			}
			if !strings.Contains(msg, "c") || strings.Contains(msg, "s3cr") {
				t.Errorf("shardid %s with c at %s prints the password: %v\n%s", strings.Join(args, " "), shard, err, out)
			}
		}
	}
}

// TestTheDemoHidesThePasswordADriverPrints: the demo, which opens --main
// and each --dsn itself, hides the password pgx prints in its "cannot
// parse" error (a URL's ?password= parameter), as the other commands do.
func TestTheDemoHidesThePasswordADriverPrints(t *testing.T) {
	const refused = "postgres://postgres@127.0.0.1:5432/app?password=s3cretpw&sslmode=bogus"
	for _, args := range [][]string{
		{"demo", "--main", refused, "--dsn", "file:" + filepath.Join(t.TempDir(), "a.db")},
		{"demo", "--main", "file:" + filepath.Join(t.TempDir(), "m.db"), "--dsn", refused},
	} {
		out, err := run(t, args...)
		if err == nil {
			t.Fatalf("shardid %v: no error", args)
		}
		if strings.Contains(err.Error()+out, "s3cretpw") {
			t.Errorf("shardid %s prints the password:\n%v\n%s", strings.Join(args[:3], " "), err, out)
		}
	}
}

// TestAShortPasswordADriverPrintsIsHidden: a password of three characters,
// which pgx prints in the DSN of its "cannot parse" error, is hidden there.
func TestAShortPasswordADriverPrintsIsHidden(t *testing.T) {
	dir := t.TempDir()
	dsns := map[string]string{"main": "postgres://postgres@127.0.0.1:5432/app?password=Zq9&sslmode=bogus"}
	for _, name := range []string{"a", "b", "c"} {
		dsns[name] = "file:" + filepath.Join(dir, name+".db")
	}
	e := writeConfig(t, dsns)
	out, err := run(t, "health", "--config", e.config)
	if err == nil {
		t.Fatal("health with main refused by pgx: no error")
	}
	if strings.Contains(err.Error()+out, "password=Zq9") {
		t.Errorf("health prints main's password:\n%v\n%s", err, out)
	}
}
