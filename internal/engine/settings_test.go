package engine

import (
	"testing"

	"gorm.io/gorm"
)

// TestUnusedSettingsAreReadWithoutAllocating: reading the plugin's keys of a
// statement whose Settings nothing used costs no allocation, and once a key
// is stored it is read.
func TestUnusedSettingsAreReadWithoutAllocating(t *testing.T) {
	fresh := make([]gorm.Statement, 101) // AllocsPerRun runs once more than it is told, to warm up
	allocs := testing.AllocsPerRun(len(fresh)-1, func() {
		stmt := &fresh[0]
		fresh = fresh[1:]
		if r := readSettings(stmt); r.hinted || r.pinned || r.running != nil {
			t.Fatal("a setting read from unused Settings")
		}
		if _, ok := loadSetting(stmt, routingKey{}); ok {
			t.Fatal("a setting loaded from unused Settings")
		}
	})
	if allocs != 0 {
		t.Errorf("reading unused Settings allocates %v times", allocs)
	}
	var stmt gorm.Statement
	stmt.Settings.Store(pinKey{}, pin{physical: 3})
	if r := readSettings(&stmt); !r.pinned || r.pin.physical != 3 {
		t.Errorf("the stored pin is not read: %+v", r)
	}
	if v, ok := loadSetting(&stmt, pinKey{}); !ok || v.(pin).physical != 3 {
		t.Errorf("the stored pin is not loaded: %v %v", v, ok)
	}
	stmt.Settings.Delete(pinKey{})
	if _, ok := loadSetting(&stmt, pinKey{}); ok {
		t.Error("a deleted setting is loaded")
	}
}
