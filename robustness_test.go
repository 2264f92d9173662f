package shardid

import (
	"errors"
	"testing"
)

// TestOddValuesDoNotPanic: values GORM accepts or refuses by itself must not
// make the plugin panic; whatever GORM says of them is left to GORM.
func TestOddValuesDoNotPanic(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, allModels()...)
	var nilUser *user
	empty := []user{}
	values := []any{
		nilUser,
		&empty,
		[]*user{nil, {Name: "after a nil"}},
		&[]any{},
		&photo{UserID: -1},
		&photo{UserID: 1, User: &user{ID: -7}},
		&photo{User: nil},
	}
	for _, v := range values {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Create(%#v) panicked: %v", v, r)
				}
			}()
			_ = db.Create(v).Error
		}()
	}
	if err := db.Create(&photo{UserID: -1}).Error; !errors.Is(err, ErrNoShard) {
		t.Errorf("a negative colocate ID: got %v, want ErrNoShard", err)
	}
	if err := db.Create(&photo{User: &user{ID: -7}}).Error; !errors.Is(err, ErrInvalidID) {
		t.Errorf("a parent with a negative ID: got %v, want ErrInvalidID", err)
	}
}
