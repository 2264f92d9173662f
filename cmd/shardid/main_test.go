package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := execute(&out, &out, args...)
	return out.String(), err
}

// runApart runs the command with stdout and stderr apart.
func runApart(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = execute(&out, &errOut, args...)
	return out.String(), errOut.String(), err
}

func execute(out, errOut io.Writer, args ...string) error {
	cmd := rootCommand()
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SetArgs(args)
	return cmd.Execute()
}

func TestDemo(t *testing.T) {
	out, err := run(t, "demo", "--rows", "200", "--workers", "4", "--dir", t.TempDir())
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"on 4 physical databases",
		"created   200 users and 600 photos",
		"IDs       10000 more made in batches of 100",
		"read      every user back by ID",
		"counted   200 users and 601 photos",
		"pinned    a transaction",
		"check     all 801 rows are on the physical database their ID names",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}

// The demo with each of the other int64 strategies: every row checked in place.
func TestDemoStrategies(t *testing.T) {
	for _, strategy := range []string{"snowflake", "segment"} {
		t.Run(strategy, func(t *testing.T) {
			out, err := run(t, "demo", "--rows", "100", "--workers", "4", "--strategy", strategy, "--dir", t.TempDir())
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, want := range []string{
				"IDs by " + strategy,
				"stats     " + strategy + " issued 10401 IDs",
				"check     all 401 rows are on the physical database their ID names",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the report lacks %q:\n%s", want, out)
				}
			}
		})
	}
	if out, err := run(t, "demo", "--strategy", "nope", "--dir", t.TempDir()); err == nil || !strings.Contains(err.Error(), "instagram, snowflake or segment") {
		t.Fatalf("an unknown strategy: %v\n%s", err, out)
	}
}

func TestDecodeUUID(t *testing.T) {
	u := uuid.Must(uuid.NewV7())
	u[15] = 0x2a // the low shard bits: shard 42 in the default layout's 13 bits
	u[14] &^= 0x1f
	out, err := run(t, "decode", u.String(), `"`+uuid.NewString()+`"`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "logical shard  42") || !strings.Contains(out, "uuidv7") || !strings.Contains(out, "uuidv4 carries no time") {
		t.Fatalf("decode said:\n%s", out)
	}
	sec, _ := u.Time().UnixTime()
	if !strings.Contains(out, time.Unix(sec, 0).UTC().Format("2006-01-02T15:04:05")) {
		t.Fatalf("the v7 time is not given:\n%s", out)
	}
	if _, err := run(t, "decode", uuid.NewMD5(uuid.NameSpaceURL, []byte("x")).String()); err == nil {
		t.Fatal("a version 3 UUID was decoded")
	}
}

func TestDecode(t *testing.T) {
	out, err := run(t, "decode", "506214187877944320", `"506214187877944320"`, "--map", "a=0-4095", "--map", "b=4096-8191")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, "logical shard  3731") != 2 || strings.Count(out, "physical       a") != 2 || !strings.Contains(out, "2026-11-30T10:37:13.697Z") {
		t.Fatalf("decode said:\n%s", out)
	}
	// A shard alone, as a config file's "logical" takes it.
	if out, err := run(t, "decode", "506214187877944320", "--map", "a=0-3730,3732-8191", "--map", "b=3731"); err != nil || !strings.Contains(out, "physical       b") {
		t.Errorf("decode with --map b=3731: %v\n%s", err, out)
	}
	for flag, want := range map[string]string{"a=4095-0": `"4095-0": want 0 <= FROM <= TO`, "a=0-x": `"0-x" is not FROM-TO`} {
		if _, err := run(t, "decode", "1", "--map", flag); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("decode --map %s: %v, want an error with %q", flag, err, want)
		}
	}
	for _, bad := range [][]string{
		{"decode", "abc"},
		{"decode", "--", "-5"},
		{"decode", "9223372036854775807"}, // decodes to a time decades away
		{"decode", "1", "--map", "a=0-10"},
		{"decode", "1", "--map", "a"},
	} {
		if _, err := run(t, bad...); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}

func TestLayout(t *testing.T) {
	out, err := run(t, "layout")
	if err != nil || !strings.Contains(out, "logical shards  8192") || !strings.Contains(out, "IDs per tick    1024 per logical shard") || !strings.Contains(out, "runs out        2059-11-04") {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "snowflake       64 workers, each 16 IDs per tick per logical shard") {
		t.Fatalf("the worker bits' cost is not said:\n%s", out)
	}
	if out, err := run(t, "layout", "--shard-bits", "12"); err != nil || !strings.Contains(out, "40 time | 12 logical shard | 11 sequence") {
		t.Fatalf("a partly given layout: %v\n%s", err, out)
	}
	if _, err := run(t, "layout", "--time-bits", "41", "--shard-bits", "13", "--sequence-bits", "10"); err == nil {
		t.Fatal("a layout of 64 bits was accepted")
	}
}

// plainUser and plainPhoto are the demo's models without shardid: the
// baseline of BenchmarkDemoThroughput.
type plainUser struct {
	ID     int64
	Name   string
	Photos []plainPhoto `gorm:"foreignKey:UserID"`
}

type plainPhoto struct {
	ID     int64
	UserID int64
	URL    string
}

// BenchmarkDemoThroughput creates the demo's users and photos (one op = one
// user with three photos) on four SQLite shards through the plugin, and the
// same rows on one SQLite file without it.
func BenchmarkDemoThroughput(b *testing.B) {
	o := demoOptions{photos: 3, workers: 8, dir: b.TempDir()}
	b.Run("shardid-4-shards", func(b *testing.B) {
		s, err := openDemo(o)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.plugin.AutoMigrate(s.db, &DemoUser{}, &DemoPhoto{}); err != nil {
			b.Fatal(err)
		}
		o.users = b.N
		b.ResetTimer()
		if _, err := createUsers(s.db, o, func() {}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N*4)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("plain-1-file", func(b *testing.B) {
		db, err := gorm.Open(sqlite.Open("file:"+filepath.Join(o.dir, "plain.db")+"?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			b.Fatal(err)
		}
		if err := db.AutoMigrate(&plainUser{}, &plainPhoto{}); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range o.workers {
			wg.Go(func() {
				for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
					u := plainUser{Name: fmt.Sprintf("user-%d", i)}
					for j := range o.photos {
						u.Photos = append(u.Photos, plainPhoto{URL: fmt.Sprintf("https://photos.example/%d/%d.jpg", i, j)})
					}
					if err := db.Create(&u).Error; err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.ReportMetric(float64(b.N*4)/b.Elapsed().Seconds(), "rows/s")
	})
}

// TestDemoNeedsItsOwnMainDatabase: on servers, the demo is told the plugin's
// own database, which may not be one of the shards.
func TestDemoNeedsItsOwnMainDatabase(t *testing.T) {
	if _, err := run(t, "demo", "--dsn", "root@tcp(127.0.0.1:3306)/a", "--dsn", "root@tcp(127.0.0.1:3306)/b"); err == nil || !strings.Contains(err.Error(), "--main") {
		t.Fatalf("--dsn without --main: %v, want an error naming --main", err)
	}
}

// A --dir the demo cannot use, or a --main without the --dsn it goes with,
// is refused by name; no folder is made for it.
func TestDemoDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dir", missing}, "--dir " + missing + ": no such directory"},
		{[]string{"--dir", file}, "--dir " + file + " is not a directory"},
		{[]string{"--dir", t.TempDir(), "--main", "file:m.db", "--dsn", "file:a.db"}, "with --dsn there are none"},
		{[]string{"--main", "root@tcp(127.0.0.1:1)/nowhere"}, "--main is the plugin's own database beside the servers given with --dsn"},
	} {
		out, err := run(t, append([]string{"demo", "--rows", "1"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("demo %v: %v, want an error saying %q\n%s", c.args, err, c.want, out)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("the demo made the missing --dir %s", missing)
	}
	dir := t.TempDir()
	wantIn(t, mustRun(t, "demo", "--rows", "1", "--dir", dir, "--keep"), "kept      the SQLite files in "+dir)
	if _, err := os.Stat(filepath.Join(dir, "main.db")); err != nil {
		t.Errorf("--keep kept no files: %v", err)
	}
}

// Counts of one take the singular.
func TestDemoCountsOne(t *testing.T) {
	dir := t.TempDir()
	out := mustRun(t, "demo", "--rows", "1", "--photos", "1", "--workers", "1", "--main", "file:"+filepath.Join(dir, "main.db"), "--dsn", "file:"+filepath.Join(dir, "a.db"))
	wantIn(t, out, "on 1 physical database (sqlite)", "created   1 user and 1 photo (2 rows, each with a new ID) from 1 goroutine in",
		"counted   1 user and 2 photos", "physical-0: 1 user, 2 photos")
	if strings.Contains(out, "1 physical databases") || strings.Contains(out, " 1 users") {
		t.Fatalf("a plural for one:\n%s", out)
	}
}

// TestAZeroEpochIsRefused: an epoch given as the zero time, which a Layout
// would silently take for its default epoch, is refused by name, from a
// flag and from a config file.
func TestAZeroEpochIsRefused(t *testing.T) {
	zero := "0001-01-01T00:00:00Z"
	if _, err := run(t, "layout", "--epoch", zero); err == nil || !strings.Contains(err.Error(), "--epoch: "+zero+" is the zero time") {
		t.Errorf("layout --epoch %s: %v, want it refused as the zero time", zero, err)
	}
	dir := t.TempDir()
	body := fmt.Sprintf(`{"main": "file:%s", "shards": [{"name": "a", "dsn": "file:%s", "logical": "0-8191"}], "layout": {"epoch": %q}}`,
		filepath.Join(dir, "main.db"), filepath.Join(dir, "a.db"), zero)
	config := filepath.Join(dir, "shards.json")
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "map", "--config", config); err == nil || !strings.Contains(err.Error(), "layout.epoch") || !strings.Contains(err.Error(), "zero time") {
		t.Errorf("a config with layout.epoch %s: %v, want it refused by name", zero, err)
	}
}
