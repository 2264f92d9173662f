package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/internal/twophase"
)

// BenchmarkAtomicWrites prices two-phase commit on MariaDB and PostgreSQL,
// each kind interleaved with the others in one loop:
//   - split-create: a Create of 10 rows, 5 on each of two databases, atomic
//     (the default) vs best effort (each part in a transaction of its own);
//   - transfer: two updates on two databases in a transaction AcrossShards
//     vs the same two updates each on its own database, and the floor: the
//     same statements in XA or PREPARE TRANSACTION by hand on the drivers,
//     both branches prepared and committed at once, the decision row
//     written and deleted, as the protocol needs (the plugin deletes it off
//     the statement's path).
func BenchmarkAtomicWrites(b *testing.B) {
	for _, be := range backends {
		if be.name == "sqlite" {
			continue
		}
		b.Run(be.name, func(b *testing.B) {
			dir := b.TempDir()
			atomicDB := open(b, be, dir, shardid.Config{Shards: shards(b, be, dir)})
			bestDB := open(b, be, dir, shardid.Config{Shards: shards(b, be, dir), Atomic: shardid.BestEffort})
			fresh(b, atomicDB, &author{}, &entry{}, &account{})
			p := atomicDB.Config.Plugins["shardid"].(*shardid.Plugin)
			onDB := func(k int) int64 { // an author on database k
				for {
					a := author{Name: "a"}
					must(b, atomicDB.Create(&a).Error)
					if p.ShardMap().Physical(p.Layout().Shard(a.ID)) == k {
						return a.ID
					}
				}
			}
			first, second := onDB(0), onDB(1)
			var accounts [2]account
			for i, owner := range []int64{first, second} {
				accounts[i] = account{ID: owner, Balance: 1000}
				must(b, atomicDB.Create(&accounts[i]).Error)
			}
			n := 0
			batch := func() *[]entry {
				rows := make([]entry, 10)
				for i := range rows {
					n++
					rows[i] = entry{AuthorID: []int64{first, second}[i%2], Ref: fmt.Sprint("r", n)}
				}
				return &rows
			}
			transfer := func(tx *gorm.DB) error {
				if err := tx.Model(&account{ID: first}).Update("balance", gorm.Expr("balance - 1")).Error; err != nil {
					return err
				}
				return tx.Model(&account{ID: second}).Update("balance", gorm.Expr("balance + 1")).Error
			}
			floor := handTwoPhase(b, be, dir, atomicDB, first, second)
			perOp := interleaved(b, []benchKind{
				{"split-create-atomic", func() error { return atomicDB.Create(batch()).Error }},
				{"split-create-best-effort", func() error { return bestDB.Create(batch()).Error }},
				{"transfer-across-shards", func() error { return atomicDB.Clauses(shardid.AcrossShards()).Transaction(transfer) }},
				{"transfer-two-updates", func() error { return transfer(atomicDB) }},
				{"transfer-floor", floor},
			})
			b.ReportMetric(perOp[0]/perOp[1], "create-atomic×best-effort")
			b.ReportMetric(perOp[2]/perOp[3], "transfer×two-updates")
			b.ReportMetric(perOp[4]/perOp[3], "floor×two-updates")
			b.ReportMetric(perOp[2]/perOp[4], "transfer×floor")
		})
	}
}

// handTwoPhase returns the transfer written with the servers' two-phase
// commit on the drivers: a branch on each database, both prepared, the
// decision written on the plugin's database, both committed, the decision
// deleted.
func handTwoPhase(b *testing.B, be backend, dir string, main *gorm.DB, first, second int64) func() error {
	direct := direct(b, be, dir)
	sqlOf := func(db *gorm.DB) *sql.DB {
		s, err := db.DB()
		must(b, err)
		return s
	}
	dbs := []*sql.DB{sqlOf(direct[0]), sqlOf(direct[1])}
	decisions := twophase.Decisions{DB: sqlOf(main), Dialect: main.Dialector.Name(), Table: "shardid_transactions"}
	dialect := main.Dialector.Name()
	placeholder := "?"
	if dialect == "postgres" {
		placeholder = "$1"
	}
	seq := uint64(0)
	return func() error {
		ctx := context.Background()
		seq++
		gid := twophase.GID{Cluster: "bench", Process: "bench", Started: time.Now(), Seq: seq}.String()
		branches := make([]*twophase.Branch, 2)
		for i, id := range []int64{first, second} {
			br, err := twophase.Begin(ctx, dbs[i], dialect, twophase.XID{GID: gid, Branch: fmt.Sprint(i)})
			if err != nil {
				return err
			}
			if _, err := br.ExecContext(ctx, "UPDATE accounts SET balance = balance + 1 WHERE id = "+placeholder, id); err != nil {
				return err
			}
			branches[i] = br
		}
		if err := both(branches, func(br *twophase.Branch) error { return br.Prepare(ctx) }); err != nil {
			return err
		}
		if _, err := decisions.Decide(ctx, gid, twophase.Committed); err != nil {
			return err
		}
		if err := both(branches, func(br *twophase.Branch) error { return br.Commit(ctx) }); err != nil {
			return err
		}
		return decisions.Forget(ctx, gid)
	}
}

// both runs step on the two branches at once, as the plugin does.
func both(branches []*twophase.Branch, step func(*twophase.Branch) error) error {
	done := make(chan error, 1)
	go func() { done <- step(branches[1]) }()
	return errors.Join(step(branches[0]), <-done)
}
