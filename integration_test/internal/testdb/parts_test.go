package testdb

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestARunInPartsIsCachedOnWhatEveryTestRead: go test caches a package's
// passing result keyed on the variables and files its tests read, which a
// run in parts gathers from every child: a variable that a test fails on,
// read by the first test of the run, is not answered from the cache.
func TestARunInPartsIsCachedOnWhatEveryTestRead(t *testing.T) {
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("testdata", "parts_")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir); os.Remove("testdata") })
	fixture := `package fixture

import (
	"os"
	"testing"
	"time"

	"github.com/shardid/shardid/integration_test/internal/testdb"
)

func TestMain(m *testing.M) {
	testdb.Package("fixture")
	os.Exit(testdb.RunInParts(m, 2, "TestReads"))
}

func TestReads(t *testing.T) {
	if os.Getenv("SHARDID_TEST_PARTS_FIXTURE") == "bad" {
		t.Fatal("SHARDID_TEST_PARTS_FIXTURE is bad")
	}
}

func TestSlow(t *testing.T)  { time.Sleep(300 * time.Millisecond) }
func TestOther(t *testing.T) {}
func TestLast(t *testing.T)  {}
`
	if err := os.WriteFile(filepath.Join(dir, "fixture_test.go"), []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	goTest := func(value string) (string, error) {
		cmd := exec.Command("go", "test", "./"+filepath.ToSlash(dir))
		cmd.Env = append(os.Environ(), "SHARDID_TEST_PARTS_FIXTURE="+value)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, value := range []string{"good", "good"} {
		if out, err := goTest(value); err != nil {
			t.Fatalf("SHARDID_TEST_PARTS_FIXTURE=%s: %v\n%s", value, err, out)
		}
	}
	out, err := goTest("bad")
	if err == nil {
		t.Errorf("SHARDID_TEST_PARTS_FIXTURE=bad, which TestReads fails on: go test passed%s\n%s",
			map[bool]string{true: " from its cache", false: ""}[strings.Contains(out, "(cached)")], out)
	}
}

// TestChildrenExitWithoutTheRaceDetectorsSleep: a child's race detector
// skips its second of sleep at exit, keeping the options a user gave it,
// their own sleep included.
func TestChildrenExitWithoutTheRaceDetectorsSleep(t *testing.T) {
	for _, c := range []struct{ given, want string }{
		{"", "atexit_sleep_ms=0"},
		{"halt_on_error=1", "halt_on_error=1 atexit_sleep_ms=0"},
		{"atexit_sleep_ms=500 log_path=x", "atexit_sleep_ms=500 log_path=x"},
	} {
		t.Setenv("GORACE", c.given)
		env := childEnv()
		if got := env[len(env)-1]; got != "GORACE="+c.want {
			t.Errorf("GORACE=%q: the child's is %q, want %q", c.given, got, "GORACE="+c.want)
		}
	}
}

// TestAChildTimesOutWithinTheRunsTimeout: a child's -test.timeout is what is
// left of the run's, so a test that hangs times out in its child, whose
// stacks name it, before go test kills the run a minute after its -timeout.
func TestAChildTimesOutWithinTheRunsTimeout(t *testing.T) {
	f := flag.Lookup("test.timeout")
	was := f.Value.String()
	t.Cleanup(func() { _ = f.Value.Set(was) })
	if err := f.Value.Set("45m"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, c := range []struct {
		after time.Duration
		want  string
	}{
		{0, "45m0s"},
		{30 * time.Minute, "15m0s"},
		{45 * time.Minute, "1s"}, // past the run's: the child ends at once
	} {
		args := childArgs([]string{"-test.timeout=45m0s", "-test.v=true"}, "TestX", "", start, start.Add(c.after))
		var timeout string
		for _, arg := range args {
			if v, ok := strings.CutPrefix(arg, "-test.timeout="); ok {
				timeout = v // the last one given is the one that counts
			}
		}
		if timeout != c.want {
			t.Errorf("%v into a run of -timeout 45m, the child's -test.timeout is %q, want %q (args %q)", c.after, timeout, c.want, args)
		}
		if args[len(args)-1] != "-test.run=^TestX$" {
			t.Errorf("the child runs %q, want -test.run=^TestX$", args[len(args)-1])
		}
	}
}
