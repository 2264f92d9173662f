package engine

import (
	"errors"

	"gorm.io/gorm"
)

// keepResult gives gorm.WithResult the count of a statement the plugin ran
// in parts over several databases, as of one statement: each part's run
// wrote its own count there, the last one's standing.
func keepResult(db *gorm.DB) {
	if r := db.Statement.Result; r != nil {
		r.RowsAffected, r.Result = db.RowsAffected, partsResult(db.RowsAffected)
	}
}

// partsResult is the sql.Result of a statement run in parts over several
// databases: their rows affected, added up.
type partsResult int64

func (r partsResult) RowsAffected() (int64, error) { return int64(r), nil }

func (partsResult) LastInsertId() (int64, error) { return 0, errNoLastInsertID }

var errNoLastInsertID = errors.New("shardid: the statement ran in parts over several databases, each with its own last insert ID")
