package shardid

import (
	"errors"
	"testing"

	"gorm.io/gorm"
)

// TestCreateFromAValue: Create(T{}) cannot give the caller's row its new ID;
// it is refused with GORM's own ErrInvalidValue instead of panicking.
func TestCreateFromAValue(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, allModels()...)
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Create(user{}) panicked: %v", r)
			}
		}()
		err = db.Create(user{Name: "a value"}).Error
	}()
	if !errors.Is(err, gorm.ErrInvalidValue) {
		t.Fatalf("Create(user{}): got %v, want gorm.ErrInvalidValue", err)
	}
	var n int64
	if db.Model(&user{}).Count(&n); n != 0 {
		t.Fatalf("%d rows written", n)
	}
}
