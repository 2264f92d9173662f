package shardid

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
)

type tenantRow struct {
	ID        int64 `shardid:""`
	CompanyID int
	Score     int
	Pos       int
}

// tenantRowsOnBoth creates rows of companies 1 and 2 until each physical
// database holds rows of both, and returns every row's ID.
func tenantRowsOnBoth(t *testing.T, db *gorm.DB, direct []*gorm.DB) []int64 {
	t.Helper()
	var ids []int64
	for i := 0; i < 400; i++ {
		row := tenantRow{CompanyID: 1 + i%2}
		must(t, db.Create(&row).Error)
		ids = append(ids, row.ID)
		if i >= 8 && tenantCount(t, direct[0], 1) > 0 && tenantCount(t, direct[0], 2) > 0 && tenantCount(t, direct[1], 1) > 0 && tenantCount(t, direct[1], 2) > 0 {
			return ids
		}
	}
	t.Fatal("could not place rows of both companies on both databases")
	return nil
}

func tenantCount(t *testing.T, d *gorm.DB, company int) (n int64) {
	t.Helper()
	must(t, d.Model(&tenantRow{}).Where("company_id = ?", company).Count(&n).Error)
	return n
}

// A callback the application registers after the plugin, right before
// GORM's executor, that narrows statements to a tenant (as multi-tenant
// plugins do) narrows them on every database they run on: reads of one row,
// of a list over both databases and of every shard, updates and deletes.
func TestAnApplicationsScopeCallbackNarrowsEveryStatement(t *testing.T) {
	db, _, direct := revRouted(t, &tenantRow{})
	ids := tenantRowsOnBoth(t, db, direct)
	scope := func(db *gorm.DB) {
		if db.Statement.Schema != nil && db.Statement.Schema.Table == "tenant_rows" {
			db.Statement.AddClause(clause.Where{Exprs: []clause.Expression{clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: "company_id"}, Value: 1}}})
		}
	}
	must(t, db.Callback().Query().Before("gorm:query").Register("app:tenant", scope))
	must(t, db.Callback().Update().Before("gorm:update").Register("app:tenant", scope))
	must(t, db.Callback().Delete().Before("gorm:delete").Register("app:tenant", scope))
	ofCompany1 := tenantCount(t, direct[0], 1) + tenantCount(t, direct[1], 1)
	ofCompany2 := tenantCount(t, direct[0], 2) + tenantCount(t, direct[1], 2)

	for name, find := range map[string]func(*[]tenantRow) error{
		"by a list over both databases": func(rows *[]tenantRow) error { return db.Where("id IN ?", ids).Find(rows).Error },
		"of every shard":                func(rows *[]tenantRow) error { return db.Clauses(AllShards()).Find(rows).Error },
	} {
		var rows []tenantRow
		must(t, find(&rows))
		if int64(len(rows)) != ofCompany1 || slices.ContainsFunc(rows, func(r tenantRow) bool { return r.CompanyID != 1 }) {
			t.Errorf("Find %s: %d rows, companies %v; want the %d rows of company 1", name, len(rows), rows, ofCompany1)
		}
	}
	if err := db.First(&tenantRow{}, ids[1]).Error; !errors.Is(err, gorm.ErrRecordNotFound) { // ids[1] is company 2's
		t.Errorf("First of another company's row: %v, want ErrRecordNotFound", err)
	}

	updated := db.Model(&tenantRow{}).Where("id IN ?", ids).Update("score", 7)
	must(t, updated.Error)
	if updated.RowsAffected != ofCompany1 {
		t.Errorf("update over both databases affected %d rows, want %d", updated.RowsAffected, ofCompany1)
	}
	for k, d := range direct {
		var n int64
		must(t, d.Model(&tenantRow{}).Where("company_id = 2 AND score <> 0").Count(&n).Error)
		if n != 0 {
			t.Errorf("database %d: %d rows of company 2 updated", k, n)
		}
	}
	deleted := db.Where("id IN ?", ids).Delete(&tenantRow{})
	must(t, deleted.Error)
	if deleted.RowsAffected != ofCompany1 {
		t.Errorf("delete over both databases affected %d rows, want %d", deleted.RowsAffected, ofCompany1)
	}
	if left := tenantCount(t, direct[0], 2) + tenantCount(t, direct[1], 2); left != ofCompany2 {
		t.Errorf("%d rows of company 2 left, want %d", left, ofCompany2)
	}
}

// A field an application's callback sets right before GORM's create
// (on every row of Statement.ReflectValue) is stored, on one database and in a
// batch split over two.
func TestAFieldAnApplicationsCallbackSetsBeforeCreateIsStored(t *testing.T) {
	db, p, direct := revRouted(t, &tenantRow{})
	must(t, db.Callback().Create().Before("gorm:create").Register("app:position", func(db *gorm.DB) {
		if db.Statement.Schema == nil || db.Statement.Schema.Table != "tenant_rows" {
			return
		}
		pos, rv := db.Statement.Schema.LookUpField("Pos"), db.Statement.ReflectValue
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			db.AddError(pos.Set(db.Statement.Context, rv, 9))
			return
		}
		for i := range rv.Len() {
			db.AddError(pos.Set(db.Statement.Context, rv.Index(i), 9))
		}
	}))
	one := tenantRow{CompanyID: 1}
	must(t, db.Create(&one).Error)
	batch := make([]tenantRow, 8)
	for i, id := range spreadIDs(p.Layout(), len(batch)) {
		batch[i].ID = id
	}
	must(t, db.Create(&batch).Error)
	stored := map[int64]int{}
	for k, d := range direct {
		var rows []tenantRow
		must(t, d.Find(&rows).Error)
		if len(rows) < len(batch)/2 {
			t.Fatalf("physical %d holds %d rows: the batch is not split over both", k, len(rows))
		}
		for _, r := range rows {
			stored[r.ID] = r.Pos
		}
	}
	for _, r := range append(batch, one) {
		if stored[r.ID] != 9 || r.Pos != 9 {
			t.Errorf("row %d: stored Pos %d, the caller's %d; want 9", r.ID, stored[r.ID], r.Pos)
		}
	}
}

// A callback before GORM's query that builds the statement's SQL itself
// (a cache's key, a comment prepended) leaves it routed by its clauses: one
// row by its ID is read where it lives, with the SQL as the callback built
// it; a list over both databases and every shard are read in parts built
// anew; Joins built so cannot be built again per database: refused.
func TestSQLACallbackBuildsBeforeGORMsQueryIsRoutedByItsClauses(t *testing.T) {
	db, p, _ := revRouted(t, &gateUser{}, &gatePhoto{}, &gateGroup{})
	users := revOnBoth(t, db, p, func() *gateUser { return &gateUser{Name: "u"} }, func(u *gateUser) int64 { return u.ID })
	for _, u := range users {
		must(t, db.Create(&gatePhoto{UserID: u.ID}).Error)
	}
	var sent []string
	must(t, db.Callback().Query().Before("gorm:query").Register("app:comment", func(db *gorm.DB) {
		callbacks.BuildQuerySQL(db)
		sql := "/* app */ " + db.Statement.SQL.String()
		db.Statement.SQL.Reset()
		db.Statement.SQL.WriteString(sql)
		sent = append(sent, sql)
	}))
	var one gateUser
	must(t, db.First(&one, users[1].ID).Error)
	if one.ID != users[1].ID {
		t.Errorf("First by the ID of the second database's row: %d", one.ID)
	}
	if len(sent) == 0 || !strings.HasPrefix(sent[len(sent)-1], "/* app */") {
		t.Errorf("the callback's SQL was not built: %q", sent)
	}
	var listed []gateUser
	must(t, db.Find(&listed, []int64{users[0].ID, users[1].ID}).Error)
	var n int64
	must(t, db.Model(&gateUser{}).Clauses(AllShards()).Count(&n).Error)
	if len(listed) != 2 || n < 2 {
		t.Errorf("over both databases: %d rows listed, %d counted; want both", len(listed), n)
	}
	var photos []gatePhoto
	must(t, db.Joins("User").Where("gate_photos.user_id = ?", users[0].ID).Find(&photos).Error)
	if len(photos) != 1 || photos[0].User == nil {
		t.Errorf("Joins on one database: %+v", photos)
	}
	if err := db.Joins("User").Clauses(AllShards()).Find(&photos).Error; !errors.Is(err, ErrCrossShard) {
		t.Errorf("Joins built by the callback over every shard: %v, want ErrCrossShard", err)
	}
}

// An update or delete whose conditions a callback right before GORM's
// executor widens (an Or) or redirects to a row of the other database is
// refused, nothing written: it would write one database's rows only.
func TestAWriteACallbackSendsToAnotherDatabaseIsRefused(t *testing.T) {
	db, p, direct := revRouted(t, &tenantRow{})
	rows := revOnBoth(t, db, p, func() *tenantRow { return &tenantRow{CompanyID: 1} }, func(r *tenantRow) int64 { return r.ID })
	here, there := rows[0].ID, rows[1].ID
	var change func(*gorm.DB)
	redirect := func(db *gorm.DB) {
		if change != nil && db.Statement.Schema != nil && db.Statement.Schema.Table == "tenant_rows" {
			change(db)
		}
	}
	must(t, db.Callback().Update().Before("gorm:update").Register("app:redirect", redirect))
	must(t, db.Callback().Delete().Before("gorm:delete").Register("app:redirect", redirect))
	widen := func(db *gorm.DB) {
		db.Statement.AddClause(clause.Where{Exprs: []clause.Expression{clause.Or(clause.Eq{Column: clause.Column{Name: "id"}, Value: there})}})
	}
	replace := func(db *gorm.DB) {
		db.Statement.Clauses["WHERE"] = clause.Clause{Name: "WHERE", Expression: clause.Where{Exprs: []clause.Expression{clause.Eq{Column: clause.Column{Name: "id"}, Value: there}}}}
	}
	for name, c := range map[string]func(*gorm.DB){"widened by an Or": widen, "redirected": replace} {
		change = c
		if err := db.Model(&tenantRow{}).Where("id = ?", here).Update("score", 5).Error; !errors.Is(err, ErrCrossShard) {
			t.Errorf("update %s: %v, want ErrCrossShard", name, err)
		}
		if err := db.Where("id = ?", here).Delete(&tenantRow{}).Error; !errors.Is(err, ErrCrossShard) {
			t.Errorf("delete %s: %v, want ErrCrossShard", name, err)
		}
	}
	change = nil
	for k, d := range direct {
		var rs []tenantRow
		must(t, d.Find(&rs).Error)
		if len(rs) == 0 || slices.ContainsFunc(rs, func(r tenantRow) bool { return r.Score != 0 }) {
			t.Errorf("database %d after the refused writes: %+v", k, rs)
		}
	}
	// Narrowing them (a tenant's scope) keeps them where they were routed.
	change = func(db *gorm.DB) {
		db.Statement.AddClause(clause.Where{Exprs: []clause.Expression{clause.Eq{Column: clause.Column{Name: "company_id"}, Value: 1}}})
	}
	if res := db.Model(&tenantRow{}).Where("id = ?", here).Update("score", 5); res.Error != nil || res.RowsAffected != 1 {
		t.Errorf("update narrowed by the callback: %v, %d rows", res.Error, res.RowsAffected)
	}
}

// Raw SQL on a statement that ran a query before, whose clauses it keeps,
// is read as raw SQL, not as SQL built from those clauses: without a shard
// clause it names a sharded table off a shard, and is refused.
func TestRawSQLOnAStatementThatRanBeforeIsRawSQL(t *testing.T) {
	db, p, _ := revRouted(t, &tenantRow{})
	rows := revOnBoth(t, db, p, func() *tenantRow { return &tenantRow{CompanyID: 1} }, func(r *tenantRow) int64 { return r.ID })
	q := db.Model(&tenantRow{}).Where("id = ?", rows[0].ID)
	var first []tenantRow
	must(t, q.Find(&first).Error)
	var other []tenantRow
	err := q.Raw("SELECT * FROM tenant_rows WHERE id = ?", rows[1].ID).Scan(&other).Error
	if !errors.Is(err, ErrNoShard) && (err != nil || len(other) != 1) {
		t.Fatalf("raw SQL on a statement that ran a Find: %v, %d rows; want ErrNoShard or the row", err, len(other))
	}
}

// TestRawSQLOnAStatementThatRanBeforeRunsItsOwnText: raw SQL scanned on a
// *gorm.DB that ran a query before (under a shard clause, or of an unsharded
// model) runs its own text, as GORM alone runs it, not the query its kept
// clauses build: it reads the row it names, not the earlier query's.
func TestRawSQLOnAStatementThatRanBeforeRunsItsOwnText(t *testing.T) {
	db, p, _ := revRouted(t, &tenantRow{})
	must(t, p.AutoMigrate(db, &reuseTag{}))
	at := time.Now().Add(-time.Second)
	a, b := p.Layout().Compose(at, 1, 1), p.Layout().Compose(at, 1, 2)
	must(t, db.Create(&[]tenantRow{{ID: a, CompanyID: 1}, {ID: b, CompanyID: 2}}).Error)
	must(t, db.Create(&[]reuseTag{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}).Error)
	sharded := db.Clauses(ByID(a)).Model(&tenantRow{}).Where("id = ?", a)
	var first []tenantRow
	must(t, sharded.Find(&first).Error)
	var other []tenantRow
	if err := sharded.Raw("SELECT * FROM tenant_rows WHERE id = ?", b).Scan(&other).Error; err != nil || len(other) != 1 || other[0].ID != b {
		t.Errorf("raw SQL under a shard clause on a statement that ran a Find: %v, %v; want the row %d", err, other, b)
	}
	other = nil
	if err := sharded.Raw("SELECT * FROM tenant_rows WHERE id = ?", b).Find(&other).Error; err != nil || len(other) != 1 || other[0].ID != b {
		t.Errorf("raw SQL found under a shard clause on a statement that ran a Find: %v, %v; want the row %d", err, other, b)
	}
	plain := db.Model(&reuseTag{}).Where("id = ?", 1)
	var tags []reuseTag
	must(t, plain.Find(&tags).Error)
	var name string
	if err := plain.Raw("SELECT name FROM reuse_tags WHERE id = ?", 2).Scan(&name).Error; err != nil || name != "b" {
		t.Errorf("raw SQL of an unsharded model on a statement that ran a Find: %q, %v; want %q", name, err, "b")
	}
}

type outboxedRow struct {
	ID   int64 `shardid:""`
	Name string
}

type outboxEntry struct {
	ID    int64 `shardid:"colocate:RowID"`
	RowID int64
	Verb  string
}

// A callback the application registers after GORM's executor
// (After("gorm:create"), which GORM runs after its own last callback),
// writing an outbox row for each row the statement wrote, runs once per
// statement, as GORM runs it, also when the statement's rows are on two
// databases: one outbox row per row, beside it.
func TestACallbackAfterGORMsLastRunsOncePerStatementOverSeveralDatabases(t *testing.T) {
	db, p, direct := revRouted(t, &outboxedRow{}, &outboxEntry{})
	var calls int
	outbox := func(verb string) func(*gorm.DB) {
		return func(db *gorm.DB) {
			if db.Error != nil || db.Statement.Schema == nil || db.Statement.Schema.Table != "outboxed_rows" {
				return
			}
			calls++
			rv := reflect.Indirect(reflect.ValueOf(db.Statement.Model)) // the rows, also of an update given a map
			for i := range rv.Len() {
				row := reflect.Indirect(rv.Index(i)).Addr().Interface().(*outboxedRow)
				db.AddError(db.Session(&gorm.Session{NewDB: true}).Create(&outboxEntry{RowID: row.ID, Verb: verb}).Error)
			}
		}
	}
	must(t, db.Callback().Create().After("gorm:create").Register("app:outbox", outbox("create")))
	must(t, db.Callback().Update().After("gorm:update").Register("app:outbox", outbox("update")))
	must(t, db.Callback().Delete().After("gorm:delete").Register("app:outbox", outbox("delete")))

	rows := make([]outboxedRow, 8)
	for i, id := range spreadIDs(p.Layout(), len(rows)) { // on both databases, every run
		rows[i].ID, rows[i].Name = id, "a"
	}
	ids := func() []int64 {
		var ids []int64
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		return ids
	}
	for _, c := range []struct {
		verb string
		run  func() *gorm.DB
	}{
		{"create", func() *gorm.DB { return db.Create(&rows) }},
		{"update", func() *gorm.DB { return db.Model(&rows).Update("name", "b") }},
		{"delete", func() *gorm.DB { return db.Delete(&rows) }},
	} {
		calls = 0
		must(t, c.run().Error)
		var on [2]int
		for _, id := range ids() {
			on[p.ShardMap().Physical(p.Layout().Shard(id))]++
		}
		if on[0] == 0 || on[1] == 0 {
			t.Fatalf("the rows are on one database only (%v): the test needs both", on)
		}
		if calls != 1 {
			t.Errorf("%s over two databases: the callback ran %d times, want once, as GORM runs it", c.verb, calls)
		}
		for k, d := range direct {
			var n int64
			must(t, d.Model(&outboxEntry{}).Where("verb = ?", c.verb).Count(&n).Error)
			if n != int64(on[k]) {
				t.Errorf("%s: database %d holds %d outbox rows, want %d, one per row beside it", c.verb, k, n, on[k])
			}
		}
	}
}

type destStampedRow struct {
	ID   int64 `shardid:""`
	Name string
}

// A callback that finds a Create's rows by the type the caller gave them
// (Statement.Dest as *[]T, or *[]*T) finds them in each part of a Create
// split over two databases, as in GORM's one statement: what it sets is
// stored, and the caller's rows hold it.
func TestACallbackFindsTheRowsOfASplitCreateAsTheCallerGaveThem(t *testing.T) {
	db, _, direct := revRouted(t, &destStampedRow{})
	byPointer := false // the type the caller gives the rows, the only one the callback knows
	must(t, db.Callback().Create().Before("gorm:create").Register("app:stamp", func(db *gorm.DB) {
		if rows, ok := db.Statement.Dest.(*[]destStampedRow); ok && !byPointer {
			for i := range *rows {
				(*rows)[i].Name = "stamped"
			}
		}
		if rows, ok := db.Statement.Dest.(*[]*destStampedRow); ok && byPointer {
			for _, r := range *rows {
				r.Name = "stamped"
			}
		}
	}))
	values := make([]destStampedRow, 8)
	must(t, db.Create(&values).Error)
	byPointer = true
	pointers := make([]*destStampedRow, 8)
	for i := range pointers {
		pointers[i] = &destStampedRow{}
	}
	must(t, db.Create(&pointers).Error)
	for i := range values {
		if values[i].Name != "stamped" || pointers[i].Name != "stamped" {
			t.Fatalf("the caller's rows: %+v, %+v; want each stamped", values[i], *pointers[i])
		}
	}
	for k, d := range direct {
		var names []string
		must(t, d.Model(&destStampedRow{}).Pluck("name", &names).Error)
		if len(names) == 0 || slices.ContainsFunc(names, func(n string) bool { return n != "stamped" }) {
			t.Errorf("database %d holds %q, want rows, each stamped", k, names)
		}
	}
}

// A callback after GORM's executor that wraps the statement's error in the
// application's own (a repository's error type) leaves a write over two
// databases as without the plugin: no error, every row written on both.
// The part's end mark it wrapped failed the part after it committed, and
// the parts after it rolled back: half an update, and an error.
func TestACallbackWrappingTheErrorLeavesAWriteOverSeveralDatabasesWhole(t *testing.T) {
	db, p, direct := revRouted(t, &outboxedRow{})
	wrap := func(db *gorm.DB) {
		if db.Error != nil {
			db.Error = fmt.Errorf("repository: %w", db.Error)
		}
	}
	must(t, db.Callback().Create().After("gorm:create").Register("app:errors", wrap))
	must(t, db.Callback().Update().After("gorm:update").Register("app:errors", wrap))
	must(t, db.Callback().Delete().After("gorm:delete").Register("app:errors", wrap))
	rows := make([]outboxedRow, 8)
	for i, id := range spreadIDs(p.Layout(), len(rows)) { // on both databases, every run
		rows[i].ID = id
	}
	count := func(name string) (on [2]int64) {
		for k, d := range direct {
			must(t, d.Model(&outboxedRow{}).Where("name = ?", name).Count(&on[k]).Error)
		}
		return on
	}
	must(t, db.Create(&rows).Error)
	var want [2]int64
	for _, r := range rows {
		want[p.ShardMap().Physical(p.Layout().Shard(r.ID))]++
	}
	if want[0] == 0 || want[1] == 0 {
		t.Fatalf("the rows are on one database only (%v): the test needs both", want)
	}
	if got := count(""); got != want {
		t.Fatalf("created: the databases hold %v rows, want %v", got, want)
	}
	if res := db.Model(&rows).Update("name", "b"); res.Error != nil || res.RowsAffected != 8 || count("b") != want {
		t.Errorf("update over two databases: %v, %d rows; the databases hold %v updated, want %v", res.Error, res.RowsAffected, count("b"), want)
	}
	if err := db.Delete(&rows).Error; err != nil || count("b") != [2]int64{} {
		t.Errorf("delete over two databases: %v; the databases hold %v rows, want none", err, count("b"))
	}
}

// A callback after GORM's executor that adds its own error to every
// statement, not checking db.Error first, fails a write over several
// databases with its error, not with the plugin's mark of a part's end.
func TestACallbacksErrorOnAPartOfAWriteIsNotThePluginsMark(t *testing.T) {
	db, _, _ := revRouted(t, &outboxedRow{})
	refused := errors.New("refused by the application")
	must(t, db.Callback().Create().After("gorm:create").Register("app:refuse", func(db *gorm.DB) {
		db.AddError(refused)
	}))
	err := db.Create(make([]outboxedRow, 8)).Error
	if !errors.Is(err, refused) || errors.Is(err, driver.ErrSkip) || strings.Contains(err.Error(), driver.ErrSkip.Error()) {
		t.Errorf("got %v, want the application's error, without driver.ErrSkip", err)
	}
}
