package shardidprom_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardidprom"
	"github.com/shardid/shardid/strategies"
)

type leasedRow struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Name string
}

// gauge reads the one series of name with label physical=physical, and
// whether there is one.
func seriesValue(t *testing.T, registry *prometheus.Registry, name, physical string) (float64, bool) {
	t.Helper()
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if physical != "" && !hasLabel(m, "physical", physical) {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// TestALostSnowflakeLeaseIsExported: a snowflake worker lease that another
// process took shows in the scrape, by physical database: the losses
// counted, the lease held again once the heartbeat took another, and its
// worker ID; the map version the process routes by is exported too.
func TestALostSnowflakeLeaseIsExported(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) gorm.Dialector {
		return sqlite.Open(filepath.Join(dir, name) + "?_pragma=busy_timeout(5000)")
	}
	db, err := gorm.Open(open("main.db"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ids := shardid.New(shardid.Config{
		Shards:    []shardid.Shard{{Name: "a", Dialector: open("a.db"), Logical: []shardid.Range{{From: 0, To: 8191}}}},
		Snowflake: shardid.SnowflakeConfig{Lease: strategies.LeaseOptions{TTL: 300 * time.Millisecond}},
	})
	if err := db.Use(ids); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ids.Close() })
	if err := ids.AutoMigrate(db, &leasedRow{}); err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&leasedRow{Name: "first"}).Error; err != nil {
		t.Fatal(err)
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(shardidprom.New(ids))
	if v, ok := seriesValue(t, registry, "shardid_map_version", ""); !ok || v != float64(ids.MapVersion()) || v < 1 {
		t.Errorf("shardid_map_version = %v (exported: %v), want %d", v, ok, ids.MapVersion())
	}
	if v, ok := seriesValue(t, registry, "shardid_snowflake_lease_held", "a"); !ok || v != 1 {
		t.Fatalf("shardid_snowflake_lease_held{physical=a} = %v (exported: %v), want 1", v, ok)
	}
	// Another process takes the worker ID over.
	shard, err := gorm.Open(open("a.db"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := shard.Exec("UPDATE " + strategies.DefaultLeaseTable + " SET owner = 'another', generation = generation + 1").Error; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		lost, _ := seriesValue(t, registry, "shardid_snowflake_lease_lost_total", "a")
		held, _ := seriesValue(t, registry, "shardid_snowflake_lease_held", "a")
		if lost == 1 && held == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after its lease was taken: shardid_snowflake_lease_lost_total{physical=a} = %v, held = %v; want 1 and 1", lost, held)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, ok := seriesValue(t, registry, "shardid_snowflake_lease_worker", "a"); !ok {
		t.Error("shardid_snowflake_lease_worker{physical=a} is not exported")
	}
}
