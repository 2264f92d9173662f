package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// coordinatorChildVar, set to "<backend>/<step>", makes
// TestKilledCoordinatorLeavesAllOrNothing the process that runs transfers
// and stops inside the two-phase commit at that step, until it is killed.
const coordinatorChildVar = "SHARDID_TEST_COORDINATOR_CHILD"

// leg is one side of a transfer, beside its account.
type leg struct {
	ID        shardid.ID `shardid:"colocate:AccountID"`
	AccountID int64
	Transfer  string `gorm:"size:64;index"`
	Amount    int64
}

// coordinatorSteps are the log events of the two-phase commit the child
// stops at: some branches prepared; all prepared, nothing decided; the
// commit decided, no branch committed; one branch committed.
var coordinatorSteps = []struct {
	name, event string
	applied     bool // whether recovery must apply the transfer in flight
	// leaves says a prepared branch is certainly left: not so once one
	// committed, as the others commit at the same time.
	leaves bool
}{
	{"some prepared", "shardid: two-phase: branch prepared", false, true},
	{"all prepared", "shardid: two-phase: every branch prepared", false, true},
	{"decided", "shardid: two-phase: decided", true, true},
	{"one committed", "shardid: two-phase: branch committed", true, false},
}

// TestKilledCoordinatorLeavesAllOrNothing: a process running transfers
// across shards is killed at each step of a transfer's two-phase commit; a
// fresh process's recovery then leaves every transfer wholly applied (its
// commit was decided) or wholly absent, the balances' total exact, and no
// prepared branch on any server.
func TestKilledCoordinatorLeavesAllOrNothing(t *testing.T) {
	if v := os.Getenv(coordinatorChildVar); v != "" {
		runTransfersUntilKilled(t, v)
		return
	}
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{}, &leg{})
		accounts := accountsOnEvery(t, r)
		total := int64(1000 * len(accounts))
		for _, step := range coordinatorSteps {
			child := exec.Command(os.Args[0], "-test.run=^TestKilledCoordinatorLeavesAllOrNothing$", "-test.count=1")
			child.Env = append(os.Environ(), coordinatorChildVar+"="+b.name+"/"+step.event)
			out, err := child.StdoutPipe()
			must(t, err)
			child.Stderr = os.Stderr
			must(t, child.Start())
			lines := bufio.NewScanner(out)
			inFlight := ""
			for lines.Scan() {
				if id, ok := strings.CutPrefix(lines.Text(), "STOPPED "); ok {
					inFlight = id
					break
				}
			}
			if inFlight == "" {
				_ = child.Process.Kill()
				t.Fatalf("%s: the child ended before it stopped: %v", step.name, child.Wait())
			}
			must(t, child.Process.Kill())
			_ = child.Wait()
			before := r.plugin.TransactionStats()
			if step.leaves && len(prepared(t, r.db, r.direct)) == 0 {
				t.Fatalf("%s: the killed child left no prepared branch", step.name)
			}

			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				err := r.plugin.RecoverTransactions(context.Background())
				if err == nil && len(prepared(t, r.db, r.direct)) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: branches still prepared after 30s: %v (last recovery: %v)", step.name, prepared(t, r.db, r.direct), err)
				}
			}
			// A background recovery may have resolved the branches and not yet counted them; one more run waits for its lock.
			_ = r.plugin.RecoverTransactions(context.Background())
			after := r.plugin.TransactionStats()
			if step.leaves && after.RecoveredCommit+after.RecoveredRollback == before.RecoveredCommit+before.RecoveredRollback {
				t.Fatalf("%s: recovery counted no branch it resolved: %+v", step.name, after)
			}
			var legs []leg
			must(t, r.db.Clauses(shardid.AllShards()).Find(&legs).Error)
			per := map[string]int{}
			for _, l := range legs {
				per[l.Transfer]++
			}
			for id, n := range per {
				if n != 2 {
					t.Fatalf("%s: transfer %s has %d of its 2 legs", step.name, id, n)
				}
			}
			if applied := per[inFlight] == 2; applied != step.applied {
				t.Fatalf("%s: the transfer in flight (%s) applied: %v, want %v", step.name, inFlight, applied, step.applied)
			}
			var all []account
			must(t, r.db.Clauses(shardid.AllShards()).Find(&all).Error)
			var sum int64
			for _, a := range all {
				sum += a.Balance
			}
			if sum != total {
				t.Fatalf("%s: the balances sum to %d, want %d", step.name, sum, total)
			}
			t.Logf("%s: %d transfers whole, the one in flight applied: %v", step.name, len(per), per[inFlight] == 2)
		}
	})
}

// accountsOnEvery creates two accounts on every physical database.
func accountsOnEvery(t *testing.T, r *routing) []account {
	t.Helper()
	var accounts []account
	var on [physicalShards]int
	for i := 0; i < 400 && len(accounts) < 2*physicalShards; i++ {
		a := account{Balance: 1000}
		must(t, r.db.Create(&a).Error)
		if k := r.physicalOf(a.ID); on[k] < 2 {
			on[k]++
			accounts = append(accounts, a)
		} else {
			must(t, r.db.Delete(&a).Error)
		}
	}
	slices.SortFunc(accounts, func(a, b account) int { return cmpInt(a.ID, b.ID) })
	return accounts
}

// runTransfersUntilKilled runs transfers between accounts of different
// databases, each with a leg row on both sides, until the two-phase commit
// of the third reaches the step named, where it prints STOPPED and the
// transfer's ID and waits to be killed.
func runTransfersUntilKilled(t *testing.T, v string) {
	name, event, _ := strings.Cut(v, "/")
	i := slices.IndexFunc(backends, func(b backend) bool { return b.name == name })
	if i < 0 {
		t.Fatalf("no backend %q", name)
	}
	b := backends[i]
	dir := t.TempDir()
	var current string
	transfers := 0
	stop := func(msg string) {
		if msg == event && transfers == 3 {
			fmt.Println("STOPPED " + current)
			select {} // the parent kills this process
		}
	}
	main, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := shardid.New(shardid.Config{Shards: shards(t, b, dir), MapRefresh: 100 * time.Millisecond,
		Log: slog.New(stepHandler{stop: stop})})
	must(t, main.Use(p))
	r := &routing{b: b, db: main, plugin: p}
	var accounts []account
	must(t, main.Clauses(shardid.AllShards()).Order("id").Find(&accounts).Error)
	for n := 0; ; n++ {
		from, to := accounts[n%len(accounts)], accounts[(n+3)%len(accounts)]
		if r.physicalOf(from.ID) == r.physicalOf(to.ID) {
			continue
		}
		transfers++
		current = fmt.Sprintf("t%d-%d", os.Getpid(), n)
		err := main.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			for _, side := range []struct {
				id     int64
				amount int64
			}{{from.ID, -7}, {to.ID, 7}} {
				if err := tx.Model(&account{ID: side.id}).Update("balance", gorm.Expr("balance + ?", side.amount)).Error; err != nil {
					return err
				}
				if err := tx.Create(&leg{AccountID: side.id, Transfer: current, Amount: side.amount}).Error; err != nil {
					return err
				}
			}
			return nil
		})
		must(t, err)
	}
}

// stepHandler passes the plugin's debug events to stop.
type stepHandler struct{ stop func(msg string) }

func (stepHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h stepHandler) Handle(_ context.Context, r slog.Record) error {
	h.stop(r.Message)
	return nil
}
func (h stepHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h stepHandler) WithGroup(string) slog.Handler      { return h }

// TestDatabaseCutInTwoPhaseCommit: the connection to one of two databases cut
// while a transfer prepares rolls the whole transfer back; cut after the
// decision, the transfer has committed, and recovery commits that database's
// branch once it answers again. Either way no branch stays prepared.
func TestDatabaseCutInTwoPhaseCommit(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		cutAt := make(chan string, 1) // the event at which to cut, taken once
		var proxy *tcpProxy
		handler := stepHandler{stop: func(msg string) {
			select {
			case at := <-cutAt:
				if at == msg {
					proxy.setCut(true)
				} else {
					cutAt <- at
				}
			default:
			}
		}}
		list := shards(t, b, dir)[:2]
		count := shardid.Layout{}.ShardCount()
		list[0].Logical = []shardid.Range{{From: 0, To: count/2 - 1}}
		list[1].Logical = []shardid.Range{{From: count / 2, To: count - 1}}
		list[1].Dialector, proxy = physicalViaProxy(t, b, 1)
		db := open(t, b, dir, shardid.Config{Shards: list, ConnectTimeout: time.Second, Log: slog.New(handler)})
		p := db.Config.Plugins["shardid"].(*shardid.Plugin)
		fresh(t, db, &account{})
		var accounts [2]account
		for k := range accounts {
			a := account{Balance: 100}
			must(t, db.Clauses(shardid.OnShard(k*count/2)).Create(&a).Error)
			accounts[k] = a
		}
		transfer := func(n int64) error {
			return db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				if err := tx.Model(&accounts[0]).Update("balance", gorm.Expr("balance - ?", n)).Error; err != nil {
					return err
				}
				return tx.Model(&accounts[1]).Update("balance", gorm.Expr("balance + ?", n)).Error
			})
		}
		balances := func() [2]int64 {
			var got [2]int64
			for k, a := range accounts {
				var row account
				must(t, db.First(&row, a.ID).Error)
				got[k] = row.Balance
			}
			return got
		}
		recoverAll := func() {
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				if err := p.RecoverTransactions(context.Background()); err == nil && len(prepared(t, db, direct(t, b, dir)[:2])) == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("branches still prepared after 30s: %v", prepared(t, db, direct(t, b, dir)[:2]))
				}
			}
		}

		cutAt <- "shardid: two-phase: preparing"
		if err := transfer(10); err == nil {
			t.Fatal("a transfer whose second database was cut while it prepared committed")
		}
		proxy.setCut(false)
		recoverAll()
		if got := balances(); got != [2]int64{100, 100} {
			t.Fatalf("after a cut during prepare: balances %v, want 100 and 100", got)
		}

		cutAt <- "shardid: two-phase: decided"
		if err := transfer(10); err != nil {
			t.Fatalf("a transfer cut after its decision: %v, want committed", err)
		}
		proxy.setCut(false)
		if left := prepared(t, db, direct(t, b, dir)[:2]); len(left) != 1 {
			t.Fatalf("after a cut during commit, prepared branches %v, want the cut database's", left)
		}
		recoverAll()
		if got := balances(); got != [2]int64{90, 110} {
			t.Fatalf("after a cut during commit: balances %v, want 90 and 110", got)
		}
	})
}

// TestCloseWaitsForADecidedCommit: Close called as an application shuts
// down, while a transfer across two databases is between its decision and
// its branches' commits, lets those commits finish on the pools before it
// closes them: the transfer that returned nil is on both databases, and no
// branch stays prepared for another process's recovery.
func TestCloseWaitsForADecidedCommit(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		var plugin *shardid.Plugin
		var once sync.Once
		closed := make(chan struct{})
		handler := stepHandler{stop: func(msg string) {
			if msg == "shardid: two-phase: decided" {
				once.Do(func() {
					go func() { _ = plugin.Close(); close(closed) }()
					select { // Close waits for this commit: give it the time to begin
					case <-closed:
					case <-time.After(500 * time.Millisecond):
					}
				})
			}
		}}
		list := shards(t, b, dir)[:2]
		count := shardid.Layout{}.ShardCount()
		list[0].Logical = []shardid.Range{{From: 0, To: count/2 - 1}}
		list[1].Logical = []shardid.Range{{From: count / 2, To: count - 1}}
		db := open(t, b, dir, shardid.Config{Shards: list, Log: slog.New(handler)})
		plugin = db.Config.Plugins["shardid"].(*shardid.Plugin)
		fresh(t, db, &account{})
		var accounts [2]account
		for k := range accounts {
			accounts[k] = account{Balance: 100}
			must(t, db.Clauses(shardid.OnShard(k*count/2)).Create(&accounts[k]).Error)
		}
		dbs := direct(t, b, dir)[:2]
		err := db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			if err := tx.Model(&accounts[0]).Update("balance", gorm.Expr("balance - 10")).Error; err != nil {
				return err
			}
			return tx.Model(&accounts[1]).Update("balance", gorm.Expr("balance + 10")).Error
		})
		<-closed
		must(t, err)
		for k, want := range []int64{90, 110} {
			var row account
			must(t, dbs[k].First(&row, accounts[k].ID).Error)
			if row.Balance != want {
				t.Errorf("database %d holds balance %d, want %d", k, row.Balance, want)
			}
		}
		if left := prepared(t, db, dbs); len(left) > 0 {
			t.Errorf("%v stay prepared after Close", left)
		}
	})
}

// TestCommitBegunAfterCloseIsRefusedWhole: a transfer whose commit begins
// once Close has begun, while Close waits for a commit under way, would
// commit on pools Close is about to close: it is refused with
// ErrShardUnavailable and rolled back, nothing written and nothing left
// prepared; the commit Close waited for is on both databases.
func TestCommitBegunAfterCloseIsRefusedWhole(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		decided, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		handler := stepHandler{stop: func(msg string) {
			if msg == "shardid: two-phase: decided" {
				once.Do(func() { close(decided); <-release })
			}
		}}
		list := shards(t, b, dir)[:2]
		count := shardid.Layout{}.ShardCount()
		list[0].Logical = []shardid.Range{{From: 0, To: count/2 - 1}}
		list[1].Logical = []shardid.Range{{From: count / 2, To: count - 1}}
		db := open(t, b, dir, shardid.Config{Shards: list, Log: slog.New(handler)})
		plugin := db.Config.Plugins["shardid"].(*shardid.Plugin)
		fresh(t, db, &account{})
		var accounts [2][2]account // a pair for each transfer, one on each database
		for i := range accounts {
			for k := range accounts[i] {
				accounts[i][k] = account{Balance: 100}
				must(t, db.Clauses(shardid.OnShard(k*count/2)).Create(&accounts[i][k]).Error)
			}
		}
		dbs := direct(t, b, dir)[:2]
		transfer := func(pair [2]account, amount int64, beforeCommit func()) error {
			return db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				if err := tx.Model(&pair[0]).Update("balance", gorm.Expr("balance - ?", amount)).Error; err != nil {
					return err
				}
				if err := tx.Model(&pair[1]).Update("balance", gorm.Expr("balance + ?", amount)).Error; err != nil {
					return err
				}
				beforeCommit()
				return nil
			})
		}
		first, second, closed := make(chan error, 1), make(chan error, 1), make(chan error, 1)
		wrote, commit := make(chan struct{}), make(chan struct{})
		go func() { second <- transfer(accounts[1], 1, func() { close(wrote); <-commit }) }()
		<-wrote // the second has written, and commits when told
		go func() { first <- transfer(accounts[0], 10, func() {}) }()
		<-decided // the first is between its decision and its branches' commits
		go func() { closed <- plugin.Close() }()
		// Close has begun (and waits for the first) once Ping says the plugin is not open.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			if _, err := plugin.Ping(context.Background()); errors.Is(err, shardid.ErrPluginNotOpen) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("Close did not begin within a minute")
			}
		}
		close(commit)
		time.Sleep(300 * time.Millisecond) // the second's commit waits behind Close
		close(release)
		must(t, <-first)
		if err := <-second; !errors.Is(err, shardid.ErrShardUnavailable) {
			t.Fatalf("a commit begun once Close had begun: %v; want ErrShardUnavailable", err)
		}
		<-closed
		for i, wants := range [][]int64{{90, 110}, {100, 100}} {
			for k, want := range wants {
				var row account
				must(t, dbs[k].First(&row, accounts[i][k].ID).Error)
				if row.Balance != want {
					t.Errorf("transfer %d: database %d holds balance %d, want %d", i, k, row.Balance, want)
				}
			}
		}
		if left := prepared(t, db, dbs); len(left) > 0 {
			t.Errorf("%v stay prepared after Close", left)
		}
	})
}

// killOnDecision is a log handler that, when a two-phase transaction is
// decided, runs kill once: the branches then commit on connections their
// server has just cut.
type killOnDecision struct {
	once sync.Once
	kill func()
}

func (h *killOnDecision) Enabled(context.Context, slog.Level) bool { return true }
func (h *killOnDecision) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "shardid: two-phase: decided" && h.kill != nil {
		h.once.Do(h.kill)
	}
	return nil
}
func (h *killOnDecision) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *killOnDecision) WithGroup(string) slog.Handler      { return h }

// TestADecidedTransactionCommitsItsBranchesOnConnectionsCutAtTheDecision:
// the server of one branch cuts the process's connections to it right
// after the transaction is decided, and stays up. The branch commits from
// another session before the statement returns: a read of that database
// right after sees the write, and holds no lock of it.
func TestADecidedTransactionCommitsItsBranchesOnConnectionsCutAtTheDecision(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		phys := direct(t, b, dir)
		main, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		killer := &killOnDecision{}
		p := shardid.New(shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity(), Log: slog.New(killer)})
		firstStart(t, main)
		must(t, main.Use(p))
		t.Cleanup(func() { _ = p.Close() })
		fresh(t, main, &account{})
		count := p.Layout().ShardCount()
		accounts := []account{{Balance: 10}, {Balance: 10}}
		for k := range accounts {
			must(t, main.Clauses(shardid.OnShard(k*count/physicalShards)).Create(&accounts[k]).Error)
		}
		var name string
		must(t, phys[1].Raw(map[string]string{"mariadb": "SELECT DATABASE()", "postgres": "SELECT current_database()"}[b.name]).Scan(&name).Error)
		killer.kill = func() {
			kill := map[string]string{
				"mariadb":  "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()",
				"postgres": "SELECT pid FROM pg_stat_activity WHERE datname = ? AND pid <> pg_backend_pid()",
			}[b.name]
			var ids []int64
			must(t, phys[0].Raw(kill, name).Scan(&ids).Error)
			for _, id := range ids {
				if b.name == "mariadb" {
					_ = phys[0].Exec(fmt.Sprintf("KILL CONNECTION %d", id)).Error
				} else {
					_ = phys[0].Exec("SELECT pg_terminate_backend(?)", id).Error
				}
			}
			if len(ids) == 0 {
				t.Errorf("no connection of the plugin's to %s to cut", name)
			}
		}
		ids := []int64{accounts[0].ID, accounts[1].ID}
		must(t, main.Model(&account{}).Where("id IN ?", ids).Update("balance", gorm.Expr("balance + 1")).Error)
		sqlDB, err := phys[1].DB()
		must(t, err)
		sqlDB.SetMaxIdleConns(0) // the test's own connections to it were cut too
		sqlDB.SetMaxIdleConns(2)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a branch left prepared holds its row's lock until recovery
		defer cancel()
		var got account
		if err := phys[1].WithContext(ctx).Model(&account{}).Where("id = ?", ids[1]).Update("balance", gorm.Expr("balance")).Error; err != nil {
			t.Fatalf("the row of the cut database is still locked after the transaction returned: %v", err)
		}
		must(t, phys[1].First(&got, ids[1]).Error)
		if got.Balance != 11 {
			t.Errorf("the cut database's row right after the transaction returned: balance %d, want 11", got.Balance)
		}
	})
}
