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
