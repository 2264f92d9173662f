package integration

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid"
)

// Models whose tables and columns keep their Go names' case (NoLowerCase).
type (
	CaseAuthor struct {
		ID    int64 `shardid:""`
		Name  string
		Books []CaseBook
	}
	CaseBook struct {
		ID           shardid.ID `shardid:"colocate:CaseAuthorID"`
		CaseAuthorID int64
		Title        string
	}
)

// TestMergedTextOfTablesNamedInMixedCase: with NamingStrategy{NoLowerCase:
// true} GORM quotes tables and columns such as "CaseAuthors"."Name"; text
// grouped, distinct or ordered over every database merges as it does for
// lower-case names (PostgreSQL's catalog is asked for the quoted name, not
// the one it would fold to lower case), and answers what one database does.
func TestMergedTextOfTablesNamedInMixedCase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db := openWithConfig(t, b, dir, &gorm.Config{NamingStrategy: schema.NamingStrategy{NoLowerCase: true}, Logger: logger.Discard})
		fresh(t, db, &CaseAuthor{}, &CaseBook{})
		authors := make([]CaseAuthor, 24)
		for i := range authors {
			authors[i] = CaseAuthor{Name: []string{"ada", "bob", "cy"}[i%3], Books: []CaseBook{{Title: "t"}}}
		}
		must(t, db.Create(&authors).Error)
		q := func(name string) string { return db.Statement.Quote(name) }
		all := func() *gorm.DB { return db.Clauses(shardid.AllShards()) }
		if b.name == "mariadb" { // its default collation does not compare as bytes: the merge refuses, as documented
			return
		}
		var groups []struct {
			Name string
			N    int64
		}
		must(t, all().Model(&CaseAuthor{}).Select(q("Name")+", count(*) AS "+q("N")).Group(q("Name")).Order(q("Name")).Scan(&groups).Error)
		if len(groups) != 3 || groups[0].Name != "ada" || groups[0].N != 8 || groups[2].Name != "cy" {
			t.Fatalf("grouped by name: %+v, want ada, bob, cy with 8 each", groups)
		}
		var names []string
		must(t, all().Model(&CaseAuthor{}).Distinct(q("Name")).Pluck(q("Name"), &names).Error)
		if len(names) != 3 {
			t.Fatalf("distinct names: %v, want 3", names)
		}
		var ordered []CaseAuthor
		must(t, all().Order(q("Name")+", "+q("ID")).Find(&ordered).Error)
		if len(ordered) != len(authors) || ordered[0].Name != "ada" || ordered[len(ordered)-1].Name != "cy" {
			t.Fatalf("ordered by name: %d rows, first %q, last %q", len(ordered), ordered[0].Name, ordered[len(ordered)-1].Name)
		}
	})
}

// openWithConfig opens the backend with the plugin over physicalShards
// databases, with a GORM config of the test's own.
func openWithConfig(t *testing.T, b backend, dir string, cfg *gorm.Config) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(b.dialector(t, dir), cfg)
	must(t, err)
	firstStart(t, db)
	p := shardid.New(shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity()})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	return db
}

// TestMergedTextOfTablesInASchema: with NamingStrategy{TablePrefix: "app."}
// GORM names PostgreSQL tables in schema app; text grouped, distinct or
// ordered over every database merges as for tables of the search path.
func TestMergedTextOfTablesInASchema(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		db := casesInSchemaApp(t, b)
		authors := make([]CaseAuthor, 24)
		for i := range authors {
			authors[i] = CaseAuthor{Name: []string{"ada", "bob", "cy"}[i%3]}
		}
		must(t, db.Create(&authors).Error)
		all := func() *gorm.DB { return db.Clauses(shardid.AllShards()) }
		var groups []struct {
			Name string
			N    int64
		}
		must(t, all().Model(&CaseAuthor{}).Select("name, count(*) AS n").Group("name").Order("name").Scan(&groups).Error)
		if len(groups) != 3 || groups[0].Name != "ada" || groups[0].N != 8 || groups[2].Name != "cy" {
			t.Fatalf("grouped by name: %+v, want ada, bob, cy with 8 each", groups)
		}
		var ordered []CaseAuthor
		must(t, all().Order("name, id").Find(&ordered).Error)
		if len(ordered) != len(authors) || ordered[0].Name != "ada" || ordered[len(ordered)-1].Name != "cy" {
			t.Fatalf("ordered by name: %d rows, first %q, last %q", len(ordered), ordered[0].Name, ordered[len(ordered)-1].Name)
		}
	})
}

// TestJoinsAndConditionsNamingTablesWithTheirSchema: with
// NamingStrategy{TablePrefix: "app."} SQL written as PostgreSQL reads it,
// app.case_books.case_author_id, routes as the bare names do: a condition
// on the key or the colocate column names its shard (in SQL or as a map's
// key), and a join along the colocate column reads the row's database, as
// on one database.
func TestJoinsAndConditionsNamingTablesWithTheirSchema(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db := casesInSchemaAppIn(t, b, dir)
		authors := make([]CaseAuthor, 8)
		for i := range authors {
			authors[i] = CaseAuthor{Name: fmt.Sprintf("a%d", i), Books: []CaseBook{{Title: fmt.Sprintf("t%d", i)}}}
		}
		must(t, db.Create(&authors).Error)
		authorsOnTheirShardsDatabase(t, b, dir, authors)
		for _, a := range authors {
			var found CaseAuthor
			must(t, db.Where(`"app"."case_authors"."id" = ?`, a.ID).First(&found).Error)
			if found.Name != a.Name {
				t.Fatalf("author %d by app.case_authors.id: %+v", a.ID, found)
			}
			for _, key := range []string{"case_authors.id", "app.case_authors.id"} { // GORM names a map's key as given
				var byMap CaseAuthor
				must(t, db.Where(map[string]any{key: a.ID}).First(&byMap).Error)
				if byMap.Name != a.Name {
					t.Fatalf("author %d by a map of %s: %+v", a.ID, key, byMap)
				}
			}
			var books []CaseBook
			must(t, db.Joins("JOIN app.case_authors ON app.case_authors.id = app.case_books.case_author_id").
				Where("app.case_books.case_author_id = ? AND app.case_authors.name = ?", a.ID, a.Name).Find(&books).Error)
			if len(books) != 1 || books[0].ID != a.Books[0].ID {
				t.Fatalf("the books of author %d joined by schema-qualified names: %+v, want its one book %d", a.ID, books, a.Books[0].ID)
			}
		}
		// The other schema's table of the same name is not the model's: no shard named.
		var none CaseAuthor
		if err := db.Where("other.case_authors.id = ?", authors[0].ID).First(&none).Error; !errors.Is(err, shardid.ErrNoShard) {
			t.Fatalf("a condition on other.case_authors.id: %v, want ErrNoShard", err)
		}
	})
}

// TestMergedColumnsQualifiedByATableInASchema: with
// NamingStrategy{TablePrefix: "app."} a column written as PostgreSQL reads
// it, case_authors.id or app.case_authors.id, quoted or not, merges over
// every database in an order, a Pluck, an aggregate, a group and a
// DISTINCT as the bare column does, and as one database answers.
func TestMergedColumnsQualifiedByATableInASchema(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		db := casesInSchemaApp(t, b)
		count := shardid.Layout{}.ShardCount()
		var ids []int64
		for i := range 12 {
			a := CaseAuthor{Name: []string{"ada", "bob", "cy"}[i%3]}
			must(t, db.Clauses(shardid.OnShard(i*count/12)).Create(&a).Error) // over every database
			ids = append(ids, a.ID)
		}
		slices.Sort(ids)
		all := func() *gorm.DB { return db.Clauses(shardid.AllShards()) }
		for _, col := range []string{"id", "case_authors.id", "app.case_authors.id", `"app"."case_authors"."id"`} {
			var ordered []CaseAuthor
			if err := all().Order(col + " desc").Limit(3).Find(&ordered).Error; err != nil || len(ordered) != 3 || ordered[0].ID != ids[11] || ordered[2].ID != ids[9] {
				t.Errorf("Order(%q desc).Limit(3): %v %+v, want the last three of %v", col, err, ordered, ids)
			}
			var plucked []int64
			if err := all().Model(&CaseAuthor{}).Order(col).Limit(2).Pluck(col, &plucked).Error; err != nil || !slices.Equal(plucked, ids[:2]) {
				t.Errorf("Pluck(%q) ordered: %v %v, want %v", col, err, plucked, ids[:2])
			}
			var most []int64
			if err := all().Model(&CaseAuthor{}).Pluck("max("+col+")", &most).Error; err != nil || len(most) != 1 || most[0] != ids[11] {
				t.Errorf("max(%s): %v %v, want %d", col, err, most, ids[11])
			}
			var groups []struct {
				Name string
				N    int64
			}
			if err := all().Model(&CaseAuthor{}).Select("name, count(" + col + ") AS n").Group("name").Order("name").Scan(&groups).Error; err != nil || len(groups) != 3 || groups[0].N != 4 {
				t.Errorf("count(%s) grouped by name: %v %+v, want 4 of each", col, err, groups)
			}
			var distinct []int64
			err := all().Model(&CaseAuthor{}).Distinct(col).Pluck(col, &distinct).Error
			if slices.Sort(distinct); err != nil || !slices.Equal(distinct, ids) {
				t.Errorf("Distinct(%q): %v %v, want %v", col, err, distinct, ids)
			}
		}
		// Another schema's table of the name is not the model's: refused, nothing merged wrong.
		var other []CaseAuthor
		if err := all().Order("other.case_authors.id").Find(&other).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("Order(other.case_authors.id): %v, want ErrCrossShard", err)
		}
	})
}

// casesInSchemaApp opens the plugin on b with NamingStrategy{TablePrefix:
// "app."}, its CaseAuthor and CaseBook tables new in schema app of every
// database; it skips backends other than PostgreSQL.
func casesInSchemaApp(t *testing.T, b backend) *gorm.DB {
	t.Helper()
	return casesInSchemaAppIn(t, b, t.TempDir())
}

// casesInSchemaAppIn is casesInSchemaApp on the databases of dir.
func casesInSchemaAppIn(t *testing.T, b backend, dir string) *gorm.DB {
	t.Helper()
	if b.name != "postgres" {
		t.Skip("schemas of PostgreSQL")
	}
	for _, d := range direct(t, b, dir) {
		must(t, d.Exec("CREATE SCHEMA IF NOT EXISTS app").Error)
		t.Cleanup(func() { _ = d.Exec("DROP SCHEMA app CASCADE").Error })
	}
	db := openWithConfig(t, b, dir, &gorm.Config{NamingStrategy: schema.NamingStrategy{TablePrefix: "app."}, Logger: logger.Discard})
	fresh(t, db, &CaseAuthor{}, &CaseBook{})
	t.Cleanup(func() { _ = migrator(db).DropTable(&CaseAuthor{}, &CaseBook{}) })
	return db
}

// authorsOnTheirShardsDatabase checks, on the physical databases of dir
// opened directly, that each author's row is in app.case_authors of the
// database serving its ID's logical shard, and of no other.
func authorsOnTheirShardsDatabase(t *testing.T, b backend, dir string, authors []CaseAuthor) {
	t.Helper()
	list := shards(t, b, dir)
	for i, d := range direct(t, b, dir)[:len(list)] {
		for _, a := range authors {
			var n int64
			must(t, d.Raw("SELECT count(*) FROM app.case_authors WHERE id = ?", a.ID).Scan(&n).Error)
			s := shardid.Layout{}.Shard(a.ID)
			serves := slices.ContainsFunc(list[i].Logical, func(r shardid.Range) bool { return r.From <= s && s <= r.To })
			if want := map[bool]int64{true: 1}[serves]; n != want {
				t.Errorf("author %d (logical shard %d): %d rows on %s, want %d", a.ID, s, n, list[i].Name, want)
			}
		}
	}
}
