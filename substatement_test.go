package shardid

import (
	"errors"
	"testing"
)

// A join or subquery written in SQL on another sharded table would run on the
// statement's one database and miss the rows of the others: it is refused.
func TestSQLJoinOfAnotherShardedTableMissesNoRowsSilently(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{}, &revPhoto{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "u"} }, func(u *revUser) int64 { return u.ID })
	must(t, db.Model(users[1]).Update("name", "bob").Error)
	photo := revPhoto{UserID: users[0].ID, URL: "bob"} // on database 0; the user named like its URL is on 1
	must(t, db.Create(&photo).Error)

	var joined []revPhoto
	err := db.Where("user_id = ?", users[0].ID).Joins("JOIN rev_users ON rev_users.name = rev_photos.url").Find(&joined).Error
	if err == nil && len(joined) != 1 {
		t.Errorf("Joins in SQL: %d rows and no error, one database returns 1", len(joined))
	}
	var sub []revPhoto
	err = db.Where("user_id = ?", users[0].ID).Where("url IN (SELECT name FROM rev_users)").Find(&sub).Error
	if err == nil && len(sub) != 1 {
		t.Errorf("subquery in SQL: %d rows and no error, one database returns 1", len(sub))
	}
	var n int64
	err = db.Model(&revPhoto{}).Where("user_id = ?", users[0].ID).Where("EXISTS (SELECT 1 FROM rev_users u WHERE u.name = rev_photos.url)").Count(&n).Error
	if err == nil && n != 1 {
		t.Errorf("EXISTS in SQL: count %d and no error, one database counts 1", n)
	}
}

// A join written as SQL along the colocate column reads rows that are all on
// the statement's database: it runs. Named in SQL but not so joined, or in a
// subquery, another sharded table is refused rather than read from one
// database.
func TestSQLJoinsAlongTheColocateColumnRun(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{}, &revPhoto{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "u"} }, func(u *revUser) int64 { return u.ID })
	for _, u := range users {
		must(t, db.Create(&revPhoto{UserID: u.ID, URL: "x"}).Error)
		var ps []revPhoto
		must(t, db.Where("user_id = ?", u.ID).Joins("JOIN rev_users ON rev_users.id = rev_photos.user_id").Find(&ps).Error)
		if len(ps) != 1 {
			t.Fatalf("a colocated SQL join found %d photos, want 1", len(ps))
		}
	}
	err := db.Where("user_id = ?", users[0].ID).Where("url IN (SELECT name FROM rev_users)").Find(&[]revPhoto{}).Error
	if !errors.Is(err, ErrCrossShard) {
		t.Fatalf("a subquery on another sharded table: %v, want ErrCrossShard", err)
	}
	err = db.Clauses(ByID(users[0].ID)).Where("url IN (SELECT name FROM rev_users)").Find(&[]revPhoto{}).Error
	if err != nil {
		t.Fatalf("the same under a shard clause, which says to read that shard: %v", err)
	}
}
