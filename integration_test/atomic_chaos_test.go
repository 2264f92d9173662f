package integration

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

type chaosOutcome int

const (
	chaosOK chaosOutcome = iota
	chaosErr
	chaosInDoubt
)

func (o chaosOutcome) String() string { return [...]string{"ok", "err", "indoubt"}[o] }

type chaosResult struct {
	id   string
	want int // legs when applied
	out  chaosOutcome
	err  error
}

// chaosRun is how long each run of the faults lasts: SHARDID_CHAOS_RUN (a
// Go duration) for longer runs than the CI's.
func chaosRun() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("SHARDID_CHAOS_RUN")); err == nil && d > 0 {
		return d
	}
	return 4 * time.Second
}

// TestTransfersAcrossShardsUnderFaultsAreAllOrNothing: one database, a
// physical one or the plugin's own, is behind a proxy that cuts, half-opens,
// stalls and refuses; four clients run transfers across shards (each a leg
// on both sides, with a deadline) and a fifth split batch Creates, in turn
// alone and in CreateInBatches' transaction; a second plugin runs
// RecoverTransactions all along. After recovery, on the physical databases
// directly: each success whole, each plain error absent, each ErrInDoubt all
// or nothing, balances equal to their legs, no prepared branch left, no row
// off its shard's database.
func TestTransfersAcrossShardsUnderFaultsAreAllOrNothing(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		for _, proxied := range []string{"a physical database", "the plugin's database"} {
			t.Run(proxied, func(t *testing.T) { transfersUnderFaults(t, b, proxied == "the plugin's database") })
		}
	})
}

func transfersUnderFaults(t *testing.T, b backend, proxyOnMain bool) {
	dir := t.TempDir()
	list := shards(t, b, dir)
	var proxy *chaosProxy
	inDoubtAfter := 3 * time.Second
	var db *gorm.DB
	chaosMode := b.name
	if proxyOnMain {
		chaosMode = "main"
		var dialector gorm.Dialector
		dialector, proxy = physicalViaChaos(t, b, -1)
		plain, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		firstStart(t, plain)
		db, err = gorm.Open(dialector, &gorm.Config{Logger: logger.Discard})
		must(t, err)
		p := shardid.New(shardid.Config{Shards: list, InDoubtAfter: inDoubtAfter, ConnectTimeout: time.Second, Atomic: b.atomicity()})
		must(t, db.Use(p))
		t.Cleanup(func() { _ = p.Close() })
	} else {
		list[1].Dialector, proxy = physicalViaChaos(t, b, 1)
		db = open(t, b, dir, shardid.Config{Shards: list, InDoubtAfter: inDoubtAfter, ConnectTimeout: time.Second})
	}
	plugin := db.Config.Plugins["shardid"].(*shardid.Plugin)
	r := &routing{b: b, db: db, direct: direct(t, b, dir), plugin: plugin}
	fresh(t, db, &account{}, &leg{})
	accounts := accountsOnEvery(t, r)

	// A second process: same databases, reached directly.
	main2, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p2 := shardid.New(shardid.Config{Shards: shards(t, b, dir), InDoubtAfter: inDoubtAfter})
	must(t, main2.Use(p2))
	t.Cleanup(func() { _ = p2.Close() })

	run := chaosRun()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var results []chaosResult
	var chaosLog []string
	record := func(res chaosResult) {
		mu.Lock()
		results = append(results, res)
		mu.Unlock()
	}
	classify := func(err error) chaosOutcome {
		switch {
		case err == nil:
			return chaosOK
		case errors.Is(err, shardid.ErrInDoubt):
			return chaosInDoubt
		}
		return chaosErr
	}
	for c := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 99))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				i := rng.IntN(len(accounts))
				j := rng.IntN(len(accounts))
				if r.physicalOf(accounts[i].ID) == r.physicalOf(accounts[j].ID) {
					continue
				}
				from, to := accounts[i], accounts[j]
				amount := int64(1 + rng.IntN(9))
				id := fmt.Sprintf("t%d-%d", c, n)
				sides := []struct {
					id, amount int64
				}{{from.ID, -amount}, {to.ID, amount}}
				slices.SortFunc(sides, func(a, b struct{ id, amount int64 }) int { return cmpInt(a.id, b.id) })
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(300+rng.IntN(4000))*time.Millisecond)
				err := db.WithContext(ctx).Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
					for _, side := range sides {
						if err := tx.Model(&account{ID: side.id}).Update("balance", gorm.Expr("balance + ?", side.amount)).Error; err != nil {
							return err
						}
						if err := tx.Create(&leg{AccountID: side.id, Transfer: id, Amount: side.amount}).Error; err != nil {
							return err
						}
					}
					return nil
				})
				cancel()
				record(chaosResult{id: id, want: 2, out: classify(err), err: err})
			}
		})
	}
	// Split batch Creates: one leg per database, amount 0.
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(42, 1))
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("b-%d", n)
			var batch []leg
			seen := map[int]bool{}
			for _, a := range accounts {
				if k := r.physicalOf(a.ID); !seen[k] {
					seen[k] = true
					batch = append(batch, leg{AccountID: a.ID, Transfer: id})
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(300+rng.IntN(4000))*time.Millisecond)
			var err error
			if n%2 == 1 { // in the transaction CreateInBatches opens on the plugin's database

				err = db.WithContext(ctx).CreateInBatches(&batch, 2).Error
			} else {
				err = db.WithContext(ctx).Create(&batch).Error
			}
			cancel()
			out := classify(err)
			if n%2 == 1 && proxyOnMain && out == chaosErr && answerLost(err) {
				out = chaosInDoubt // the commit of GORM's transaction on the plugin's database, as of any on one database
			}
			record(chaosResult{id: id, want: len(batch), out: out, err: err})
		}
	})
	// The other process's recovery.
	var recErrs int
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := p2.RecoverTransactions(ctx); err != nil {
				recErrs++
			}
			cancel()
		}
	})
	chaosStop := make(chan struct{})
	var chaosWG sync.WaitGroup
	chaosWG.Go(func() {
		proxy.chaos(chaosStop, chaosMode, uint64(time.Now().UnixNano()), func(s string) {
			mu.Lock()
			chaosLog = append(chaosLog, s)
			mu.Unlock()
		})
	})
	time.Sleep(run)
	close(chaosStop)
	chaosWG.Wait()
	proxy.calm()
	close(stop)
	wg.Wait()

	// Recovery by both processes until nothing is prepared.
	deadline := time.Now().Add(inDoubtAfter + 60*time.Second)
	for {
		e1 := plugin.RecoverTransactions(context.Background())
		e2 := p2.RecoverTransactions(context.Background())
		left := prepared(t, db, r.direct)
		if len(left) == 0 && e1 == nil && e2 == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("prepared branches left after recovery: %v (recovery: %v / %v)", left, e1, e2)
			break
		}
		time.Sleep(300 * time.Millisecond)
	}

	// Read the physical databases directly.
	legsOf := map[string]int{}
	legOn := map[string][]int{}
	sumLegs := map[int64]int64{}
	for k, d := range r.direct {
		var legs []leg
		must(t, d.Find(&legs).Error)
		for _, l := range legs {
			legsOf[l.Transfer]++
			legOn[l.Transfer] = append(legOn[l.Transfer], k)
			sumLegs[l.AccountID] += l.Amount
			if r.physicalOf(int64(l.ID)) != k || r.physicalOf(l.AccountID) != k {
				t.Errorf("leg %d of account %d (%s) is on database %d", l.ID, l.AccountID, l.Transfer, k)
			}
		}
		var accs []account
		must(t, d.Find(&accs).Error)
		for _, a := range accs {
			if r.physicalOf(a.ID) != k {
				t.Errorf("account %d is on database %d, its shard maps to %d", a.ID, k, r.physicalOf(a.ID))
			}
		}
	}
	var total, want int64
	for _, a := range accounts {
		var got account
		must(t, r.direct[r.physicalOf(a.ID)].First(&got, a.ID).Error)
		total += got.Balance
		want += 1000
		if got.Balance != 1000+sumLegs[a.ID] {
			t.Errorf("account %d (database %d): balance %d, but 1000 + its legs = %d", a.ID, r.physicalOf(a.ID), got.Balance, 1000+sumLegs[a.ID])
		}
	}
	if total != want {
		t.Errorf("balances sum to %d, want %d", total, want)
	}
	counts := map[chaosOutcome]int{}
	bad := 0
	for _, res := range results {
		counts[res.out]++
		n := legsOf[res.id]
		ok := false
		switch res.out {
		case chaosOK:
			ok = n == res.want
		case chaosErr:
			ok = n == 0
		case chaosInDoubt:
			ok = n == 0 || n == res.want
		}
		if !ok {
			bad++
			if bad <= 20 {
				t.Errorf("%s: told %v (%v); %d of %d rows present (on %v)", res.id, res.out, res.err, n, res.want, legOn[res.id])
			}
		}
	}
	t.Logf("%s: %d writes: %d ok, %d err, %d in doubt; %d violations; recovery errors %d; stats %+v; triggers fired %d",
		b.name, len(results), counts[chaosOK], counts[chaosErr], counts[chaosInDoubt], bad, recErrs, plugin.TransactionStats(), proxy.fired())
	if testing.Verbose() {
		errKinds := map[string]int{}
		for _, res := range results {
			if res.err != nil {
				s := res.err.Error()
				if len(s) > 160 {
					s = s[:160]
				}
				errKinds[s]++
			}
		}
		i := 0
		for s, n := range errKinds {
			if i++; i > 15 {
				break
			}
			t.Logf("  %dx %s", n, s)
		}
	}
}

// answerLost reports whether err is a connection lost with its statement's
// answer (a COMMIT's among them), whose outcome the client cannot know.
// pgx says "conn closed" also when the connection closed while it waited
// for the answer: a run saw a COMMIT told so whose rows were all committed.
func answerLost(err error) bool {
	var netErr net.Error
	return errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.As(err, &netErr)
}
