package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// The writer processes of the online move: the test binary run again with
// this variable set to "backend,journal dir,process number".
const moveWriterVar = "SHARDID_MOVE_WRITER"

const (
	writerProcesses  = 3
	writerGoroutines = 4
)

// TestMoveWriterProcess is a writer process of TestMoveOnlineUnderLoad; run
// alone it does nothing.
func TestMoveWriterProcess(t *testing.T) {
	spec := os.Getenv(moveWriterVar)
	if spec == "" {
		t.Skip("a child process of TestMoveOnlineUnderLoad")
	}
	parts := strings.Split(spec, ",")
	i := slices.IndexFunc(backends, func(b backend) bool { return b.name == parts[0] })
	dir, process := parts[1], parts[2]
	r := &moveRig{b: backends[i], dir: dir}
	// A held write waits out the cutover, however long a busy machine makes it.
	db, p := r.open(t, shardid.Config{MoveWait: time.Minute})
	stop := filepath.Join(dir, "stop")
	var wg sync.WaitGroup
	for g := range writerGoroutines {
		wg.Go(func() {
			j, err := os.Create(filepath.Join(dir, fmt.Sprintf("journal-%s-%d", process, g)))
			must(t, err)
			defer j.Close()
			w := bufio.NewWriter(j)
			defer w.Flush()
			writeUntil(db, w, stop)
		})
	}
	wg.Wait()
	s := p.MovedWrites()
	must(t, os.WriteFile(filepath.Join(dir, "stats-"+process), fmt.Appendf(nil, "%d %d %d %d", s.Held, s.Retried, s.Failed, s.Longest), 0o644))
}

// writer is one goroutine's rows, which no other goroutine touches, so that
// its journal orders every write of them.
type writer struct {
	db      *gorm.DB
	journal *bufio.Writer
	users   []int64 // live
	ledgers []int64
	docs    []string
	n       int
}

// writeUntil creates, updates and deletes rows in and out of the moving
// range until the stop file appears, journaling each acknowledged write:
// "put table key value", "del table key", "err text", "txmoved".
func writeUntil(db *gorm.DB, journal *bufio.Writer, stop string) {
	w := &writer{db: db, journal: journal}
	for {
		if w.n%50 == 0 {
			if _, err := os.Stat(stop); err == nil {
				return
			}
		}
		w.n++
		w.step()
	}
}

func (w *writer) log(format string, args ...any) { fmt.Fprintf(w.journal, format+"\n", args...) }

// shard picks a logical shard: half the time in the moving range.
func shardToWrite() int {
	if rand.IntN(2) == 0 {
		return movingRange.From + rand.IntN(movingRange.To-movingRange.From+1)
	}
	return rand.IntN(movingRange.From)
}

func (w *writer) step() {
	value := fmt.Sprintf("v%d", w.n)
	on := w.db.Clauses(shardid.OnShard(shardToWrite()))
	switch op := rand.IntN(10); {
	case op < 3 || len(w.users) == 0:
		u := MvUser{Name: value}
		if w.check(on.Create(&u).Error) {
			w.users = append(w.users, u.ID)
			w.log("put mv_users %d %s", u.ID, value)
		}
	case op < 5:
		id := w.users[rand.IntN(len(w.users))]
		if w.check(w.db.Model(&MvUser{ID: id}).Update("name", value).Error) {
			w.log("put mv_users %d %s", id, value)
		}
	case op < 6:
		i := rand.IntN(len(w.users))
		id := w.users[i]
		if w.check(w.db.Delete(&MvUser{}, id).Error) {
			w.users = slices.Delete(w.users, i, i+1)
			w.log("del mv_users %d", id)
		}
	case op < 7:
		ph := MvPhoto{UserID: w.users[rand.IntN(len(w.users))], Caption: value}
		if w.check(w.db.Create(&ph).Error) {
			w.log("put mv_photos %d %s", ph.ID, value)
		}
	case op < 8:
		if len(w.ledgers) > 0 && rand.IntN(2) == 0 {
			id := w.ledgers[rand.IntN(len(w.ledgers))]
			if w.check(w.db.Model(&MvLedger{ID: id}).Update("amount", w.n).Error) {
				w.log("put mv_ledgers %d %d", id, w.n)
			}
			return
		}
		l := MvLedger{Amount: int64(w.n)}
		if w.check(on.Create(&l).Error) {
			w.ledgers = append(w.ledgers, l.ID)
			w.log("put mv_ledgers %d %d", l.ID, w.n)
		}
	case op < 9:
		if len(w.docs) > 0 && rand.IntN(2) == 0 {
			id := w.docs[rand.IntN(len(w.docs))]
			if w.check(w.db.Model(&MvDoc{ID: id}).Update("body", value).Error) {
				w.log("put mv_docs %s %s", id, value)
			}
			return
		}
		d := MvDoc{Body: value}
		if w.check(on.Create(&d).Error) {
			w.docs = append(w.docs, d.ID)
			w.log("put mv_docs %s %s", d.ID, value)
		}
	default:
		w.inTransaction(value)
	}
}

// inTransaction writes a user and a photo of it in one transaction on one
// shard, retrying the transaction when its shard moved meanwhile.
func (w *writer) inTransaction(value string) {
	shard := shardToWrite()
	for range 50 {
		var u MvUser
		var ph MvPhoto
		err := w.db.Clauses(shardid.OnShard(shard)).Transaction(func(tx *gorm.DB) error {
			u = MvUser{Name: value}
			if err := tx.Create(&u).Error; err != nil {
				return err
			}
			ph = MvPhoto{UserID: u.ID, Caption: value}
			return tx.Create(&ph).Error
		})
		if errors.Is(err, shardid.ErrShardMoved) {
			w.log("txmoved")
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil {
			w.log("txerr %s", strings.ReplaceAll(err.Error(), "\n", " "))
			return
		}
		w.users = append(w.users, u.ID)
		w.log("put mv_users %d %s", u.ID, value)
		w.log("put mv_photos %d %s", ph.ID, value)
		return
	}
	w.log("txerr still moved after 50 tries")
}

// check journals an error of a write outside a transaction, which the
// plugin should have held and retried.
func (w *writer) check(err error) bool {
	if err != nil {
		w.log("err %s", strings.ReplaceAll(err.Error(), "\n", " "))
		return false
	}
	return true
}

// The online move: three writer processes of four goroutines each keep
// writing users, photos, ledgers and documents in and out of the moving
// range while its 2048 logical shards, holding over 100,000 rows, move to
// another database. Every acknowledged write is then where its shard maps,
// with its last value; no deleted row is left, no ID is there twice, no row
// of the range is on the source after the cleanup, and no write outside a
// transaction failed.
func TestMoveOnlineUnderLoad(t *testing.T) {
	for _, b := range backends {
		if b.name == "sqlite" {
			continue // several writer processes: the servers
		}
		t.Run(b.name, func(t *testing.T) {
			dir := t.TempDir()
			r := newMoveRig(t, b, dir)
			seeded := r.seedUsers(t, 100_000)
			exe, err := os.Executable()
			must(t, err)
			var children []*exec.Cmd
			for c := range writerProcesses {
				cmd := exec.Command(exe, "-test.run=^TestMoveWriterProcess$", "-test.count=1")
				cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,%d", moveWriterVar, b.name, dir, c))
				cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
				must(t, cmd.Start())
				children = append(children, cmd)
			}
			t.Cleanup(func() {
				for _, c := range children {
					if c.ProcessState == nil {
						_ = c.Process.Kill()
						_ = c.Wait()
					}
				}
			})
			waitForJournals(t, dir, writerProcesses*writerGoroutines)
			// A long freeze lease: no lapse while a busy machine renews it late.
			report := r.move(t, shardid.Move{FreezeLease: 30 * time.Second})
			time.Sleep(1500 * time.Millisecond) // the writers go on, on the new map
			must(t, os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644))
			for _, c := range children {
				if err := c.Wait(); err != nil {
					t.Fatalf("a writer process failed: %v", err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			must(t, r.p.CleanupMove(ctx, movingRange, moveModels...))

			final, errs, txMoved := readJournals(t, dir)
			if len(errs) > 0 {
				t.Errorf("%d writes outside a transaction failed, e.g. %s", len(errs), errs[0])
			}
			r.checkPlacement(t, final, seeded)
			var longest time.Duration
			var held, retried uint64
			for c := range writerProcesses {
				var h, rt, f uint64
				var l int64
				body, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("stats-%d", c)))
				must(t, err)
				_, err = fmt.Sscan(string(body), &h, &rt, &f, &l)
				must(t, err)
				held, retried, longest = held+h, retried+rt, max(longest, time.Duration(l))
			}
			t.Logf("%s: %s; writers: %d writes held at the cutover, %d retried on the target, longest held %s; %d transactions retried as moved",
				b.name, describeReport(report), held, retried, longest, txMoved)
		})
	}
}

// waitForJournals waits until every writer goroutine has written something.
func waitForJournals(t *testing.T, dir string, want int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(dir, "journal-*"))
		started := 0
		for _, f := range files {
			if info, err := os.Stat(f); err == nil && info.Size() > 0 {
				started++
			}
		}
		if started == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the writer processes did not start writing")
}

// rowState is the last acknowledged write of one row.
type rowState struct {
	value   string
	deleted bool
}

// readJournals replays the journals: the last write of each row, the
// errors of writes outside transactions, and the transactions retried.
func readJournals(t *testing.T, dir string) (map[string]map[string]rowState, []string, int) {
	t.Helper()
	final := map[string]map[string]rowState{}
	var errs []string
	txMoved := 0
	files, err := filepath.Glob(filepath.Join(dir, "journal-*"))
	must(t, err)
	for _, f := range files {
		body, err := os.ReadFile(f)
		must(t, err)
		for line := range strings.Lines(string(body)) {
			fields := strings.Fields(line)
			switch fields[0] {
			case "put", "del":
				table, key := fields[1], fields[2]
				if final[table] == nil {
					final[table] = map[string]rowState{}
				}
				if fields[0] == "del" {
					final[table][key] = rowState{deleted: true}
				} else {
					final[table][key] = rowState{value: fields[3]}
				}
			case "err", "txerr":
				errs = append(errs, line)
			case "txmoved":
				txMoved++
			}
		}
	}
	return final, errs, txMoved
}

// checkPlacement reads both physical databases directly: every row is on
// the database its shard maps to, once; every acknowledged write is there
// with its last value; no deleted row is anywhere.
func (r *moveRig) checkPlacement(t *testing.T, final map[string]map[string]rowState, seeded []int64) {
	t.Helper()
	columns := map[string]string{"mv_users": "name", "mv_photos": "caption", "mv_ledgers": "amount", "mv_docs": "body"}
	layout := r.p.Layout()
	for table, column := range columns {
		onSource, onTarget := readColumn(t, r.source, table, column), readColumn(t, r.target, table, column)
		for key := range onSource {
			if _, twice := onTarget[key]; twice {
				t.Errorf("%s %s is on both databases", table, key)
			}
			if inMovingRange(t, layout, key) {
				t.Errorf("%s %s of the moved range is still on the source after the cleanup", table, key)
			}
		}
		for key := range onTarget {
			if !inMovingRange(t, layout, key) {
				t.Errorf("%s %s, outside the moved range, is on the target", table, key)
			}
		}
		for key, want := range final[table] {
			value, onS := onSource[key]
			v, onT := onTarget[key]
			if onT {
				value = v
			}
			present := onS || onT
			switch {
			case want.deleted && present:
				t.Errorf("%s %s was deleted, and is there", table, key)
			case !want.deleted && !present:
				t.Errorf("%s %s was written (%s), and is not there", table, key, want.value)
			case !want.deleted && value != want.value:
				t.Errorf("%s %s is %q, last written %q", table, key, value, want.value)
			}
		}
		if table == "mv_users" {
			for _, id := range seeded {
				key := strconv.FormatInt(id, 10)
				if _, touched := final[table][key]; !touched && onTarget[key] != "seed" {
					t.Fatalf("seeded user %s is not on the target: %q", key, onTarget[key])
				}
			}
		}
		t.Logf("%s: %d rows on the source, %d on the target", table, len(onSource), len(onTarget))
	}
}

// readColumn reads a table's keys and one column, as text.
func readColumn(t *testing.T, db *gorm.DB, table, column string) map[string]string {
	t.Helper()
	rows, err := db.Table(table).Select("id, " + column).Rows()
	must(t, err)
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var key, value string
		must(t, rows.Scan(&key, &value))
		out[key] = value
	}
	must(t, rows.Err())
	return out
}

// inMovingRange reports whether a key, an int64 ID or a UUID, is of a shard
// of the moving range.
func inMovingRange(t *testing.T, layout shardid.Layout, key string) bool {
	var shard int
	if id, err := strconv.ParseInt(key, 10, 64); err == nil {
		shard = layout.Shard(id)
	} else {
		low, err := strconv.ParseUint(key[len(key)-4:], 16, 16)
		if err != nil {
			t.Fatalf("key %q is neither an ID nor a UUID", key)
		}
		shard = int(low) & (layout.ShardCount() - 1)
	}
	return shard >= movingRange.From && shard <= movingRange.To
}
