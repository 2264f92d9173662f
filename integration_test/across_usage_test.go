package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// Transactions across shards as applications use them: panics, nested
// transactions and savepoints, hooks, upserts, reads only, a cancelled
// context, statements from two goroutines; each checked on the physical
// databases, all or nothing, no branch left prepared.

// balancesOf reads accounts' balances on the physical databases directly.
func (r *routing) balancesOf(t *testing.T, accounts []account) []int64 {
	t.Helper()
	got := make([]int64, len(accounts))
	for i, a := range accounts {
		var row account
		must(t, r.direct[r.physicalOf(a.ID)].First(&row, a.ID).Error)
		got[i] = row.Balance
	}
	return got
}

// oneOnEach returns one account per physical database.
func oneOnEach(t *testing.T, r *routing) []account {
	t.Helper()
	var each [physicalShards]*account
	for _, a := range accountsOnEvery(t, r) {
		if k := r.physicalOf(a.ID); each[k] == nil {
			each[k] = &a
		}
	}
	out := make([]account, physicalShards)
	for k, a := range each {
		out[k] = *a
	}
	return out
}

func (r *routing) settingsOn(t *testing.T) int64 {
	t.Helper()
	var n int64
	must(t, r.db.Model(&setting{}).Count(&n).Error)
	return n
}

func addTo(tx *gorm.DB, a account, n int64) error {
	return tx.Model(&account{ID: a.ID}).Update("balance", gorm.Expr("balance + ?", n)).Error
}

func wantBalances(t *testing.T, got []int64, want ...int64) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("balances %v, want %v", got, want)
		}
	}
}

func TestPanicInATransactionAcrossShardsUndoesEveryDatabase(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		acc := oneOnEach(t, r)
		for _, nested := range []bool{false, true} {
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("no panic")
					}
				}()
				_ = r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
					must(t, addTo(tx, acc[0], 1))
					must(t, tx.Create(&setting{Value: "x"}).Error)
					body := func(tx *gorm.DB) error {
						must(t, addTo(tx, acc[1], 1))
						must(t, addTo(tx, acc[2], 1))
						panic("boom")
					}
					if nested {
						return tx.Transaction(body)
					}
					return body(tx)
				})
			}()
			wantBalances(t, r.balancesOf(t, acc), 1000, 1000, 1000, 1000)
			if n := r.settingsOn(t); n != 0 {
				t.Fatalf("%d settings after a panic", n)
			}
			r.noPrepared(t)
		}
	})
}

func TestNestedTransactionsAndSavepointsAcrossShards(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		acc := oneOnEach(t, r)
		err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			must(t, tx.SavePoint("sp_first").Error) // no branch open yet
			must(t, addTo(tx, acc[0], 1))
			_ = tx.Transaction(func(tx2 *gorm.DB) error {
				must(t, addTo(tx2, acc[1], 1))
				must(t, tx2.Transaction(func(tx3 *gorm.DB) error { return addTo(tx3, acc[2], 1) }))
				must(t, tx2.Create(&setting{Value: "nested"}).Error)
				return errors.New("undo")
			})
			must(t, addTo(tx, acc[3], 1))
			must(t, tx.SavePoint("a").Error)
			must(t, addTo(tx, acc[1], 10))
			must(t, tx.Create(&setting{Value: "after a"}).Error)
			must(t, tx.RollbackTo("a").Error)
			must(t, addTo(tx, acc[2], 100))
			return nil
		})
		must(t, err)
		wantBalances(t, r.balancesOf(t, acc), 1001, 1000, 1100, 1001)
		if n := r.settingsOn(t); n != 0 {
			t.Fatalf("%d settings, want those rolled back", n)
		}
		r.noPrepared(t)
		// Rolled back to the first savepoint, set before any branch: nothing.
		must(t, r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			must(t, tx.SavePoint("first").Error)
			for _, a := range acc {
				must(t, addTo(tx, a, 5))
			}
			must(t, tx.Create(&setting{Value: "s"}).Error)
			return tx.RollbackTo("first").Error
		}))
		wantBalances(t, r.balancesOf(t, acc), 1001, 1000, 1100, 1001)
		if n := r.settingsOn(t); n != 0 {
			t.Fatalf("%d settings, want none", n)
		}
		r.noPrepared(t)
	})
}

func TestAFailedStatementInATransactionAcrossShards(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		fresh(t, r.db, &account{})
		acc := oneOnEach(t, r)
		must(t, r.db.Create(&entry{AuthorID: authors[1].ID, Ref: "taken"}).Error)
		// Ignored by the application: PostgreSQL's branch is aborted, MariaDB's not.
		err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			must(t, addTo(tx, acc[0], 1))
			if tx.Create(&entry{AuthorID: authors[1].ID, Ref: "taken"}).Error == nil {
				t.Fatal("a duplicate was created")
			}
			must(t, addTo(tx, acc[2], 1))
			return nil
		})
		got := r.balancesOf(t, acc)
		if b.name == "postgres" {
			if err == nil {
				t.Fatalf("commit of a transaction with an aborted branch succeeded: balances %v", got)
			}
			wantBalances(t, got, 1000, 1000, 1000, 1000)
		} else {
			must(t, err)
			wantBalances(t, got, 1001, 1000, 1001, 1000)
		}
		r.noPrepared(t)
		// Caught by a nested transaction: the rest commits.
		must(t, r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			must(t, addTo(tx, acc[3], 1))
			if tx.Transaction(func(tx2 *gorm.DB) error {
				return tx2.Create(&entry{AuthorID: authors[1].ID, Ref: "taken"}).Error
			}) == nil {
				t.Fatal("a duplicate was created")
			}
			return addTo(tx, acc[1], 1)
		}))
		got2 := r.balancesOf(t, acc)
		wantBalances(t, got2, got[0], 1001, got[2], 1001)
		r.noPrepared(t)
	})
}

func TestKeyChangeInATransactionAcrossShardsIsRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		acc := oneOnEach(t, r)
		tn := tenant{Code: "tenant"}
		must(t, r.db.Create(&tn).Error)
		count := r.plugin.Layout().ShardCount()
		newCode := ""
		for i := 0; newCode == ""; i++ {
			h, err := shardid.HashKey(fmt.Sprintf("moved-%d", i))
			must(t, err)
			if int(h%uint64(count))*physicalShards/count != r.physicalOf(tn.ID) {
				newCode = fmt.Sprintf("moved-%d", i)
			}
		}
		var errs []error
		must(t, r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			must(t, addTo(tx, acc[0], 1))
			errs = append(errs, tx.Model(&tenant{ID: tn.ID}).Update("code", newCode).Error)
			moved := tn
			moved.Code = newCode
			errs = append(errs, tx.Save(&moved).Error)
			errs = append(errs, tx.Model(&account{ID: acc[1].ID}).Update("id", acc[2].ID+1).Error)
			errs = append(errs, tx.Model(&account{}).Where("id = ?", acc[1].ID).Updates(map[string]any{"id": acc[3].ID + 7}).Error)
			return nil
		}))
		for i, err := range errs {
			if err == nil {
				t.Errorf("key change %d succeeded", i)
			}
		}
		var got tenant
		must(t, r.direct[r.physicalOf(tn.ID)].First(&got, tn.ID).Error)
		if got.Code != "tenant" {
			t.Fatalf("tenant's code %q", got.Code)
		}
		if n := r.count(t, &tenant{}); n != 1 {
			t.Fatalf("%d tenants", n)
		}
		if n := r.count(t, &account{}); n != int64(2*physicalShards) {
			t.Fatalf("%d accounts", n)
		}
		wantBalances(t, r.balancesOf(t, acc), 1001, 1000, 1000, 1000)
		r.noPrepared(t)
	})
}

func TestOnlyReadsInATransactionAcrossShards(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		acc := oneOnEach(t, r)
		var all []account
		must(t, r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			for _, a := range acc {
				var got account
				must(t, tx.First(&got, a.ID).Error)
			}
			var n int64
			must(t, tx.Model(&setting{}).Count(&n).Error)
			return tx.Clauses(shardid.AllShards()).Find(&all).Error
		}))
		if len(all) != 2*physicalShards {
			t.Fatalf("%d accounts read", len(all))
		}
		r.noPrepared(t)
	})
}

func TestContextCancelledInATransactionAcrossShards(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		acc := oneOnEach(t, r)
		ctx, cancel := context.WithCancel(context.Background())
		err := r.db.WithContext(ctx).Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			must(t, addTo(tx, acc[0], 1))
			must(t, addTo(tx, acc[1], 1))
			must(t, tx.Create(&setting{Value: "c"}).Error)
			cancel()
			_ = addTo(tx, acc[2], 1)
			_ = addTo(tx, acc[0], 1)
			return nil
		})
		if err == nil {
			t.Fatal("a transaction whose context was cancelled committed")
		}
		wantBalances(t, r.balancesOf(t, acc), 1000, 1000, 1000, 1000)
		if n := r.settingsOn(t); n != 0 {
			t.Fatalf("%d settings", n)
		}
		r.noPrepared(t)
		// A statement's own context cancelled: the transaction goes on.
		must(t, r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			must(t, addTo(tx, acc[0], 1))
			done, stop := context.WithCancel(context.Background())
			stop()
			_ = addTo(tx.WithContext(done), acc[1], 1)
			return addTo(tx, acc[2], 1)
		}))
		t.Logf("after a statement's cancelled context: %v", r.balancesOf(t, acc))
		r.noPrepared(t)
	})
}

func TestOneTransactionAcrossShardsFromManyGoroutines(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		acc := accountsOnEvery(t, r)
		run := func(fail bool) error {
			return r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				var wg sync.WaitGroup
				errs := make(chan error, 100)
				for g := range 8 {
					wg.Go(func() {
						for i := range 5 {
							errs <- addTo(tx, acc[(g+i)%len(acc)], 1)
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						return err
					}
				}
				if fail {
					return errors.New("undo")
				}
				return nil
			})
		}
		if err := run(true); err == nil {
			t.Fatal("no error")
		}
		for i, v := range r.balancesOf(t, acc) {
			if v != 1000 {
				t.Fatalf("account %d: %d after a rollback", i, v)
			}
		}
		r.noPrepared(t)
		err := run(false)
		var sum int64
		for _, v := range r.balancesOf(t, acc) {
			sum += v
		}
		if err == nil && sum != int64(1000*len(acc)+40) || err != nil && sum != int64(1000*len(acc)) {
			t.Fatalf("commit %v, sum %d", err, sum)
		}
		r.noPrepared(t)
	})
}

// hookedAccount's AfterUpdate writes an unsharded row and credits another
// account, on another database.
type hookedAccount struct {
	ID      int64 `shardid:""`
	Balance int64
	Peer    int64 `gorm:"-"`
}

func (h *hookedAccount) AfterUpdate(tx *gorm.DB) error {
	if h.Peer == 0 {
		return nil
	}
	if err := tx.Create(&setting{Value: fmt.Sprint("audit ", h.ID)}).Error; err != nil {
		return err
	}
	return tx.Model(&hookedAccount{ID: h.Peer}).UpdateColumn("balance", gorm.Expr("balance + 1")).Error
}

func (h *hookedAccount) BeforeCreate(tx *gorm.DB) error {
	if h.Peer == 0 {
		return nil
	}
	return tx.Model(&hookedAccount{ID: h.Peer}).UpdateColumn("balance", gorm.Expr("balance + 10")).Error
}

func TestHooksWritingOtherModelsInATransactionAcrossShards(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &hookedAccount{})
		var acc []hookedAccount
		for len(acc) < 2 {
			h := hookedAccount{Balance: 1000}
			must(t, r.db.Create(&h).Error)
			if len(acc) == 0 || r.physicalOf(h.ID) != r.physicalOf(acc[0].ID) {
				acc = append(acc, h)
			}
		}
		get := func() (bal [2]int64) {
			for i, a := range acc {
				var row hookedAccount
				must(t, r.direct[r.physicalOf(a.ID)].First(&row, a.ID).Error)
				bal[i] = row.Balance
			}
			return bal
		}
		var created int64
		for _, fail := range []bool{true, false} {
			err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				h := hookedAccount{ID: acc[0].ID, Peer: acc[1].ID}
				must(t, tx.Model(&h).Update("balance", gorm.Expr("balance + 5")).Error)
				n := hookedAccount{Balance: 1, Peer: acc[0].ID}
				must(t, tx.Create(&n).Error)
				created = n.ID
				if fail {
					return errors.New("undo")
				}
				return nil
			})
			got := get()
			var total int64
			must(t, r.db.Clauses(shardid.AllShards()).Model(&hookedAccount{}).Count(&total).Error)
			if fail {
				if err == nil || got != [2]int64{1000, 1000} || r.settingsOn(t) != 0 || total != int64(len(acc)) && r.count(t, &hookedAccount{}, "id = ?", created) != 0 {
					t.Fatalf("rolled back: %v, balances %v, %d settings, %d rows", err, got, r.settingsOn(t), total)
				}
			} else {
				must(t, err)
				if got != [2]int64{1015, 1001} || r.settingsOn(t) != 1 || r.count(t, &hookedAccount{}, "id = ?", created) != 1 {
					t.Fatalf("committed: balances %v, %d settings", got, r.settingsOn(t))
				}
			}
			r.noPrepared(t)
		}
	})
}

func TestUpsertsInATransactionAcrossShards(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		acc := oneOnEach(t, r)
		before := r.count(t, &account{})
		for _, fail := range []bool{true, false} {
			var made []int64
			err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				must(t, tx.Save(&account{ID: acc[0].ID, Balance: 7}).Error)
				n := account{Balance: 3}
				must(t, tx.Save(&n).Error)
				made = append(made, n.ID)
				must(t, tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&account{ID: acc[1].ID, Balance: 9}).Error)
				var f account
				must(t, tx.Where(account{ID: acc[2].ID}).Attrs(account{Balance: 4}).FirstOrCreate(&f).Error)
				var g account
				must(t, tx.Clauses(shardid.AllShards()).Where(account{Balance: 424242}).FirstOrCreate(&g).Error)
				made = append(made, g.ID)
				must(t, tx.Model(&account{ID: acc[3].ID}).Update("balance", 11).Error)
				if fail {
					return errors.New("undo")
				}
				return nil
			})
			got := r.balancesOf(t, acc)
			if fail {
				if err == nil {
					t.Fatal("no error")
				}
				wantBalances(t, got, 1000, 1000, 1000, 1000)
				if n := r.count(t, &account{}); n != before {
					t.Fatalf("%d accounts after a rollback, want %d", n, before)
				}
			} else {
				must(t, err)
				wantBalances(t, got, 7, 9, 1000, 11)
				if n := r.count(t, &account{}); n != before+2 {
					t.Fatalf("%d accounts after the commit, want %d", n, before+2)
				}
				for _, id := range made {
					r.mustBeOnItsShard(t, &account{}, id)
				}
			}
			r.noPrepared(t)
		}
	})
}

// TestATransactionWhoseContextEndsReleasesItsLocks: as database/sql rolls a
// transaction back once the context it began with is done, a transaction
// across shards (as one on a shard) whose context is cancelled lets go of
// its rows at once, not when the application at last calls Commit or
// Rollback; that Commit then fails with the context's error.
func TestATransactionWhoseContextEndsReleasesItsLocks(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		acc := oneOnEach(t, r)
		for _, across := range []bool{false, true} {
			ctx, cancel := context.WithCancel(context.Background())
			c := shardid.ByID(acc[0].ID)
			if across {
				c = shardid.AcrossShards()
			}
			tx := r.db.WithContext(ctx).Clauses(c).Begin()
			must(t, tx.Error)
			must(t, addTo(tx, acc[0], 1))
			if across {
				must(t, addTo(tx, acc[1], 1))
			}
			cancel()
			waited, stop := context.WithTimeout(context.Background(), 5*time.Second)
			start := time.Now()
			err := r.direct[r.physicalOf(acc[0].ID)].WithContext(waited).Exec("UPDATE accounts SET balance = balance + 100 WHERE id = ?", acc[0].ID).Error
			stop()
			if err != nil {
				_ = tx.Rollback()
				t.Fatalf("across %v: a row of a transaction whose context was cancelled stayed locked: %v after %v", across, err, time.Since(start))
			}
			if err := tx.Commit().Error; err == nil {
				t.Fatalf("across %v: a transaction whose context was cancelled committed", across)
			}
			got := r.balancesOf(t, acc)
			if got[1] != 1000 {
				t.Fatalf("balances %v", got)
			}
			r.noPrepared(t)
		}
	})
}

// TestSavepointsRacingAWriteOverSeveralDatabasesKeepItWhole: in a
// transaction across shards used from two goroutines, a savepoint set, or
// rolled back to, while a write over several databases runs in the other
// is before or after that write on every database, never between its
// parts: rolling back to it undoes the write whole or not at all.
func TestSavepointsRacingAWriteOverSeveralDatabasesKeepItWhole(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		acc := accountsOnEvery(t, r)
		ids := make([]int64, len(acc))
		for i, a := range acc {
			ids[i] = a.ID
		}
		must(t, r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			var wg sync.WaitGroup
			stop := make(chan struct{})
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					name := fmt.Sprintf("race%d", i)
					if err := tx.SavePoint(name).Error; err != nil {
						t.Errorf("savepoint: %v", err)
						return
					}
					if err := tx.RollbackTo(name).Error; err != nil {
						t.Errorf("rollback to: %v", err)
						return
					}
				}
			})
			for range 60 {
				if err := tx.Model(&account{}).Where("id IN ?", ids).Update("balance", gorm.Expr("balance + 1")).Error; err != nil {
					close(stop)
					wg.Wait()
					return err
				}
			}
			close(stop)
			wg.Wait()
			return nil
		}))
		got := r.balancesOf(t, acc)
		for _, v := range got {
			if v != got[0] {
				t.Fatalf("balances %v: a rollback to a savepoint undid a write over several databases on some of them only", got)
			}
		}
		t.Logf("balances %v", got)
		r.noPrepared(t)
	})
}

// TestRollbackToRacingCommitOfATransactionAcrossShardsIsWhole: a rollback
// to a savepoint from one goroutine while another commits the transaction
// across shards is in the commit on every database, or refused on all
// (sql.ErrTxDone): never undone on some databases and committed on others.
func TestRollbackToRacingCommitOfATransactionAcrossShardsIsWhole(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		acc := oneOnEach(t, r)
		for i := range 40 {
			before := r.balancesOf(t, acc)
			tx := r.db.Clauses(shardid.AcrossShards()).Begin()
			must(t, tx.SavePoint("x").Error)
			for _, a := range acc {
				must(t, addTo(tx, a, 1))
			}
			done := make(chan error, 1)
			go func() { done <- tx.Session(&gorm.Session{}).RollbackTo("x").Error }()
			committed := tx.Session(&gorm.Session{}).Commit().Error
			rolledBackTo := <-done
			got := r.balancesOf(t, acc)
			for k := range got {
				if got[k]-before[k] != got[0]-before[0] {
					t.Fatalf("try %d: commit %v, rollback to the savepoint %v: balances moved by %d on database 0 and %d on %d", i, committed, rolledBackTo, got[0]-before[0], got[k]-before[k], k)
				}
			}
			// GORM's PostgreSQL dialector drops a savepoint's error.
			if moved := got[0] - before[0]; b.name != "postgres" && committed == nil && (moved == 0) != (rolledBackTo == nil) {
				t.Fatalf("try %d: committed, the rollback to the savepoint returned %v, and the balances moved by %d", i, rolledBackTo, moved)
			}
		}
		r.noPrepared(t)
	})
}

// TestAcrossShardsInsideATransactionBegunWithoutItSaysSo: AcrossShards given
// to a nested Transaction of one begun without it (on the plugin's
// database, or on a shard) does nothing, the nested one being a savepoint
// of the outer: a statement there on another database is refused, nothing
// written, and the refusal says why, instead of advising the AcrossShards
// the application gave.
func TestAcrossShardsInsideATransactionBegunWithoutItSaysSo(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		acc := oneOnEach(t, r)
		for _, outer := range []*gorm.DB{r.db, r.db.Clauses(shardid.ByID(acc[0].ID))} {
			err := outer.Transaction(func(tx *gorm.DB) error {
				return tx.Clauses(shardid.AcrossShards()).Transaction(func(nested *gorm.DB) error {
					return addTo(nested, acc[1], 1)
				})
			})
			if !errors.Is(err, shardid.ErrCrossShard) || !strings.Contains(err.Error(), "AcrossShards() was given inside a transaction begun without it") {
				t.Fatalf("a statement on another database under AcrossShards nested in a transaction begun without it: %v; want ErrCrossShard saying the clause does nothing there", err)
			}
		}
		wantBalances(t, r.balancesOf(t, acc), 1000, 1000, 1000, 1000)
		r.noPrepared(t)
	})
}
