package shardid

import (
	"bytes"
	"errors"
	"log"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type revObsUser struct {
	ID   int64 `shardid:""`
	Name string
}

type revObsNote struct { // unsharded: on the plugin's own database
	ID   int64
	Text string
}

type revObsHooked struct {
	ID int64 `shardid:""`
}

// AfterCreate reads an unsharded table: the plugin reads it on its own
// database, outside the part's transaction.
func (h *revObsHooked) AfterCreate(tx *gorm.DB) error {
	var n int64
	return tx.Model(&revObsNote{}).Count(&n).Error
}

// TestReviewRefusedRowFanOutCounted: Row over several databases is refused
// before it is sent anywhere, yet FanOutStats counts it as a statement sent
// to more than one database.
func TestReviewRefusedRowFanOutCounted(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 3, &revObsUser{})
	p.CountStatements()
	_, err := db.Model(&revObsUser{}).Clauses(AllShards()).Select("count(*)").Rows()
	if !errors.Is(err, ErrCrossShard) {
		t.Fatalf("Row over three databases: %v, want ErrCrossShard", err)
	}
	if got := p.FanOutStats()["row"]; got != 0 {
		t.Errorf("FanOutStats counts %d row statement(s) sent to several databases; the one refused went nowhere", got)
	}
	var all revObsUser // a struct destination, refused too before any part runs
	err = db.Clauses(AllShards()).Find(all).Error
	if err == nil {
		t.Fatal("a non-pointer destination over three databases was accepted")
	}
	if got := p.FanOutStats()["query"]; got != 0 {
		t.Errorf("FanOutStats counts %d refused query(ies): %v", got, err)
	}
}

// TestReviewPartHookLineNamesWrongDatabase: the statement a split create's
// part runs from its AfterCreate hook ran on the plugin's own database, but
// the statement's one line names it after the part's database.
func TestReviewPartHookLineNamesWrongDatabase(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 3, &revObsHooked{}, &revObsNote{})
	p.config.LogPhysical = true
	var out bytes.Buffer
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info})
	at := p.Layout().Epoch.AddDate(1, 0, 0)
	rows := []revObsHooked{{ID: p.Layout().Compose(at, 11, 0)}, {ID: p.Layout().Compose(at, 6002, 0)}}
	must(t, db.Create(&rows).Error)
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "s0] SELECT count(*) FROM `rev_obs_notes`") || strings.Contains(line, "s2] SELECT count(*) FROM `rev_obs_notes`") {
			t.Errorf("the hook's count, which ran on the plugin's own database, is named after a shard: %s", line)
		}
	}
	out.Reset()
	one := revObsHooked{}
	must(t, db.Create(&one).Error)
	if strings.Contains(out.String(), "s0] SELECT count(*) FROM `rev_obs_notes`") || strings.Contains(out.String(), "s1] SELECT count(*) FROM `rev_obs_notes`") || strings.Contains(out.String(), "s2] SELECT count(*) FROM `rev_obs_notes`") {
		t.Errorf("a plain create's hook count is named after a shard:\n%s", out.String())
	}
}
