package shardid

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
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

// TestOddInputsOverTwoDatabasesDoNotPanic: odd values, destinations and
// clauses on two databases may be refused, never panic.
func TestOddInputsOverTwoDatabasesDoNotPanic(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{}, &revPhoto{}, &revPlain{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "u"} }, func(u *revUser) int64 { return u.ID })
	var nilUser *revUser
	var nilID *ID
	cases := map[string]func() error{
		"create nil elem":    func() error { return db.Create(&[]*revUser{nil}).Error },
		"create nil ptr":     func() error { return db.Create(nilUser).Error },
		"create empty array": func() error { return db.Create(&[0]revUser{}).Error },
		"in nested":          func() error { var u []revUser; return db.Where("id IN ?", [][]int64{{users[0].ID}}).Find(&u).Error },
		"in nil any":         func() error { var u []revUser; return db.Where("id IN ?", []any{nil, users[0].ID}).Find(&u).Error },
		"eq struct":          func() error { var u []revUser; return db.Where("id = ?", struct{}{}).Find(&u).Error },
		"eq nullint":         func() error { var u []revUser; return db.Where("id = ?", sql.NullInt64{}).Find(&u).Error },
		"eq nil *ID":         func() error { var u []revUser; return db.Where("id = ?", nilID).Find(&u).Error },
		"in nil *ID":         func() error { var u []revUser; return db.Where("id IN ?", []*ID{nilID}).Find(&u).Error },
		"clause IN nil":      func() error { var u []revUser; return db.Where(clause.IN{Column: "id", Values: nil}).Find(&u).Error },
		"clause eq col": func() error {
			var u []revUser
			return db.Where(clause.Eq{Column: clause.PrimaryColumn, Value: users[0].ID}).Find(&u).Error
		},
		"photo colocate nil": func() error { return db.Create(&revPhoto{}).Error },
		"bykey func":         func() error { var u []revUser; return db.Clauses(ByKey(func() {})).Find(&u).Error },
		"byid str":           func() error { var u []revUser; return db.Clauses(ByID("zz")).Find(&u).Error },
		"map dest fanout":    func() error { var m map[string]any; return db.Model(&revUser{}).Clauses(AllShards()).Find(&m).Error },
		"maps with nil order": func() error {
			var m []map[string]any
			return db.Model(&revUser{}).Clauses(AllShards()).Order("id").Find(&m).Error
		},
		"array dest fanout": func() error { var a [1]revUser; return db.Clauses(AllShards()).Find(&a).Error },
		"ptr slice fanout": func() error {
			var a []*revUser
			return db.Clauses(AllShards()).Order("id desc").Limit(1).Find(&a).Error
		},
		"int slice fanout": func() error {
			var a []int64
			return db.Model(&revUser{}).Clauses(AllShards()).Order("id").Pluck("id", &a).Error
		},
		"first int": func() error {
			var a int64
			return db.Model(&revUser{}).Clauses(AllShards()).Select("id").Order("id").First(&a).Error
		},
		"updates nil map":      func() error { return db.Model(users[0]).Updates(map[string]any(nil)).Error },
		"updates ptr nil map":  func() error { var m *map[string]any; return db.Model(users[0]).Updates(m).Error },
		"update id nil":        func() error { return db.Model(users[0]).Update("id", nil).Error },
		"update id nil ptr":    func() error { return db.Model(users[0]).Update("id", nilID).Error },
		"where nil model dest": func() error { return db.Model((*revUser)(nil)).Where("id = ?", users[0].ID).Update("name", "q").Error },
		"find nil dest":        func() error { return db.Model(&revUser{}).Where("id = ?", users[0].ID).Find(nil).Error },
		"scan fanout ptr ptr":  func() error { var u **revUser; return db.Model(&revUser{}).Clauses(AllShards()).Find(u).Error },
		"first uint":           func() error { var u revUser; return db.First(&u, uint64(1<<63)).Error },
		"find ids neg":         func() error { var u []revUser; return db.Find(&u, []int64{-1, users[0].ID}).Error },
		"swap nil":             func() error { return p.SwapShardMap(nil) },
		"delete with map":      func() error { return db.Model(&revUser{}).Delete(map[string]any{"id": users[0].ID}).Error },
		"delete gorm expr":     func() error { return db.Delete(&revUser{}, gorm.Expr("id = ?", users[0].ID)).Error },
	}
	for name, fn := range cases {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic: %v", name, r)
				}
			}()
			err := fn()
			t.Logf("%s: %v", name, err)
		}()
	}
	_ = fmt.Sprint
}
