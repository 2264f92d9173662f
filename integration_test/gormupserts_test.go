package integration

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// upsItem is the model of the upsert forms: unique by its code as well as
// its key, with a soft delete. On the plain database its key is GORM's
// auto-increment, which the plugin answers as (RETURNING the stored key).
type upsItem struct {
	ID        int64  `shardid:""`
	Code      string `gorm:"uniqueIndex;size:32"`
	Name      string `gorm:"size:32"`
	N         int
	DeletedAt gorm.DeletedAt
}

// upsTwin holds the plugin's databases and one plain database with the
// same rows, and makes IDs on a chosen physical database.
type upsTwin struct {
	k    *keys
	base time.Time
	seq  int
	// blind compares keys made by the insert (zero keys) as equal: those
	// above made, the last ID the test composed, or below first, the first.
	blind       bool
	first, made int64
	// unreturned compares the error and the rows stored only: GORM with an
	// auto-increment key counts a DoNothing's every row whose key is preset
	// as returned (documented in limits.md).
	unreturned bool
}

// idOn makes a fresh ID placing its row on physical database p.
func (u *upsTwin) idOn(p int) int64 {
	l := u.k.plugin.Layout()
	u.seq++
	id := l.Compose(u.base, p*l.ShardCount()/physicalShards, u.seq)
	if u.first == 0 || id < u.first {
		u.first = id
	}
	u.made = max(u.made, id)
	return id
}

// rows reads every row, deleted or not, in the order of its key.
func (u *upsTwin) rows(t *testing.T, db *gorm.DB) string {
	t.Helper()
	var rows []upsItem
	must(t, db.Session(&gorm.Session{}).Unscoped().Order("id").Find(&rows).Error)
	var out []string
	for _, r := range rows {
		if u.blind && (r.ID > u.made || r.ID < u.first) {
			r.ID = -1 // made by the plugin on one side, by the database on the other
		}
		out = append(out, fmt.Sprintf("{%q %d %q %d deleted:%v}\n", r.Code, r.ID, r.Name, r.N, r.DeletedAt.Valid))
	}
	slices.Sort(out) // by code: the made keys order differently on each side
	return strings.Join(out, "")
}

// blindIDs zeroes in v (an upsItem or a slice of them) the keys made by the
// insert itself.
func (u *upsTwin) blindIDs(v any) {
	switch x := v.(type) {
	case *upsItem:
		if x.ID > u.made || x.ID < u.first {
			x.ID = -1
		}
	case *[]upsItem:
		for i := range *x {
			u.blindIDs(&(*x)[i])
		}
	}
}

// same runs write through the plugin and on the plain database: both give
// the same error kind, RowsAffected, values scanned back into into, and
// stored rows; or the plugin refuses it with a named error, writing nothing.
func (u *upsTwin) same(t *testing.T, name string, write func(db *gorm.DB, into any) *gorm.DB, into func() any) {
	t.Helper()
	sharded := u.k.db.Clauses(shardid.AllShards()).Session(&gorm.Session{})
	before := u.rows(t, sharded)
	want, got := into(), into()
	g := write(u.k.db.Session(&gorm.Session{}), got)
	if errors.Is(g.Error, shardid.ErrCrossShard) || errors.Is(g.Error, shardid.ErrNoShard) || errors.Is(g.Error, shardid.ErrNotAtomic) {
		t.Logf("%s: refused: %v", name, g.Error)
		if after := u.rows(t, sharded); after != before {
			t.Errorf("%s: refused, yet wrote:\nbefore:\n%safter:\n%s", name, before, after)
		}
		return
	}
	w := write(u.k.main.Session(&gorm.Session{}), want)
	if u.blind {
		u.blindIDs(want)
		u.blindIDs(got)
	}
	switch {
	case (w.Error == nil) != (g.Error == nil) || w.Error != nil && !errors.Is(g.Error, w.Error) && !strings.Contains(g.Error.Error(), w.Error.Error()):
		t.Errorf("%s: one database: %v; every shard: %v", name, w.Error, g.Error)
	case w.Error == nil && !u.unreturned && (!reflect.DeepEqual(want, got) || w.RowsAffected != g.RowsAffected):
		t.Errorf("%s:\none database: %+v (%d rows)\nevery shard:  %+v (%d rows)", name, want, w.RowsAffected, got, g.RowsAffected)
	}
	if w, g := u.rows(t, u.k.main), u.rows(t, sharded); w != g {
		t.Errorf("after %s:\none database:\n%severy shard:\n%s", name, w, g)
	}
}

// stored is same for a DoNothing, comparing the error and the rows stored.
func (u *upsTwin) stored(t *testing.T, name string, write func(db *gorm.DB, into any) *gorm.DB, into func() any) {
	t.Helper()
	u.unreturned = true
	defer func() { u.unreturned = false }()
	u.same(t, name, write, into)
}

func newUpsTwin(t *testing.T, b backend) (*upsTwin, []upsItem) {
	k := newKeys(t, b)
	fresh(t, k.db, &upsItem{})
	must(t, k.main.Migrator().DropTable(&upsItem{}))
	must(t, k.main.AutoMigrate(&upsItem{}))
	u := &upsTwin{k: k, base: time.Now().Add(-3 * time.Second)}
	seed := make([]upsItem, physicalShards)
	for p := range seed {
		seed[p] = upsItem{ID: u.idOn(p), Code: fmt.Sprint("c", p), Name: "seed", N: p}
		must(t, k.db.Create(&seed[p]).Error)
		must(t, k.main.Create(&seed[p]).Error)
	}
	return u, seed
}

// TestUpsertFormsAnswerAsOneDatabase: GORM's upsert forms (OnConflict
// DoNothing, UpdateAll, AssignmentColumns, Assignments, Columns naming the
// key or the other unique column, Where), Save of new, existing and zero-key
// rows and of batches over several databases, CreateInBatches with
// OnConflict, on a model unique by a second column and soft-deleted, give
// through the plugin the error kind, RowsAffected, values scanned back and
// rows stored that they give on one database without it, or are refused
// with a named error, writing nothing.
func TestUpsertFormsAnswerAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		u, seed := newUpsTwin(t, b)
		one := func() any { return &upsItem{} }
		many := func() any { return &[]upsItem{} }
		code := []clause.Column{{Name: "code"}}
		key := []clause.Column{{Name: "id"}}
		create := func(oc clause.OnConflict, row upsItem) func(db *gorm.DB, into any) *gorm.DB {
			return func(db *gorm.DB, into any) *gorm.DB {
				*into.(*upsItem) = row
				return db.Clauses(oc).Create(into)
			}
		}
		createAll := func(oc clause.OnConflict, rows ...upsItem) func(db *gorm.DB, into any) *gorm.DB {
			return func(db *gorm.DB, into any) *gorm.DB {
				*into.(*[]upsItem) = append([]upsItem(nil), rows...)
				return db.Clauses(oc).Create(into)
			}
		}
		s0, s1, s2, s3 := seed[0], seed[1], seed[2], seed[3]
		u.stored(t, "DoNothing over an existing key", create(clause.OnConflict{DoNothing: true}, upsItem{ID: s0.ID, Code: "x", Name: "n"}), one)
		u.stored(t, "DoNothing of a new row", create(clause.OnConflict{DoNothing: true}, upsItem{ID: u.idOn(1), Code: "d1", Name: "n"}), one)
		u.stored(t, "DoNothing over the code on its database", create(clause.OnConflict{DoNothing: true}, upsItem{ID: u.idOn(2), Code: s2.Code, Name: "n"}), one)
		u.stored(t, "DoNothing Columns(code) over the code on its database", create(clause.OnConflict{Columns: code, DoNothing: true}, upsItem{ID: u.idOn(3), Code: s3.Code}), one)
		u.same(t, "UpdateAll over an existing key", create(clause.OnConflict{UpdateAll: true}, upsItem{ID: s0.ID, Code: s0.Code, Name: "all", N: 10}), one)
		u.same(t, "UpdateAll unchanged", create(clause.OnConflict{UpdateAll: true}, upsItem{ID: s0.ID, Code: s0.Code, Name: "all", N: 10}), one)
		u.same(t, "UpdateAll Columns(code) over the code on its database", create(clause.OnConflict{Columns: code, UpdateAll: true}, upsItem{ID: u.idOn(1), Code: s1.Code, Name: "bycode", N: 11}), one)
		u.same(t, "AssignmentColumns Columns(id)", create(clause.OnConflict{Columns: key, DoUpdates: clause.AssignmentColumns([]string{"name"})}, upsItem{ID: s2.ID, Code: s2.Code, Name: "ac"}), one)
		u.same(t, "AssignmentColumns Columns(code)", create(clause.OnConflict{Columns: code, DoUpdates: clause.AssignmentColumns([]string{"name", "n"})}, upsItem{ID: u.idOn(2), Code: s2.Code, Name: "ac2", N: 22}), one)
		u.same(t, "Assignments map", create(clause.OnConflict{Columns: key, DoUpdates: clause.Assignments(map[string]any{"n": gorm.Expr("n + 100")})}, upsItem{ID: s3.ID, Code: s3.Code}), one)
		u.same(t, "Assignments map, Columns(code)", create(clause.OnConflict{Columns: code, DoUpdates: clause.Assignments(map[string]any{"name": "m"})}, upsItem{ID: u.idOn(3), Code: s3.Code}), one)
		if b.name != "mariadb" {
			u.same(t, "Where false", create(clause.OnConflict{Columns: key, Where: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "1 = 0"}}}, DoUpdates: clause.AssignmentColumns([]string{"name"})}, upsItem{ID: s0.ID, Code: s0.Code, Name: "w"}), one)
			u.same(t, "Where true", create(clause.OnConflict{Columns: key, Where: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "1 = 1"}}}, DoUpdates: clause.AssignmentColumns([]string{"name"})}, upsItem{ID: s0.ID, Code: s0.Code, Name: "w"}), one)
		}
		if b.name != "mariadb" {
			u.same(t, "Where true, Columns(code), over the code on its database", create(clause.OnConflict{Columns: code, Where: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "1 = 1"}}}, DoUpdates: clause.AssignmentColumns([]string{"name"})}, upsItem{ID: u.idOn(0), Code: s0.Code, Name: "wc"}), one)
		}
		if b.name == "postgres" {
			u.same(t, "OnConstraint", create(clause.OnConflict{OnConstraint: "ups_items_pkey", DoUpdates: clause.AssignmentColumns([]string{"name"})}, upsItem{ID: s1.ID, Code: s1.Code, Name: "oc"}), one)
		}
		u.same(t, "UpdateAll of a batch over every database", createAll(clause.OnConflict{UpdateAll: true},
			upsItem{ID: s0.ID, Code: s0.Code, Name: "b"}, upsItem{ID: s1.ID, Code: s1.Code, Name: "b"},
			upsItem{ID: u.idOn(2), Code: "b2", Name: "b"}, upsItem{ID: s3.ID, Code: s3.Code, Name: "all", N: 10}), many)
		u.stored(t, "DoNothing of a batch over every database", createAll(clause.OnConflict{DoNothing: true},
			upsItem{ID: s0.ID, Code: "y0"}, upsItem{ID: u.idOn(1), Code: "y1"}, upsItem{ID: u.idOn(2), Code: "b2"}, upsItem{ID: u.idOn(3), Code: "y3"}), many)
		u.same(t, "Save of an existing row", func(db *gorm.DB, into any) *gorm.DB {
			*into.(*upsItem) = upsItem{ID: s2.ID, Code: s2.Code, Name: "saved", N: 5}
			return db.Save(into)
		}, one)
		u.same(t, "Save of an unchanged row", func(db *gorm.DB, into any) *gorm.DB {
			*into.(*upsItem) = upsItem{ID: s2.ID, Code: s2.Code, Name: "saved", N: 5}
			return db.Save(into)
		}, one)
		n0, n1, n3 := u.idOn(0), u.idOn(1), u.idOn(3)
		r1, r2 := u.idOn(1), u.idOn(2)
		u.same(t, "Save of a new row with its key", func(db *gorm.DB, into any) *gorm.DB {
			*into.(*upsItem) = upsItem{ID: n0, Code: "s0", Name: "new"}
			return db.Save(into)
		}, one)
		u.same(t, "Save of a slice of new and existing rows", func(db *gorm.DB, into any) *gorm.DB {
			*into.(*[]upsItem) = []upsItem{{ID: s0.ID, Code: s0.Code, Name: "ss"}, {ID: n1, Code: "ss1"}, {ID: s3.ID, Code: s3.Code, Name: "ss"}}
			return db.Save(into)
		}, many)
		u.same(t, "Save of a soft-deleted row", func(db *gorm.DB, into any) *gorm.DB {
			if err := db.Delete(&upsItem{ID: s1.ID}).Error; err != nil {
				return db
			}
			*into.(*upsItem) = upsItem{ID: s1.ID, Code: s1.Code, Name: "undeleted"}
			return db.Save(into)
		}, one)
		u.same(t, "UpdateAll Columns(code) of a batch over several databases, some over a code", createAll(clause.OnConflict{Columns: code, UpdateAll: true},
			upsItem{ID: u.idOn(1), Code: s1.Code, Name: "bc"}, upsItem{ID: u.idOn(2), Code: "bc2", Name: "bc"},
			upsItem{ID: u.idOn(3), Code: s3.Code, Name: "bc"}, upsItem{ID: u.idOn(0), Code: "bc0", Name: "bc"}), many)
		u.same(t, "UpdateAll with Omit", func(db *gorm.DB, into any) *gorm.DB {
			*into.(*[]upsItem) = []upsItem{{ID: s0.ID, Code: s0.Code, Name: "omit", N: 50}, {ID: s2.ID, Code: s2.Code, Name: "omit", N: 50}}
			return db.Omit("n").Clauses(clause.OnConflict{UpdateAll: true}).Create(into)
		}, many)
		u.same(t, "Save with Select", func(db *gorm.DB, into any) *gorm.DB {
			*into.(*upsItem) = upsItem{ID: s3.ID, Code: s3.Code, Name: "sel", N: 60}
			return db.Select("n").Save(into)
		}, one)
		u.same(t, "Save with Select of a new row", func(db *gorm.DB, into any) *gorm.DB {
			*into.(*upsItem) = upsItem{ID: n0 + 1, Code: "ssel", Name: "sel", N: 61}
			return db.Select("id", "code", "n").Save(into)
		}, one)
		u.same(t, "UpdateAll of a batch naming one key twice", createAll(clause.OnConflict{UpdateAll: true},
			upsItem{ID: s1.ID, Code: s1.Code, Name: "twice1"}, upsItem{ID: s1.ID, Code: s1.Code, Name: "twice2"}), many)
		if b.name != "mariadb" {
			u.same(t, "UpdateAll Columns(code) RETURNING every column over several databases", func(db *gorm.DB, into any) *gorm.DB {
				*into.(*[]upsItem) = []upsItem{{ID: r1, Code: s1.Code, Name: "ret"}, {ID: r2, Code: "ret2", Name: "ret"}}
				return db.Clauses(clause.Returning{}, clause.OnConflict{Columns: code, UpdateAll: true}).Create(into)
			}, many)
			u.same(t, "DoUpdates Where false of a batch over several databases", createAll(clause.OnConflict{Columns: key, Where: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "1 = 0"}}}, DoUpdates: clause.AssignmentColumns([]string{"name"})},
				upsItem{ID: s0.ID, Code: s0.Code, Name: "wf"}, upsItem{ID: s3.ID, Code: s3.Code, Name: "wf"}), many)
		}
		u.same(t, "Save in a transaction of rows on several databases", func(db *gorm.DB, into any) *gorm.DB {
			*into.(*[]upsItem) = []upsItem{{ID: s0.ID, Code: s0.Code, Name: "tx"}, {ID: s2.ID, Code: s2.Code, Name: "tx"}}
			var res *gorm.DB
			err := db.Transaction(func(tx *gorm.DB) error {
				res = tx.Save(into)
				return res.Error
			})
			if res == nil {
				db.AddError(err)
				return db
			}
			res.Error = err
			return res
		}, many)
		u.same(t, "CreateInBatches with UpdateAll", func(db *gorm.DB, into any) *gorm.DB {
			*into.(*[]upsItem) = []upsItem{{ID: s0.ID, Code: s0.Code, Name: "cib"}, {ID: s2.ID, Code: s2.Code, Name: "cib"}, {ID: n3, Code: "cib3"}}
			return db.Clauses(clause.OnConflict{UpdateAll: true}).CreateInBatches(into, 2)
		}, many)
	})
}

// TestUpsertFormsOfNewKeysAnswerAsOneDatabase: Save of a row with a zero
// key, of a slice mixing zero keys with existing rows over several
// databases, FirstOrCreate with Attrs and Assign creating or updating (a
// soft-deleted row's code too), give
// through the plugin what they give on one database, the keys each side
// makes aside; or are refused with a named error, writing nothing.
func TestUpsertFormsOfNewKeysAnswerAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		u, seed := newUpsTwin(t, b)
		u.blind = true
		one := func() any { return &upsItem{} }
		many := func() any { return &[]upsItem{} }
		s0, s1, s2, s3 := seed[0], seed[1], seed[2], seed[3]
		u.same(t, "Save of a zero key", func(db *gorm.DB, into any) *gorm.DB {
			*into.(*upsItem) = upsItem{Code: "z0", Name: "zero"}
			return db.Save(into)
		}, one)
		u.same(t, "Save of a slice of zero keys and existing rows", func(db *gorm.DB, into any) *gorm.DB {
			*into.(*[]upsItem) = []upsItem{{ID: s0.ID, Code: s0.Code, Name: "zs"}, {Code: "z1"}, {ID: s3.ID, Code: s3.Code, Name: "zs"}}
			return db.Save(into)
		}, many)
		u.same(t, "Save of a slice of zero keys", func(db *gorm.DB, into any) *gorm.DB {
			*into.(*[]upsItem) = []upsItem{{Code: "z2"}, {Code: "z3"}}
			return db.Save(into)
		}, many)
		all := func(db *gorm.DB) *gorm.DB { return db.Clauses(shardid.AllShards()) }
		u.same(t, "FirstOrCreate creating", func(db *gorm.DB, into any) *gorm.DB {
			return all(db).Where(upsItem{Code: "f0"}).Attrs(upsItem{Name: "attr"}).FirstOrCreate(into)
		}, one)
		u.same(t, "FirstOrCreate creating with Assign", func(db *gorm.DB, into any) *gorm.DB {
			return all(db).Where(upsItem{Code: "f1"}).Assign(upsItem{N: 7}).FirstOrCreate(into)
		}, one)
		u.same(t, "FirstOrCreate found with Assign", func(db *gorm.DB, into any) *gorm.DB {
			return all(db).Where(upsItem{Code: s1.Code}).Assign(upsItem{N: 8}).FirstOrCreate(into)
		}, one)
		must(t, u.k.db.Delete(&upsItem{ID: s2.ID}).Error)
		must(t, u.k.main.Delete(&upsItem{ID: s2.ID}).Error)
		u.same(t, "FirstOrCreate of a soft-deleted row", func(db *gorm.DB, into any) *gorm.DB {
			return all(db).Where(upsItem{Code: s2.Code}).Attrs(upsItem{ID: u.idOn(2)}).FirstOrCreate(into)
		}, one)
	})
}

// upsAccount is placed by the hash of its email, which is unique too.
type upsAccount struct {
	ID    int64  `shardid:"hash:Email"`
	Email string `gorm:"uniqueIndex;size:64"`
	Name  string `gorm:"size:32"`
	N     int
}

// TestUpsertFormsOfAHashKeyAnswerAsOneDatabase: on a model placed by the
// hash of a unique email, upserts conflicting on the email (rows with zero
// keys, alone or in a batch over several databases), Save of a zero key
// whose email is taken and FirstOrCreate by the email give through the
// plugin the error kind, RowsAffected, keys read back (the stored row's) and
// rows stored that they give on one database, the keys made by each side for
// new rows aside.
func TestUpsertFormsOfAHashKeyAnswerAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		fresh(t, k.db, &upsAccount{})
		must(t, k.main.Migrator().DropTable(&upsAccount{}))
		must(t, k.main.AutoMigrate(&upsAccount{}))
		seed := []upsAccount{{Email: "a@x"}, {Email: "b@x"}, {Email: "c@x"}, {Email: "d@x"}, {Email: "e@x"}, {Email: "f@x"}}
		must(t, k.db.Create(&seed).Error)
		must(t, k.main.Create(&seed).Error)
		seeded := map[int64]bool{}
		for _, s := range seed {
			seeded[s.ID] = true
		}
		blind := func(rows []upsAccount) string {
			var out []string
			for _, r := range rows {
				if !seeded[r.ID] {
					r.ID = -1 // made by the plugin on one side, by the database on the other
				}
				out = append(out, fmt.Sprintf("%+v", r))
			}
			slices.Sort(out)
			return strings.Join(out, "\n")
		}
		stored := func(db *gorm.DB) string {
			var rows []upsAccount
			must(t, db.Order("id").Find(&rows).Error)
			return blind(rows)
		}
		sharded := k.db.Clauses(shardid.AllShards())
		same := func(name string, write func(db *gorm.DB, rows *[]upsAccount) *gorm.DB) {
			t.Helper()
			before := stored(sharded)
			var want, got []upsAccount
			g := write(k.db.Session(&gorm.Session{}), &got)
			if errors.Is(g.Error, shardid.ErrCrossShard) || errors.Is(g.Error, shardid.ErrNoShard) || errors.Is(g.Error, shardid.ErrNotAtomic) {
				t.Logf("%s: refused: %v", name, g.Error)
				if stored(sharded) != before {
					t.Errorf("%s: refused, yet wrote", name)
				}
				return
			}
			w := write(k.main.Session(&gorm.Session{}), &want)
			switch {
			case (w.Error == nil) != (g.Error == nil):
				t.Errorf("%s: one database: %v; every shard: %v", name, w.Error, g.Error)
			case w.Error == nil && (blind(want) != blind(got) || w.RowsAffected != g.RowsAffected):
				t.Errorf("%s:\none database: %s (%d rows)\nevery shard:  %s (%d rows)", name, blind(want), w.RowsAffected, blind(got), g.RowsAffected)
			}
			if w, g := stored(k.main), stored(sharded); w != g {
				t.Errorf("after %s:\none database:\n%s\nevery shard:\n%s", name, w, g)
			}
		}
		byEmail := []clause.Column{{Name: "email"}}
		same("UpdateAll Columns(email) of a zero key over a taken email", func(db *gorm.DB, rows *[]upsAccount) *gorm.DB {
			*rows = []upsAccount{{Email: "a@x", Name: "up", N: 1}}
			return db.Clauses(clause.OnConflict{Columns: byEmail, UpdateAll: true}).Create(&(*rows)[0])
		})
		same("UpdateAll Columns(email) of a batch of zero keys over several databases", func(db *gorm.DB, rows *[]upsAccount) *gorm.DB {
			*rows = []upsAccount{{Email: "b@x", Name: "up"}, {Email: "new1@x", Name: "up"}, {Email: "c@x", Name: "up", N: 2}, {Email: "new2@x", Name: "up"}, {Email: "d@x", Name: "up"}}
			return db.Clauses(clause.OnConflict{Columns: byEmail, UpdateAll: true}).Create(rows)
		})
		same("AssignmentColumns Columns(email) of a batch over several databases", func(db *gorm.DB, rows *[]upsAccount) *gorm.DB {
			*rows = []upsAccount{{Email: "e@x", N: 5}, {Email: "f@x", N: 6}, {Email: "new3@x", N: 7}}
			return db.Clauses(clause.OnConflict{Columns: byEmail, DoUpdates: clause.AssignmentColumns([]string{"n"})}).Create(rows)
		})
		same("Save of a zero key over a taken email", func(db *gorm.DB, rows *[]upsAccount) *gorm.DB {
			*rows = []upsAccount{{Email: "a@x", Name: "dup"}}
			return db.Save(&(*rows)[0])
		})
		same("FirstOrCreate by email, found, with Assign", func(db *gorm.DB, rows *[]upsAccount) *gorm.DB {
			*rows = make([]upsAccount, 1)
			return db.Where(upsAccount{Email: "b@x"}).Assign(upsAccount{N: 9}).FirstOrCreate(&(*rows)[0])
		})
		same("FirstOrCreate by email, new", func(db *gorm.DB, rows *[]upsAccount) *gorm.DB {
			*rows = make([]upsAccount, 1)
			return db.Where(upsAccount{Email: "new4@x"}).Attrs(upsAccount{Name: "attr"}).FirstOrCreate(&(*rows)[0])
		})
	})
}

// upsBadge is placed beside its owner and unique by its code.
type upsBadge struct {
	ID      int64 `shardid:"colocate:OwnerID"`
	OwnerID int64
	Code    string `gorm:"uniqueIndex;size:32"`
	Level   int
}

// TestUpsertFormsOfAColocatedModelAnswerAsOneDatabase: on a model placed
// beside its owner and unique by a code, upserts over a code held by a
// badge of the same owner or of another owner on the same database, and
// Save of such rows, give through the plugin what they give on one
// database, or are refused with a named error (an upsert that would move a
// row to another owner's shard), writing nothing.
func TestUpsertFormsOfAColocatedModelAnswerAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		fresh(t, k.db, &upsBadge{})
		must(t, k.main.Migrator().DropTable(&upsBadge{}))
		must(t, k.main.AutoMigrate(&upsBadge{}))
		l := k.plugin.Layout()
		base, seq := time.Now().Add(-3*time.Second), 0
		on := func(shard int) int64 { seq++; return l.Compose(base, shard, seq) }
		// Owners x and y share a logical shard, z is on another database.
		sx, sz := 0, l.ShardCount()-1
		x, y, z := on(sx), on(sx), on(sz)
		seed := []upsBadge{{ID: on(sx), OwnerID: x, Code: "x1"}, {ID: on(sx), OwnerID: y, Code: "y1"}, {ID: on(sz), OwnerID: z, Code: "z1"}}
		must(t, k.db.Create(&seed).Error)
		must(t, k.main.Create(&seed).Error)
		u := &upsTwin{k: k}
		stored := func(db *gorm.DB) string {
			var rows []upsBadge
			must(t, db.Order("id").Find(&rows).Error)
			return fmt.Sprintf("%+v", rows)
		}
		sharded := k.db.Clauses(shardid.AllShards())
		same := func(name string, write func(db *gorm.DB) (*gorm.DB, any)) {
			t.Helper()
			before := stored(sharded)
			g, got := write(k.db.Session(&gorm.Session{}))
			if errors.Is(g.Error, shardid.ErrCrossShard) || errors.Is(g.Error, shardid.ErrNoShard) || errors.Is(g.Error, shardid.ErrNotAtomic) {
				t.Logf("%s: refused: %v", name, g.Error)
				if stored(sharded) != before {
					t.Errorf("%s: refused, yet wrote", name)
				}
				return
			}
			w, want := write(k.main.Session(&gorm.Session{}))
			switch {
			case (w.Error == nil) != (g.Error == nil):
				t.Errorf("%s: one database: %v; every shard: %v", name, w.Error, g.Error)
			case w.Error == nil && (!reflect.DeepEqual(want, got) || w.RowsAffected != g.RowsAffected):
				t.Errorf("%s:\none database: %+v (%d rows)\nevery shard:  %+v (%d rows)", name, want, w.RowsAffected, got, g.RowsAffected)
			}
			if w, g := stored(k.main), stored(sharded); w != g {
				t.Errorf("after %s:\none database:\n%s\nevery shard:\n%s", name, w, g)
			}
		}
		_ = u
		byCode := []clause.Column{{Name: "code"}}
		n1, n2, n3, n4, n5 := on(sx), on(sx), on(sx), on(sz), on(sx)
		same("UpdateAll Columns(code) over the same owner's code", func(db *gorm.DB) (*gorm.DB, any) {
			row := upsBadge{ID: n1, OwnerID: x, Code: "x1", Level: 1}
			return db.Clauses(clause.OnConflict{Columns: byCode, UpdateAll: true}).Create(&row), row
		})
		same("UpdateAll Columns(code) over another owner's code on the same database", func(db *gorm.DB) (*gorm.DB, any) {
			row := upsBadge{ID: n2, OwnerID: x, Code: "y1", Level: 2}
			return db.Clauses(clause.OnConflict{Columns: byCode, UpdateAll: true}).Create(&row), row
		})
		same("AssignmentColumns(level) Columns(code) over another owner's code", func(db *gorm.DB) (*gorm.DB, any) {
			row := upsBadge{ID: n3, OwnerID: x, Code: "y1", Level: 3}
			return db.Clauses(clause.OnConflict{Columns: byCode, DoUpdates: clause.AssignmentColumns([]string{"level"})}).Create(&row), row
		})
		same("UpdateAll over another owner's code, no target", func(db *gorm.DB) (*gorm.DB, any) {
			row := upsBadge{ID: n5, OwnerID: x, Code: "y1", Level: 4}
			return db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&row), row
		})
		same("Save of a new row over a code on its database", func(db *gorm.DB) (*gorm.DB, any) {
			row := upsBadge{ID: n4, OwnerID: z, Code: "z1", Level: 5}
			return db.Save(&row), row
		})
		same("Save of a batch over two databases", func(db *gorm.DB) (*gorm.DB, any) {
			rows := []upsBadge{{ID: seed[0].ID, OwnerID: x, Code: "x1", Level: 6}, {ID: seed[2].ID, OwnerID: z, Code: "z1", Level: 6}}
			return db.Save(&rows), rows
		})
	})
}

// upsMember embeds gorm.Model, its ID hidden by the plugin's key.
type upsMember struct {
	gorm.Model
	ID   int64  `shardid:""`
	Name string `gorm:"size:32"`
}

// TestUpsertFormsOfAGormModelAnswerAsOneDatabase: on a model embedding
// gorm.Model (times and a soft delete), UpdateAll over existing rows of
// several databases, Save of an existing, a soft-deleted and a new row give
// through the plugin the RowsAffected, keys and rows (deleted or not, their
// creation time kept) that they give on one database.
func TestUpsertFormsOfAGormModelAnswerAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		fresh(t, k.db, &upsMember{})
		must(t, k.main.Migrator().DropTable(&upsMember{}))
		must(t, k.main.AutoMigrate(&upsMember{}))
		l := k.plugin.Layout()
		base, seq := time.Now().Add(-3*time.Second), 0
		on := func(p int) int64 { seq++; return l.Compose(base, p*l.ShardCount()/physicalShards, seq) }
		created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		seed := []upsMember{{ID: on(0), Name: "a"}, {ID: on(1), Name: "b"}, {ID: on(2), Name: "c"}}
		for i := range seed {
			seed[i].CreatedAt, seed[i].UpdatedAt = created, created
		}
		must(t, k.db.Create(&seed).Error)
		must(t, k.main.Create(&seed).Error)
		show := func(rows []upsMember) string {
			out := ""
			for _, r := range rows {
				out += fmt.Sprintf("{%d %q created:%v updated:%v deleted:%v} ", r.ID, r.Name, r.CreatedAt.UTC().Equal(created), r.UpdatedAt.UTC().Equal(created), r.DeletedAt.Valid)
			}
			return out
		}
		stored := func(db *gorm.DB) string {
			var rows []upsMember
			must(t, db.Unscoped().Order("id").Find(&rows).Error)
			return show(rows)
		}
		sharded := k.db.Clauses(shardid.AllShards())
		same := func(name string, write func(db *gorm.DB, rows *[]upsMember) *gorm.DB) {
			t.Helper()
			var want, got []upsMember
			g := write(k.db.Session(&gorm.Session{}), &got)
			w := write(k.main.Session(&gorm.Session{}), &want)
			if (w.Error == nil) != (g.Error == nil) || w.RowsAffected != g.RowsAffected || show(want) != show(got) {
				t.Errorf("%s:\none database: %v %s (%d rows)\nevery shard:  %v %s (%d rows)", name, w.Error, show(want), w.RowsAffected, g.Error, show(got), g.RowsAffected)
			}
			if w, g := stored(k.main), stored(sharded); w != g {
				t.Errorf("after %s:\none database: %s\nevery shard:  %s", name, w, g)
			}
		}
		must(t, k.db.Delete(&upsMember{ID: seed[1].ID}).Error)
		must(t, k.main.Delete(&upsMember{ID: seed[1].ID}).Error)
		fresh1 := on(1)
		same("UpdateAll over rows of several databases", func(db *gorm.DB, rows *[]upsMember) *gorm.DB {
			*rows = []upsMember{{ID: seed[0].ID, Name: "up"}, {ID: seed[2].ID, Name: "up"}}
			return db.Clauses(clause.OnConflict{UpdateAll: true}).Create(rows)
		})
		same("Save of an existing row", func(db *gorm.DB, rows *[]upsMember) *gorm.DB {
			*rows = []upsMember{seed[0]}
			(*rows)[0].Name = "saved"
			return db.Save(&(*rows)[0])
		})
		same("Save of a soft-deleted row", func(db *gorm.DB, rows *[]upsMember) *gorm.DB {
			*rows = []upsMember{seed[1]}
			(*rows)[0].Name = "saved"
			return db.Save(&(*rows)[0])
		})
		same("Save of a new row", func(db *gorm.DB, rows *[]upsMember) *gorm.DB {
			*rows = []upsMember{{ID: fresh1, Name: "new"}}
			(*rows)[0].CreatedAt = created
			return db.Save(&(*rows)[0])
		})
		same("Save of a slice of existing rows over several databases", func(db *gorm.DB, rows *[]upsMember) *gorm.DB {
			*rows = []upsMember{seed[0], seed[2]}
			return db.Save(rows)
		})
	})
}

// upsKeyed is upsItem with a key declared the application's
// (autoIncrement:false): GORM reads no key back from its upserts.
type upsKeyed struct {
	ID   int64  `gorm:"primaryKey;autoIncrement:false" shardid:""`
	Code string `gorm:"uniqueIndex;size:32"`
	Name string `gorm:"size:32"`
	N    int
}

// TestUpsertsOfAnApplicationsKeyCountAsTheServerDoes: on a model whose key
// GORM does not take for the database's (autoIncrement:false), upserts over
// several databases (UpdateAll and DoUpdates of new, changed and unchanged
// rows, Save of a slice, CreateInBatches with OnConflict) and of one row
// report the RowsAffected that GORM reports on one database, which is the
// server's (on MariaDB 1 per row inserted, 2 per row updated, 0 per row left
// as it was), and store the same rows.
func TestUpsertsOfAnApplicationsKeyCountAsTheServerDoes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		fresh(t, k.db, &upsKeyed{})
		must(t, k.main.Migrator().DropTable(&upsKeyed{}))
		must(t, k.main.AutoMigrate(&upsKeyed{}))
		l := k.plugin.Layout()
		base, seq := time.Now().Add(-3*time.Second), 0
		on := func(p int) int64 { seq++; return l.Compose(base, p*l.ShardCount()/physicalShards, seq) }
		seed := []upsKeyed{{ID: on(0), Code: "c0"}, {ID: on(1), Code: "c1"}, {ID: on(2), Code: "c2"}, {ID: on(3), Code: "c3"}}
		must(t, k.db.Create(&seed).Error)
		must(t, k.main.Create(&seed).Error)
		stored := func(db *gorm.DB) string {
			var rows []upsKeyed
			must(t, db.Order("id").Find(&rows).Error)
			return fmt.Sprintf("%+v", rows)
		}
		sharded := k.db.Clauses(shardid.AllShards())
		same := func(name string, write func(db *gorm.DB, rows []upsKeyed) *gorm.DB, rows ...upsKeyed) {
			t.Helper()
			g := write(k.db.Session(&gorm.Session{}), slices.Clone(rows))
			w := write(k.main.Session(&gorm.Session{}), slices.Clone(rows))
			if w.Error != nil || g.Error != nil || w.RowsAffected != g.RowsAffected {
				t.Errorf("%s: one database: %d rows (%v); every shard: %d rows (%v)", name, w.RowsAffected, w.Error, g.RowsAffected, g.Error)
			}
			if w, g := stored(k.main), stored(sharded); w != g {
				t.Errorf("after %s:\none database: %s\nevery shard:  %s", name, w, g)
			}
		}
		upsert := func(oc clause.OnConflict) func(db *gorm.DB, rows []upsKeyed) *gorm.DB {
			return func(db *gorm.DB, rows []upsKeyed) *gorm.DB { return db.Clauses(oc).Create(&rows) }
		}
		s0, s1, s2, s3 := seed[0], seed[1], seed[2], seed[3]
		changed := func(r upsKeyed, name string) upsKeyed { r.Name = name; return r }
		same("UpdateAll of new, changed and unchanged rows over every database", upsert(clause.OnConflict{UpdateAll: true}),
			changed(s0, "u"), s1, upsKeyed{ID: on(1), Code: "n1"}, changed(s3, "u"), upsKeyed{ID: on(2), Code: "n2"})
		same("UpdateAll of one changed row", upsert(clause.OnConflict{UpdateAll: true}), changed(s2, "one"))
		same("DoUpdates over several databases", upsert(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.AssignmentColumns([]string{"name"})}),
			changed(s0, "d"), changed(s2, "d"), upsKeyed{ID: on(3), Code: "n3"})
		same("Save of a slice of new, changed and unchanged rows", func(db *gorm.DB, rows []upsKeyed) *gorm.DB { return db.Save(&rows) },
			changed(s0, "s"), changed(s1, "s"), upsKeyed{ID: on(2), Code: "n4"}, changed(s3, "u"))
		same("CreateInBatches with UpdateAll", func(db *gorm.DB, rows []upsKeyed) *gorm.DB {
			return db.Clauses(clause.OnConflict{UpdateAll: true}).CreateInBatches(&rows, 2)
		}, changed(s0, "b"), changed(s1, "b"), upsKeyed{ID: on(2), Code: "n5"}, changed(s3, "b"), upsKeyed{ID: on(0), Code: "n6"})
	})
}

// upsRanked has a column the database fills (a default GORM cannot parse).
type upsRanked struct {
	ID   int64  `shardid:""`
	Code string `gorm:"uniqueIndex;size:32"`
	Rank int    `gorm:"default:(42)"`
}

// TestUpsertReadsBackTheColumnsTheDatabaseFills: an upsert of new rows of a
// model with a column the database fills reads that column back with the
// key, as GORM's RETURNING does on one database.
func TestUpsertReadsBackTheColumnsTheDatabaseFills(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		k := newKeys(t, b)
		fresh(t, k.db, &upsRanked{})
		must(t, k.main.Migrator().DropTable(&upsRanked{}))
		must(t, k.main.AutoMigrate(&upsRanked{}))
		l := k.plugin.Layout()
		base := time.Now().Add(-3 * time.Second)
		rows := []upsRanked{{ID: l.Compose(base, 0, 1), Code: "a"}, {ID: l.Compose(base, l.ShardCount()-1, 1), Code: "b"}}
		for _, write := range []struct {
			name string
			rows []upsRanked
		}{{"one row", rows[:1]}, {"rows over two databases", rows}} {
			want, got := slices.Clone(write.rows), slices.Clone(write.rows)
			w := k.main.Clauses(clause.OnConflict{UpdateAll: true}).Create(&want)
			g := k.db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&got)
			if w.Error != nil || g.Error != nil || !reflect.DeepEqual(want, got) || w.RowsAffected != g.RowsAffected {
				t.Errorf("%s: one database: %+v (%d rows, %v); every shard: %+v (%d rows, %v)", write.name, want, w.RowsAffected, w.Error, got, g.RowsAffected, g.Error)
			}
		}
	})
}
