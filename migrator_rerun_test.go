package shardid

import (
	"strings"
	"testing"
)

// TestAChangeRunAgainNamesTheDatabaseThatStillRefusesIt: a change run again
// after it stopped part way is made only where it is missing; when that one
// database refuses it again, the error still names it.
func TestAChangeRunAgainNamesTheDatabaseThatStillRefusesIt(t *testing.T) {
	db, p := openIn(t, t.TempDir())
	must(t, p.AutoMigrate(db, &partwayUser{}))
	mig := p.Migrator(db)
	must(t, mig.DropIndex(&partwayUser{}, "idx_partway_email"))
	half := Layout{}.ShardCount() / 2
	for _, shard := range []int{half + 1, half + 2} { // two equal emails on s1: its unique index is refused there
		must(t, db.Clauses(OnShard(shard)).Create(&partwayUser{Email: "same"}).Error)
	}
	for run := 1; run <= 2; run++ { // the second run skips s0, where the index is made
		err := mig.CreateIndex(&partwayUser{}, "idx_partway_email")
		if err == nil {
			t.Fatalf("run %d: a unique index over equal emails on s1 was made", run)
		}
		if !strings.Contains(err.Error(), "on s1") {
			t.Errorf("run %d: the error does not name s1, which refused it: %v", run, err)
		}
	}
}
