package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/internal/twophase"
)

// entry is a sharded row beside its author with a reference unique on its
// database: a write that repeats one fails there.
type entry struct {
	ID       shardid.ID `shardid:"colocate:AuthorID"`
	AuthorID int64
	Ref      string `gorm:"size:64;uniqueIndex"`
}

// newEntries is the routing rig with an empty entry table and an author on
// every physical database.
func newEntries(t *testing.T, b backend) (*routing, []author) {
	t.Helper()
	r := newRouting(t, b)
	fresh(t, r.db, &entry{})
	return r, r.onEvery(t)
}

// noPrepared fails the test if a physical database holds a prepared branch
// of the plugin's for more than the few seconds the process takes to
// finish the branches of a transaction that ended (on a busy MySQL server,
// a branch's session may take that long to end): every transaction over
// several databases ended, none waits for recovery.
func (r *routing) noPrepared(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for left := prepared(t, r.db, r.direct); len(left) > 0; left = prepared(t, r.db, r.direct) {
		if time.Now().After(deadline) {
			t.Fatalf("prepared branches left: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// noLockLeft fails the test if a row of model on a physical database is
// still locked once the test's transactions have ended, waiting up to 10 s
// for the ones its process is finishing: a branch left prepared, even one
// the server does not list (MariaDB has been seen to keep one so, its
// session gone), would otherwise fail a later test of the same databases
// on a lock wait, far from the test that left it.
func (r *routing) noLockLeft(t *testing.T, model any) {
	t.Helper()
	for k, d := range r.direct {
		err := d.Transaction(func(tx *gorm.DB) error {
			wait := map[string]string{"mariadb": "SET SESSION innodb_lock_wait_timeout = 10", "postgres": "SET LOCAL lock_timeout = '10s'"}[r.b.name]
			if err := tx.Exec(wait).Error; err != nil {
				return err
			}
			var rows []map[string]any
			return tx.Model(model).Clauses(clause.Locking{Strength: "UPDATE"}).Find(&rows).Error
		})
		if err != nil {
			t.Errorf("a row on database %d is still locked after the test's transactions ended: %v (prepared branches of the plugin's: %v)", k, err, prepared(t, r.db, r.direct))
		}
	}
}

// prepared lists, once each, the prepared branches on dbs of the cluster of
// the plugin on main: MySQL lists a server's on each of its databases, and
// other tests' beside them.
func prepared(t *testing.T, main *gorm.DB, dbs []*gorm.DB) []string {
	t.Helper()
	sqlMain, err := main.DB()
	must(t, err)
	cluster, err := twophase.Decisions{DB: sqlMain, Dialect: main.Dialector.Name(), Table: "shardid_transactions"}.Cluster(context.Background())
	must(t, err)
	var all []string
	for _, d := range dbs {
		sqlDB, err := d.DB()
		must(t, err)
		xids, err := twophase.InDoubt(context.Background(), sqlDB, d.Dialector.Name())
		must(t, err)
		for _, x := range xids {
			if g, ok := twophase.ParseGID(x.GID); ok && g.Cluster == cluster && !slices.Contains(all, x.GID+"/"+x.Branch) {
				all = append(all, x.GID+"/"+x.Branch)
			}
		}
	}
	return all
}

// TestSplitCreateIsAtomic: a Create batch over several databases whose part
// on one of them violates a unique index writes nothing on any (two-phase
// commit), and a batch that fits is written whole; no branch stays prepared.
func TestSplitCreateIsAtomic(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		must(t, r.db.Create(&entry{AuthorID: authors[2].ID, Ref: "taken"}).Error)
		batch := []entry{{AuthorID: authors[0].ID, Ref: "a"}, {AuthorID: authors[1].ID, Ref: "b"}, {AuthorID: authors[3].ID, Ref: "c"}, {AuthorID: authors[2].ID, Ref: "taken"}}
		if err := r.db.Create(&batch).Error; err == nil {
			t.Fatal("a batch with a duplicate on one database succeeded")
		}
		if n := r.count(t, &entry{}); n != 1 {
			t.Fatalf("the failed batch left %d rows, want the 1 there before", n)
		}
		batch[3].Ref = "d"
		for i := range batch {
			batch[i].ID = 0
		}
		must(t, r.db.Create(&batch).Error)
		if n := r.count(t, &entry{}); n != 5 {
			t.Fatalf("%d rows after a batch that fits, want 5", n)
		}
		for _, e := range batch {
			r.mustBeOnItsShard(t, &entry{}, int64(e.ID))
		}
		r.noPrepared(t)
		if stats := r.plugin.TransactionStats(); stats.Committed == 0 || stats.RolledBack == 0 {
			t.Fatalf("transaction stats %+v: want a commit and a rollback counted", stats)
		}
	})
}

// TestSplitCreateFailingUnderASavepointIsUndoneByIt: in a transaction
// across shards, a Create batch over several databases that fails after
// some of its parts wrote is undone, on every database, by rolling back to a
// savepoint set before it (a nested Transaction returning its error), and
// the transaction goes on and commits, as on one database. Without such a
// savepoint, or rolled back to one set after the failure, the transaction
// can only roll back: its commit fails and writes nothing.
func TestSplitCreateFailingUnderASavepointIsUndoneByIt(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		must(t, r.db.Create(&entry{AuthorID: authors[2].ID, Ref: "taken"}).Error)
		failing := func(prefix string) []entry {
			return []entry{{AuthorID: authors[0].ID, Ref: prefix + "0"}, {AuthorID: authors[1].ID, Ref: prefix + "1"}, {AuthorID: authors[2].ID, Ref: "taken"}}
		}
		must(t, r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			must(t, tx.Create(&entry{AuthorID: authors[0].ID, Ref: "before"}).Error)
			if err := tx.Transaction(func(nested *gorm.DB) error { return nested.Create(new(failing("nested"))).Error }); err == nil {
				t.Fatal("a batch repeating a unique reference succeeded")
			}
			return tx.Create(&entry{AuthorID: authors[1].ID, Ref: "after"}).Error
		}))
		var refs []string
		for _, d := range r.direct {
			var on []string
			must(t, d.Model(&entry{}).Pluck("ref", &on).Error)
			refs = append(refs, on...)
		}
		slices.Sort(refs)
		if want := []string{"after", "before", "taken"}; !slices.Equal(refs, want) {
			t.Fatalf("rows %v after the savepoint undid the failed batch, want %v", refs, want)
		}
		for name, undo := range map[string]func(tx *gorm.DB) error{
			"no savepoint": func(*gorm.DB) error { return nil },
			"a savepoint set after the failure": func(tx *gorm.DB) error {
				must(t, tx.SavePoint("later").Error)
				return tx.RollbackTo("later").Error
			},
		} {
			err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				if err := tx.Create(new(failing(name))).Error; err == nil {
					t.Fatal("a batch repeating a unique reference succeeded")
				}
				must(t, undo(tx))
				return tx.Create(&entry{AuthorID: authors[3].ID, Ref: name}).Error
			})
			if err == nil {
				t.Errorf("%s: the transaction committed after a failed batch", name)
			}
			if n := r.count(t, &entry{}); n != 3 {
				t.Errorf("%s: %d rows, want the 3 there before", name, n)
			}
		}
		r.noPrepared(t)
	})
}

// TestFanOutUpdateIsAtomic: an update over several databases that fails on
// one of them (a unique index) changes no row on any.
func TestFanOutUpdateIsAtomic(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		var ids []int64
		for i, a := range append(authors, authors[3]) {
			e := entry{AuthorID: a.ID, Ref: string(rune('a' + i))}
			must(t, r.db.Create(&e).Error)
			ids = append(ids, int64(e.ID))
		}
		err := r.db.Model(&entry{}).Where("id IN ?", ids).Update("ref", "same").Error
		if err == nil {
			t.Fatal("an update giving two rows of one database one unique value succeeded")
		}
		if changed := r.count(t, &entry{}, "ref = ?", "same"); changed != 0 {
			t.Fatalf("the failed update changed %d rows", changed)
		}
		must(t, r.db.Model(&entry{}).Where("id IN ?", ids).Update("ref", gorm.Expr("CONCAT(ref, 'x')")).Error)
		var got []entry
		must(t, r.db.Clauses(shardid.AllShards()).Order("id").Find(&got).Error)
		for _, e := range got {
			if len(e.Ref) != 2 || e.Ref[1] != 'x' {
				t.Fatalf("row %d after the update: %q", e.ID, e.Ref)
			}
		}
		r.noPrepared(t)
	})
}

// account is a balance on its shard.
type account struct {
	ID      int64 `shardid:""`
	Balance int64
}

// TestTransferAcrossShards: transfers between accounts on different
// databases, run at once by many goroutines in transactions across shards,
// keep the total constant at every instant a reader sums the balances and
// at the end; a transfer that fails midway (its callback returns an error)
// changes nothing.
func TestTransferAcrossShards(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &account{})
		accounts := accountsOnEvery(t, r)
		total := int64(1000 * len(accounts))
		transfer := func(from, to account, amount int64, fail bool) error {
			first, second, amounts := from, to, [2]int64{-amount, amount}
			if first.ID > second.ID { // every transaction locks in the order of the IDs: no deadlock across databases, which no server sees
				first, second, amounts = to, from, [2]int64{amount, -amount}
			}
			return r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				if err := tx.Model(&account{ID: first.ID}).Update("balance", gorm.Expr("balance + ?", amounts[0])).Error; err != nil {
					return err
				}
				if err := tx.Model(&account{ID: second.ID}).Update("balance", gorm.Expr("balance + ?", amounts[1])).Error; err != nil {
					return err
				}
				if fail {
					return errors.New("changed my mind")
				}
				return nil
			})
		}
		sum := func() int64 {
			var all []account
			must(t, r.db.Clauses(shardid.AllShards()).Find(&all).Error)
			var s int64
			for _, a := range all {
				s += a.Balance
			}
			return s
		}
		if err := transfer(accounts[0], accounts[2], 5, true); err == nil || sum() != total {
			t.Fatalf("a transfer whose callback failed: %v, total %d, want an error and %d", err, sum(), total)
		}
		// A reader that locks what it reads, in the same order (of the IDs,
		// as accountsOnEvery gives them), in a transaction across shards,
		// waits for a transfer's prepared branches: it sees all of one or none.
		lockedSum := func() (int64, error) {
			var s int64
			err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				for _, a := range accounts {
					var got account
					if err := tx.Clauses(clause.Locking{Strength: "SHARE"}).First(&got, a.ID).Error; err != nil {
						return err
					}
					s += got.Balance
				}
				return nil
			})
			return s, err
		}
		var wg sync.WaitGroup
		var done atomic.Bool
		var committed, failed, reads atomic.Int64
		for w := range 6 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				for range 25 {
					i, j := rng.IntN(len(accounts)), rng.IntN(len(accounts))
					if r.physicalOf(accounts[i].ID) == r.physicalOf(accounts[j].ID) {
						continue
					}
					if err := transfer(accounts[i], accounts[j], int64(rng.IntN(50)), false); err != nil {
						failed.Add(1) // a deadlock or a lock wait: rolled back whole
					} else {
						committed.Add(1)
					}
				}
			})
		}
		readerDone := make(chan error, 1)
		go func() {
			for !done.Load() {
				s, err := lockedSum()
				if err != nil {
					continue // a deadlock with a transfer: read again
				}
				reads.Add(1)
				if s != total {
					readerDone <- fmt.Errorf("a locking reader summed %d, want %d", s, total)
					return
				}
			}
			readerDone <- nil
		}()
		wg.Wait()
		done.Store(true)
		if err := <-readerDone; err != nil {
			t.Fatal(err)
		}
		if s := sum(); s != total {
			t.Fatalf("the balances sum to %d after the transfers, want %d", s, total)
		}
		if committed.Load() == 0 {
			t.Fatalf("no transfer committed (%d failed)", failed.Load())
		}
		r.noPrepared(t)
		t.Logf("%d transfers committed, %d rolled back, %d locking reads", committed.Load(), failed.Load(), reads.Load())
	})
}

// TestCloseFinishesCreateInBatches: the plugin closed right after a
// CreateInBatches over several databases returned first commits its
// prepared branches: the rows are there, and no branch is left prepared.
func TestCloseFinishesCreateInBatches(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		var rows []entry
		for i := range 10 {
			rows = append(rows, entry{AuthorID: authors[i%len(authors)].ID, Ref: fmt.Sprint("c", i)})
		}
		must(t, r.db.CreateInBatches(&rows, 3).Error)
		must(t, r.plugin.Close())
		if n := r.count(t, &entry{}); n != int64(len(rows)) {
			t.Fatalf("after Close, the databases hold %d of the %d rows CreateInBatches wrote", n, len(rows))
		}
		r.noPrepared(t)
	})
}

// TestCreateInBatchesIsAtomic: CreateInBatches of rows over several
// databases in several batches (GORM wraps them in a transaction on the
// plugin's database) writes all of them or, when a later batch fails, none;
// the rows are read back at once after it returns. A Create in an
// application's transaction on the plugin's database commits or rolls back
// with it.
func TestCreateInBatchesIsAtomic(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &entry{}, &setting{})
		authors := r.onEvery(t)
		must(t, r.db.Create(&entry{AuthorID: authors[2].ID, Ref: "taken"}).Error)
		rows := func(last string) []entry {
			var list []entry
			for i := range 20 {
				list = append(list, entry{AuthorID: authors[i%len(authors)].ID, Ref: fmt.Sprint("r", i)})
			}
			list[19] = entry{AuthorID: authors[2].ID, Ref: last}
			return list
		}
		failing := rows("taken")
		if err := r.db.CreateInBatches(&failing, 5).Error; err == nil {
			t.Fatal("CreateInBatches whose last batch repeats a unique value succeeded")
		}
		if n := r.count(t, &entry{}); n != 1 {
			t.Fatalf("the failed CreateInBatches left %d rows, want the 1 there before", n)
		}
		fitting := rows("fits")
		must(t, r.db.CreateInBatches(&fitting, 5).Error)
		var got int64
		must(t, r.db.Model(&entry{}).Clauses(shardid.AllShards()).Count(&got).Error)
		if got != 21 {
			t.Fatalf("read back after CreateInBatches: %d rows, want 21", got)
		}
		for _, e := range fitting {
			r.mustBeOnItsShard(t, &entry{}, int64(e.ID))
		}

		// An application's transaction on the plugin's database.
		err := r.db.Transaction(func(tx *gorm.DB) error {
			must(t, tx.Create(&setting{Value: "with it"}).Error)
			must(t, tx.Create(&entry{AuthorID: authors[1].ID, Ref: "rolled back"}).Error)
			return errors.New("roll back")
		})
		if err == nil {
			t.Fatal("the transaction did not fail")
		}
		must(t, r.db.Transaction(func(tx *gorm.DB) error {
			return tx.Create(&entry{AuthorID: authors[1].ID, Ref: "committed"}).Error
		}))
		var refs []string
		must(t, r.db.Model(&entry{}).Clauses(shardid.AllShards()).Where("ref IN ?", []string{"rolled back", "committed"}).Pluck("ref", &refs).Error)
		if len(refs) != 1 || refs[0] != "committed" {
			t.Fatalf("after a rolled back and a committed transaction: %v, want only the committed row", refs)
		}
		r.noPrepared(t)
	})
}

// TestCreateInBatchesOfManyBatchesIsReadBackAtOnce: a CreateInBatches of
// hundreds of batches over four databases leaves a prepared branch per batch
// and database, committed after it returns: the process's next read waits
// for all of them (while they commit), and reads every row.
func TestCreateInBatchesOfManyBatchesIsReadBackAtOnce(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &entry{})
		authors := r.onEvery(t)
		batches := 600
		if b.name == "postgres" {
			batches = 20 // a prepared transaction each on every database, of one server: within its max_prepared_transactions
		}
		rows := make([]entry, 10*batches)
		for i := range rows {
			rows[i] = entry{AuthorID: authors[i%len(authors)].ID, Ref: fmt.Sprint("m", i)}
		}
		must(t, r.db.CreateInBatches(&rows, 10).Error)
		var got int64
		must(t, r.db.Model(&entry{}).Clauses(shardid.AllShards()).Count(&got).Error)
		if got != int64(len(rows)) {
			t.Fatalf("read back at once after CreateInBatches: %d rows, want %d", got, len(rows))
		}
		r.noPrepared(t)
	})
}

// TestACommitOverThousandsOfDatabasesIsRecorded: the decision of a commit
// whose branches are on 3,000 databases of long names (120 KB of names) is
// recorded and read back whole, also in a decisions table made before with
// a TEXT column (64 KiB on MySQL/MariaDB).
func TestACommitOverThousandsOfDatabasesIsRecorded(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		main, err := gorm.Open(b.dialector(t, t.TempDir()), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		sqlMain, err := main.DB()
		must(t, err)
		t.Cleanup(func() { _ = sqlMain.Close() })
		d := twophase.Decisions{DB: sqlMain, Dialect: main.Dialector.Name(), Table: "decisions_of_many"}
		ctx := context.Background()
		_, err = sqlMain.ExecContext(ctx, "DROP TABLE IF EXISTS decisions_of_many")
		must(t, err)
		t.Cleanup(func() { _, _ = sqlMain.ExecContext(ctx, "DROP TABLE IF EXISTS decisions_of_many") })
		_, err = sqlMain.ExecContext(ctx, "CREATE TABLE decisions_of_many (gid VARCHAR(64) NOT NULL PRIMARY KEY, outcome VARCHAR(8) NOT NULL, decided_ms BIGINT NOT NULL, branch_databases TEXT NOT NULL)")
		must(t, err)
		must(t, d.Prepare(ctx))
		names := make([]string, 3000)
		for i := range names {
			names[i] = fmt.Sprintf("physical-database-%04d.shards.example", i)
		}
		outcome, err := d.Commit(ctx, "gid-of-many", names)
		must(t, err)
		if outcome != twophase.Committed {
			t.Fatalf("outcome %v", outcome)
		}
		decided, err := d.Decided(ctx, time.Now().Add(time.Second))
		must(t, err)
		if got := decided["gid-of-many"].Databases; !slices.Equal(got, names) {
			t.Fatalf("read back %d of the %d databases", len(got), len(names))
		}
	})
}

// TestAnchoredCreateRepeatingAKeyFails: two Creates of one unique value in a
// transaction on the plugin's database: the second waits on the first's
// prepared branch, which ends only with the transaction, for a bounded time
// (no server sees that wait), then fails; nothing is written.
func TestAnchoredCreateRepeatingAKeyFails(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		start := time.Now()
		err := r.db.Transaction(func(tx *gorm.DB) error {
			must(t, tx.Create(&entry{AuthorID: authors[0].ID, Ref: "twice"}).Error)
			return tx.Create(&entry{AuthorID: authors[0].ID, Ref: "twice"}).Error
		})
		if err == nil {
			t.Fatal("a unique value created twice in one transaction succeeded")
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Fatalf("the second Create failed after %v", took)
		}
		var n int64
		must(t, r.db.Model(&entry{}).Clauses(shardid.AllShards()).Count(&n).Error)
		if n != 0 {
			t.Fatalf("%d rows after the failed transaction", n)
		}
		r.noPrepared(t)
	})
}

// panicky is a sharded row whose AfterCreate panics when asked, after its
// INSERT ran.
type panicky struct {
	ID    int64  `shardid:""`
	Ref   string `gorm:"size:64;uniqueIndex"`
	Panic bool   `gorm:"-"`
}

func (p *panicky) AfterCreate(*gorm.DB) error {
	if p.Panic {
		panic("a hook panics")
	}
	return nil
}

// TestAnchoredCreatePanickingLeavesNoLock: a Create in a transaction on the
// plugin's database whose hook panics after its INSERT leaves no branch
// open once the transaction has rolled back: the same unique value is
// created at once afterwards.
func TestAnchoredCreatePanickingLeavesNoLock(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &panicky{})
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("the hook's panic did not reach the caller")
				}
			}()
			_ = r.db.Transaction(func(tx *gorm.DB) error {
				return tx.Clauses(shardid.OnShard(5)).Create(&panicky{Ref: "once", Panic: true}).Error
			})
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := r.db.WithContext(ctx).Clauses(shardid.OnShard(5)).Create(&panicky{Ref: "once"}).Error; err != nil {
			t.Fatalf("the same value after the panicking transaction: %v", err)
		}
		r.noPrepared(t)
	})
}

// TestReadsOverEveryShardInATransactionSeeItsWrites: a query over every
// shard inside a transaction across shards reads through the
// transaction's branches: its Find, Count and sum see the writes the
// transaction made and has not committed. So it does with fewer parts at
// once than databases (Config.PartsAtOnce 1 and 2 of 4), its first count
// beginning the branches, which stay open until the commit.
func TestReadsOverEveryShardInATransactionSeeItsWrites(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		for _, atOnce := range []int{0, 1, 2} {
			t.Run(fmt.Sprint("PartsAtOnce ", atOnce), func(t *testing.T) {
				r := newRoutingWith(t, b, shardid.Config{PartsAtOnce: atOnce})
				fresh(t, r.db, &account{})
				accounts := accountsOnEvery(t, r)
				must(t, r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
					var before int64
					must(t, tx.Clauses(shardid.AllShards()).Model(&account{}).Count(&before).Error)
					for _, a := range accounts {
						must(t, tx.Model(&account{ID: a.ID}).Update("balance", 7).Error)
					}
					var n int64
					must(t, tx.Clauses(shardid.AllShards()).Model(&account{}).Where("balance = ?", 7).Count(&n).Error)
					var found []account
					must(t, tx.Clauses(shardid.AllShards()).Where("balance = ?", 7).Find(&found).Error)
					var sum int64
					must(t, tx.Clauses(shardid.AllShards()).Model(&account{}).Select("sum(balance)").Scan(&sum).Error)
					if want := int64(len(accounts)); before != want || n != want || int64(len(found)) != want || sum != 7*want {
						t.Errorf("inside the transaction: count %d then %d, found %d, sum %d; want %d, %d, %d, %d", before, n, len(found), sum, want, want, want, 7*want)
					}
					return nil
				}))
				var n int64
				must(t, r.db.Clauses(shardid.AllShards()).Model(&account{}).Where("balance = ?", 7).Count(&n).Error)
				if n != int64(len(accounts)) {
					t.Errorf("after the commit: %d accounts of balance 7, want %d", n, len(accounts))
				}
				r.noPrepared(t)
			})
		}
	})
}

// TestAcrossShardsCancelledBeforeCommitRollsBack: a transaction across
// shards whose context is cancelled before its callback returns commits
// nothing, as database/sql's transaction does, and says why.
func TestAcrossShardsCancelledBeforeCommitRollsBack(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		ctx, cancel := context.WithCancel(context.Background())
		err := r.db.WithContext(ctx).Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			for i, a := range authors[:2] {
				if err := tx.Create(&entry{AuthorID: a.ID, Ref: fmt.Sprint("cancelled", i)}).Error; err != nil {
					return err
				}
			}
			cancel()
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the transaction ended with %v, want context.Canceled", err)
		}
		if n := r.count(t, &entry{}); n != 0 {
			t.Fatalf("%d rows of the cancelled transaction were committed", n)
		}
		r.noPrepared(t)
	})
}

// TestCreateAfterItsTransactionEndedFails: a Create of sharded rows in a
// transaction on the plugin's database that has committed fails as that
// transaction's statements do, and writes nothing.
func TestCreateAfterItsTransactionEndedFails(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		tx := r.db.Begin()
		must(t, tx.Create(&entry{AuthorID: authors[0].ID, Ref: "in"}).Error)
		must(t, tx.Commit().Error)
		for i, a := range authors {
			if err := tx.Create(&entry{AuthorID: a.ID, Ref: fmt.Sprint("after", i)}).Error; !errors.Is(err, sql.ErrTxDone) {
				t.Fatalf("a Create after the commit: %v, want sql.ErrTxDone", err)
			}
		}
		if n := r.count(t, &entry{}); n != 1 {
			t.Fatalf("%d rows, want the one written before the commit", n)
		}
		r.noPrepared(t)
	})
}

// TestAStatementRacingItsTransactionsCommitIsRefused: in a transaction
// across shards whose Commit is held between its prepare and its decision
// (the decisions table locked), a Create on a database the transaction has
// not written fails with sql.ErrTxDone, as a statement after a database's
// commit, rather than succeeding on a branch the commit never ends; the
// commit then commits what it prepared, and no transaction stays open.
func TestAStatementRacingItsTransactionsCommitIsRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		must(t, r.db.Create(&[]entry{{AuthorID: authors[0].ID, Ref: "x0"}, {AuthorID: authors[1].ID, Ref: "x1"}}).Error) // the decisions table made
		tx := r.db.Clauses(shardid.AcrossShards()).Begin()
		must(t, tx.Error)
		must(t, tx.Create(&entry{AuthorID: authors[0].ID, Ref: "a"}).Error)
		must(t, tx.Create(&entry{AuthorID: authors[1].ID, Ref: "b"}).Error)
		unlock := lockDecisions(t, r)
		committed := make(chan error, 1)
		go func() { committed <- tx.Commit().Error }()
		waitForDecisionWrite(t, r)
		racing := tx.Create(&entry{AuthorID: authors[2].ID, Ref: "c"}).Error
		unlock()
		must(t, <-committed)
		if !errors.Is(racing, sql.ErrTxDone) {
			t.Errorf("a Create racing the commit: %v, want sql.ErrTxDone", racing)
		}
		third := r.direct[r.physicalOf(authors[2].ID)]
		var rows, open int64
		must(t, third.Model(&entry{}).Where("ref = ?", "c").Count(&rows).Error)
		openSQL := "SELECT count(*) FROM information_schema.innodb_trx t JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id WHERE p.db = DATABASE()"
		if b.name == "postgres" {
			openSQL = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'"
		}
		must(t, third.Raw(openSQL).Scan(&open).Error)
		if rows != 0 || open != 0 {
			t.Errorf("after the commit, its third database holds %d rows of the racing Create and %d open transactions", rows, open)
		}
		if n := r.count(t, &entry{}); n != 4 {
			t.Errorf("%d rows, want the two written before the commit and the two before it", n)
		}
		r.noPrepared(t)
	})
}

// lockDecisions locks the table of two-phase decisions on the plugin's
// database from a session of its own, and returns its unlock.
func lockDecisions(t *testing.T, r *routing) func() {
	t.Helper()
	sqlDB, err := r.db.DB()
	must(t, err)
	conn, err := sqlDB.Conn(context.Background())
	must(t, err)
	lock, unlock := []string{"LOCK TABLES shardid_transactions WRITE"}, "UNLOCK TABLES"
	if r.b.name == "postgres" {
		lock, unlock = []string{"BEGIN", "LOCK TABLE shardid_transactions IN EXCLUSIVE MODE"}, "COMMIT"
	}
	for _, q := range lock {
		_, err := conn.ExecContext(context.Background(), q)
		must(t, err)
	}
	var once sync.Once
	release := func() error {
		var err error
		once.Do(func() {
			_, err = conn.ExecContext(context.Background(), unlock)
			err = errors.Join(err, conn.Close())
		})
		return err
	}
	// A test that fails holding the lock releases it before the plugin's
	// Close, which waits for the commit held behind it.
	t.Cleanup(func() { _ = release() })
	return func() { must(t, release()) }
}

// waitForDecisionWrite waits until a session of the plugin's database waits
// to write a decision.
func waitForDecisionWrite(t *testing.T, r *routing) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !decisionWriteWaits(t, r); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the commit never came to write its decision")
		}
	}
}

// decisionWriteWaits reports whether a session of the plugin's database
// waits to write a decision.
func decisionWriteWaits(t *testing.T, r *routing) bool {
	t.Helper()
	waiting := "SELECT count(*) FROM information_schema.processlist WHERE db = DATABASE() AND info LIKE 'INSERT INTO shardid_transactions%'"
	if r.b.name == "postgres" {
		waiting = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO shardid_transactions%'"
	}
	var n int64
	must(t, r.db.Raw(waiting).Scan(&n).Error)
	return n > 0
}

// lockedNote is an unsharded row on the plugin's database.
type lockedNote struct {
	ID   int64
	Text string
}

// TestCreateAfterADeadlockEndedItsTransactionFails: MariaDB rolls a
// transaction back whole when it loses a deadlock, the decision of its
// sharded writes with it, and runs its later statements on their own. A
// sharded Create after that fails, rather than being rolled back at the
// commit that reports success.
func TestCreateAfterADeadlockEndedItsTransactionFails(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("PostgreSQL fails every statement of a transaction after its error")
		}
		r, authors := newEntries(t, b)
		fresh(t, r.db, &lockedNote{})
		must(t, r.db.Create(&[]lockedNote{{ID: 1}, {ID: 2}}).Error)
		other := r.db.Session(&gorm.Session{NewDB: true})
		tx := r.db.Begin()
		defer tx.Rollback()
		must(t, tx.Create(&entry{AuthorID: authors[0].ID, Ref: "before"}).Error)
		must(t, tx.Model(&lockedNote{ID: 1}).Update("text", "tx").Error)
		c := other.Begin()
		for i := range 50 { // the heavier one: InnoDB rolls tx back, whichever of the two waits first
			must(t, c.Create(&lockedNote{ID: int64(100 + i)}).Error)
		}
		must(t, c.Model(&lockedNote{ID: 2}).Update("text", "c").Error)
		blocked := make(chan error, 1)
		go func() { blocked <- tx.Model(&lockedNote{ID: 2}).Update("text", "tx").Error }()
		// Waits for tx's row 1 until tx's update above closes the cycle, if it came first.
		must(t, c.Model(&lockedNote{ID: 1}).Update("text", "c").Error)
		if err := <-blocked; err == nil || !strings.Contains(err.Error(), "1213") {
			t.Fatalf("the statement of the deadlock's loser: %v, want error 1213", err)
		}
		must(t, c.Commit().Error)
		err := tx.Create(&[]entry{{AuthorID: authors[0].ID, Ref: "after-0"}, {AuthorID: authors[1].ID, Ref: "after-1"}}).Error
		if !errors.Is(err, sql.ErrTxDone) {
			t.Fatalf("a Create after the deadlock: %v, want sql.ErrTxDone", err)
		}
		_ = tx.Commit()
		if n := r.count(t, &entry{}); n != 0 {
			t.Fatalf("%d rows, want none: the deadlock rolled back the first, the second failed", n)
		}
		r.noPrepared(t)
	})
}

// TestSplitCreateWhoseContextEndsWhileDecidingCommits: the statement's
// context ending while the decision of a write over several databases waits
// for a lock does not leave its branches prepared: the decision is written
// once the lock is free, and the write commits.
func TestSplitCreateWhoseContextEndsWhileDecidingCommits(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		must(t, r.db.Create(&[]entry{{AuthorID: authors[0].ID, Ref: "a"}, {AuthorID: authors[1].ID, Ref: "b"}}).Error) // the decisions' table exists
		sqlDB, err := r.db.DB()
		must(t, err)
		conn, err := sqlDB.Conn(context.Background())
		must(t, err)
		defer conn.Close()
		var database string // the plugin's: the server also serves other test processes
		current := map[string]string{"mariadb": "SELECT DATABASE()", "postgres": "SELECT current_database()"}[b.name]
		must(t, conn.QueryRowContext(context.Background(), current).Scan(&database))
		lock, unlock := []string{"LOCK TABLES shardid_transactions WRITE"}, "UNLOCK TABLES"
		if b.name == "postgres" {
			lock, unlock = []string{"BEGIN", "LOCK TABLE shardid_transactions IN EXCLUSIVE MODE"}, "COMMIT"
		}
		for _, q := range lock {
			_, err := conn.ExecContext(context.Background(), q)
			must(t, err)
		}
		// The context ends once the decision waits for the lock, which is
		// then let go.
		waiting := "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = ? AND INFO LIKE 'INSERT INTO shardid_transactions%'"
		if b.name == "postgres" {
			waiting = "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = ? AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO shardid_transactions%'"
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		unlocked := make(chan error, 1)
		go func() {
			var n int64
			for n == 0 {
				time.Sleep(20 * time.Millisecond)
				if err := r.direct[0].Raw(waiting, database).Scan(&n).Error; err != nil {
					unlocked <- err
					return
				}
			}
			cancel()
			time.Sleep(300 * time.Millisecond)
			_, err := conn.ExecContext(context.Background(), unlock)
			unlocked <- err
		}()
		err = r.db.WithContext(ctx).Create(&[]entry{{AuthorID: authors[0].ID, Ref: "c"}, {AuthorID: authors[1].ID, Ref: "d"}}).Error
		must(t, <-unlocked)
		if err != nil {
			t.Fatalf("a split Create whose context ended while its decision waited: %v", err)
		}
		if n := r.count(t, &entry{}); n != 4 {
			t.Fatalf("%d rows, want 4", n)
		}
		r.noPrepared(t)
	})
}

// TestWritesNeedingPreparedTransactionsRefusedWithoutThem: on a PostgreSQL
// server with max_prepared_transactions = 0 (its default), the writes
// that commit in two phases are refused with ErrNotAtomic naming the
// database, and write nothing. It runs only on such a server: the
// others' are set to prepare transactions.
func TestWritesNeedingPreparedTransactionsRefusedWithoutThem(t *testing.T) {
	for _, b := range backends {
		if b.name != "postgres" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			r := newRouting(t, b)
			var allowed int
			must(t, r.db.Raw("SELECT current_setting('max_prepared_transactions')::int").Scan(&allowed).Error)
			if allowed > 0 {
				t.Skipf("the server prepares up to %d transactions; this test needs max_prepared_transactions = 0", allowed)
			}
			fresh(t, r.db, &entry{})
			authors := r.onEvery(t)
			batch := []entry{{AuthorID: authors[0].ID, Ref: "a"}, {AuthorID: authors[1].ID, Ref: "b"}}
			inTransaction := func() error {
				return r.db.Transaction(func(tx *gorm.DB) error { return tx.Create(&entry{AuthorID: authors[0].ID, Ref: "c"}).Error })
			}
			for name, write := range map[string]func() error{
				"CreateInBatches":       func() error { return r.db.CreateInBatches(&batch, 1).Error },
				"Create in Transaction": inTransaction,
				"AcrossShards in Begin": func() error {
					return r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error { return tx.Create(&entry{AuthorID: authors[2].ID, Ref: "e"}).Error })
				},
			} {
				if err := write(); !errors.Is(err, shardid.ErrNotAtomic) || !strings.Contains(err.Error(), "max_prepared_transactions") {
					t.Errorf("%s: %v, want ErrNotAtomic naming max_prepared_transactions", name, err)
				}
			}
			if n := r.count(t, &entry{}); n != 0 {
				t.Fatalf("%d rows written by refused writes", n)
			}
		})
	}
}

// TestSavepointsUndoCreatesInATransactionOnThePluginDatabase: sharded rows
// created in a transaction on the plugin's database follow its savepoints:
// those created after the savepoint rolled back to are not committed, those
// before it and after the rollback are.
func TestSavepointsUndoCreatesInATransactionOnThePluginDatabase(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		create := func(tx *gorm.DB, i int, ref string) error {
			return tx.Create(&entry{AuthorID: authors[i%len(authors)].ID, Ref: ref}).Error
		}
		undo := errors.New("undo")
		must(t, r.db.Transaction(func(tx *gorm.DB) error {
			must(t, create(tx, 0, "before"))
			if err := tx.Transaction(func(nested *gorm.DB) error {
				must(t, create(nested, 1, "nested-a"))
				must(t, create(nested, 2, "nested-b"))
				return undo
			}); !errors.Is(err, undo) {
				t.Fatalf("the nested transaction returned %v", err)
			}
			return create(tx, 3, "after")
		}))
		must(t, r.db.Transaction(func(tx *gorm.DB) error { // the savepoint set before the transaction's first sharded row
			if err := tx.Transaction(func(nested *gorm.DB) error { must(t, create(nested, 0, "first-nested")); return undo }); !errors.Is(err, undo) {
				t.Fatalf("the nested transaction returned %v", err)
			}
			return create(tx, 1, "first-after")
		}))
		must(t, r.db.Transaction(func(tx *gorm.DB) error { // set by hand, one kept and one rolled back to
			must(t, create(tx, 2, "manual-before"))
			must(t, tx.SavePoint("kept").Error)
			must(t, create(tx, 3, "manual-kept"))
			must(t, tx.SavePoint("undone").Error)
			must(t, create(tx, 0, "manual-undone"))
			must(t, tx.RollbackTo("undone").Error)
			return nil
		}))
		quote := map[string]string{"mariadb": "`", "postgres": `"`}[b.name]
		must(t, r.db.Transaction(func(tx *gorm.DB) error { // as servers also write them
			must(t, create(tx, 1, "written-before"))
			must(t, tx.Exec("SAVEPOINT "+quote+"quoted"+quote).Error)
			must(t, create(tx, 2, "written-quoted"))
			must(t, tx.Exec("ROLLBACK WORK TO SAVEPOINT quoted;").Error)
			must(t, tx.Exec("SAVEPOINT Mixed").Error)
			must(t, create(tx, 3, "written-mixed"))
			must(t, tx.Exec("ROLLBACK TO mixed").Error)
			return create(tx, 0, "written-after")
		}))
		var refs []string
		must(t, r.db.Clauses(shardid.AllShards()).Model(&entry{}).Pluck("ref", &refs).Error)
		slices.Sort(refs)
		want := []string{"after", "before", "first-after", "manual-before", "manual-kept", "written-after", "written-before"}
		if !slices.Equal(refs, want) {
			t.Fatalf("committed %v, want %v", refs, want)
		}
		r.noPrepared(t)
	})
}

// TestSavepointNotSeenDoomsTheShardedRows: rolling back to a savepoint the
// plugin did not see set, after a sharded row was created, leaves it unable
// to tell which rows to undo: none of the transaction's sharded rows
// commits, and the rollback says so.
func TestSavepointNotSeenDoomsTheShardedRows(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r, authors := newEntries(t, b)
		err := r.db.Transaction(func(tx *gorm.DB) error {
			must(t, tx.Create(&entry{AuthorID: authors[0].ID, Ref: "kept"}).Error)
			rows, err := tx.Raw("SAVEPOINT unseen").Rows() // a query's path: not followed
			must(t, err)
			must(t, rows.Close())
			must(t, tx.Create(&entry{AuthorID: authors[1].ID, Ref: "undone"}).Error)
			if err := tx.Exec("ROLLBACK TO SAVEPOINT unseen").Error; !errors.Is(err, shardid.ErrNotAtomic) {
				t.Errorf("the rollback to the unseen savepoint: %v, want ErrNotAtomic", err)
			}
			if err := tx.Create(&entry{AuthorID: authors[2].ID, Ref: "later"}).Error; !errors.Is(err, shardid.ErrNotAtomic) {
				t.Errorf("a Create after it: %v, want ErrNotAtomic", err)
			}
			return nil
		})
		if b.name == "postgres" && err == nil {
			t.Error("the transaction committed on PostgreSQL, whose savepoint errors GORM drops")
		}
		if n := r.count(t, &entry{}); n != 0 {
			t.Fatalf("%d sharded rows committed, want none", n)
		}
		r.noPrepared(t)
	})
}

type InDoubtTimed struct {
	ID   int64 `shardid:""`
	Name string
}

// TestAnchoredCreateAddsItsInDoubtTime: the sharded rows of a Create in a
// transaction on the plugin's database are prepared when the statement
// ends and committed after the transaction: the write counts in
// TransactionStats.Committed and its time from prepare to commit in
// InDoubtSeconds (shardid_transaction_in_doubt_seconds_total), as a write
// over several databases does; it added 0.
func TestAnchoredCreateAddsItsInDoubtTime(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db := open(t, b, dir, shardid.Config{Shards: threeShards(t, b, dir)})
		ids := db.Config.Plugins["shardid"].(*shardid.Plugin)
		fresh(t, db, &InDoubtTimed{})
		third := ids.Layout().ShardCount() / 3
		before := ids.TransactionStats()
		must(t, db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Clauses(shardid.OnShard(10)).Create(&InDoubtTimed{Name: "a"}).Error; err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond) // prepared, waiting for the transaction
			return tx.Clauses(shardid.OnShard(third + 10)).Create(&InDoubtTimed{Name: "b"}).Error
		}))
		var after shardid.TransactionStats
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if after = ids.TransactionStats(); after.Committed > before.Committed {
				break
			}
		}
		if after.Committed != before.Committed+1 {
			t.Fatalf("committed %d -> %d, want one more", before.Committed, after.Committed)
		}
		if got := after.InDoubtSeconds - before.InDoubtSeconds; got < 0.02 {
			t.Errorf("the anchored write, prepared 20ms at least before its commit, added %.6fs of in-doubt time", got)
		}
	})
}
