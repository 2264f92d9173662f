package integration

import (
	"testing"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// TestConnectionWithAcrossShardsRunsOnOneConnection: outside Begin and
// Transaction the AcrossShards clause does nothing: db.Connection given it
// runs its function on one connection of the plugin's database, as without
// it, instead of failing with GORM's "invalid db".
func TestConnectionWithAcrossShardsRunsOnOneConnection(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		set, get := "SET @x = 42", "SELECT @x"
		if b.name == "postgres" {
			set, get = "SET my.x = '42'", "SELECT current_setting('my.x', true)"
		}
		var got string
		err := r.db.Clauses(shardid.AcrossShards()).Connection(func(tx *gorm.DB) error {
			if err := tx.Exec(set).Error; err != nil {
				return err
			}
			return tx.Raw(get).Scan(&got).Error
		})
		if err != nil || got != "42" {
			t.Fatalf("Connection with AcrossShards: %v, the session's variable %q; want it run on one connection", err, got)
		}
		if _, err := r.db.Clauses(shardid.AcrossShards()).DB(); err != nil {
			t.Fatalf("DB() with AcrossShards: %v", err)
		}
	})
}
