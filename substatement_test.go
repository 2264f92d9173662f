package shardid

import (
	"errors"
	"strings"
	"testing"

	"gorm.io/gorm"
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

// A join written as SQL is known by its first word as the database reads
// it, after a comment or before a newline: its refusal names the table it
// joins, not its JOIN.
func TestARefusedSQLJoinAfterACommentNamesItsTable(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{}, &revPhoto{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "u"} }, func(u *revUser) int64 { return u.ID })
	for _, join := range []string{
		"/* the author */ JOIN rev_users ON rev_users.name = rev_photos.url",
		"LEFT\nJOIN rev_users ON rev_users.name = rev_photos.url",
	} {
		err := db.Where("user_id = ?", users[0].ID).Joins(join).Find(&[]revPhoto{}).Error
		if !errors.Is(err, ErrCrossShard) || !strings.Contains(err.Error(), "names the sharded table rev_users") {
			t.Errorf("%q: %v, want ErrCrossShard naming rev_users", join, err)
		}
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
		for _, join := range []string{
			"JOIN rev_users ON rev_users.id = rev_photos.user_id",
			"JOIN rev_users ON (rev_users.id = rev_photos.user_id)", // the same condition
		} {
			var ps []revPhoto
			must(t, db.Where("user_id = ?", u.ID).Joins(join).Find(&ps).Error)
			if len(ps) != 1 {
				t.Fatalf("a colocated SQL join (%s) found %d photos, want 1", join, len(ps))
			}
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

// A join on a subquery, written as SQL ("JOIN (?) AS s"), is as right as
// the subquery: one routed to the statement's database runs and finds its
// rows; one on another database, over every shard, or of an unsharded table
// is refused, and so is a ? GORM fills with SQL text the plugin cannot read.
func TestSQLJoinOnASubqueryIsCheckedAsTheSubquery(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{}, &revPhoto{}, &revPlain{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "u"} }, func(u *revUser) int64 { return u.ID })
	for _, u := range users {
		must(t, db.Create(&revPhoto{UserID: u.ID, URL: "x"}).Error)
	}
	join := "JOIN (?) AS s ON s.user_id = rev_users.id"
	photosOf := func(u *revUser) *gorm.DB { return db.Model(&revPhoto{}).Select("user_id").Where("user_id = ?", u.ID) }
	for _, outer := range []*gorm.DB{db.Clauses(ByID(users[0].ID)), db.Where("rev_users.id = ?", users[0].ID)} {
		var found []revUser
		must(t, outer.Joins(join, photosOf(users[0])).Find(&found).Error)
		if len(found) != 1 || found[0].ID != users[0].ID {
			t.Fatalf("a join on the user's own photos found %v, want the user", found)
		}
	}
	refused := map[string]*gorm.DB{
		"a subquery on the other database": db.Clauses(ByID(users[0].ID)).Joins(join, photosOf(users[1])),
		"a subquery over every shard":      db.Clauses(ByID(users[0].ID)).Joins(join, db.Model(&revPhoto{}).Select("user_id")),
		"SQL text in place of a subquery":  db.Clauses(ByID(users[0].ID)).Joins(join, gorm.Expr("SELECT user_id FROM rev_photos")),
		"an unsharded table's subquery":    db.Clauses(ByID(users[0].ID)).Joins("JOIN (?) AS s ON s.id = rev_users.id", db.Table("other_table").Select("id")),
	}
	for name, q := range refused {
		var found []revUser
		if err := q.Find(&found).Error; !errors.Is(err, ErrCrossShard) && !errors.Is(err, ErrNoShard) {
			t.Errorf("%s: %v and %d rows, want ErrCrossShard or ErrNoShard", name, err, len(found))
		}
	}
}

type gateGroup struct {
	ID   uint
	Name string
}

type gateUser struct {
	ID     int64 `shardid:""`
	Name   string
	Groups []gateGroup `gorm:"many2many:gate_user_groups"`
}

type gatePhoto struct {
	ID     int64 `shardid:"colocate:UserID"`
	UserID int64
	User   *gateUser
}

// A sharded table routing let a statement read once (a colocated join, a
// subquery sent to the same database, the model's join table joined along
// its key) named again elsewhere in its SQL (a select item, a join's other
// condition) would read that database's rows only: refused. A join table
// read anywhere but in a join along its owner's key is too.
func TestTablesReadAsOftenAsRoutingApproved(t *testing.T) {
	db, p, _ := revRouted(t, &gateUser{}, &gatePhoto{}, &gateGroup{})
	users := revOnBoth(t, db, p, func() *gateUser { return &gateUser{Name: "u"} }, func(u *gateUser) int64 { return u.ID })
	group := gateGroup{Name: "g"}
	must(t, db.Create(&group).Error)
	for _, u := range users {
		must(t, db.Model(u).Omit("Groups.*").Association("Groups").Append(&group))
		must(t, db.Create(&gatePhoto{UserID: u.ID}).Error)
	}
	x := users[0].ID
	photosOfX := db.Model(&gatePhoto{}).Select("user_id").Where("user_id = ?", x)
	usersOfX := db.Model(&gateUser{}).Select("id").Where("id = ?", x)
	for name, run := range map[string]func() error{
		"the join table in a select item": func() error {
			var n int64
			return db.Model(&gateUser{}).Select("(SELECT count(*) FROM gate_user_groups WHERE gate_group_id = ?)", group.ID).Where("id = ?", x).Scan(&n).Error
		},
		"the join table in a condition": func() error {
			return db.Where("id = ?", x).Where("NOT EXISTS (SELECT 1 FROM gate_user_groups ug WHERE ug.gate_group_id = ?)", group.ID).Find(&[]gateUser{}).Error
		},
		"the join table joined off its owner's key": func() error {
			return db.Where("gate_users.id = ?", x).Joins("JOIN gate_user_groups ug ON ug.gate_group_id = ?", group.ID).Find(&[]gateUser{}).Error
		},
		"a joined table again in a select item": func() error {
			var rows []map[string]any
			return db.Model(&gatePhoto{}).Joins("User").Select("gate_photos.id, (SELECT count(*) FROM gate_users) AS n").Where("gate_photos.user_id = ?", x).Find(&rows).Error
		},
		"its own table again, qualified by its schema, in a select item": func() error {
			var rows []map[string]any
			return db.Model(&gateUser{}).Select("id, (SELECT count(*) FROM main.gate_users) AS n").Where("id = ?", x).Find(&rows).Error
		},
		"its own table again, qualified by its schema, in an update's value": func() error {
			return db.Model(&gateUser{}).Where("id = ?", x).Update("name", gorm.Expr("(SELECT count(*) FROM main.gate_users)")).Error
		},
		"its own table in a subquery sent to the same database, and again in a select item": func() error {
			var rows []map[string]any
			return db.Model(&gateUser{}).Select("id, (SELECT count(*) FROM gate_users) AS n").Where("id = ?", x).Where("id IN (?)", usersOfX).Find(&rows).Error
		},
		"its own table again in a select item, in SQL not read for certain": func() error {
			var rows []map[string]any // SQLite reads a comment never closed to the end
			return db.Model(&gateUser{}).Select("id, (SELECT count(*) FROM gate_users) AS n").Where("id = ?", x).Order("id /* to the end").Find(&rows).Error
		},
		"a subquery's table again in a select item": func() error {
			var rows []map[string]any
			return db.Model(&gateUser{}).Select("id, (SELECT count(*) FROM gate_photos) AS n").Where("id = ?", x).Where("id IN (?)", photosOfX).Find(&rows).Error
		},
	} {
		if err := run(); !errors.Is(err, ErrCrossShard) {
			t.Errorf("%s: %v, want ErrCrossShard", name, err)
		}
	}
	for name, run := range map[string]func() (int, error){
		"the join table joined along its owner's key": func() (int, error) {
			var found []gateUser
			err := db.Where("gate_users.id = ?", x).Joins("JOIN gate_user_groups ON gate_user_groups.gate_user_id = gate_users.id").Find(&found).Error
			return len(found), err
		},
		"a colocated join": func() (int, error) {
			var found []gatePhoto
			err := db.Joins("User").Where("gate_photos.user_id = ?", x).Find(&found).Error
			return len(found), err
		},
		"its own table in a subquery sent to the same database": func() (int, error) {
			var found []gateUser
			err := db.Where("id = ?", x).Where("id IN (?)", usersOfX).Find(&found).Error
			return len(found), err
		},
		"a subquery sent to the same database": func() (int, error) {
			var found []gateUser
			err := db.Where("id = ?", x).Where("id IN (?)", photosOfX).Find(&found).Error
			return len(found), err
		},
	} {
		if n, err := run(); err != nil || n != 1 {
			t.Errorf("%s: %d rows, %v; want the one", name, n, err)
		}
	}
}
