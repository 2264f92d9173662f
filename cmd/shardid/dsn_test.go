package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestRedactDSN(t *testing.T) {
	for dsn, want := range map[string]string{
		"root:s3cret@tcp(127.0.0.1:3306)/app?parseTime=true": "root:xxxxx@tcp(127.0.0.1:3306)/app?parseTime=true",
		"root:p@ss@tcp(db:3306)/app":                         "root:xxxxx@tcp(db:3306)/app",
		"root@tcp(127.0.0.1:3306)/app":                       "root@tcp(127.0.0.1:3306)/app",
		"postgres://app:s3cret@db:5432/app?sslmode=disable":  "postgres://app:xxxxx@db:5432/app?sslmode=disable",
		"postgres://app@db/app?password=s3cret":              "postgres://app@db/app?password=xxxxx",
		"postgres://app@db/app":                              "postgres://app@db/app",
		"host=db user=app password=s3cret dbname=app":        "host=db user=app password=xxxxx dbname=app",
		"host=db password='s3 cret' dbname=app":              "host=db password=xxxxx dbname=app",
		"file:shard.db?_pragma=busy_timeout(20000)":          "file:shard.db?_pragma=busy_timeout(20000)",
		"file:/srv/a:b@c/shard.db":                           "file:/srv/a:b@c/shard.db",
		"user:s3cret@nowhere":                                "user:xxxxx@nowhere",
	} {
		if got := redactDSN(dsn); got != want {
			t.Errorf("redactDSN(%q) = %q, want %q", dsn, got, want)
		}
	}
}

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
}
