package integration

import (
	"testing"
	"time"
)

// reused is a sharded row of the tests of a *gorm.DB used again.
type reused struct {
	ID   int64 `shardid:""`
	Name string
}

// TestAStatementUsedAgainWritesOverSeveralDatabasesAfterOneDatabasesWrite:
// a *gorm.DB whose first Create, or Update, ran on one database in the
// transaction GORM began there writes its next rows over several databases
// with two-phase commit, as a new one does: its parts do not take GORM's
// note of that first transaction for one they began, and commit their
// branch alone; every row is written, and no branch stays prepared.
func TestAStatementUsedAgainWritesOverSeveralDatabasesAfterOneDatabasesWrite(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &reused{})
		l := r.plugin.Layout()
		count, at := l.ShardCount(), time.Now().Add(-time.Second)
		id := func(database, seq int) int64 { // of a logical shard on that database
			return l.Compose(at, database*count/physicalShards, seq)
		}
		created := r.db.Model(&reused{})
		must(t, created.Create(&reused{ID: id(0, 1), Name: "one"}).Error)
		res := created.Create(&[]reused{{ID: id(1, 1), Name: "a"}, {ID: id(2, 1), Name: "b"}})
		if res.Error != nil || res.RowsAffected != 2 {
			t.Errorf("a Create over two databases after one on one database: %v, %d rows; want 2 rows", res.Error, res.RowsAffected)
		}
		updated := r.db.Model(&reused{}).Where("id IN ?", []int64{id(0, 1)})
		must(t, updated.Update("name", "u").Error)
		res = updated.Or("id IN ?", []int64{id(1, 1), id(2, 1)}).Update("name", "v")
		if res.Error != nil || res.RowsAffected != 3 {
			t.Errorf("an Update over three databases after one on one database: %v, %d rows; want 3 rows", res.Error, res.RowsAffected)
		}
		if n := r.count(t, &reused{}, "name = ?", "v"); n != 3 {
			t.Errorf("%d rows updated, want 3", n)
		}
		r.noPrepared(t)
	})
}

// TestAStatementUsedAgainInATransactionOnThePluginsDatabaseWritesEveryRow:
// a *gorm.DB of a transaction on the plugin's own database, used for one
// Create after another of rows on different databases (each commits with
// that transaction), writes every row once the transaction commits, as a
// new *gorm.DB for each Create does: a Create is not sent on the ended
// branch of the one before, whose rows its failure would take back.
func TestAStatementUsedAgainInATransactionOnThePluginsDatabaseWritesEveryRow(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &reused{})
		l := r.plugin.Layout()
		count, at := l.ShardCount(), time.Now().Add(-time.Second)
		id := func(database, seq int) int64 { // of a logical shard on that database
			return l.Compose(at, database*count/physicalShards, seq)
		}
		tx := r.db.Begin()
		must(t, tx.Error)
		created := tx.Model(&reused{})
		for i, rows := range []any{&reused{ID: id(0, 1)}, &reused{ID: id(1, 1)}, &[]reused{{ID: id(2, 1)}, {ID: id(3, 1)}}} {
			if err := created.Create(rows).Error; err != nil {
				t.Errorf("Create %d on the transaction's statement used again: %v", i, err)
			}
		}
		must(t, tx.Commit().Error)
		r.noPrepared(t)
		if n := r.count(t, &reused{}); n != 4 {
			t.Errorf("%d rows written, want 4", n)
		}
	})
}
