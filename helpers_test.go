package shardid

import (
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// testDB opens a fresh SQLite file with the plugin registered.
func testDB(t testing.TB, cfg Config) (*gorm.DB, *Plugin) {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "test.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	p := New(cfg)
	if err := db.Use(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db, p
}

func migrate(t testing.TB, db *gorm.DB, models ...any) {
	t.Helper()
	if err := db.Config.Plugins[pluginName].(*Plugin).AutoMigrate(db, models...); err != nil {
		t.Fatal(err)
	}
}
