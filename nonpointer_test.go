package shardid

import (
	"errors"
	"testing"
	"time"

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

type valueOwner struct {
	ID      int64 `shardid:""`
	Name    string
	Members []valueMember `gorm:"foreignKey:OwnerID"` // makes the struct uncomparable with ==
}

type valueMember struct {
	ID      int64 `shardid:"colocate:OwnerID"`
	OwnerID int64
}

// TestDeleteOfRowsGivenByValue: Delete(row) of a model with a slice field
// (a has-many), and Delete(rows) of a slice, given by value rather than
// pointer, as GORM takes them, delete each row on its own physical
// database, with or without AllShards; comparing such a value with the
// statement's model panicked.
func TestDeleteOfRowsGivenByValue(t *testing.T) {
	db, p, direct, _ := routedOverN(t, 2, Config{Log: quiet}, &valueOwner{}, &valueMember{}, &revUser{})
	l := p.Layout()
	at := time.Now().Add(-time.Second)
	placed := func(shard, seq int) revUser {
		u := revUser{ID: l.Compose(at, shard, seq), Name: "u"}
		must(t, db.Create(&u).Error)
		return u
	}
	a, b, c, d := placed(10, 1), placed(6000, 1), placed(11, 1), placed(6001, 1)
	keep := placed(12, 1)
	owner := valueOwner{ID: l.Compose(at, 6002, 1), Name: "o"}
	must(t, db.Create(&owner).Error)
	calls := map[string]func() error{
		"Delete(row with a slice field)":     func() error { return db.Delete(owner).Error },
		"Delete(rows)":                       func() error { return db.Delete([]revUser{a, b}).Error },
		"AllShards Delete(rows)":             func() error { return db.Clauses(AllShards()).Delete([]revUser{c, d}).Error },
		"Delete(rows of a slice field type)": func() error { return db.Delete([]valueOwner{owner}).Error },
	}
	for name, call := range calls {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s panicked: %v", name, r)
				}
			}()
			if err := call(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}()
	}
	if n := rowsOn(t, direct, &valueOwner{}); n != 0 {
		t.Errorf("%d owners left, want 0", n)
	}
	var left []revUser
	for _, dd := range direct {
		var rows []revUser
		must(t, dd.Find(&rows).Error)
		left = append(left, rows...)
	}
	if len(left) != 1 || left[0].ID != keep.ID {
		t.Errorf("rows left: %+v, want only %d", left, keep.ID)
	}
}
