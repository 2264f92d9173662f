package integration

import (
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// TestAcrossShardsPartOnADatabaseDownIsCountedThere: in a transaction
// across shards, a query's or a write's part whose database refuses
// connections from the start fails there, and is counted there as failed,
// as a statement on that one database is.
func TestAcrossShardsPartOnADatabaseDownIsCountedThere(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dialector, _ := physicalAt(t, b, 1, refusing)
		db := plugged(t, b, dialector)
		p := db.Config.Plugins[(&shardid.Plugin{}).Name()].(*shardid.Plugin)
		p.CountStatements()
		err := db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			var all []author
			return tx.Clauses(shardid.AllShards()).Find(&all).Error
		})
		if !errors.Is(err, shardid.ErrShardUnavailable) {
			t.Fatalf("a query over both databases: %v, want ErrShardUnavailable", err)
		}
		err = db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			return tx.Model(&author{}).Clauses(shardid.AllShards()).Where("name = ?", "x").Update("name", "y").Error
		})
		if !errors.Is(err, shardid.ErrShardUnavailable) {
			t.Fatalf("an update over both databases: %v, want ErrShardUnavailable", err)
		}
		for _, s := range p.StatementStats() {
			if s.Physical == "gone" && (s.Kind == "query" || s.Kind == "update") && (s.Count != 1 || s.Errors != 1) {
				t.Errorf("gone %s: %d statements, %d failed; want 1, 1: the part that could not reach gone failed there", s.Kind, s.Count, s.Errors)
			}
			if s.Physical == "up" && s.Errors != 0 {
				t.Errorf("up %s: %d failed, though up answered", s.Kind, s.Errors)
			}
		}
	})
}
