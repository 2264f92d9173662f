package shardidprom_test

import (
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardidprom"
)

// TestNilPluginDoesNotPanic: a nil plugin is bad input, to be refused with
// an error, not a panic.
func TestNilPluginDoesNotPanic(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("shardidprom.New(nil) panicked: %v", r)
		}
	}()
	registry := prometheus.NewRegistry()
	_ = registry.Register(shardidprom.New(nil))
	_, _ = registry.Gather()
}

// TestClosedPluginDoesNotFailTheWholeScrape: once the plugin is closed, an
// invalid metric of the collector would make Gather fail for every collector
// of the registry (promhttp answers 500 by default), not just shardid's.
func TestClosedPluginDoesNotFailTheWholeScrape(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) gorm.Dialector { return sqlite.Open(filepath.Join(dir, name)) }
	db, err := gorm.Open(open("main.db"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ids := shardid.New(shardid.Config{Shards: []shardid.Shard{
		{Name: "a", Dialector: open("a.db"), Logical: []shardid.Range{{From: 0, To: 8191}}},
	}})
	if err := db.Use(ids); err != nil {
		t.Fatal(err)
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(shardidprom.New(ids), collectors.NewGoCollector())
	_ = ids.Close()
	if _, err := registry.Gather(); err != nil {
		t.Errorf("the scrape of the whole registry fails once the plugin is closed: %v", err)
	}
}

// TestTransactionMetrics: the writes over several databases a plugin
// committed in two phases are exported by outcome, with the branches
// recovery finished; a plugin that made none exports zeros.
func TestTransactionMetrics(t *testing.T) {
	dir := t.TempDir()
	db, err := gorm.Open(sqlite.Open(filepath.Join(dir, "main.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ids := shardid.New(shardid.Config{Shards: []shardid.Shard{
		{Name: "a", Dialector: sqlite.Open(filepath.Join(dir, "a.db")), Logical: []shardid.Range{{From: 0, To: 8191}}},
	}})
	if err := db.Use(ids); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ids.Close() })
	registry := prometheus.NewRegistry()
	registry.MustRegister(shardidprom.New(ids))
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, f := range families {
		seen[f.GetName()] = len(f.GetMetric())
	}
	for name, series := range map[string]int{"shardid_transactions_total": 3, "shardid_transaction_branches_recovered_total": 2,
		"shardid_transaction_branches_total": 1, "shardid_transaction_in_doubt_seconds_total": 1} {
		if seen[name] != series {
			t.Errorf("%s: %d series, want %d", name, seen[name], series)
		}
	}
}
