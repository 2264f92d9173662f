package shardid

import (
	"errors"
	"testing"
)

type revUser struct {
	ID   int64 `shardid:""`
	Name string
}

type revPhoto struct {
	ID     int64 `shardid:"colocate:UserID"`
	UserID int64
	URL    string
}

// A Create of a slice split over two databases, whose second part the key
// check refuses, reports ErrCrossShard after its first part was committed.
func TestReviewRefusedSplitCreateWritesNothing(t *testing.T) {
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
