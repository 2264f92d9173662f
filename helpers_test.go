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

// migrate migrates models through the plugin registered on db, or with
// plain GORM on a database without it.
func migrate(t testing.TB, db *gorm.DB, models ...any) {
	t.Helper()
	do := db.AutoMigrate
	if p, ok := db.Config.Plugins[pluginName].(*Plugin); ok {
		do = func(models ...any) error { return p.AutoMigrate(db, models...) }
	}
	if err := do(models...); err != nil {
		t.Fatal(err)
	}
}
