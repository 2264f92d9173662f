package integration

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/shardid/shardid"
)

// TestBesideDBResolver: gorm.io/plugin/dbresolver registered after shardid
// keeps sending an unsharded model's reads to its replica, and sharded
// statements still go to their shards.
func TestBesideDBResolver(t *testing.T) {
	b := backends[0] // SQLite: the replica is one more file
	r := newRouting(t, b)
	replicaPath := filepath.Join(t.TempDir(), "replica.db")
	replica, err := gorm.Open(sqlite.Open(sqliteDSN(replicaPath)), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	must(t, replica.AutoMigrate(&setting{}))
	must(t, replica.Create(&setting{ID: 99, Value: "from the replica"}).Error)

	must(t, replica.AutoMigrate(&author{}))
	must(t, replica.Create(&author{ID: 1, Name: "only on the replica"}).Error)
	// dbresolver is told to read authors from the replica too: shardid's
	// routing of the sharded model must win, for every part of a fan-out.
	err = r.db.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{sqlite.Open(sqliteDSN(replicaPath))}}, &setting{}, &author{}))
	if err != nil {
		t.Fatal(err)
	}
	var s setting
	if err := r.db.First(&s, 99).Error; err != nil || s.Value != "from the replica" {
		t.Fatalf("the unsharded read did not go to dbresolver's replica: %v %+v", err, s)
	}
	a := author{Name: "beside dbresolver"}
	if err := r.db.Create(&a).Error; err != nil {
		t.Fatal(err)
	}
	r.mustBeOnItsShard(t, &author{}, a.ID)
	var back author
	if err := r.db.First(&back, a.ID).Error; err != nil || back.Name != a.Name {
		t.Fatalf("a sharded read beside dbresolver: %v %+v", err, back)
	}
	spread := make([]author, 20)
	must(t, r.db.Create(&spread).Error)
	ids := []int64{a.ID}
	for _, s := range spread {
		ids = append(ids, s.ID)
	}
	var found []author
	if err := r.db.Find(&found, ids).Error; err != nil || len(found) != len(ids) {
		t.Fatalf("an IN list over every shard beside dbresolver: %v, %d rows of %d", err, len(found), len(ids))
	}
	var total int64
	if err := r.db.Model(&author{}).Clauses(shardid.AllShards()).Count(&total).Error; err != nil || total != int64(len(ids)) {
		t.Fatalf("AllShards Count beside dbresolver: %v, %d, want %d", err, total, len(ids))
	}
}

// TestShardTransactionBesideDBResolverNamesTheClauseOrder: with dbresolver
// registered for every model, a transaction begun with its clause before
// the shard clause runs on the row's shard; begun with it after, dbresolver
// chose the plugin's database, and the transaction's statements are refused
// saying to give dbresolver's clause first. Nothing is written.
func TestShardTransactionBesideDBResolverNamesTheClauseOrder(t *testing.T) {
	b := backends[0] // SQLite: the replica is one more file
	r := newRouting(t, b)
	replicaPath := filepath.Join(t.TempDir(), "replica.db")
	replica, err := gorm.Open(sqlite.Open(sqliteDSN(replicaPath)), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	must(t, replica.AutoMigrate(&author{}))
	must(t, r.db.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{sqlite.Open(sqliteDSN(replicaPath))}})))
	_, x, _ := r.spreadAuthors(t, func() author { return author{Name: "seed"} })
	rename := func(name string) func(tx *gorm.DB) error {
		return func(tx *gorm.DB) error { return tx.Model(&author{ID: x.ID}).Update("name", name).Error }
	}
	must(t, r.db.Clauses(dbresolver.Write).Clauses(shardid.ByID(x.ID)).Transaction(rename("resolver first")))
	err = r.db.Clauses(shardid.ByID(x.ID), dbresolver.Write).Transaction(rename("resolver after"))
	if !errors.Is(err, shardid.ErrCrossShard) || !strings.Contains(err.Error(), "db.Clauses(dbresolver.Write).Clauses(shardid.ByID(id))") {
		t.Errorf("a transaction begun with dbresolver's clause after the shard clause: %v; want ErrCrossShard saying to give it first", err)
	}
	var got author
	must(t, r.direct[r.physicalOf(x.ID)].First(&got, x.ID).Error)
	if got.Name != "resolver first" {
		t.Errorf("the row reads %q, want the first transaction's name only", got.Name)
	}
}

// TestDBResolverSourcesDoNotTakeShardedWrites: dbresolver told to write a
// sharded model to a source of its own leaves its writes to shardid: a
// Create over several databases, an update, a delete, a transaction on a
// shard and a read with dbresolver.Write reach the shards, and nothing
// reaches the source.
func TestDBResolverSourcesDoNotTakeShardedWrites(t *testing.T) {
	b := backends[0]
	r := newRouting(t, b)
	sourcePath := filepath.Join(t.TempDir(), "source.db")
	source, err := gorm.Open(sqlite.Open(sqliteDSN(sourcePath)), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	must(t, source.AutoMigrate(&author{}, &book{}))
	must(t, r.db.Use(dbresolver.Register(dbresolver.Config{
		Sources:  []gorm.Dialector{sqlite.Open(sqliteDSN(sourcePath))},
		Replicas: []gorm.Dialector{sqlite.Open(sqliteDSN(sourcePath))},
	}, &author{}, &book{})))
	rows := make([]author, 30)
	for i := range rows {
		rows[i] = author{Name: "r", Books: []book{{Title: "t"}}}
	}
	must(t, r.db.Create(&rows).Error)
	ids := idsOf(rows)
	for _, a := range rows {
		r.mustBeOnItsShard(t, &author{}, a.ID)
	}
	must(t, r.db.Model(&author{}).Where("id IN ?", ids).Update("name", "u").Error)
	must(t, r.db.Clauses(dbresolver.Write).Clauses(shardid.ByID(ids[0])).Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(&author{ID: ids[0]}).Update("name", "tx").Error; err != nil {
			return err
		}
		return tx.Create(&author{Name: "in tx"}).Error
	}))
	var found []author
	must(t, r.db.Clauses(dbresolver.Write).Find(&found, ids).Error)
	if len(found) != len(ids) {
		t.Fatalf("dbresolver.Write read %d rows of %d", len(found), len(ids))
	}
	must(t, r.db.Select("Books").Where("id IN ?", ids[1:]).Delete(&author{}).Error)
	var onSource int64
	must(t, source.Model(&author{}).Count(&onSource).Error)
	var booksOnSource int64
	must(t, source.Model(&book{}).Count(&booksOnSource).Error)
	if onSource+booksOnSource != 0 {
		t.Fatalf("dbresolver's source holds %d authors, %d books", onSource, booksOnSource)
	}
	if n := r.count(t, &author{}, "name = ?", "tx"); n != 1 {
		t.Fatalf("%d authors renamed in the transaction", n)
	}
	if n := r.count(t, &author{}); n != 2 {
		t.Fatalf("%d authors left, want 2", n)
	}
}

// TestDBResolverReplicasInsideTransactionAcrossShards: with dbresolver
// sending a sharded model's reads to a replica, reads in a transaction across
// shards read that transaction's own writes on every database, and so do
// reads after its commit.
func TestDBResolverReplicasInsideTransactionAcrossShards(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.onEvery(t)
		ids := idsOf(all)
		// The replica: the plugin's own database, which holds no authors.
		must(t, r.db.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{b.dialector(t, t.TempDir())}}, &author{})))
		must(t, r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			if err := tx.Model(&author{}).Where("id IN ?", ids).Update("name", "in tx").Error; err != nil {
				return err
			}
			var seen []author
			if err := tx.Where("name = ?", "in tx").Find(&seen, ids).Error; err != nil {
				return err
			}
			if len(seen) != len(ids) {
				return fmt.Errorf("the transaction reads %d of its %d writes", len(seen), len(ids))
			}
			var one author
			if err := tx.First(&one, ids[1]).Error; err != nil || one.Name != "in tx" {
				return fmt.Errorf("one row in the transaction: %v %+v", err, one)
			}
			return nil
		}))
		var after []author
		must(t, r.db.Where("name = ?", "in tx").Find(&after, ids).Error)
		if len(after) != len(ids) {
			t.Fatalf("after the commit: %d of %d", len(after), len(ids))
		}
	})
}
