package integration

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/hints"

	"github.com/shardid/shardid"
)

// sqlLog keeps every SQL text a session sends, fan-out parts split apart.
type sqlLog struct {
	mu    sync.Mutex
	lines []string
}

func (s *sqlLog) LogMode(logger.LogLevel) logger.Interface { return s }
func (s *sqlLog) Info(context.Context, string, ...any)     {}
func (s *sqlLog) Warn(context.Context, string, ...any)     {}
func (s *sqlLog) Error(context.Context, string, ...any)    {}
func (s *sqlLog) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	line, _ := fc()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, partInLine.Split(line, -1)...)
}

// of returns the texts that name table and hold word, and clears the log.
func (s *sqlLog) of(table, word string) (with, without []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lines {
		if !strings.Contains(l, table) {
			continue
		}
		if strings.Contains(l, word) {
			with = append(with, l)
		} else {
			without = append(without, l)
		}
	}
	s.lines = nil
	return with, without
}

func idsOf(as []author) []int64 {
	out := make([]int64, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	return out
}

// TestHintCommentsReachEveryPart: gorm.io/hints' comments, given as clauses,
// are in the SQL of every database a read or a write over several runs on.
func TestHintCommentsReachEveryPart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.onEvery(t)
		ids := idsOf(all)
		log := &sqlLog{}
		db := r.db.Session(&gorm.Session{Logger: log})
		var found []author
		must(t, db.Clauses(hints.Comment("select", "hinted")).Find(&found, ids).Error)
		if len(found) != len(ids) {
			t.Fatalf("%d rows of %d", len(found), len(ids))
		}
		with, without := log.of("authors", "hinted")
		if len(without) > 0 || len(with) != physicalShards {
			t.Fatalf("a select's comment: with %q, without %q", with, without)
		}
		must(t, db.Clauses(hints.CommentBefore("update", "hinted")).Model(&author{}).Where("id IN ?", ids).Update("name", "u").Error)
		with, without = log.of("authors", "hinted")
		if len(without) > 0 || len(with) != physicalShards {
			t.Fatalf("an update's comment: with %q, without %q", with, without)
		}
		var n int64
		must(t, db.Clauses(hints.Comment("select", "hinted"), shardid.AllShards()).Model(&author{}).Count(&n).Error)
		with, without = log.of("authors", "hinted")
		if len(without) > 0 || len(with) != physicalShards || n != r.count(t, &author{}) {
			t.Fatalf("a count's comment (%d): with %q, without %q", n, with, without)
		}
	})
}

// TestLockingReachesEveryBranch: a read with FOR UPDATE over several
// databases in a transaction across shards locks the rows on each database
// until the transaction ends.
func TestLockingReachesEveryBranch(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.onEvery(t)
		ids := idsOf(all)
		log := &sqlLog{}
		db := r.db.Session(&gorm.Session{Logger: log})
		err := db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			var locked []author
			if err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Find(&locked, ids).Error; err != nil {
				return err
			}
			if len(locked) != len(ids) {
				return fmt.Errorf("%d rows of %d", len(locked), len(ids))
			}
			for i, d := range r.direct {
				var a author
				err := d.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsNoWait}).First(&a, all[i].ID).Error
				if err == nil {
					return fmt.Errorf("database %d: row %d not locked", i, all[i].ID)
				}
			}
			return nil
		})
		must(t, err)
		with, without := log.of("authors", "FOR UPDATE")
		if len(with) != physicalShards {
			t.Fatalf("FOR UPDATE: with %q, without %q", with, without)
		}
		// After the commit, the locks are gone.
		for i, d := range r.direct {
			var a author
			must(t, d.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsNoWait}).First(&a, all[i].ID).Error)
		}
	})
}

// TestReturningOverSeveralDatabases: an update and a delete with RETURNING
// whose rows are on several databases give back every row, as one
// database does.
func TestReturningOverSeveralDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if b.name == "mariadb" {
			t.Skip("GORM's mysql dialector sends no RETURNING")
		}
		r := newRouting(t, b)
		all := r.onEvery(t)
		ids := idsOf(all)
		var updated []author
		res := r.db.Model(&updated).Clauses(clause.Returning{}).Where("id IN ?", ids).Update("name", "returned")
		must(t, res.Error)
		if res.RowsAffected != int64(len(ids)) || len(updated) != len(ids) {
			t.Fatalf("update returning: %d affected, %d rows, want %d", res.RowsAffected, len(updated), len(ids))
		}
		for _, u := range updated {
			if u.Name != "returned" || !slices.Contains(ids, u.ID) {
				t.Fatalf("update returning row %+v", u)
			}
		}
		var deleted []author
		res = r.db.Clauses(clause.Returning{Columns: []clause.Column{{Name: "id"}, {Name: "name"}}}).Where("id IN ?", ids).Delete(&deleted)
		must(t, res.Error)
		got := idsOf(deleted)
		slices.Sort(got)
		want := slices.Clone(ids)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("delete returning: %v, want %v", got, want)
		}
		if n := r.count(t, &author{}, "id IN ?", ids); n != 0 {
			t.Fatalf("%d rows left", n)
		}
	})
}

// TestUpsertFormsOverSeveralDatabases: OnConflict forms and INSERT IGNORE
// of a batch over several databases write what one database writes.
func TestUpsertFormsOverSeveralDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.onEvery(t)
		again := make([]author, len(all))
		for i, a := range all {
			again[i] = author{ID: a.ID, Name: "again"}
		}
		res := r.db.Clauses(clause.OnConflict{DoNothing: true}).Create(&again)
		must(t, res.Error)
		if n := r.count(t, &author{}, "name = ?", "again"); n != 0 {
			t.Fatalf("DoNothing wrote %d rows", n)
		}
		res = r.db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.AssignmentColumns([]string{"name"})}).Create(&again)
		must(t, res.Error)
		if n := r.count(t, &author{}, "name = ?", "again"); n != int64(len(all)) {
			t.Fatalf("DoUpdates wrote %d rows of %d", n, len(all))
		}
		for i := range again {
			again[i].Name = "expr"
		}
		res = r.db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.Assignments(map[string]any{"name": gorm.Expr("'set by expr'")})}).Create(&again)
		must(t, res.Error)
		if n := r.count(t, &author{}, "name = ?", "set by expr"); n != int64(len(all)) {
			t.Fatalf("DoUpdates by expression wrote %d rows of %d", n, len(all))
		}
		if b.name == "mariadb" {
			for i := range again {
				again[i].Name = "ignored"
			}
			res = r.db.Clauses(clause.Insert{Modifier: "IGNORE"}).Create(&again)
			must(t, res.Error)
			if n := r.count(t, &author{}, "name = ?", "ignored"); n != 0 {
				t.Fatalf("INSERT IGNORE wrote %d rows", n)
			}
		}
	})
}

// ownerRef is a key type of the application's, stored through Valuer and
// Scanner.
type ownerRef struct{ V int64 }

func (o ownerRef) Value() (driver.Value, error) { return o.V, nil }
func (o *ownerRef) Scan(v any) error {
	switch x := v.(type) {
	case int64:
		o.V = x
	case []byte:
		_, err := fmt.Sscan(string(x), &o.V)
		return err
	default:
		return fmt.Errorf("ownerRef: %T", v)
	}
	return nil
}

type profileAddr struct {
	City string
	Rank int
}

type profile struct {
	ID      int64       `shardid:"colocate:OwnerID"`
	OwnerID int64       `gorm:"index"`
	Tags    []string    `gorm:"serializer:json"`
	Addr    profileAddr `gorm:"embedded;embeddedPrefix:addr_"`
}

type keyedNote struct {
	ID    int64    `shardid:"hash:Owner"`
	Owner ownerRef `gorm:"index"`
	Body  string
}

// TestSerializedAndEmbeddedFieldsOverSeveralDatabases: rows with JSON and
// embedded fields read over several databases, ordered by an embedded
// column, come back as one database gives them.
func TestSerializedAndEmbeddedFieldsOverSeveralDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &profile{})
		all := r.onEvery(t)
		for i, a := range all {
			p := profile{OwnerID: a.ID, Tags: []string{"t", fmt.Sprint(i)}, Addr: profileAddr{City: fmt.Sprintf("c%d", len(all)-i), Rank: len(all) - i}}
			must(t, r.db.Create(&p).Error)
			if got := r.where(t, &profile{}, p.ID); !slices.Equal(got, []int{r.physicalOf(a.ID)}) {
				t.Fatalf("profile on %v, owner on %d", got, r.physicalOf(a.ID))
			}
		}
		var ps []profile
		must(t, r.db.Clauses(shardid.AllShards()).Order("addr_rank").Limit(3).Find(&ps).Error)
		if len(ps) != 3 || ps[0].Addr.Rank != 1 || ps[2].Addr.Rank != 3 || ps[0].Addr.City != "c1" || len(ps[0].Tags) != 2 {
			t.Fatalf("merged rows %+v", ps)
		}
		var ranks []int
		must(t, r.db.Model(&profile{}).Clauses(shardid.AllShards()).Order(clause.OrderByColumn{Column: clause.Column{Name: "addr_rank"}, Desc: true}).Pluck("addr_rank", &ranks).Error)
		if !sort.IsSorted(sort.Reverse(sort.IntSlice(ranks))) || len(ranks) != len(all) {
			t.Fatalf("plucked %v", ranks)
		}
		// Scopes and clause.Expr conditions naming the owner route to its database.
		byOwner := func(id int64) func(*gorm.DB) *gorm.DB {
			return func(tx *gorm.DB) *gorm.DB { return tx.Where(clause.Expr{SQL: "owner_id = ?", Vars: []any{id}}) }
		}
		var one profile
		must(t, r.db.Scopes(byOwner(all[1].ID)).First(&one).Error)
		if one.OwnerID != all[1].ID {
			t.Fatalf("scoped read %+v", one)
		}
	})
}

// TestValuerHashKey: a hash key of a type with Value and Scan places a row
// by its value, finds it by the same value and reads it back.
func TestValuerHashKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		if err := migrator(r.db).AutoMigrate(&keyedNote{}); err != nil {
			if errors.Is(err, shardid.ErrInvalidTag) {
				return // a key type the hash does not know is refused by name
			}
			t.Fatal(err)
		}
		notes := make([]keyedNote, 30)
		for i := range notes {
			notes[i] = keyedNote{Owner: ownerRef{int64(i + 1)}, Body: "n"}
		}
		err := r.db.Create(&notes).Error
		if err != nil {
			if errors.Is(err, shardid.ErrInvalidTag) || errors.Is(err, shardid.ErrNoShard) {
				t.Logf("refused: %v", err)
				return
			}
			t.Fatal(err)
		}
		for _, n := range notes {
			if got := r.where(t, &keyedNote{}, n.ID); !slices.Equal(got, []int{r.physicalOf(n.ID)}) {
				t.Fatalf("note %d on %v, want %d", n.ID, got, r.physicalOf(n.ID))
			}
			var back keyedNote
			must(t, r.db.Where("owner = ?", n.Owner).First(&back).Error)
			if back.ID != n.ID {
				t.Fatalf("by owner %v: %+v", n.Owner, back)
			}
		}
	})
}

// TestDeleteReturningOnMariaDB: MariaDB 10.5+ deletes with RETURNING; rows
// on several databases all come back.
func TestDeleteReturningOnMariaDB(t *testing.T) {
	for _, b := range backends {
		if b.name != "mariadb" {
			continue
		}
		r := newRouting(t, b)
		all := r.onEvery(t)
		ids := idsOf(all)
		var deleted []author
		res := r.db.Clauses(clause.Returning{}).Where("id IN ?", ids).Delete(&deleted)
		must(t, res.Error)
		got := idsOf(deleted)
		slices.Sort(got)
		want := slices.Clone(ids)
		slices.Sort(want)
		if !slices.Equal(got, want) || res.RowsAffected != int64(len(ids)) {
			t.Fatalf("delete returning: %v (%d), want %v", got, res.RowsAffected, want)
		}
		if n := r.count(t, &author{}, "id IN ?", ids); n != 0 {
			t.Fatalf("%d rows left", n)
		}
	}
}

// TestLockingFormsOnOneAndSeveralDatabases: FOR SHARE, NOWAIT, SKIP LOCKED
// and FOR UPDATE OF the model's table read as on one database.
func TestLockingFormsOnOneAndSeveralDatabases(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.onEvery(t)
		ids := idsOf(all)
		forms := []clause.Locking{
			{Strength: clause.LockingStrengthShare},
			{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsNoWait},
			{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsSkipLocked},
		}
		if b.name == "postgres" {
			forms = append(forms, clause.Locking{Strength: clause.LockingStrengthUpdate, Table: clause.Table{Name: "authors"}})
		}
		for _, l := range forms {
			err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				var one author
				if err := tx.Clauses(l).First(&one, ids[0]).Error; err != nil {
					return fmt.Errorf("one database: %w", err)
				}
				var found []author
				if err := tx.Clauses(l).Order("id").Find(&found, ids).Error; err != nil {
					return fmt.Errorf("several databases: %w", err)
				}
				if len(found) != len(ids) {
					return fmt.Errorf("%d rows of %d", len(found), len(ids))
				}
				return nil
			})
			if err != nil {
				t.Errorf("%+v: %v", l, err)
			}
			var one author
			if err := r.db.Clauses(shardid.ByID(ids[1])).Transaction(func(tx *gorm.DB) error {
				return tx.Clauses(l).First(&one, ids[1]).Error
			}); err != nil {
				t.Errorf("%+v in a shard's transaction: %v", l, err)
			}
		}
	})
}

// TestQualifiedColumnsRoute: conditions and selects that qualify columns
// with the model's own table read as unqualified ones.
func TestQualifiedColumnsRoute(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.onEvery(t)
		ids := idsOf(all)
		var one author
		must(t, r.db.Select("authors.id, authors.name").Where("authors.id = ?", ids[2]).First(&one).Error)
		if one.ID != ids[2] {
			t.Fatalf("got %+v", one)
		}
		var found []author
		must(t, r.db.Select("authors.id", "authors.name").Where("authors.id IN ?", ids).Order("authors.id").Find(&found).Error)
		if len(found) != len(ids) || !slices.IsSortedFunc(found, func(a, b author) int { return int(a.ID>>40) - int(b.ID>>40) }) {
			t.Fatalf("got %d rows", len(found))
		}
	})
}

// TestIndexHintsOnMariaDB: gorm.io/hints' index hints reach every part.
func TestIndexHintsOnMariaDB(t *testing.T) {
	for _, b := range backends {
		if b.name != "mariadb" {
			continue
		}
		r := newRouting(t, b)
		all := r.onEvery(t)
		ids := idsOf(all)
		log := &sqlLog{}
		db := r.db.Session(&gorm.Session{Logger: log})
		var found []author
		must(t, db.Clauses(hints.UseIndex("PRIMARY")).Find(&found, ids).Error)
		with, without := log.of("authors", "USE INDEX")
		if len(found) != len(ids) || len(with) != physicalShards {
			t.Fatalf("%d rows; with %q, without %q", len(found), with, without)
		}
		var n int64
		must(t, db.Clauses(hints.ForceIndex("PRIMARY"), shardid.AllShards()).Model(&author{}).Count(&n).Error)
		with, without = log.of("authors", "FORCE INDEX")
		if len(with) != physicalShards {
			t.Fatalf("count: with %q, without %q", with, without)
		}
		must(t, db.Clauses(hints.New("MAX_EXECUTION_TIME(1000)")).Find(&found, ids).Error)
		with, without = log.of("authors", "MAX_EXECUTION_TIME")
		if len(with) != physicalShards {
			t.Fatalf("optimizer hint: with %q, without %q", with, without)
		}
	}
}

// TestOrderByExpressionsOverSeveralDatabases: an ORDER BY given as
// clause.Expr or clause.OrderBy over several databases gives the rows one
// database gives, or is refused.
func TestOrderByExpressionsOverSeveralDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.onEvery(t)
		ids := idsOf(all)
		for i, id := range ids {
			must(t, r.db.Model(&author{ID: id}).Update("name", fmt.Sprintf("n%d", (i*7)%len(ids))).Error)
		}
		sorted := slices.Clone(ids)
		slices.Sort(sorted)
		forms := map[string]func(*gorm.DB) *gorm.DB{
			"Expr id DESC": func(d *gorm.DB) *gorm.DB { return d.Order(clause.Expr{SQL: "id DESC"}) },
			"Expr ? DESC": func(d *gorm.DB) *gorm.DB {
				return d.Order(clause.Expr{SQL: "? DESC", Vars: []any{clause.Column{Name: "id"}}})
			},
			"OrderBy Expr": func(d *gorm.DB) *gorm.DB {
				return d.Clauses(clause.OrderBy{Expression: clause.Expr{SQL: "id DESC"}})
			},
			"OrderBy Expr minus": func(d *gorm.DB) *gorm.DB {
				return d.Clauses(clause.OrderBy{Expression: clause.Expr{SQL: "0 - id"}})
			},
			"NamedExpr": func(d *gorm.DB) *gorm.DB {
				return d.Order(clause.NamedExpr{SQL: "id DESC"})
			},
			"Expr CASE": func(d *gorm.DB) *gorm.DB {
				return d.Order(clause.Expr{SQL: "CASE WHEN id = ? THEN 0 ELSE 1 END, id DESC", Vars: []any{sorted[0]}})
			},
			"Order string with comma": func(d *gorm.DB) *gorm.DB { return d.Order("name ASC, id DESC") },
		}
		for name, f := range forms {
			// One database's answer: the same query on every database's rows
			// brought together, in SQLite (or the same server) by the same ORDER BY.
			var got []author
			err := f(r.db.Clauses(shardid.AllShards())).Limit(3).Find(&got).Error
			if err != nil {
				if errors.Is(err, shardid.ErrCrossShard) {
					t.Logf("%s: refused: %v", name, err)
					continue
				}
				t.Errorf("%s: %v", name, err)
				continue
			}
			var want []author
			for _, d := range r.direct {
				var part []author
				must(t, f(d).Find(&part).Error)
				want = append(want, part...)
			}
			// the expected rows: sort all of them on the plugin's database as one
			tmp := r.direct[0]
			must(t, tmp.Exec("DROP TABLE IF EXISTS expect_authors").Error)
			must(t, tmp.Exec("CREATE TABLE expect_authors AS SELECT * FROM authors WHERE 1 = 0").Error)
			for _, w := range want {
				must(t, tmp.Exec("INSERT INTO expect_authors (id, name) VALUES (?, ?)", w.ID, w.Name).Error)
			}
			var exp []author
			must(t, f(tmp.Table("expect_authors")).Limit(3).Find(&exp).Error)
			if !slices.EqualFunc(got, exp, func(a, b author) bool { return a.ID == b.ID }) {
				t.Errorf("%s: got %v, one database gives %v", name, idsOf(got), idsOf(exp))
			} else {
				t.Logf("%s: merged as one database", name)
			}
		}
	})
}

// TestHintsOnWritesOverSeveralDatabases: comments and index hints on a
// Create, an update and a delete over several databases reach each part and
// write what one database writes.
func TestHintsOnWritesOverSeveralDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		log := &sqlLog{}
		db := r.db.Session(&gorm.Session{Logger: log})
		rows := make([]author, 40)
		for i := range rows {
			rows[i].Name = "h"
		}
		must(t, db.Clauses(hints.CommentBefore("insert", "hinted")).Create(&rows).Error)
		with, without := log.of("authors", "hinted")
		if b.name != "sqlite" && (len(without) > 0 || len(with) != physicalShards) { // GORM's SQLite INSERT drops it on one database too
			t.Errorf("insert's comment: with %q, without %q", with, without)
		}
		ids := idsOf(rows)
		var upd *gorm.DB
		if b.name == "mariadb" {
			upd = db.Clauses(hints.UseIndex("PRIMARY"))
		} else {
			upd = db.Clauses(hints.CommentAfter("where", "hinted"))
		}
		res := upd.Model(&author{}).Where("id IN ?", ids).Update("name", "updated")
		must(t, res.Error)
		if res.RowsAffected != int64(len(ids)) || r.count(t, &author{}, "name = ?", "updated") != int64(len(ids)) {
			t.Errorf("update: %d affected", res.RowsAffected)
		}
		log.of("", "")
		res = db.Clauses(hints.CommentBefore("delete", "hinted")).Where("id IN ?", ids).Delete(&author{})
		must(t, res.Error)
		with, without = log.of("authors", "hinted")
		if res.RowsAffected != int64(len(ids)) || r.count(t, &author{}) != 0 || len(without) > 0 {
			t.Errorf("delete: %d affected; with %q, without %q", res.RowsAffected, with, without)
		}
	})
}

// TestScopesCarryShardClauses: a scope that gives AllShards, or a condition
// on the key, routes as the same clause given directly.
func TestScopesCarryShardClauses(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.onEvery(t)
		everywhere := func(d *gorm.DB) *gorm.DB { return d.Clauses(shardid.AllShards()) }
		byIDs := func(ids []int64) func(*gorm.DB) *gorm.DB {
			return func(d *gorm.DB) *gorm.DB { return d.Where("id IN ?", ids) }
		}
		var n int64
		must(t, r.db.Model(&author{}).Scopes(everywhere).Count(&n).Error)
		if n != r.count(t, &author{}) {
			t.Fatalf("count %d", n)
		}
		res := r.db.Scopes(byIDs(idsOf(all))).Model(&author{}).Update("name", "scoped")
		must(t, res.Error)
		if res.RowsAffected != int64(len(all)) {
			t.Fatalf("scoped update %d", res.RowsAffected)
		}
		var found []author
		must(t, r.db.Scopes(everywhere).Where("name = ?", "scoped").Find(&found).Error)
		if len(found) != len(all) {
			t.Fatalf("found %d", len(found))
		}
	})
}

// userKey is an ID type of the application's, an integer with Value and Scan.
type userKey int64

func (k userKey) Value() (driver.Value, error) { return int64(k), nil }
func (k *userKey) Scan(v any) error {
	var o ownerRef
	if err := o.Scan(v); err != nil {
		return err
	}
	*k = userKey(o.V)
	return nil
}

type keyedUser struct {
	ID    userKey `shardid:""`
	Name  string
	Cards []keyedCard `gorm:"foreignKey:UserID"`
}

type keyedCard struct {
	ID     userKey `shardid:"colocate:UserID"`
	UserID userKey
	Body   string
}

// TestValuerIntegerKeys: an ID and a colocate key of an integer type with
// Value and Scan place, find, preload, update and delete rows on their
// databases.
func TestValuerIntegerKeys(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		if err := migrator(r.db).AutoMigrate(&keyedUser{}, &keyedCard{}); err != nil {
			if errors.Is(err, shardid.ErrInvalidTag) {
				t.Logf("refused: %v", err)
				return
			}
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = migrator(r.db).DropTable(&keyedCard{}, &keyedUser{}) })
		users := make([]keyedUser, 20)
		for i := range users {
			users[i] = keyedUser{Name: "u", Cards: []keyedCard{{Body: "c"}, {Body: "d"}}}
		}
		must(t, r.db.Create(&users).Error)
		var ids []userKey
		for _, u := range users {
			ids = append(ids, u.ID)
			r.mustBeOnItsShard(t, &keyedUser{}, int64(u.ID))
			for _, c := range u.Cards {
				if r.physicalOf(int64(c.ID)) != r.physicalOf(int64(u.ID)) {
					t.Fatal("a card is not beside its user")
				}
				r.mustBeOnItsShard(t, &keyedCard{}, int64(c.ID))
			}
		}
		var back []keyedUser
		must(t, r.db.Preload("Cards").Find(&back, ids).Error)
		if len(back) != len(users) || len(back[0].Cards) != 2 {
			t.Fatalf("read %d users", len(back))
		}
		var one keyedUser
		must(t, r.db.First(&one, ids[3]).Error)
		var cards []keyedCard
		must(t, r.db.Where("user_id = ?", ids[3]).Find(&cards).Error)
		if one.ID != ids[3] || len(cards) != 2 {
			t.Fatalf("by key: %+v, %d cards", one, len(cards))
		}
		must(t, r.db.Model(&one).Update("name", "v").Error)
		res := r.db.Where("user_id IN ?", ids).Delete(&keyedCard{})
		must(t, res.Error)
		if res.RowsAffected != int64(2*len(ids)) {
			t.Fatalf("deleted %d cards", res.RowsAffected)
		}
	})
}

// TestClauseExpressionConditionsRoute: conditions given as GORM's clause
// expressions read the rows one database holding every row gives, or are
// refused.
func TestClauseExpressionConditionsRoute(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.onEvery(t)
		ids := idsOf(all)
		x := ids[0]
		anyIDs := make([]any, len(ids))
		for i, id := range ids {
			anyIDs[i] = id
		}
		forms := map[string][]any{
			"Eq":                 {clause.Eq{Column: "id", Value: x}},
			"Eq primary":         {clause.Eq{Column: clause.PrimaryColumn, Value: x}},
			"Eq current table":   {clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: "id"}, Value: x}},
			"IN primary":         {clause.IN{Column: clause.PrimaryColumn, Values: anyIDs}},
			"Neq":                {clause.Neq{Column: "id", Value: x}},
			"Gt":                 {clause.Gt{Column: "id", Value: x}},
			"Lte":                {clause.Lte{Column: "id", Value: x}},
			"Not Eq":             {clause.Not(clause.Eq{Column: "id", Value: x})},
			"Not IN":             {clause.Not(clause.IN{Column: "id", Values: anyIDs[:1]})},
			"Or of Eq":           {clause.Or(clause.Eq{Column: "id", Value: x}, clause.Eq{Column: "id", Value: ids[1]})},
			"And Eq Neq":         {clause.And(clause.Eq{Column: "id", Value: x}, clause.Neq{Column: "name", Value: "zz"})},
			"Expr":               {clause.Expr{SQL: "id = ?", Vars: []any{x}}},
			"Expr IN":            {clause.Expr{SQL: "id IN ?", Vars: []any{ids}}},
			"Expr not":           {clause.Expr{SQL: "id <> ?", Vars: []any{x}}},
			"Expr NOT IN":        {clause.Expr{SQL: "id NOT IN ?", Vars: []any{ids[:1]}}},
			"NamedExpr":          {clause.NamedExpr{SQL: "id = @id", Vars: []any{sql.Named("id", x)}}},
			"NamedExpr not":      {clause.NamedExpr{SQL: "id <> @id", Vars: []any{sql.Named("id", x)}}},
			"text named":         {"id = @id", sql.Named("id", x)},
			"text named map":     {"id <> @id", map[string]any{"id": x}},
			"Like":               {clause.Like{Column: "id", Value: fmt.Sprint(x)}},
			"Expr minus":         {clause.Expr{SQL: "id - ? = 0", Vars: []any{x}}},
			"Expr id = ? + 0":    {clause.Expr{SQL: "id = ? + 0", Vars: []any{x}}},
			"text id = ? * 1":    {"id = ? * 1", x},
			"text id = -?":       {"id = -?", -x},
			"text id = ?-1":      {"id = ?-1", x + 1},
			"text id = ? OR 1=1": {"id = ? OR 1 = 1", x},
		}
		for name, cond := range forms {
			var got []author
			err := r.db.Where(cond[0], cond[1:]...).Find(&got).Error
			var want []int64
			var plainErr error
			for _, d := range r.direct {
				var part []author
				plainErr = errors.Join(plainErr, d.Where(cond[0], cond[1:]...).Find(&part).Error)
				want = append(want, idsOf(part)...)
			}
			if plainErr != nil {
				continue // the database refuses it without the plugin too
			}
			if err != nil {
				if errors.Is(err, shardid.ErrNoShard) || errors.Is(err, shardid.ErrCrossShard) {
					continue
				}
				t.Errorf("%s: %v", name, err)
				continue
			}
			g := idsOf(got)
			slices.Sort(g)
			slices.Sort(want)
			if !slices.Equal(g, want) {
				t.Errorf("%s: got %d rows %v, one database gives %d %v", name, len(g), g, len(want), want)
			}
		}
	})
}

type scored struct {
	ID    int64 `shardid:""`
	Name  string
	Score int       `gorm:"default:7"`
	Tags  []string  `gorm:"serializer:json"`
	Made  time.Time `gorm:"autoCreateTime"`
}

// TestCreateReturnsDefaultsOnEveryDatabase: a Create split over several
// databases fills each row's database defaults, as one database's RETURNING
// does, also with OnConflict and serialized fields.
func TestCreateReturnsDefaultsOnEveryDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &scored{})
		rows := make([]scored, 40)
		for i := range rows {
			rows[i] = scored{Name: "s", Tags: []string{fmt.Sprint(i)}}
		}
		must(t, r.db.Create(&rows).Error)
		for _, s := range rows {
			if s.Score != 7 {
				t.Fatalf("row %d: score %d, want the default 7", s.ID, s.Score)
			}
		}
		again := make([]scored, len(rows))
		for i, s := range rows {
			again[i] = scored{ID: s.ID, Name: "again", Tags: []string{"x"}}
		}
		res := r.db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&again)
		must(t, res.Error)
		var back []scored
		must(t, r.db.Find(&back, idsOf2(rows)).Error)
		for _, s := range back {
			if s.Name != "again" || len(s.Tags) != 1 || s.Tags[0] != "x" {
				t.Fatalf("after the upsert: %+v", s)
			}
		}
	})
}

func idsOf2(rows []scored) []int64 {
	out := make([]int64, len(rows))
	for i, s := range rows {
		out[i] = s.ID
	}
	return out
}

type softNote struct {
	ID        int64 `shardid:""`
	Body      string
	DeletedAt gorm.DeletedAt `gorm:"index"`
}

// TestSoftDeleteReturningOverSeveralDatabases: a soft delete with RETURNING
// of rows on several databases stamps and returns every row.
func TestSoftDeleteReturningOverSeveralDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if b.name == "mariadb" {
			t.Skip("MariaDB has no UPDATE … RETURNING")
		}
		r := newRouting(t, b)
		fresh(t, r.db, &softNote{})
		rows := make([]softNote, 30)
		for i := range rows {
			rows[i].Body = "n"
		}
		must(t, r.db.Create(&rows).Error)
		ids := make([]int64, len(rows))
		for i, s := range rows {
			ids[i] = s.ID
		}
		var gone []softNote
		res := r.db.Clauses(clause.Returning{}).Where("id IN ?", ids).Delete(&gone)
		must(t, res.Error)
		if res.RowsAffected != int64(len(ids)) || len(gone) != len(ids) {
			t.Fatalf("%d affected, %d returned, want %d", res.RowsAffected, len(gone), len(ids))
		}
		for _, g := range gone {
			if !g.DeletedAt.Valid {
				t.Fatalf("returned row %d without its stamp", g.ID)
			}
		}
		var stamped int64
		for _, d := range r.direct {
			var n int64
			must(t, d.Unscoped().Model(&softNote{}).Where("deleted_at IS NOT NULL").Count(&n).Error)
			stamped += n
		}
		if stamped != int64(len(ids)) {
			t.Fatalf("%d rows stamped", stamped)
		}
		var left int64
		must(t, r.db.Model(&softNote{}).Clauses(shardid.AllShards()).Count(&left).Error)
		var all int64
		must(t, r.db.Unscoped().Model(&softNote{}).Clauses(shardid.AllShards()).Count(&all).Error)
		if left != 0 || all != int64(len(ids)) {
			t.Fatalf("%d visible, %d unscoped", left, all)
		}
	})
}

// TestIndexHintsWithJoinsOnMariaDB: an index hint on a read that joins a
// colocated model runs as on one database.
func TestIndexHintsWithJoinsOnMariaDB(t *testing.T) {
	for _, b := range backends {
		if b.name != "mariadb" {
			continue
		}
		r := newRouting(t, b)
		all := r.onEvery(t)
		var bookIDs []shardid.ID
		for _, a := range all {
			bk := book{AuthorID: a.ID, Title: "t"}
			must(t, r.db.Create(&bk).Error)
			bookIDs = append(bookIDs, bk.ID)
		}
		var one []book
		must(t, r.db.Clauses(hints.UseIndex("PRIMARY").ForJoin()).Joins("JOIN authors ON authors.id = books.author_id").Where("books.author_id = ?", all[0].ID).Find(&one).Error)
		var many []book
		must(t, r.db.Clauses(hints.ForceIndex("PRIMARY")).Joins("JOIN authors ON authors.id = books.author_id").Find(&many, bookIDs).Error)
		if len(one) != 1 || len(many) != len(bookIDs) {
			t.Fatalf("%d and %d rows", len(one), len(many))
		}
	}
}

// TestHintsReachAggregateParts: a comment and an optimizer hint on an
// aggregate or grouped read over several databases are in every part.
func TestHintsReachAggregateParts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.onEvery(t)
		log := &sqlLog{}
		db := r.db.Session(&gorm.Session{Logger: log})
		var agg struct {
			M int64
			N int64
		}
		must(t, db.Clauses(hints.Comment("select", "hinted"), shardid.AllShards()).Model(&author{}).Select("max(id) AS m, count(*) AS n").Scan(&agg).Error)
		with, without := log.of("authors", "hinted")
		if agg.N != r.count(t, &author{}) || len(with) != physicalShards {
			t.Errorf("aggregate %+v; with %q, without %q", agg, with, without)
		}
		var groups []struct {
			K int64
			N int64
		}
		must(t, db.Clauses(hints.CommentAfter("select", "hinted"), shardid.AllShards()).Model(&author{}).Select("id AS k, count(*) AS n").Group("id").Scan(&groups).Error)
		with, without = log.of("authors", "hinted")
		if len(groups) == 0 || len(with) != physicalShards {
			t.Errorf("groups %+v; with %q, without %q", groups, with, without)
		}
		if b.name == "mariadb" {
			must(t, db.Clauses(hints.New("MAX_EXECUTION_TIME(1000)"), shardid.AllShards()).Model(&author{}).Select("max(id) AS m, count(*) AS n").Scan(&agg).Error)
			with, without = log.of("authors", "MAX_EXECUTION_TIME")
			if len(with) != physicalShards {
				t.Errorf("optimizer hint: with %q, without %q", with, without)
			}
		}
		_ = all
	})
}

// TestLocksConflictAcrossShardTransactions: rows locked FOR UPDATE over
// several databases in one transaction across shards are skipped by another's
// SKIP LOCKED and refused to its NOWAIT, which writes nothing; the first
// commits its update everywhere.
func TestLocksConflictAcrossShardTransactions(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.onEvery(t)
		ids := idsOf(all)
		first := r.db.Clauses(shardid.AcrossShards()).Begin()
		must(t, first.Error)
		var locked []author
		must(t, first.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Find(&locked, ids).Error)
		err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
			var skipped []author
			if err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsSkipLocked}).Find(&skipped, ids).Error; err != nil {
				return err
			}
			if len(skipped) != 0 {
				return fmt.Errorf("SKIP LOCKED read %d locked rows", len(skipped))
			}
			var none []author
			if err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsNoWait}).Find(&none, ids).Error; err == nil {
				return fmt.Errorf("NOWAIT read %d locked rows", len(none))
			}
			return errors.New("conflict")
		})
		if err == nil || err.Error() != "conflict" {
			t.Fatalf("the second transaction: %v", err)
		}
		must(t, first.Model(&author{}).Where("id IN ?", ids).Update("name", "first").Error)
		must(t, first.Commit().Error)
		if n := r.count(t, &author{}, "name = ?", "first"); n != int64(len(ids)) {
			t.Fatalf("%d rows of %d renamed", n, len(ids))
		}
		r.noPrepared(t)
	})
}

// TestDoNothingCountsInsertedRowsOverSeveralDatabases: a batch over several
// databases, half of it already there, with ON CONFLICT DO NOTHING (INSERT
// IGNORE, INSERT OR IGNORE) counts and writes the new rows only, as one
// database does.
func TestDoNothingCountsInsertedRowsOverSeveralDatabases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		old := r.onEvery(t)
		modifiers := map[string]clause.Expression{"do nothing": clause.OnConflict{DoNothing: true}}
		if b.name == "mariadb" {
			modifiers["ignore"] = clause.Insert{Modifier: "IGNORE"}
		}
		if b.name == "sqlite" {
			modifiers["or ignore"] = clause.Insert{Modifier: "OR IGNORE"}
		}
		for name, m := range modifiers {
			fresh := make([]author, 20)
			for i := range fresh {
				fresh[i].Name = "new " + name
			}
			must(t, r.db.Create(&fresh).Error) // IDs made, then removed, so the batch has both
			must(t, r.db.Where("id IN ?", idsOf(fresh)).Delete(&author{}).Error)
			batch := append([]author{}, fresh...)
			for _, o := range old {
				batch = append(batch, author{ID: o.ID, Name: "not written"})
			}
			res := r.db.Clauses(m).Create(&batch)
			must(t, res.Error)
			if got := r.count(t, &author{}, "name = ?", "new "+name); got != int64(len(fresh)) {
				t.Errorf("%s: %d new rows written, want %d", name, got, len(fresh))
			}
			if n := r.count(t, &author{}, "name = ?", "not written"); n != 0 {
				t.Errorf("%s: %d old rows overwritten", name, n)
			}
			if res.RowsAffected != int64(len(fresh)) {
				t.Errorf("%s: RowsAffected %d, want %d", name, res.RowsAffected, len(fresh))
			}
		}
	})
}

type lockedBook struct {
	ID       shardid.ID `shardid:"colocate:AuthorID"`
	AuthorID int64
	Author   author
	Title    string
}

func (lockedBook) TableName() string { return "books" }

// TestLockingOfJoinedRows: FOR UPDATE OF the model's table, with a
// colocated join, on one database and over several in a transaction across
// shards, reads as on one database.
func TestLockingOfJoinedRows(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all := r.onEvery(t)
		var bookIDs []shardid.ID
		for _, a := range all {
			bk := book{AuthorID: a.ID, Title: "t"}
			must(t, r.db.Create(&bk).Error)
			bookIDs = append(bookIDs, bk.ID)
		}
		locks := []clause.Locking{{Strength: clause.LockingStrengthUpdate}}
		if b.name == "postgres" {
			locks = append(locks, clause.Locking{Strength: clause.LockingStrengthUpdate, Table: clause.Table{Name: clause.CurrentTable}},
				clause.Locking{Strength: clause.LockingStrengthShare, Table: clause.Table{Name: "Author"}})
		}
		for _, l := range locks {
			err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				var one []lockedBook
				if err := tx.Clauses(l).InnerJoins("Author").Where("books.author_id = ?", all[0].ID).Find(&one).Error; err != nil {
					return fmt.Errorf("one database: %w", err)
				}
				var many []lockedBook
				if err := tx.Clauses(l).InnerJoins("Author").Find(&many, bookIDs).Error; err != nil {
					return fmt.Errorf("several: %w", err)
				}
				if len(one) != 1 || len(many) != len(bookIDs) || many[0].Author.ID == 0 {
					return fmt.Errorf("%d and %d rows", len(one), len(many))
				}
				return nil
			})
			if err != nil {
				t.Errorf("%+v: %v", l, err)
			}
		}
	})
}

type embeddedOwner struct {
	OwnerID int64
	Label   string
}

type embeddedNote struct {
	ID   int64         `shardid:"colocate:OwnerID"`
	Ref  embeddedOwner `gorm:"embedded;embeddedPrefix:ref_"`
	Body string
}

// TestColocateKeyInEmbeddedStruct: a colocate key inside an embedded struct
// with a prefix places rows beside their owner and routes conditions on its
// column, or is refused by name.
func TestColocateKeyInEmbeddedStruct(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		if err := migrator(r.db).AutoMigrate(&embeddedNote{}); err != nil {
			if errors.Is(err, shardid.ErrInvalidTag) {
				t.Logf("refused: %v", err)
				return
			}
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = migrator(r.db).DropTable(&embeddedNote{}) })
		all := r.onEvery(t)
		for _, a := range all {
			n := embeddedNote{Ref: embeddedOwner{OwnerID: a.ID, Label: "l"}, Body: "b"}
			must(t, r.db.Create(&n).Error)
			if got := r.where(t, &embeddedNote{}, n.ID); !slices.Equal(got, []int{r.physicalOf(a.ID)}) {
				t.Fatalf("note on %v, owner on %d", got, r.physicalOf(a.ID))
			}
			var back []embeddedNote
			must(t, r.db.Where("ref_owner_id = ?", a.ID).Find(&back).Error)
			if len(back) != 1 || back[0].ID != n.ID {
				t.Fatalf("by owner: %+v", back)
			}
			var byStruct []embeddedNote
			must(t, r.db.Where(&embeddedNote{Ref: embeddedOwner{OwnerID: a.ID}}).Find(&byStruct).Error)
			if len(byStruct) != 1 {
				t.Fatalf("by struct: %+v", byStruct)
			}
		}
		n := embeddedNote{ID: int64(0), Ref: embeddedOwner{OwnerID: all[0].ID}}
		must(t, r.db.Create(&n).Error)
		err := r.db.Model(&n).Update("ref_owner_id", all[1].ID).Error
		if !errors.Is(err, shardid.ErrCrossShard) {
			t.Fatalf("moving a note to another owner's shard: %v", err)
		}
	})
}

// TestLockingCountsAndAggregatesOnMariaDB: FOR UPDATE on a count and on an
// aggregate over several databases, in a transaction across shards, locks
// the rows on each database, as on one.
func TestLockingCountsAndAggregatesOnMariaDB(t *testing.T) {
	for _, b := range backends {
		if b.name != "mariadb" {
			continue
		}
		r := newRouting(t, b)
		all := r.onEvery(t)
		ids := idsOf(all)
		reads := map[string]func(tx *gorm.DB) error{
			"count": func(tx *gorm.DB) error {
				var n int64
				return tx.Model(&author{}).Where("id IN ?", ids).Count(&n).Error
			},
			"aggregate": func(tx *gorm.DB) error {
				var m struct{ M int64 }
				return tx.Model(&author{}).Where("id IN ?", ids).Select("max(id) AS m").Scan(&m).Error
			},
		}
		for name, read := range reads {
			err := r.db.Clauses(shardid.AcrossShards()).Transaction(func(tx *gorm.DB) error {
				if err := read(tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})); err != nil {
					return err
				}
				for i, d := range r.direct {
					var a author
					if d.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsNoWait}).First(&a, all[i].ID).Error == nil {
						return fmt.Errorf("database %d: not locked", i)
					}
				}
				return nil
			})
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

// TestReturningIntoOneStructCountsAsOneDatabase: an update and a delete with
// RETURNING into one struct over several databases count the rows written,
// as GORM counts them on one database, or are refused with nothing written.
func TestReturningIntoOneStructCountsAsOneDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if b.name == "mariadb" {
			t.Skip("MariaDB has no UPDATE … RETURNING")
		}
		r := newRouting(t, b)
		all := r.onEvery(t)
		ids := idsOf(all)
		plain := r.direct[0]
		plainIDs := []int64{1, 2, 3, 4}
		for _, id := range plainIDs {
			must(t, plain.Create(&author{ID: id, Name: "p"}).Error)
		}
		var p, s author
		pu := plain.Model(&p).Clauses(clause.Returning{}).Where("id IN ?", plainIDs).Update("name", "x")
		su := r.db.Model(&s).Clauses(clause.Returning{}).Where("id IN ?", ids).Update("name", "x")
		must(t, pu.Error)
		if errors.Is(su.Error, shardid.ErrCrossShard) {
			if n := r.count(t, &author{}, "name = ? AND id IN ?", "x", ids); n != 0 {
				t.Fatalf("refused, yet %d rows written", n)
			}
			return // refused by name, nothing written
		}
		must(t, su.Error)
		if pu.RowsAffected != su.RowsAffected || (p.ID == 0) != (s.ID == 0) || p.Name != s.Name {
			t.Errorf("update: one database %d %+v, several %d %+v", pu.RowsAffected, p, su.RowsAffected, s)
		}
		var pd, sd author
		pdel := plain.Clauses(clause.Returning{}).Where("id IN ?", plainIDs).Delete(&pd)
		sdel := r.db.Clauses(clause.Returning{}).Where("id IN ?", ids).Delete(&sd)
		must(t, pdel.Error)
		must(t, sdel.Error)
		if pdel.RowsAffected != sdel.RowsAffected || (pd.ID == 0) != (sd.ID == 0) {
			t.Errorf("delete: one database %d %+v, several %d %+v", pdel.RowsAffected, pd, sdel.RowsAffected, sd)
		}
	})
}
