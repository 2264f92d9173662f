package shardid

import (
	"bytes"
	"log"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

var rev2KeptTx *gorm.DB

type rev2Keeper struct {
	ID int64 `shardid:""`
}

// AfterCreate keeps the session it is given, as a model that loads lazily does.
func (k *rev2Keeper) AfterCreate(tx *gorm.DB) error {
	rev2KeptTx = tx.Session(&gorm.Session{NewDB: true})
	return nil
}

// TestReview2KeptPartSessionLogs: a session a part's hook kept, used after
// the statement, logs its statements as the application's logger would;
// the part's logger must not swallow them into a line already printed.
func TestReview2KeptPartSessionLogs(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 3, &rev2Keeper{})
	var out bytes.Buffer
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info})
	at := p.Layout().Epoch.AddDate(1, 0, 0)
	rows := []rev2Keeper{{ID: p.Layout().Compose(at, 11, 0)}, {ID: p.Layout().Compose(at, 6002, 0)}}
	must(t, db.Create(&rows).Error)
	out.Reset()
	var n int64
	must(t, rev2KeptTx.Model(&rev2Keeper{}).Clauses(ByID(rows[0].ID)).Count(&n).Error)
	if !strings.Contains(out.String(), "SELECT count(*)") {
		t.Errorf("a later statement on the kept session is not logged: %q", out.String())
	}
}
