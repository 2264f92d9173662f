package shardid

import (
	"bytes"
	"log"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type rev2Hooked struct {
	ID int64 `shardid:""`
}

// AfterCreate counts with Raw(...).Scan, which GORM runs under a logger of
// its own (logger.Recorder), then traces on the part's logger.
func (h *rev2Hooked) AfterCreate(tx *gorm.DB) error {
	var n int64
	return tx.Clauses(ByID(h.ID)).Raw("SELECT count(*) FROM rev2_hookeds").Scan(&n).Error
}

// TestReview2PartHookScanLineKept: a split create's part runs its hook's
// Raw(...).Scan; the statement's one line must keep that SQL, as it did
// when the part's logger kept what GORM traced.
func TestReview2PartHookScanLineKept(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 3, &rev2Hooked{})
	var out bytes.Buffer
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info})
	at := p.Layout().Epoch.AddDate(1, 0, 0)
	rows := []rev2Hooked{{ID: p.Layout().Compose(at, 11, 0)}, {ID: p.Layout().Compose(at, 6002, 0)}}
	must(t, db.Create(&rows).Error)
	if got := strings.Count(out.String(), "SELECT count(*) FROM rev2_hookeds"); got != 2 {
		t.Errorf("the hooks' Raw(...).Scan appear %d time(s) in the log, want 2 (one per part):\n%s", got, out.String())
	}
}
