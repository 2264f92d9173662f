package shardid

import (
	"testing"
	"time"

	"gorm.io/gorm"
)

type obsPrbUser struct {
	ID   int64  `shardid:""`
	Name string `gorm:"uniqueIndex"`
}

func obsPrbErrors(p *Plugin) map[string][2]uint64 {
	m := map[string][2]uint64{}
	for _, s := range p.StatementStats() {
		if s.Count > 0 {
			m[s.Physical+"/"+s.Kind] = [2]uint64{s.Count, s.Errors}
		}
	}
	return m
}

// TestRolledBackPartIsNotCountedAsAnErrorOnItsDatabase: a write over
// several databases that fails on one (a unique violation on s1, a missing
// table on s1) rolls back the parts of the others, which did not fail: the
// failure is counted on s1 only, not on every database of the statement.
func TestRolledBackPartIsNotCountedAsAnErrorOnItsDatabase(t *testing.T) {
	db, p, direct, _ := revRoutedN(t, 3, &obsPrbUser{})
	p.CountStatements()
	l := p.Layout()
	at := func(shard int) int64 { return l.Compose(time.Now().Add(-time.Second), shard, 1) }
	must(t, db.Create(&obsPrbUser{ID: at(3000), Name: "taken"}).Error)
	err := db.Create(&[]obsPrbUser{{ID: at(10), Name: "free"}, {ID: at(3001), Name: "taken"}}).Error
	if err == nil {
		t.Fatal("a duplicate name on s1 was accepted")
	}
	got := obsPrbErrors(p)
	if got["s1/create"] != [2]uint64{2, 1} || got["s0/create"] != [2]uint64{1, 0} {
		t.Errorf("a split Create that failed on s1 only (%v): s0 create %v, s1 create %v; want s0 [1 0], s1 [2 1]", err, got["s0/create"], got["s1/create"])
	}
	must(t, direct[1].Exec("DROP TABLE obs_prb_users").Error)
	err = db.Model(&obsPrbUser{}).Clauses(AllShards()).Where("1 = 1").Update("name", gorm.Expr("name")).Error
	if err == nil {
		t.Fatal("an update of a missing table on s1 succeeded")
	}
	got = obsPrbErrors(p)
	for name, want := range map[string][2]uint64{"s0/update": {1, 0}, "s1/update": {1, 1}, "s2/update": {1, 0}} {
		if got[name] != want {
			t.Errorf("an update over every shard that failed on s1 only (%v): %s %v, want %v", err, name, got[name], want)
		}
	}
}
