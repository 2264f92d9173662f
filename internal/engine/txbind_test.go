package engine

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
)

type savepointSetting struct { // unsharded: lives on the plugin's database
	ID    int64
	Value string
}

// TestSavepointsAreNoted: a savepoint set by Exec, as GORM's dialectors set
// them, and one GORM sets for a nested Transaction, are both noted on their
// transaction.
func TestSavepointsAreNoted(t *testing.T) {
	db, e := openEngine(t, Config{}, true)
	must(t, db.AutoMigrate(&savepointSetting{}))
	err := db.Transaction(func(tx *gorm.DB) error {
		must(t, tx.Exec("SAVEPOINT by_hand").Error)
		if _, noted := e.savepoints.lookup(tx.Statement.ConnPool); !noted {
			t.Error("the savepoint set by Exec is not noted")
		}
		return tx.Transaction(func(inner *gorm.DB) error {
			if _, noted := e.savepoints.lookup(inner.Statement.ConnPool); !noted {
				t.Error("the savepoint GORM set is not noted")
			}
			return inner.Create(&savepointSetting{Value: "nested"}).Error
		})
	})
	must(t, err)
}

// TestTransactionNotesGoWithTheirTransactions: the notes kept per
// transaction (the map a shard clause began it by, its savepoints) are gone
// once many transactions, committed and rolled back, have ended and been
// collected: the registries do not grow with the count of transactions.
func TestTransactionNotesGoWithTheirTransactions(t *testing.T) {
	db, e := openEngine(t, Config{}, true)
	must(t, e.Migrator(db).AutoMigrate(&gateRow{}))
	must(t, db.AutoMigrate(&savepointSetting{}))
	failed := errors.New("rolled back")
	for i := range 500 {
		_ = db.Clauses(hinted{OnShard(1)}).Transaction(func(tx *gorm.DB) error {
			must(t, tx.Create(&gateRow{Name: "x"}).Error)
			if i%2 == 0 {
				return failed
			}
			return nil
		})
		_ = db.Transaction(func(tx *gorm.DB) error {
			must(t, tx.Exec("SAVEPOINT by_hand").Error)
			return failed
		})
	}
	count := func(m *sync.Map) (n int) {
		m.Range(func(any, any) bool { n++; return true })
		return n
	}
	t.Logf("before collection: %d, %d", count(&e.txMaps.byTx), count(&e.savepoints.byTx))
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		maps, savepoints := count(&e.txMaps.byTx), count(&e.savepoints.byTx)
		if maps < 50 && savepoints < 50 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d transaction maps and %d savepoint notes left after 500 transactions of each kind ended", maps, savepoints)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
