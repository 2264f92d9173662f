package shardidprom_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/glebarez/sqlite"
	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardidprom"
)

type User struct {
	ID   int64 `shardid:""`
	Name string
}

// Register the collector of a plugin with Prometheus; every statement on a
// sharded model is then counted on the physical database it ran on.
func Example() {
	dir, err := os.MkdirTemp("", "shardidprom")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	open := func(name string) gorm.Dialector { return sqlite.Open(filepath.Join(dir, name)) }
	db, err := gorm.Open(open("main.db"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	ids := shardid.New(shardid.Config{Shards: []shardid.Shard{
		{Name: "a", Dialector: open("a.db"), Logical: []shardid.Range{{From: 0, To: 4095}}},
		{Name: "b", Dialector: open("b.db"), Logical: []shardid.Range{{From: 4096, To: 8191}}},
	}})
	if err := db.Use(ids); err != nil {
		panic(err)
	}
	defer ids.Close()
	registry := prometheus.NewRegistry()
	registry.MustRegister(shardidprom.New(ids))

	if err := ids.AutoMigrate(db, &User{}); err != nil {
		panic(err)
	}
	for _, shard := range []int{10, 20, 5000} {
		if err := db.Clauses(shardid.OnShard(shard)).Create(&User{Name: "ada"}).Error; err != nil {
			panic(err)
		}
	}
	families, err := registry.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() != "shardid_statements_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labels := m.GetLabel(); labels[0].GetValue() == "create" { // labels sort by name: kind, physical
				fmt.Println(labels[1].GetValue(), "created", m.GetCounter().GetValue())
			}
		}
	}
	// Output:
	// a created 2
	// b created 1
}

// Two plugins, over two applications' databases, on one registry: each
// collector's series carry a label that tells them apart, added by
// prometheus.WrapRegistererWith; registered bare, the second would be refused
// as a duplicate of the first.
func Example_twoPlugins() {
	dir, err := os.MkdirTemp("", "shardidprom")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	registry := prometheus.NewRegistry()
	for _, app := range []string{"orders", "users"} {
		open := func(name string) gorm.Dialector { return sqlite.Open(filepath.Join(dir, app+"-"+name)) }
		db, err := gorm.Open(open("main.db"), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			panic(err)
		}
		ids := shardid.New(shardid.Config{Shards: []shardid.Shard{{Name: "a", Dialector: open("a.db"), Logical: []shardid.Range{{From: 0, To: 8191}}}}})
		if err := db.Use(ids); err != nil {
			panic(err)
		}
		defer ids.Close()
		prometheus.WrapRegistererWith(prometheus.Labels{"app": app}, registry).MustRegister(shardidprom.New(ids))
		if err := ids.AutoMigrate(db, &User{}); err != nil {
			panic(err)
		}
		if err := db.Create(&User{Name: "ada"}).Error; err != nil {
			panic(err)
		}
	}
	families, err := registry.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() != "shardid_statements_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == "create" {
				fmt.Println(labels["app"], labels["physical"], "created", m.GetCounter().GetValue())
			}
		}
	}
	// Output:
	// orders a created 1
	// users a created 1
}
