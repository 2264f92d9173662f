package integration

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

type PrbAnchored struct {
	ID   int64 `shardid:""`
	Name string
}

// TestAnchoredCreateAddsItsInDoubtTime: the sharded rows of a Create in a
// transaction on the plugin's database are prepared when the statement
// ends and committed after the transaction: the write counts in
// TransactionStats.Committed and its time from prepare to commit in
// InDoubtSeconds (shardid_transaction_in_doubt_seconds_total), as a write
// over several databases does; it added 0.
func TestAnchoredCreateAddsItsInDoubtTime(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db := open(t, b, dir, shardid.Config{Shards: threeShards(t, b, dir)})
		ids := db.Config.Plugins["shardid"].(*shardid.Plugin)
		fresh(t, db, &PrbAnchored{})
		third := ids.Layout().ShardCount() / 3
		before := ids.TransactionStats()
		must(t, db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Clauses(shardid.OnShard(10)).Create(&PrbAnchored{Name: "a"}).Error; err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond) // prepared, waiting for the transaction
			return tx.Clauses(shardid.OnShard(third + 10)).Create(&PrbAnchored{Name: "b"}).Error
		}))
		var after shardid.TransactionStats
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if after = ids.TransactionStats(); after.Committed > before.Committed {
				break
			}
		}
		if after.Committed != before.Committed+1 {
			t.Fatalf("committed %d -> %d, want one more", before.Committed, after.Committed)
		}
		if got := after.InDoubtSeconds - before.InDoubtSeconds; got < 0.02 {
			t.Errorf("the anchored write, prepared 20ms at least before its commit, added %.6fs of in-doubt time", got)
		}
	})
}
