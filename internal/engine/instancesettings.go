package engine

import (
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// keepInstanceSettings lets the hooks of part, a copy of statement made to
// run on one database, read with InstanceGet what InstanceSet gave the
// statement: GORM keys such settings by the statement's address, which the
// copy does not share. GORM's note that it began the statement's
// transaction stays behind: the part's is its own, and a note left by the
// statement's last run would have GORM end a branch the part never began.
func keepInstanceSettings(statement, part *gorm.Statement) {
	from, to := fmt.Sprintf("%p", statement), fmt.Sprintf("%p", part)
	if from == to {
		return
	}
	part.Settings.Range(func(k, v any) bool {
		if key, ok := k.(string); ok && strings.HasPrefix(key, from) && key[len(from):] != gormStartedTransaction {
			part.Settings.Store(to+key[len(from):], v)
		}
		return true
	})
}

// gormStartedTransaction is the instance setting by which GORM remembers
// that it began a statement's transaction.
const gormStartedTransaction = "gorm:started_transaction"
