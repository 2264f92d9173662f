package engine

import (
	"testing"

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
