package integration

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// Named types a condition's value may come as.
type (
	authorID   int64
	tenantCode string
)

// TestConditionValuesAsBound: a condition's value is read as database/sql
// binds it (pointers followed, NULL, driver.Valuer, named types, sql.Null*,
// []byte), so the statement reaches the row's database or is refused; a value
// that cannot be read as the column's type is ErrNoShard, never a guess.
func TestConditionValuesAsBound(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		_, x, y := r.spreadAuthors(t, func() author { return author{Name: "a", Books: []book{{Title: "t"}}} })
		bk := x.Books[0]
		tn := tenant{Code: "acme"}
		must(t, r.db.Create(&tn).Error)

		xid, code := x.ID, tn.Code
		bookID := bk.ID
		for form, query := range map[string]func(got *author) *gorm.DB{
			"a pointer":                 func(got *author) *gorm.DB { return r.db.Where("id = ?", &xid).First(got) },
			"a pointer to a pointer":    func(got *author) *gorm.DB { p := &xid; return r.db.Where("id = ?", &p).First(got) },
			"a named integer type":      func(got *author) *gorm.DB { return r.db.Where("id = ?", authorID(xid)).First(got) },
			"a pointer to a named type": func(got *author) *gorm.DB { v := authorID(xid); return r.db.Where("id = ?", &v).First(got) },
			"a driver.Valuer":           func(got *author) *gorm.DB { return r.db.Where("id = ?", shardid.ID(xid)).First(got) },
			"a pointer to a Valuer":     func(got *author) *gorm.DB { v := shardid.ID(xid); return r.db.Where("id = ?", &v).First(got) },
			"sql.NullInt64": func(got *author) *gorm.DB {
				return r.db.Where("id = ?", sql.NullInt64{Int64: xid, Valid: true}).First(got)
			},
			"clause.Eq with a pointer": func(got *author) *gorm.DB { return r.db.Where(clause.Eq{Column: "id", Value: &xid}).First(got) },
			"a map with a pointer":     func(got *author) *gorm.DB { return r.db.Where(map[string]any{"id": &xid}).First(got) },
			"pointers in an IN list": func(got *author) *gorm.DB {
				return r.db.Where("id IN ?", []*int64{&xid}).First(got)
			},
		} {
			var got author
			if err := query(&got).Error; err != nil || got.ID != x.ID {
				t.Errorf("%s: %v, read %d, want %d", form, err, got.ID, x.ID)
			}
		}
		// A colocated model's key as its own type, and as a pointer to it.
		var gotBook book
		if err := r.db.Where("id = ?", &bookID).First(&gotBook).Error; err != nil || gotBook.ID != bk.ID {
			t.Errorf("a *shardid.ID: %v", err)
		}
		// Hash keys: a pointer hashes the value it points to, not its address.
		for form, value := range map[string]any{
			"a *string":         &code,
			"a named string":    tenantCode(code),
			"a *named string":   func() any { v := tenantCode(code); return &v }(),
			"sql.NullString":    sql.NullString{String: code, Valid: true},
			"a pointer to text": func() any { p := &code; return &p }(),
		} {
			var got tenant
			if err := r.db.Where("code = ?", value).First(&got).Error; err != nil || got.ID != tn.ID {
				t.Errorf("hash key as %s: %v, read %d", form, err, got.ID)
			}
		}
		if b.name != "sqlite" { // SQLite never finds text equal to a BLOB
			var got tenant
			if err := r.db.Where("code = ?", []byte(code)).First(&got).Error; err != nil || got.ID != tn.ID {
				t.Errorf("hash key as []byte: %v, read %d", err, got.ID)
			}
		}

		// NULL matches no row: no database is asked for one, and nothing panics.
		for form, value := range map[string]any{
			"a nil *shardid.ID":    (*shardid.ID)(nil),
			"a nil *int64":         (*int64)(nil),
			"an invalid NullInt64": sql.NullInt64{},
			"nil":                  nil,
		} {
			var found []author
			if err := r.db.Where("id = ?", value).Find(&found).Error; err != nil || len(found) != 0 {
				t.Errorf("id = %s: %v, %d rows; want none, no error", form, err, len(found))
			}
			var books []book
			if err := r.db.Where("author_id IN ?", []any{value}).Find(&books).Error; err != nil || len(books) != 0 {
				t.Errorf("author_id IN (%s): %v, %d rows; want none, no error", form, err, len(books))
			}
		}
		// An ID that is not positive, which the plugin never writes, matches no row as NULL does.
		for _, value := range []any{-5, 0, "0"} {
			var found []author
			if err := r.db.Where("id = ?", value).Find(&found).Error; err != nil || len(found) != 0 {
				t.Errorf("id = %#v: %v, %d rows; want none, no error", value, err, len(found))
			}
		}
		// A NULL beside a real value still reaches that value's database.
		var two []author
		if err := r.db.Where("id IN ?", []any{nil, &xid, y.ID}).Find(&two).Error; err != nil || len(two) != 2 {
			t.Errorf("IN (NULL, x, y): %v, %d rows", err, len(two))
		}
		// `IS NULL` is not a condition on the key's value: refused.
		var none []tenant
		if err := r.db.Where(map[string]any{"code": nil}).Find(&none).Error; !errors.Is(err, shardid.ErrNoShard) {
			t.Errorf("code IS NULL: got %v, want ErrNoShard", err)
		}

		// A value that is not one of the column's type is refused, not hashed or guessed.
		var found []author
		for form, tx := range map[string]*gorm.DB{
			"a float for an ID":          r.db.Where("id = ?", 1.5).Find(&found),
			"a bool for an ID":           r.db.Where("id = ?", true).Find(&found),
			"a struct for an ID":         r.db.Where("id = ?", struct{ A int }{1}).Find(&found),
			"a number for a text key":    r.db.Where("code = ?", 42).Find(&none),
			"an expression for an ID":    r.db.Where("id = ?", gorm.Expr("id")).Find(&found),
			"a column for an ID":         r.db.Where("id = ?", clause.Column{Name: "id"}).Find(&found),
			"text that is not a number":  r.db.Where("id = ?", "12abc").Find(&found),
			"a uint64 above 2^63 for ID": r.db.Where("id = ?", uint64(1<<63)).Find(&found),
		} {
			if !errors.Is(tx.Error, shardid.ErrNoShard) {
				t.Errorf("%s: got %v, want ErrNoShard", form, tx.Error)
			}
		}
	})
}

// TestSubqueriesRouted: a *gorm.DB bound as a value is a statement of its own,
// routed on its own model; the statement and its subquery must run on one
// database, and an error of the subquery is the statement's: never an empty
// IN () spliced in, never a subquery run on another database's tables.
func TestSubqueriesRouted(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		_, x, y := r.spreadAuthors(t, func() author { return author{Name: "a", Books: []book{{Title: "t"}, {Title: "u"}}} })
		must(t, r.db.Create(&setting{Value: "t"}).Error)
		booksOf := func(id int64) *gorm.DB { return r.db.Model(&book{}).Select("id").Where("author_id = ?", id) }
		namesOf := func(id int64) *gorm.DB { return r.db.Model(&author{}).Select("name").Where("id = ?", id) }
		withAuthors := func() *gorm.DB {
			return r.db.Joins("JOIN authors ON authors.id = books.author_id").Where("books.author_id = ?", x.ID)
		}

		// Same database: it runs, and finds what one database would.
		var books []book
		if err := r.db.Where("author_id = ?", x.ID).Where("id IN (?)", booksOf(x.ID)).Find(&books).Error; err != nil || len(books) != 2 {
			t.Fatalf("a subquery on the statement's database: %v, %d rows", err, len(books))
		}
		var settings []setting
		if err := r.db.Where("value IN (?)", r.db.Model(&setting{}).Select("value")).Find(&settings).Error; err != nil || len(settings) != 1 {
			t.Fatalf("an unsharded subquery in an unsharded statement: %v, %d rows", err, len(settings))
		}
		if err := r.db.Model(&author{ID: x.ID}).Update("name", r.db.Model(&book{}).Select("title").Where("author_id = ?", x.ID).Order("title").Limit(1)).Error; err != nil {
			t.Fatalf("an update whose value is a subquery on its database: %v", err)
		}
		var name string
		must(t, r.direct[r.physicalOf(x.ID)].Model(&author{}).Where("id = ?", x.ID).Pluck("name", &name).Error)
		if name != "t" {
			t.Fatalf("the update from a subquery wrote %q", name)
		}

		var found []author
		var maps []map[string]any
		for form, tx := range map[string]*gorm.DB{
			"a subquery on another database":               r.db.Where("author_id = ?", x.ID).Where("id IN (?)", booksOf(y.ID)).Find(&books),
			"in clause.Eq":                                 r.db.Where("author_id = ?", x.ID).Where(clause.Eq{Column: "id", Value: r.db.Model(&book{}).Select("max(id)").Where("author_id = ?", y.ID)}).Find(&books),
			"an unsharded subquery on a shard":             r.db.Where("author_id = ?", x.ID).Where("title IN (?)", r.db.Model(&setting{}).Select("value")).Find(&books),
			"a sharded subquery in an unsharded statement": r.db.Where("value IN (?)", r.db.Model(&book{}).Select("title").Where("author_id = ?", x.ID)).Find(&settings),
			"a raw join of another database":               r.db.Joins("JOIN (?) AS other ON other.id = books.id", booksOf(y.ID)).Where("author_id = ?", x.ID).Find(&books),
			"a table of another database":                  r.db.Table("(?) AS t", r.db.Model(&author{}).Where("id = ?", x.ID)).Find(&maps),
			"an update from another database":              r.db.Model(&author{ID: x.ID}).Update("name", r.db.Model(&book{}).Select("title").Where("author_id = ?", y.ID).Limit(1)),
			"a subquery over all databases":                r.db.Where("author_id = ?", x.ID).Where("id IN (?)", r.db.Model(&book{}).Select("id").Clauses(shardid.AllShards())).Find(&books),
			"a subquery in a fan-out":                      r.db.Clauses(shardid.AllShards()).Where("id IN (?)", r.db.Model(&author{}).Select("id").Where("id = ?", x.ID)).Find(&found),
			"a delete with a subquery":                     r.db.Where("author_id = ?", x.ID).Where("id IN (?)", booksOf(y.ID)).Delete(&book{}),
			// Of a table the statement's colocated join covers, so that only the subquery's routing can refuse them.
			"a subquery by sql.Named":        withAuthors().Where("authors.name IN (@s)", sql.Named("s", namesOf(y.ID))).Find(&books),
			"a subquery by a map of names":   withAuthors().Where("authors.name IN (@s)", map[string]any{"s": namesOf(y.ID)}).Find(&books),
			"a subquery in a slice of them":  withAuthors().Where("authors.name IN (?)", []*gorm.DB{namesOf(y.ID)}).Find(&books),
			"a subquery a GormValue returns": withAuthors().Where("authors.name IN ?", subqueryValue{namesOf(y.ID)}).Find(&books),
		} {
			if !errors.Is(tx.Error, shardid.ErrCrossShard) {
				t.Errorf("%s: got %v, want ErrCrossShard", form, tx.Error)
			}
		}
		// The subquery's own routing error is the statement's.
		for form, tx := range map[string]*gorm.DB{
			"a subquery without a shard":        r.db.Where("author_id = ?", x.ID).Where("id IN (?)", r.db.Model(&book{}).Select("id").Where("title = ?", "t")).Find(&books),
			"a nested subquery without a shard": r.db.Where("author_id = ?", x.ID).Where("id IN (?)", r.db.Model(&book{}).Select("id").Where("author_id = ?", x.ID).Where("id IN (?)", r.db.Model(&book{}).Select("id"))).Find(&books),
			"a subquery value that is no ID":    r.db.Where("author_id = ?", x.ID).Where("id IN (?)", r.db.Model(&book{}).Select("id").Where("author_id = ?", 1.5)).Find(&books),
		} {
			if !errors.Is(tx.Error, shardid.ErrNoShard) {
				t.Errorf("%s: got %v, want ErrNoShard", form, tx.Error)
			}
		}
		// A refused delete changed nothing.
		var left int64
		must(t, r.direct[r.physicalOf(x.ID)].Model(&book{}).Where("author_id = ?", x.ID).Count(&left).Error)
		if left != 2 {
			t.Fatalf("x's books after the refused delete: %d, want 2", left)
		}
		// A DryRun statement's SQL is not changed by routing: a fan-out is built, not run.
		stmt := r.db.Session(&gorm.Session{DryRun: true}).Clauses(shardid.AllShards()).Where("id IN ?", []int64{x.ID, y.ID}).Find(&found).Statement
		if sql := stmt.SQL.String(); sql == "" || len(stmt.Vars) != 2 {
			t.Fatalf("DryRun over two databases: %q %v", sql, stmt.Vars)
		}
	})
}

// subqueryValue is a value whose GormValue is a subquery.
type subqueryValue struct{ sub *gorm.DB }

func (v subqueryValue) GormValue(context.Context, *gorm.DB) clause.Expr {
	return clause.Expr{SQL: "(?)", Vars: []any{v.sub}}
}

// TestKeyListInATextWithOtherConditions: Where("id IN ? AND name = ?") names
// its rows by its IDs, as the same conditions in two Wheres do: a Delete over
// several databases removes exactly the rows that match, each on its own.
func TestKeyListInATextWithOtherConditions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		all, x, y := r.spreadAuthors(t, func() author { return author{Name: "keep"} })
		must(t, r.db.Model(&author{}).Where("id IN ?", []int64{x.ID, y.ID}).Update("name", "drop").Error)
		ids := []int64{x.ID, y.ID, all[2].ID, all[3].ID}
		var found []author
		must(t, r.db.Where("id IN ? AND name = ?", ids, "drop").Find(&found).Error)
		if len(found) != 2 {
			t.Fatalf("found %d authors named drop among %v, want 2", len(found), ids)
		}
		res := r.db.Where("name = ? AND id IN ?", "drop", ids).Delete(&author{})
		must(t, res.Error)
		if res.RowsAffected != 2 {
			t.Fatalf("deleted %d, want 2", res.RowsAffected)
		}
		var left int64
		for _, db := range r.direct {
			var n int64
			must(t, db.Model(&author{}).Count(&n).Error)
			left += n
		}
		if left != int64(len(all)-2) {
			t.Fatalf("%d authors left on the databases, want %d", left, len(all)-2)
		}
	})
}

// TestUpdateOfARowWhereAnotherRowsIDNoRowMatches: Model(&x).Where("id = ?",
// y.ID) names rows of two databases, which no row is: the update changes
// nothing and says so, wherever x and y are, as on one database.
func TestUpdateOfARowWhereAnotherRowsIDNoRowMatches(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		_, x, y := r.spreadAuthors(t, func() author { return author{Name: "a"} })
		for _, pair := range [][2]author{{x, y}, {y, x}} {
			res := r.db.Model(&pair[0]).Where("id = ?", pair[1].ID).Update("name", "changed")
			if res.Error != nil || res.RowsAffected != 0 {
				t.Errorf("Model(%d).Where(id = %d).Update: %v, %d rows; want no error and no row", pair[0].ID, pair[1].ID, res.Error, res.RowsAffected)
			}
		}
		for i, db := range r.direct { // each physical database, read without the plugin
			var changed int64
			must(t, db.Model(&author{}).Where("name = ?", "changed").Count(&changed).Error)
			if changed != 0 {
				t.Fatalf("%d authors changed on physical database %d", changed, i)
			}
		}
	})
}
