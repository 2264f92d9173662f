package integration

import (
	"testing"

	"github.com/shardid/shardid/strategies"
)

// Models of the other int64 strategies.
type (
	invoice struct {
		ID     int64 `shardid:"strategy:segment"`
		Amount int
	}
	reading struct {
		ID    int64 `shardid:"strategy:snowflake"`
		Value int
	}
)

// Each strategy's rows land on their shard's database, read back by ID, and
// are counted in the plugin's Stats; snowflake holds a lease in every
// physical database it made IDs for.
func TestStrategiesThroughThePlugin(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &invoice{}, &reading{})
		invoices := make([]invoice, 60)
		readings := make([]reading, 60)
		must(t, r.db.Create(&invoices).Error)
		must(t, r.db.Create(&readings).Error)
		for range 3 {
			must(t, r.db.Create(&invoice{Amount: 1}).Error)
		}
		for i := range invoices {
			r.mustBeOnItsShard(t, &invoice{}, invoices[i].ID)
			r.mustBeOnItsShard(t, &reading{}, readings[i].ID)
		}
		var got invoice
		must(t, r.db.First(&got, invoices[17].ID).Error)
		stats := r.plugin.Stats()
		if n := stats[strategies.NameSegment].Issued; n != 63 {
			t.Fatalf("segment issued %d IDs, want 63", n)
		}
		if n := stats[strategies.NameSnowflake].Issued; n != 60 {
			t.Fatalf("snowflake issued %d IDs, want 60", n)
		}
		leases := stats[strategies.NameSnowflake].Leases
		if len(leases) != physicalShards {
			t.Fatalf("snowflake holds leases %+v, want one on each of the %d physical databases", leases, physicalShards)
		}
		for _, l := range leases {
			if !l.Held || l.Worker < 0 {
				t.Fatalf("lease %+v is not held", l)
			}
		}
		if seqs := stats[strategies.NameSegment].Sequences; len(seqs) != physicalShards {
			t.Fatalf("segment sequences %+v, want one per physical database", seqs)
		}
	})
}
