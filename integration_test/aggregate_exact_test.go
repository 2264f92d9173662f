package integration

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// The edges of merged reads: names HAVING and ORDER BY read differently,
// windows on a COUNT(DISTINCT), text whose collation pads or drops trailing
// spaces or is not UTF-8, ENUMs, PostgreSQL's NaN, unsigned columns. Each
// answer over four databases equals one database's, or is refused.

// twin holds the same rows over the plugin's four physical databases and
// in one database without the plugin.
type twin struct {
	sharded, one *gorm.DB
	model        any
}

// newTwin creates model's table on both sides, lets alter change its
// columns on each database, and writes rows (structs of model) on both:
// the i-th on physical database place[i].
func newTwin(t *testing.T, b backend, model any, alter func(db *gorm.DB), rows any, place []int) *twin {
	t.Helper()
	r := newRouting(t, b)
	fresh(t, r.db, model)
	one, err := gorm.Open(b.dialector(t, t.TempDir()), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := one.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	must(t, one.Migrator().DropTable(model))
	must(t, one.AutoMigrate(model))
	if alter != nil {
		for _, db := range append(slices.Clone(r.direct), one) {
			alter(db)
		}
	}
	shardCount := r.plugin.Layout().ShardCount()
	list := reflect.ValueOf(rows)
	for i := range list.Len() {
		row := reflect.New(list.Type().Elem())
		row.Elem().Set(list.Index(i))
		must(t, r.db.Clauses(shardid.OnShard(place[i%len(place)]*shardCount/physicalShards)).Create(row.Interface()).Error)
		must(t, one.Create(row.Interface()).Error) // with the ID the plugin made
	}
	return &twin{sharded: r.db.Clauses(shardid.AllShards()).Session(&gorm.Session{}), one: one, model: model}
}

// same fails unless query over four databases returns what it returns on
// one: the same values of the same types in the same order, and the same
// RowsAffected.
func (tw *twin) same(t *testing.T, name string, query func(db *gorm.DB, into any) *gorm.DB, into func() any) {
	t.Helper()
	want, got := into(), into()
	w, g := query(tw.one.Model(tw.model), want), query(tw.sharded.Model(tw.model), got)
	switch {
	case w.Error != nil:
		t.Fatalf("%s on one database: %v", name, w.Error)
	case g.Error != nil:
		t.Errorf("%s over four databases: %v", name, g.Error)
	case !reflect.DeepEqual(want, got) && !sameNaN(want, got) || w.RowsAffected != g.RowsAffected:
		t.Errorf("%s:\none database:   %s (%d rows)\nfour databases: %s (%d rows)", name, show(want), w.RowsAffected, show(got), g.RowsAffected)
	}
}

// sameNaN compares results holding a NaN, which equals nothing, as text.
func sameNaN(want, got any) bool {
	text := plainText(reflect.ValueOf(want))
	return strings.Contains(text, "NaN") && text == plainText(reflect.ValueOf(got))
}

// plainText writes a value with its pointers followed and its maps' keys
// sorted.
func plainText(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "nil"
		}
		return plainText(v.Elem())
	case reflect.Slice:
		var items []string
		for i := range v.Len() {
			items = append(items, plainText(v.Index(i)))
		}
		return "[" + strings.Join(items, " ") + "]"
	case reflect.Map:
		var items []string
		for _, k := range v.MapKeys() {
			items = append(items, fmt.Sprint(k.Interface())+":"+plainText(v.MapIndex(k)))
		}
		slices.Sort(items)
		return "{" + strings.Join(items, " ") + "}"
	case reflect.Struct:
		var items []string
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				items = append(items, plainText(v.Field(i)))
			}
		}
		return "{" + strings.Join(items, " ") + "}"
	}
	return fmt.Sprintf("%v(%s)", v.Interface(), v.Type())
}

// refused fails unless query over four databases is refused with
// ErrCrossShard.
func (tw *twin) refused(t *testing.T, name string, query func(db *gorm.DB, into any) *gorm.DB, into func() any) {
	t.Helper()
	if err := query(tw.sharded.Model(tw.model), into()).Error; !errors.Is(err, shardid.ErrCrossShard) {
		t.Errorf("%s over four databases: %v, want ErrCrossShard", name, err)
	}
}

func strs() any { return &[]string{} }

type havingRow struct {
	ID int64 `shardid:""`
	G  int64 `gorm:"not null"`
}

// TestHavingReadsAGroupedColumnBeforeAnAlias: in HAVING a name that is a
// grouped column and an alias is the column; on PostgreSQL an alias is not
// visible there at all, and one database fails as the plugin does.
func TestHavingReadsAGroupedColumnBeforeAnAlias(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		var rows []havingRow
		for i := range 16 {
			rows = append(rows, havingRow{G: int64(i % 5)})
		}
		tw := newTwin(t, b, &havingRow{}, nil, rows, []int{0, 1, 2, 3})
		tw.same(t, "HAVING g, both an alias and the grouped column", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("count(*) AS g").Group("g").Having("g > ?", 2).Order("g").Find(into)
		}, rowMaps)
		tw.same(t, "ORDER BY g, both an alias and the grouped column: the alias", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("g AS n, count(*) AS g").Group("g").Order("g desc, n").Find(into)
		}, rowMaps)
		aliasInHaving := func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("g, count(*) AS c").Group("g").Having("c > ?", 3).Order("g").Find(into)
		}
		if b.name == "postgres" {
			if err := aliasInHaving(tw.one.Model(&havingRow{}), rowMaps()).Error; err == nil {
				t.Fatal("PostgreSQL took an alias in HAVING")
			}
			tw.refused(t, "an alias in PostgreSQL's HAVING", aliasInHaving, rowMaps)
		} else {
			tw.same(t, "an alias in HAVING", aliasInHaving, rowMaps)
		}
		for _, window := range []struct {
			name          string
			limit, offset int
		}{{"LIMIT 0", 0, 0}, {"OFFSET 1", 5, 1}, {"LIMIT 1", 1, 0}} {
			tw.same(t, "COUNT(DISTINCT) with "+window.name, func(db *gorm.DB, into any) *gorm.DB {
				return db.Select("count(distinct g) AS c").Limit(window.limit).Offset(window.offset).Find(into)
			}, rowMaps)
		}
	})
}

// TestTextOfCollationsThatDifferBetweenDatabasesIsNotMerged: each database
// orders a part's text by its own collation, and two servers may have
// different ones (a default of libc's C.UTF-8 beside ICU's): MIN and MAX
// of the parts, and their first rows by that text, taken by each
// database's order, are refused, not compared as bytes because the first
// database compares so.
func TestTextOfCollationsThatDifferBetweenDatabasesIsNotMerged(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		altered := 0
		alter := func(db *gorm.DB) {
			binaryCollation(t, b, db, "text_rows", "code")
			if altered++; altered == 1 {
				return // the first database compares as bytes, the others do not
			}
			switch b.name {
			case "mariadb":
				must(t, db.Exec("ALTER TABLE text_rows MODIFY code varchar(16) COLLATE utf8mb4_unicode_ci NOT NULL").Error)
			case "postgres":
				var icu bool
				must(t, db.Raw(`SELECT EXISTS (SELECT FROM pg_collation WHERE collname = 'und-x-icu')`).Scan(&icu).Error)
				if !icu {
					t.Skip("the server has no ICU collations")
				}
				must(t, db.Exec(`ALTER TABLE text_rows ALTER COLUMN code TYPE varchar(16) COLLATE "und-x-icu"`).Error)
			}
		}
		rows := []textRow{{Code: "c"}, {Code: "F"}, {Code: "a"}, {Code: "E"}}
		tw := newTwin(t, b, &textRow{}, alter, rows, []int{0, 1, 2, 3})
		tw.refused(t, "MAX of text", func(db *gorm.DB, into any) *gorm.DB { return db.Select("max(code) AS hi").Find(into) }, rowMaps)
		tw.refused(t, "MIN of text", func(db *gorm.DB, into any) *gorm.DB { return db.Select("min(code) AS lo").Find(into) }, rowMaps)
		tw.refused(t, "GROUP BY text, ordered", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("code, count(*) AS n").Group("code").Order("code").Find(into)
		}, rowMaps)
		// One row from each part shows no order of its own to check.
		tw.refused(t, "the first row ordered by text", func(db *gorm.DB, into any) *gorm.DB { return db.Order("code").Limit(1).Find(into) }, func() any { return &[]textRow{} })
	})
}

type textRow struct {
	ID   int64  `shardid:""`
	G    int64  `gorm:"not null"`
	Code string `gorm:"size:16;not null"` // binaryCollation
	Word string `gorm:"size:16;not null"` // MariaDB: latin2_bin; PostgreSQL: char(4) COLLATE "C"
	Kind string `gorm:"size:16;not null"` // MariaDB: an ENUM
}

// TestTextMergesAsItsCollationCompares: MariaDB's utf8mb4_bin pads the
// shorter string with spaces ("a\t" before "a"); PostgreSQL's char(n)
// drops trailing spaces; a binary collation of another character set, and
// an ENUM, order otherwise than the text's UTF-8 bytes, and are refused.
func TestTextMergesAsItsCollationCompares(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		alter := func(db *gorm.DB) {
			binaryCollation(t, b, db, "text_rows", "code")
			switch b.name {
			case "mariadb":
				must(t, db.Exec("ALTER TABLE text_rows MODIFY word varchar(16) CHARACTER SET latin2 COLLATE latin2_bin NOT NULL").Error)
				must(t, db.Exec("ALTER TABLE text_rows MODIFY kind ENUM('zeta','alpha','mid') CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL").Error)
			case "postgres":
				must(t, db.Exec(`ALTER TABLE text_rows ALTER COLUMN word TYPE char(4) COLLATE "C.utf8"`).Error) // libc's, by code point
			}
		}
		words := []string{"Ą", "ł", "Ç", "a"}
		if b.name != "mariadb" {
			words = []string{"a\t", "a", "b", "a\tb"}
		}
		var rows []textRow
		for i, code := range []string{"a", "a\t", "b", "b\x01c", "a\tb", "ab", "a ", "A"} {
			rows = append(rows, textRow{G: int64(i % 2), Code: code, Word: words[i%4], Kind: []string{"zeta", "alpha", "mid"}[i%3]})
		}
		tw := newTwin(t, b, &textRow{}, alter, rows, []int{0, 1, 2, 3})
		entries := func() any { return &[]textRow{} }
		columns := []string{"code", "word"}
		if b.name == "mariadb" {
			columns = []string{"code"} // word and kind: refused below
		}
		for _, c := range columns {
			tw.same(t, "DISTINCT "+c+" ordered", func(db *gorm.DB, into any) *gorm.DB { return db.Distinct(c).Order(c).Find(into) }, strs)
			tw.same(t, "MIN and MAX of "+c+" per group", func(db *gorm.DB, into any) *gorm.DB {
				return db.Select("g, min(" + c + ") AS lo, max(" + c + ") AS hi").Group("g").Order("g").Find(into)
			}, rowMaps)
			tw.same(t, "GROUP BY "+c+" descending", func(db *gorm.DB, into any) *gorm.DB {
				return db.Select(c + ", count(*) AS n").Group(c).Order(c + " desc").Find(into)
			}, rowMaps)
			tw.same(t, "rows ordered by "+c, func(db *gorm.DB, into any) *gorm.DB { return db.Order(c + ", id").Find(into) }, entries)
		}
		if b.name != "mariadb" {
			return
		}
		for _, c := range []string{"word", "kind"} {
			tw.refused(t, "DISTINCT "+c+" ordered", func(db *gorm.DB, into any) *gorm.DB { return db.Distinct(c).Order(c).Find(into) }, strs)
			tw.refused(t, "rows ordered by "+c, func(db *gorm.DB, into any) *gorm.DB { return db.Order(c + ", id").Find(into) }, entries)
			tw.refused(t, "MAX of "+c, func(db *gorm.DB, into any) *gorm.DB { return db.Select("max(" + c + ") AS hi").Find(into) }, rowMaps)
			// Equal strings are equal bytes in either: groups merge, unordered.
			var want, got []string
			must(t, tw.one.Model(&textRow{}).Distinct(c).Find(&want).Error)
			must(t, tw.sharded.Model(&textRow{}).Distinct(c).Find(&got).Error)
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(want, got) {
				t.Errorf("DISTINCT %s: one database %q, four %q", c, want, got)
			}
		}
	})
}

type docRow struct {
	ID  int64  `shardid:""`
	G   int64  `gorm:"not null"`
	Doc string `gorm:"not null"` // PostgreSQL: jsonb
	Tag string `gorm:"not null"` // PostgreSQL: an enum
}

// TestPostgresValuesEqualOtherwiseThanTheirTextAreNotMerged: jsonb's
// {"a": 1} and {"a": 1.0} are one value, two texts: grouped or counted
// distinct over several databases, such a column is refused, where one
// database finds one group. An enum's labels are equal as their text is:
// its groups merge.
func TestPostgresValuesEqualOtherwiseThanTheirTextAreNotMerged(t *testing.T) {
	b := postgresOnly(t)
	alter := func(db *gorm.DB) {
		must(t, db.Exec("ALTER TABLE doc_rows ALTER COLUMN doc TYPE jsonb USING doc::jsonb").Error)
		must(t, db.Exec("DO $$ BEGIN CREATE TYPE doc_tag AS ENUM ('zeta', 'alpha'); EXCEPTION WHEN duplicate_object THEN NULL; END $$").Error)
		must(t, db.Exec("ALTER TABLE doc_rows ALTER COLUMN tag TYPE doc_tag USING tag::doc_tag").Error)
	}
	rows := []docRow{{G: 1, Doc: `{"a": 1}`, Tag: "zeta"}, {G: 1, Doc: `{"a": 1.0}`, Tag: "alpha"}, {G: 2, Doc: `{"a": 1}`, Tag: "zeta"}}
	tw := newTwin(t, b, &docRow{}, alter, rows, []int{0, 1, 2})
	var groups int64
	must(t, tw.one.Model(&docRow{}).Group("doc").Count(&groups).Error)
	if groups != 1 {
		t.Fatalf("one database finds %d groups of doc, want 1: the texts are not one jsonb value", groups)
	}
	tw.refused(t, "GROUP BY jsonb", func(db *gorm.DB, into any) *gorm.DB { return db.Select("doc, count(*) AS n").Group("doc").Find(into) }, rowMaps)
	tw.refused(t, "Count of the groups of a jsonb", func(db *gorm.DB, into any) *gorm.DB { return db.Group("doc").Count(into.(*int64)) }, number)
	tw.refused(t, "COUNT(DISTINCT jsonb)", func(db *gorm.DB, into any) *gorm.DB { return db.Select("count(distinct doc)").Find(into) }, number)
	tw.same(t, "GROUP BY an enum", func(db *gorm.DB, into any) *gorm.DB {
		return db.Select("tag, count(*) AS n").Group("tag").Order("n").Find(into)
	}, rowMaps)
}

type bytesRow struct {
	ID  int64  `shardid:""`
	U   string `gorm:"type:uuid;not null"`
	Raw []byte `gorm:"not null"`
}

// TestPostgresUUIDAndByteaMergeInTheirOrder: PostgreSQL compares a uuid
// and a bytea by their bytes, as a uuid's lower-case hex text and a
// bytea's bytes order in Go: grouped and ordered by them over several
// databases, and rows ordered by them, merge as one database answers.
func TestPostgresUUIDAndByteaMergeInTheirOrder(t *testing.T) {
	b := postgresOnly(t)
	var rows []bytesRow
	for i := range 12 {
		rows = append(rows, bytesRow{U: fmt.Sprintf("%08x-0000-4000-8000-%012x", (i*7919)%5*0x1f000000, i%3), Raw: []byte{byte(i * 37 % 5), 0xff}[:1+i%2]})
	}
	tw := newTwin(t, b, &bytesRow{}, nil, rows, []int{0, 1, 2, 3})
	for _, c := range []string{"u", "raw"} {
		tw.same(t, "GROUP BY "+c+", ordered", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select(c + ", count(*) AS n").Group(c).Order(c + " desc").Find(into)
		}, rowMaps)
		tw.same(t, "DISTINCT "+c+", ordered", func(db *gorm.DB, into any) *gorm.DB {
			return db.Distinct(c).Order(c).Find(into)
		}, rowMaps)
	}
	tw.same(t, "rows ordered by a uuid", func(db *gorm.DB, into any) *gorm.DB { return db.Order("u, id").Limit(5).Find(into) }, func() any { return &[]bytesRow{} })
}

type nullableRow struct {
	ID    int64     `shardid:""`
	Score int64     `gorm:"default:null"` // NULL when created as 0
	Name  string    `gorm:"size:16;default:null"`
	At    time.Time `gorm:"default:null"`
}

// TestNullsReadIntoFieldsThatCannotHoldThemOrderAsNulls: a column with
// NULLs read into an int, a string or a time.Time holds its zero value in
// Go; merged over several databases, its rows order with the NULLs where
// the dialect puts them (first ascending in MySQL and SQLite, last in
// PostgreSQL), not where the zero value would sort.
func TestNullsReadIntoFieldsThatCannotHoldThemOrderAsNulls(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		rows := []nullableRow{
			{}, {}, // all NULL, on database 0
			{Score: -5, Name: "b", At: at}, {Score: 7, Name: "a", At: at.Add(time.Hour)}, {Score: 3, Name: "c", At: at.Add(-time.Hour)},
		}
		alter := func(db *gorm.DB) {
			if b.name == "mariadb" { // a collation the merge reproduces, NULLs allowed
				must(t, db.Exec("ALTER TABLE nullable_rows MODIFY name varchar(16) COLLATE utf8mb4_bin NULL").Error)
			}
			if b.name == "postgres" {
				binaryCollation(t, b, db, "nullable_rows", "name")
			}
		}
		tw := newTwin(t, b, &nullableRow{}, alter, rows, []int{0, 0, 1, 2, 3})
		entries := func() any { return &[]nullableRow{} }
		for _, c := range []string{"score", "name", "at"} {
			for _, dir := range []string{"", " desc"} {
				tw.same(t, "rows ordered by "+c+dir, func(db *gorm.DB, into any) *gorm.DB { return db.Order(c + dir + ", id").Find(into) }, entries)
				tw.same(t, "the first two ordered by "+c+dir, func(db *gorm.DB, into any) *gorm.DB { return db.Order(c + dir + ", id").Limit(2).Find(into) }, entries)
			}
		}
	})
}

type singleRow struct {
	ID int64   `shardid:""`
	F  float32 `gorm:"not null"` // MariaDB: FLOAT
}

// TestMariaDBsFloatIsNotMergedByItsRoundedText: MySQL and MariaDB send a
// FLOAT's values rounded to six digits, so 1.0000001 and 1.0000002 come as
// one value: grouped, distinct or ordered over several databases such a
// column is refused (PostgreSQL's real, sent exactly, merges).
func TestMariaDBsFloatIsNotMergedByItsRoundedText(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		var rows []singleRow
		for _, f := range []float32{1.0000002, 1.0000001, 2.5, 0.5, 1.0000002, 1.0000001} {
			rows = append(rows, singleRow{F: f})
		}
		tw := newTwin(t, b, &singleRow{}, nil, rows, []int{0, 1, 2, 3})
		queries := map[string]func(db *gorm.DB, into any) *gorm.DB{
			"GROUP BY a float": func(db *gorm.DB, into any) *gorm.DB {
				return db.Select("f, count(*) AS n").Group("f").Order("f").Find(into)
			},
			"COUNT(DISTINCT float)": func(db *gorm.DB, into any) *gorm.DB { return db.Select("count(distinct f)").Find(into) },
			"rows ordered by float": func(db *gorm.DB, into any) *gorm.DB { return db.Order("f, id").Find(into) },
		}
		into := map[string]func() any{"GROUP BY a float": rowMaps, "COUNT(DISTINCT float)": number, "rows ordered by float": func() any { return &[]singleRow{} }}
		for name, query := range queries {
			if b.name == "mariadb" {
				tw.refused(t, name, query, into[name])
			} else {
				tw.same(t, name, query, into[name])
			}
		}
	})
}

// postgresOnly is the PostgreSQL backend of a test of its types alone.
func postgresOnly(t *testing.T) backend {
	t.Helper()
	b := backends[2]
	if b.name != "postgres" {
		t.Fatalf("backends[2] is %s", b.name)
	}
	requireDSN(t, postgresDSNVar)
	return b
}

type ciRow struct {
	ID   int64  `shardid:""`
	Name string `gorm:"not null"` // PostgreSQL: citext
}

// TestPostgresCitextIsNotMergedAsItsText: citext compares its values
// lower-cased, whatever its collation, and an array element by element:
// grouped, counted distinct, ordered or taken MIN of over several databases
// they are refused, where the merge of their text would find 'a' and 'A' two
// groups, and {"a b",c} before {a,b}.
func TestPostgresCitextIsNotMergedAsItsText(t *testing.T) {
	b := postgresOnly(t)
	alter := func(db *gorm.DB) {
		must(t, db.Exec("CREATE EXTENSION IF NOT EXISTS citext").Error)
		must(t, db.Exec("ALTER TABLE ci_rows ALTER COLUMN name TYPE citext").Error)
	}
	var rows []ciRow
	for _, name := range []string{"a", "B", "A", "b", "c", "C", "a"} {
		rows = append(rows, ciRow{Name: name})
	}
	tw := newTwin(t, b, &ciRow{}, alter, rows, []int{0, 1, 2, 3})
	var groups int64
	must(t, tw.one.Model(&ciRow{}).Group("name").Count(&groups).Error)
	if groups != 3 {
		t.Fatalf("one database finds %d groups of name, want 3: citext is not case-insensitive here", groups)
	}
	tw.refused(t, "GROUP BY citext", func(db *gorm.DB, into any) *gorm.DB { return db.Select("name, count(*) AS n").Group("name").Find(into) }, rowMaps)
	tw.refused(t, "Count of the groups of a citext", func(db *gorm.DB, into any) *gorm.DB { return db.Group("name").Count(into.(*int64)) }, number)
	tw.refused(t, "COUNT(DISTINCT citext)", func(db *gorm.DB, into any) *gorm.DB { return db.Select("count(distinct name)").Find(into) }, number)
	tw.refused(t, "MIN of a citext", func(db *gorm.DB, into any) *gorm.DB { return db.Select("min(name) AS lo").Find(into) }, rowMaps)
	tw.refused(t, "rows ordered by a citext", func(db *gorm.DB, into any) *gorm.DB { return db.Order("name, id").Find(into) }, func() any { return &[]ciRow{} })

	// An array of text compares element by element: {a,b} before {"a b",c}.
	arrays := newTwin(t, b, &ciRow{}, func(db *gorm.DB) {
		must(t, db.Exec(`ALTER TABLE ci_rows ALTER COLUMN name TYPE text[] COLLATE "C" USING ARRAY[name]`).Error)
	}, []ciRow{{Name: `{"a b",c}`}, {Name: "{a}"}, {Name: "{a,b}"}, {Name: "{ab}"}}, []int{0, 1, 2, 3})
	arrays.refused(t, "rows ordered by a text[]", func(db *gorm.DB, into any) *gorm.DB { return db.Order("name, id").Find(into) }, func() any { return &[]ciRow{} })
	arrays.refused(t, "MIN of a text[]", func(db *gorm.DB, into any) *gorm.DB { return db.Select("min(name) AS lo").Find(into) }, rowMaps)

	// The same under domains, whose names say neither.
	domains := newTwin(t, b, &ciRow{}, func(db *gorm.DB) {
		must(t, db.Exec("DO $$ BEGIN CREATE DOMAIN ci_email AS citext; EXCEPTION WHEN duplicate_object THEN NULL; END $$").Error)
		must(t, db.Exec("DO $$ BEGIN CREATE DOMAIN ci_address AS ci_email; EXCEPTION WHEN duplicate_object THEN NULL; END $$").Error)
		must(t, db.Exec(`ALTER TABLE ci_rows ALTER COLUMN name TYPE ci_address COLLATE "C"`).Error)
	}, rows, []int{0, 1, 2, 3})
	domains.refused(t, "GROUP BY a domain over a domain over citext", func(db *gorm.DB, into any) *gorm.DB { return db.Select("name, count(*) AS n").Group("name").Find(into) }, rowMaps)
	tagged := newTwin(t, b, &ciRow{}, func(db *gorm.DB) {
		must(t, db.Exec("DO $$ BEGIN CREATE DOMAIN ci_tags AS text[]; EXCEPTION WHEN duplicate_object THEN NULL; END $$").Error)
		must(t, db.Exec(`ALTER TABLE ci_rows ALTER COLUMN name TYPE ci_tags COLLATE "C" USING ARRAY[name]`).Error)
	}, []ciRow{{Name: `{"a b",c}`}, {Name: "{a}"}, {Name: "{a,b}"}, {Name: "{ab}"}}, []int{0, 1, 2, 3})
	tagged.refused(t, "rows ordered by a domain over text[]", func(db *gorm.DB, into any) *gorm.DB { return db.Order("name, id").Find(into) }, func() any { return &[]ciRow{} })
}

type measureRow struct {
	ID    int64    `shardid:""`
	G     int64    `gorm:"not null"`
	F     *float64 // PostgreSQL: double precision, with NaN
	Count uint64   `gorm:"not null"`
}

// TestNaNAndUnsignedMergeAsTheDatabaseOrders: PostgreSQL orders NaN above
// every number and groups NaNs together; MariaDB's unsigned columns come
// as uint64.
func TestNaNAndUnsignedMergeAsTheDatabaseOrders(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		alter := func(db *gorm.DB) {
			if b.name == "postgres" {
				must(t, db.Exec("ALTER TABLE measure_rows ALTER COLUMN f TYPE double precision").Error)
			}
		}
		var rows []measureRow
		for i, f := range []float64{1, 2, 3, math.NaN(), -1, math.NaN(), 0.5, 7} {
			if b.name != "postgres" && math.IsNaN(f) {
				f = 4 // only PostgreSQL stores NaN
			}
			rows = append(rows, measureRow{G: int64(i % 3), F: &f, Count: uint64(i*3 + 1)})
		}
		tw := newTwin(t, b, &measureRow{}, alter, rows, []int{0, 1, 2, 3, 3})
		tw.same(t, "MIN and MAX", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("max(f) AS hi, min(f) AS lo, max(count) AS most, min(count) AS least").Find(into)
		}, rowMaps)
		tw.same(t, "MIN and MAX per group, ordered by one", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("g, max(f) AS hi, min(count) AS least").Group("g").Order("hi desc, g").Find(into)
		}, rowMaps)
		tw.same(t, "GROUP BY a float", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("f, count(*) AS n").Group("f").Order("f").Find(into)
		}, rowMaps)
		tw.same(t, "GROUP BY an unsigned column, descending", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("count, count(*) AS n").Group("count").Order("count desc").Find(into)
		}, rowMaps)
		tw.same(t, "rows ordered by a float", func(db *gorm.DB, into any) *gorm.DB { return db.Order("f desc, id").Find(into) },
			func() any { return &[]measureRow{} })
	})
}

type visitRow struct {
	ID     int64     `shardid:""`
	UserID int64     `gorm:"column:UserID;not null"` // a column named in mixed case
	At     time.Time `gorm:"not null"`
}

// TestMixedCaseColumnsAndTimeOffsets: a column named in mixed case merges as
// the model names it; times at several UTC offsets group and order as
// instants on MariaDB and PostgreSQL, while SQLite, which compares the text
// it stored them as, refuses them.
func TestMixedCaseColumnsAndTimeOffsets(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
		zones := []*time.Location{time.UTC, time.FixedZone("plus5", 5*3600), time.FixedZone("minus7", -7*3600)}
		var rows []visitRow
		for i := range 12 {
			rows = append(rows, visitRow{UserID: int64(i % 4), At: base.Add(time.Duration(i%5) * time.Hour).In(zones[i%3])})
		}
		tw := newTwin(t, b, &visitRow{}, nil, rows, []int{0, 1, 2, 3})
		tw.same(t, "GROUP BY a mixed-case column", func(db *gorm.DB, into any) *gorm.DB {
			return db.Select([]string{"UserID", "count(*) AS n"}).Group("UserID").Order(clause.OrderByColumn{Column: clause.Column{Name: "UserID"}, Desc: true}).Find(into)
		}, rowMaps)
		tw.same(t, "Count of DISTINCT values of a mixed-case column", func(db *gorm.DB, into any) *gorm.DB {
			return db.Distinct("UserID").Count(into.(*int64))
		}, number)
		byTime := func(db *gorm.DB, into any) *gorm.DB {
			return db.Select("at, count(*) AS n").Group("at").Order("at").Find(into)
		}
		rowsByTime := func(db *gorm.DB, into any) *gorm.DB { return db.Order("at, id").Find(into) }
		if b.name == "sqlite" {
			tw.refused(t, "GROUP BY times at several offsets", byTime, rowMaps)
			tw.refused(t, "rows ordered by times at several offsets", rowsByTime, func() any { return &[]visitRow{} })
			return
		}
		tw.same(t, "GROUP BY times at several offsets", byTime, rowMaps)
		tw.same(t, "rows ordered by times at several offsets", rowsByTime, func() any { return &[]visitRow{} })
	})
}

// pluckedRow: one row on each of two physical databases, whose numbers and
// times order otherwise as text ("10" before "9").
type pluckedRow struct {
	ID   int64  `shardid:""`
	Code string `gorm:"size:16;not null"` // byte-ordered on every dialect (binaryCollation)
	Qty  int64
	At   time.Time
	Ext  *int64 `gorm:"type:varchar(20)"` // digits, which the database orders as text (NULL here: the refusal is the plan's)
}

// TestPluckIsMergedInTheColumnsOrder: a Pluck ordered by its column is
// merged by the values it holds, which order as the column's only when
// they are of its kind (a wrapper such as sql.NullInt64 included); into
// another kind it is refused, as are rows ordered by a column whose Go type
// orders otherwise than its SQL type. A struct destination reads one row, a
// windowed Count keeps or drops its one row, as on one database.
func TestPluckIsMergedInTheColumnsOrder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		rows := []pluckedRow{{Code: "b", Qty: 9, At: base.Add(500 * time.Millisecond)}, {Code: "a", Qty: 10, At: base}}
		tw := newTwin(t, b, &pluckedRow{}, func(db *gorm.DB) { binaryCollation(t, b, db, "plucked_rows", "code") }, rows, []int{0, 1})
		for _, into := range []func() any{
			func() any { return &[]int64{} }, func() any { return &[]sql.NullInt64{} }, func() any { return &[]*int32{} },
		} {
			tw.same(t, fmt.Sprintf("Order(qty).Pluck(qty) into %T", into()), func(db *gorm.DB, into any) *gorm.DB {
				return db.Order("qty").Pluck("qty", into)
			}, into)
			tw.same(t, fmt.Sprintf("Order(qty).Limit(1).Pluck(qty) into %T", into()), func(db *gorm.DB, into any) *gorm.DB {
				return db.Order("qty").Limit(1).Pluck("qty", into)
			}, into)
		}
		tw.same(t, "Order(code).Pluck(code) into sql.NullString", func(db *gorm.DB, into any) *gorm.DB {
			return db.Order("code").Pluck("code", into)
		}, func() any { return &[]sql.NullString{} })
		for _, into := range []func() any{func() any { return &[]time.Time{} }, func() any { return &[]sql.NullTime{} }} {
			tw.same(t, fmt.Sprintf("Order(at desc).Pluck(at) into %T", into()), func(db *gorm.DB, into any) *gorm.DB {
				return db.Order("at desc").Pluck("at", into)
			}, into)
		}
		tw.refused(t, "Order(qty).Pluck(qty) into text", func(db *gorm.DB, into any) *gorm.DB {
			return db.Order("qty").Pluck("qty", into)
		}, func() any { return &[]string{} })
		tw.refused(t, "rows ordered by digits in text, read into an integer", func(db *gorm.DB, into any) *gorm.DB {
			return db.Order("ext").Find(into)
		}, func() any { return &[]pluckedRow{} })
		tw.same(t, "Order(qty).Find(&row)", func(db *gorm.DB, into any) *gorm.DB {
			return db.Order("qty").Find(into)
		}, func() any { return &pluckedRow{} })
		for _, window := range []struct{ limit, offset int }{{5, 0}, {3, 1}, {0, 0}} {
			tw.same(t, fmt.Sprintf("Limit(%d).Offset(%d).Count", window.limit, window.offset), func(db *gorm.DB, into any) *gorm.DB {
				if window.offset > 0 {
					db = db.Offset(window.offset)
				}
				return db.Limit(window.limit).Count(into.(*int64))
			}, number)
		}
	})
}
