package shardidotel_test

import (
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid/shardidotel"
)

// TestReviewNilPlugin: db.Use(shardidotel.New(nil)) is bad input, to be
// refused with an error, not a panic.
func TestReviewNilPlugin(t *testing.T) {
	db, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "main.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("db.Use(shardidotel.New(nil)) panicked: %v", r)
		}
	}()
	if err := db.Use(shardidotel.New(nil)); err == nil {
		t.Error("db.Use(shardidotel.New(nil)) was accepted")
	}
}
