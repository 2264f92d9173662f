package testdb

import (
	"bufio"
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// partsVar, when set, is how many parts a run of a whole package is shared
// out among, in place of the number its TestMain gives.
const partsVar = "SHARDID_TEST_PARTS"

// partVar tells a re-run of the test binary which part of the package's
// tests it runs; its databases are named after the part.
const partVar = "SHARDID_TEST_PART"

// RunInParts runs the package's tests and returns the exit code for
// os.Exit. A run of the whole package is shared out among parts processes
// at once, as the database tests spend half their time waiting on the
// servers: each takes the next test not yet run and runs it in a child, a
// run of this test binary on the part's databases. A run that picks tests
// (-run, -bench, -list), profiles or measures coverage, or that is itself a
// part's or a test's child, runs here, as go test would. The tests named in
// first start first: the longest, so that no part is left with one at the
// end while the others have finished.
func RunInParts(m *testing.M, parts int, first ...string) int {
	start := time.Now()
	flag.Parse()
	if n, err := strconv.Atoi(os.Getenv(partsVar)); err == nil {
		parts = n
	}
	if parts < 2 || os.Getenv(partVar) != "" || picked() {
		return m.Run()
	}
	tests, err := listTests()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testdb: listing the tests: %v\n", err)
		return 1
	}
	for _, name := range first {
		if !slices.Contains(tests, name) {
			fmt.Fprintf(os.Stderr, "testdb: %s, to start first, is not a test of the package\n", name)
			return 1
		}
	}
	slices.SortStableFunc(tests, func(a, b string) int { return cmp.Compare(rank(first, a), rank(first, b)) })
	logs, err := newTestLogs()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testdb: %v\n", err)
		return 1
	}
	defer logs.remove()
	queue := make(chan string, len(tests))
	for _, name := range tests {
		queue <- name
	}
	close(queue)
	var (
		wg     sync.WaitGroup
		output sync.Mutex // one test's output at a time
		failed bool       // guarded by output
	)
	for part := 1; part <= parts; part++ {
		wg.Go(func() {
			for name := range queue {
				output.Lock()
				stop := failed && failFast()
				output.Unlock()
				if stop {
					return
				}
				out, err := runTest(part, name, logs.child(name), start)
				output.Lock()
				if err != nil || !bytes.Equal(out, []byte("PASS\n")) {
					os.Stdout.Write(bytes.TrimSuffix(out, []byte("PASS\n")))
				}
				if err != nil {
					failed = true
					fmt.Printf("testdb: %s: %v\n", name, err)
				}
				output.Unlock()
			}
		})
	}
	wg.Wait()
	if err := logs.merge(); err != nil {
		fmt.Printf("testdb: %v\n", err)
		failed = true
	}
	if failed {
		fmt.Println("FAIL")
		return 1
	}
	fmt.Println("PASS")
	return 0
}

// rank is name's place in first, or after all of them.
func rank(first []string, name string) int {
	if i := slices.Index(first, name); i >= 0 {
		return i
	}
	return len(first)
}

// picked reports whether the command line runs less than every test, or
// something other than tests, so that cutting the run in parts would change
// what it does.
func picked() bool {
	for _, name := range []string{"test.run", "test.bench", "test.list", "test.coverprofile", "test.fuzz", "test.cpuprofile", "test.memprofile", "test.trace"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return true
		}
	}
	return false
}

// failFast reports whether -failfast asks to run no test after a failure.
func failFast() bool {
	f := flag.Lookup("test.failfast")
	return f != nil && f.Value.String() == "true"
}

// listTests returns the names of the package's tests and examples, in the
// order go test runs them.
func listTests() ([]string, error) {
	list := exec.Command(os.Args[0], "-test.list=.")
	list.Env = childEnv()
	out, err := list.Output()
	if err != nil {
		return nil, err
	}
	var tests []string
	for scan := bufio.NewScanner(bytes.NewReader(out)); scan.Scan(); {
		name := strings.TrimSpace(scan.Text())
		if strings.HasPrefix(name, "Test") || strings.HasPrefix(name, "Example") || strings.HasPrefix(name, "Fuzz") {
			tests = append(tests, name)
		}
	}
	return tests, nil
}

// runTest runs the test name in a child process with the command line of
// this one, on the databases of part, its test log in log, and returns what
// it printed.
func runTest(part int, name, log string, start time.Time) ([]byte, error) {
	child := exec.Command(os.Args[0], childArgs(os.Args[1:], name, log, start, time.Now())...)
	child.Env = append(childEnv(), fmt.Sprintf("%s=%d", partVar, part))
	return child.CombinedOutput()
}

// childArgs is the command line of the child running the test name: this
// process's args, its test log in log, and the time left of this run's
// -test.timeout, which started at start, as the child's: go test kills
// this process a minute after its -timeout, and a child timing out on its
// own full -timeout from its later start would be killed with it, its
// stacks naming the test that hung never printed, the child left running.
func childArgs(args []string, name, log string, start, now time.Time) []string {
	args = slices.DeleteFunc(slices.Clone(args), isTestLogFlag)
	if log != "" {
		args = append(args, "-test.testlogfile="+log)
	}
	if f := flag.Lookup("test.timeout"); f != nil {
		if timeout, err := time.ParseDuration(f.Value.String()); err == nil && timeout > 0 {
			args = append(args, "-test.timeout="+max(timeout-now.Sub(start), time.Second).String())
		}
	}
	return append(args, "-test.run=^"+regexp.QuoteMeta(name)+"$")
}

// childEnv is this process's environment for a child, whose race detector,
// if built with one, exits without its default second of sleep: its tests
// have ended, and a second for each of hundreds of children was a sixth of
// the package's run.
func childEnv() []string {
	gorace := os.Getenv("GORACE")
	if !strings.Contains(gorace, "atexit_sleep_ms") {
		gorace = strings.TrimSpace(gorace + " atexit_sleep_ms=0")
	}
	return append(os.Environ(), "GORACE="+gorace)
}

// partName is the name a part's databases take after the package's, other
// than those of the package's extra databases (_0 .. _3).
func partName(name string) string {
	if part := os.Getenv(partVar); part != "" {
		return name + "_part" + part
	}
	return name
}

// testLogs gathers the test logs of the children into the one go test asked
// of this process (-test.testlogfile): what go test keys its cache of the
// package's result on, the variables and files the tests read, is then that
// of every test, not only of the last child to write the file.
type testLogs struct {
	into string // the log go test reads; "" when it asked for none
	dir  string // the children's
}

const testLogHeader = "# test log\n" // how testing begins one

func newTestLogs() (*testLogs, error) {
	f := flag.Lookup("test.testlogfile")
	if f == nil || f.Value.String() == "" {
		return &testLogs{}, nil
	}
	dir, err := os.MkdirTemp("", "testdb-logs-")
	if err != nil {
		return nil, err
	}
	return &testLogs{into: f.Value.String(), dir: dir}, nil
}

// child is the log of the child running test, or "" when none is kept.
func (l *testLogs) child(test string) string {
	if l.into == "" {
		return ""
	}
	return filepath.Join(l.dir, test+".log")
}

// merge writes every child's entries after one header into the log go test
// reads; a child's log that is not whole leaves it empty, which go test then
// does not cache.
func (l *testLogs) merge() error {
	if l.into == "" {
		return nil
	}
	files, err := filepath.Glob(filepath.Join(l.dir, "*.log"))
	if err != nil {
		return err
	}
	merged := []byte(testLogHeader)
	for _, file := range files {
		body, err := os.ReadFile(file)
		if err != nil || !bytes.HasPrefix(body, []byte(testLogHeader)) {
			return os.WriteFile(l.into, nil, 0o644)
		}
		merged = append(merged, body[len(testLogHeader):]...)
	}
	return os.WriteFile(l.into, merged, 0o644)
}

func (l *testLogs) remove() {
	if l.dir != "" {
		_ = os.RemoveAll(l.dir)
	}
}

func isTestLogFlag(arg string) bool { return strings.HasPrefix(arg, "-test.testlogfile") }
