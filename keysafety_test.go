package shardid

import (
	"errors"
	"testing"
)

// A Create of a slice split over two databases, whose second part the key
// check refuses, is refused before any part is written.
func TestRefusedSplitCreateWritesNothing(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{}, &revPhoto{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "u"} }, func(u *revUser) int64 { return u.ID })
	photos := []revPhoto{
		{UserID: users[0].ID, URL: "fine.jpg"},                 // on database 0
		{ID: users[1].ID, UserID: users[0].ID, URL: "bad.jpg"}, // its ID says database 1, its user database 0
	}
	err := db.Create(&photos).Error
	if !errors.Is(err, ErrCrossShard) && !errors.Is(err, ErrNoShard) && !errors.Is(err, ErrInvalidID) {
		t.Fatalf("Create: got %v, want a refusal", err)
	}
	for k, d := range direct {
		var n int64
		must(t, d.Model(&revPhoto{}).Count(&n).Error)
		if n != 0 {
			t.Errorf("refused Create (%v) left %d photos on database %d", err, n, k)
		}
	}
}

// An update over two databases whose second part the key check refuses is
// refused before the first part is written.
func TestRefusedFanOutUpdateWritesNothing(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{}, &revPhoto{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "u"} }, func(u *revUser) int64 { return u.ID })
	p0 := revPhoto{UserID: users[0].ID, URL: "a"} // on database 0
	p1 := revPhoto{UserID: users[1].ID, URL: "b"} // on database 1
	must(t, db.Create(&p0).Error)
	must(t, db.Create(&p1).Error)
	// p0 may take users[0] (its own user), p1 may not: the key check refuses p1's part.
	err := db.Model(&revPhoto{}).Where("id IN ?", []int64{p0.ID, p1.ID}).Updates(map[string]any{"user_id": users[0].ID, "url": "moved"}).Error
	if err == nil {
		t.Fatalf("moving p1 to a user of another database was not refused")
	}
	var got revPhoto
	must(t, direct[0].First(&got, p0.ID).Error)
	if got.URL == "moved" {
		t.Errorf("refused update (%v) changed p0 on database 0: %+v", err, got)
	}
}
