package engine

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// TestAPluginDatabaseBusyAtStartIsPreparedAndReadOnceItAnswers: a plugin
// database that takes no writes at db.Use (another connection holds its write
// lock) leaves the map's table unmade and the map unseeded, and sharded
// statements refused; once it answers, a refresh makes, seeds and reads it.
func TestAPluginDatabaseBusyAtStartIsPreparedAndReadOnceItAnswers(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) gorm.Dialector {
		return sqlite.Open("file:" + filepath.Join(dir, name) + "?_pragma=journal_mode(WAL)")
	}
	holder, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "main.db")+"?_pragma=journal_mode(WAL)")
	must(t, err)
	defer holder.Close()
	conn, err := holder.Conn(context.Background())
	must(t, err)
	_, err = conn.ExecContext(context.Background(), "CREATE TABLE IF NOT EXISTS other (x INT)")
	must(t, err)
	_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
	must(t, err)

	half := cfgLayoutShards() / 2
	cfg := Config{Shards: []Shard{
		{Name: "a", Dialector: open("a.db"), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "b", Dialector: open("b.db"), Logical: []Range{{From: half, To: 2*half - 1}}},
	}}
	db, err := gorm.Open(open("main.db"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := &testPlugin{}
	p.e = New(p, cfg)
	must(t, db.Use(p))
	e := p.e
	t.Cleanup(func() { _ = e.Close(); sqlDB, _ := db.DB(); _ = sqlDB.Close() })
	if err := e.mapUsable(); err == nil || !strings.Contains(err.Error(), "has not read the shared map in shardid_shard_map yet") {
		t.Fatalf("a map never read: %v; want it refused as not read yet", err)
	}
	_, err = conn.ExecContext(context.Background(), "ROLLBACK")
	must(t, err)
	conn.Close()
	deadline := time.Now().Add(30 * time.Second) // a refresh a second, on a busy machine
	for e.mapUsable() != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := e.mapUsable(); err != nil {
		t.Fatalf("30s after the plugin's database answers again: %v; want the map read and trusted", err)
	}
	must(t, e.Migrator(db).AutoMigrate(&trustUser{}))
	if err := db.Create(&trustUser{Name: "after"}).Error; err != nil || e.MapVersion() != 1 {
		t.Errorf("a Create once the map was seeded and read: %v, map version %d", err, e.MapVersion())
	}
}

func cfgLayoutShards() int { var c Config; return c.Layout.Normalized().ShardCount() }
