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
