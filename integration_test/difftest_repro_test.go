package integration

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// dtRepro is a fixed program: the smallest one found for a class of
// mismatches the differential test reported on main (issue 8). Each runs
// through the same comparison as the random programs, and like them fails
// the test on a mismatch.
type dtRepro struct {
	class string
	only  string // a backend the class needs, or ""
	steps func() []dtStmt
}

// createUsers is a statement creating n users into *into, spread over the
// physical databases by preset IDs that take them in turn: a repro over
// several databases never runs on one by chance.
func createUsers(n int, into *[]dtUser) dtStmt {
	layout := shardid.Layout{}.Normalized()
	ids := make([]int64, n) // the same in the plugin's run and the reference's
	for i := range ids {
		shard := (i%dtPhysical)*layout.ShardCount()/dtPhysical + i/dtPhysical
		ids[i] = layout.Compose(time.Now().Add(-time.Second), shard, int(presetSequence.Add(1))%layout.IDsPerTick())
	}
	return dtStmt{"Create(users)", fmt.Sprintf("users := make([]dtUser, %d) with IDs taking the databases in turn; db.Create(&users)", n), func(e *env) outcome {
		us := make([]dtUser, n)
		for i := range us {
			us[i] = dtUser{ID: ids[i], Name: dtNames[i%len(dtNames)]}
		}
		o := e.write(&us, func(db *gorm.DB) *gorm.DB { return db.Create(&us) })
		*into = us
		return o
	}}
}

// presetSequence keeps the IDs createUsers presets apart within a tick.
var presetSequence atomic.Int64

// physicalIndex is the physical database of an ID under the default layout,
// as newRig maps the logical shards.
func physicalIndex(id int64) int {
	layout := shardid.Layout{}.Normalized()
	return layout.Shard(id) * dtPhysical / layout.ShardCount()
}

var dtRepros = []dtRepro{
	{class: "has-many Replace refused after writing the new photo", steps: func() []dtStmt {
		var us []dtUser
		return []dtStmt{createUsers(1, &us), {"Replace", `db.Model(&users[0]).Association("Photos").Replace(&dtPhoto{URL: "r.jpg"})`, func(e *env) outcome {
			p := dtPhoto{URL: "r.jpg"}
			e.pre(&p)
			err := e.db.Model(&dtUser{ID: us[0].ID}).Association("Photos").Replace(&p)
			e.post(&p)
			return outcome{err: err, out: canon(&p, true)}
		}}}
	}},
	{class: "has-one Replace refused after writing the new profile", steps: func() []dtStmt {
		var us []dtUser
		return []dtStmt{createUsers(1, &us), {"Replace", `db.Model(&users[0]).Association("Profile").Replace(&dtProfile{Bio: "new"})`, func(e *env) outcome {
			p := dtProfile{Bio: "new"}
			e.pre(&p)
			err := e.db.Model(&dtUser{ID: us[0].ID}).Association("Profile").Replace(&p)
			e.post(&p)
			return outcome{err: err, out: canon(&p, true)}
		}}}
	}},
	{class: "many2many Delete and Clear run where the join table is not", steps: func() []dtStmt {
		var u dtUser
		return []dtStmt{
			{"Create(user+labels)", `u := dtUser{Name: "ann", Labels: []dtLabel{{Name: "a"}, {Name: "b"}}}; db.Create(&u)`, func(e *env) outcome {
				u = dtUser{Name: "ann", Labels: []dtLabel{{Name: "a"}, {Name: "b"}}}
				return e.write(&u, func(db *gorm.DB) *gorm.DB { return db.Create(&u) })
			}},
			{"Association(Labels).Delete", `db.Model(&u).Association("Labels").Delete(&u.Labels[0])`, func(e *env) outcome {
				return outcome{err: e.db.Model(&dtUser{ID: u.ID}).Association("Labels").Delete(&dtLabel{ID: u.Labels[0].ID})}
			}},
			{"Association(Labels).Clear", `db.Model(&u).Association("Labels").Clear()`, func(e *env) outcome {
				return outcome{err: e.db.Model(&dtUser{ID: u.ID}).Association("Labels").Clear()}
			}},
		}
	}},
	{class: "Select(\"*\").Updates writes id = 0, not refused", steps: func() []dtStmt {
		var us []dtUser
		return []dtStmt{createUsers(1, &us), {"Select(*).Updates", `db.Model(&dtUser{ID: users[0].ID}).Select("*").Updates(dtUser{Name: "eve"})`, execOnly(func(db *gorm.DB) *gorm.DB {
			return db.Model(&dtUser{ID: us[0].ID}).Select("*").Updates(dtUser{Name: "eve"})
		})}}
	}},
	{class: "a RETURNING delete over several databases runs on one", only: "not mariadb", steps: func() []dtStmt {
		var us []dtUser
		return []dtStmt{createUsers(9, &us), {"Returning.Delete", `db.Clauses(clause.Returning{}).Where("id IN ?", ids of users).Delete(&deleted)`, find(false, func(db *gorm.DB, deleted *[]dtUser) *gorm.DB {
			list := make([]int64, len(us))
			for i, u := range us {
				list[i] = u.ID
			}
			return db.Clauses(clause.Returning{}).Where("id IN ?", list).Delete(deleted)
		})}}
	}},
	{class: "a BeforeCreate hook that folds the hash key moves the row off its hash's shard", steps: func() []dtStmt {
		return []dtStmt{
			{"Create(account)", `db.Create(&dtAccount{Email: "dan@x.io"})`, func(e *env) outcome {
				a := dtAccount{Email: "dan@x.io"}
				return e.write(&a, func(db *gorm.DB) *gorm.DB { return db.Create(&a) })
			}},
			{"Create(account)", `db.Create(&dtAccount{Email: "Dan@x.io"}) // the hook folds it to dan@x.io: a duplicate`, func(e *env) outcome {
				a := dtAccount{Email: "Dan@x.io"}
				return e.write(&a, func(db *gorm.DB) *gorm.DB { return db.Create(&a) })
			}},
		}
	}},
	{class: "an upsert that updates leaves an ID no row has in the struct (and RowsAffected 2 on MariaDB)", steps: func() []dtStmt {
		up := func(balance int) dtStmt {
			return dtStmt{"Upsert(account)", fmt.Sprintf(`db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "email"}}, DoUpdates: clause.AssignmentColumns([]string{"balance"})}).Create(&dtAccount{Email: "eve@x.io", Balance: %d})`, balance), func(e *env) outcome {
				a := dtAccount{Email: "eve@x.io", Balance: balance}
				return e.write(&a, func(db *gorm.DB) *gorm.DB {
					return db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "email"}}, DoUpdates: clause.AssignmentColumns([]string{"balance"})}).Create(&a)
				})
			}}
		}
		return []dtStmt{up(1), up(2)}
	}},
	{class: "MariaDB: a hash key equal under the column's collation is not found", only: "mariadb", steps: func() []dtStmt {
		// Six keys: one at least hashes its upper-case variant to another database.
		var steps []dtStmt
		for _, name := range []string{"ann", "bob", "cy", "dan", "eve", "fay"} {
			email := name + "@x.io"
			steps = append(steps, dtStmt{"Create(account)", fmt.Sprintf("db.Create(&dtAccount{Email: %q})", email), func(e *env) outcome {
				a := dtAccount{Email: email}
				return e.write(&a, func(db *gorm.DB) *gorm.DB { return db.Create(&a) })
			}})
		}
		for _, name := range []string{"Ann", "Bob", "Cy", "Dan", "Eve", "Fay"} {
			email := name + "@x.io"
			steps = append(steps, dtStmt{"account by email", fmt.Sprintf("db.Where(\"email = ?\", %q).Find(&as)", email), find(false, func(db *gorm.DB, as *[]dtAccount) *gorm.DB {
				return db.Where("email = ?", email).Find(as)
			})})
		}
		return steps
	}},
	{class: "a preset ID whose shard disagrees with its colocate value is accepted", steps: func() []dtStmt {
		var us []dtUser
		return []dtStmt{createUsers(9, &us), {"Create(photo, preset ID)", `db.Create(&dtPhoto{ID: users[0].ID + 4, UserID: users[i].ID}) // users[i] on another database than users[0]`, func(e *env) outcome {
			owner := us[0]
			for _, u := range us {
				if physicalIndex(u.ID) != physicalIndex(us[0].ID) {
					owner = u
				}
			}
			p := dtPhoto{ID: us[0].ID + 4, UserID: owner.ID, URL: "preset.jpg"}
			return e.write(&p, func(db *gorm.DB) *gorm.DB { return db.Create(&p) })
		}}}
	}},
	{class: "raw SQL with a comment before the sharded table's name runs on the plugin's database", steps: func() []dtStmt {
		var us []dtUser
		return []dtStmt{createUsers(1, &us), {"Raw(comment)", `db.Raw("SELECT id, name FROM /* c */ dt_users WHERE id = ?", users[0].ID).Scan(&rows)`, find(false, func(db *gorm.DB, rows *[]dtUser) *gorm.DB {
			return db.Raw("SELECT id, name FROM /* c */ dt_users WHERE id = ?", us[0].ID).Scan(rows)
		})}}
	}},
	{class: "a write over several databases runs the model's hooks once per database", steps: func() []dtStmt {
		var us []dtUser
		return []dtStmt{createUsers(9, &us), {"Update(IN)", `db.Model(&dtUser{}).Where("id IN ?", ids of users).Update("age", 66) // BeforeUpdate/AfterUpdate once each without the plugin`, execOnly(func(db *gorm.DB) *gorm.DB {
			list := make([]int64, len(us))
			for i, u := range us {
				list[i] = u.ID
			}
			return db.Model(&dtUser{}).Where("id IN ?", list).Update("age", 66)
		})}}
	}},
	{class: "AllShards with Limit runs AfterFind for rows the merge drops", steps: func() []dtStmt {
		var us []dtUser
		return []dtStmt{createUsers(9, &us), {"AllShards.Order.Limit", `db.Clauses(shardid.AllShards()).Order("id").Limit(1).Find(&us) // AfterFind once without the plugin`, find(true, func(db *gorm.DB, got *[]dtUser) *gorm.DB {
			return db.Clauses(shardid.AllShards()).Order("id").Limit(1).Find(got)
		})}}
	}},
	{class: "a subquery over the statement's own table in a select list reads one database", steps: func() []dtStmt {
		var us []dtUser
		return []dtStmt{createUsers(9, &us), {"Fragment(select)", `db.Model(&dtUser{}).Select("id, (SELECT count(*) FROM dt_users) AS n").Where("id = ?", users[0].ID).Scan(&row) // n = 9 without the plugin`, one(func(db *gorm.DB, row *idRow) *gorm.DB {
			return db.Model(&dtUser{}).Select("id, (SELECT count(*) FROM dt_users) AS n").Where("id = ?", us[0].ID).Scan(row)
		})}}
	}},
	{class: "a subquery over the statement's own table in an update's gorm.Expr value reads each part's database", steps: func() []dtStmt {
		var us []dtUser
		return []dtStmt{createUsers(9, &us), {"Fragment(set)", `db.Clauses(shardid.AllShards()).Model(&dtUser{}).Where("age >= ?", 0).Update("age", gorm.Expr("(SELECT count(*) FROM dt_users AS u2)")) // age = 9 everywhere without the plugin`, execOnly(func(db *gorm.DB) *gorm.DB {
			return db.Clauses(shardid.AllShards()).Model(&dtUser{}).Where("age >= ?", 0).Update("age", gorm.Expr("(SELECT count(*) FROM dt_users AS u2)"))
		})}}
	}},
	{class: "a subquery over the statement's own table in a condition given as gorm.Expr reads one database", steps: func() []dtStmt {
		var us []dtUser
		return []dtStmt{createUsers(9, &us), {"Fragment(where)", `db.Where("id = ?", users[0].ID).Where("?", gorm.Expr("(SELECT count(*) FROM dt_users AS u2) = ?", 9)).Find(&us) // users[0] without the plugin`, find(false, func(db *gorm.DB, got *[]dtUser) *gorm.DB {
			return db.Where("id = ?", us[0].ID).Where("?", gorm.Expr("(SELECT count(*) FROM dt_users AS u2) = ?", 9)).Find(got)
		})}}
	}},
	{class: "a slice's rows split over databases: a row's hook condition binds only its own part", steps: func() []dtStmt {
		var us []dtUser
		var ns []dtNote
		return []dtStmt{createUsers(9, &us),
			{"Create(notes)", `db.Create(&[]dtNote{{UserID: a, Slug: "x", Likes: 1}, {UserID: b, Slug: "x", Likes: 2}}) // a, b: users on two databases`, func(e *env) outcome {
				a, b := us[0], us[0]
				for _, u := range us {
					if physicalIndex(u.ID) != physicalIndex(a.ID) {
						b = u
					}
				}
				list := []dtNote{{UserID: a.ID, Slug: "x", Likes: 1}, {UserID: b.ID, Slug: "x", Likes: 2}}
				o := e.write(&list, func(db *gorm.DB) *gorm.DB { return db.Create(&list) })
				ns = list
				return o
			}},
			{"HookWhere(notes)", `db.Model(&[]dtNote{{ID: notes[0].ID, Likes: 1}, {ID: notes[1].ID, Likes: 2}}).Update("locked", true) // each row's BeforeUpdate adds likes = its likes: on one database likes = 1 AND likes = 2, nothing updated`, execOnly(func(db *gorm.DB) *gorm.DB {
				read := []dtNote{{ID: ns[0].ID, Likes: 1}, {ID: ns[1].ID, Likes: 2}}
				return db.Model(&read).Update("locked", true)
			})},
		}
	}},
	{class: "a shard clause on a transaction with a statement for another database (control: must be refused, no mismatch)", steps: func() []dtStmt {
		var us []dtUser
		return []dtStmt{createUsers(9, &us), {"Transaction(two users)", `db.Clauses(shardid.ByID(users[0].ID)).Transaction(func(tx) { update users[0]; update every other user })`, func(e *env) outcome {
			err := e.db.Clauses(shardid.ByID(us[0].ID)).Transaction(func(tx *gorm.DB) error {
				for _, u := range us {
					if err := tx.Model(&dtUser{ID: u.ID}).Update("age", 5).Error; err != nil {
						return err
					}
				}
				return nil
			})
			return outcome{err: err}
		}}}
	}},
}

// TestDifferentialRepros runs the fixed programs; a class whose program
// mismatches again fails the test.
func TestDifferentialRepros(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		run := newRun(t, newRig(t, b))
		for _, repro := range dtRepros {
			if repro.only == "mariadb" && b.name != "mariadb" || repro.only == "not mariadb" && b.name == "mariadb" {
				continue
			}
			run.restart()
			agreed := true
			for _, s := range repro.steps() {
				s.op = repro.class + ": " + s.op
				if !run.step(s) {
					agreed = false
					break
				}
			}
			t.Logf("%-5v %s", agreed, repro.class)
		}
		run.report("fixed program")
	})
}

// TestDifferentialCatches shows the comparison is not vacuous: a statement
// that does something else with the plugin than without, or is refused
// after writing, is a mismatch; one refused having written nothing is not.
func TestDifferentialCatches(t *testing.T) {
	run := newRun(t, newRig(t, backends[0]))
	var us []dtUser
	if !run.step(createUsers(3, &us)) {
		t.Fatalf("creating users mismatched: %v", run.mismatches)
	}
	cases := []struct {
		name  string
		stmt  dtStmt
		agree bool
	}{
		{"another row count", dtStmt{"fake", "age 1 with the plugin, 2 without", execOnly(func(db *gorm.DB) *gorm.DB {
			age := 1
			if db.Config.Plugins[shardid.New(shardid.Config{}).Name()] == nil {
				age = 2
			}
			return db.Model(&dtUser{ID: us[0].ID}).Update("age", age)
		})}, false},
		{"another result", dtStmt{"fake", "a result only with the plugin", func(e *env) outcome {
			return outcome{out: fmt.Sprint(e.ref)}
		}}, false},
		{"refused after writing", dtStmt{"fake", "writes, then says ErrNoShard", func(e *env) outcome {
			err := e.db.Model(&dtUser{ID: us[1].ID}).Update("age", 9).Error
			return outcome{err: fmt.Errorf("%w: on purpose (%v)", shardid.ErrNoShard, err)}
		}}, false},
		{"refused, nothing written", dtStmt{"fake", "says ErrCrossShard", func(*env) outcome {
			return outcome{err: fmt.Errorf("%w: on purpose", shardid.ErrCrossShard)}
		}}, true},
		{"same on both", dtStmt{"fake", "the same update", execOnly(func(db *gorm.DB) *gorm.DB {
			return db.Model(&dtUser{ID: us[2].ID}).Update("age", 3)
		})}, true},
	}
	for _, c := range cases {
		run.restart()
		if !run.step(createUsers(3, &us)) {
			t.Fatalf("%s: creating users mismatched", c.name)
		}
		if got := run.step(c.stmt); got != c.agree {
			t.Errorf("%s: agreed = %v, want %v", c.name, got, c.agree)
		}
	}
}
