package shardid

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"
)

type revAudited struct {
	ID   int64 `shardid:""`
	Name string
	Note string
}

// BeforeUpdate stamps every updated row, the way GORM's docs show
// ("Changing values in hooks": tx.Statement.SetColumn).
func (a *revAudited) BeforeUpdate(tx *gorm.DB) error {
	tx.Statement.SetColumn("Note", "hooked")
	return nil
}

// The column a BeforeUpdate hook sets in a fan-out update reaches every
// database, as it would on one.
func TestFanOutUpdateHookColumnReachesEveryDatabase(t *testing.T) {
	db, p, direct := revRouted(t, &revAudited{})
	rows := revOnBoth(t, db, p, func() *revAudited { return &revAudited{Name: "x"} }, func(a *revAudited) int64 { return a.ID })
	ids := []int64{rows[0].ID, rows[1].ID}
	err := db.Model(&revAudited{}).Where("id IN ?", ids).Updates(revAudited{Name: "y"}).Error
	must(t, err)
	for k, d := range direct {
		var got revAudited
		must(t, d.First(&got, ids[k]).Error)
		if got.Name != "y" || got.Note != "hooked" {
			t.Errorf("database %d: row %+v, want name y and note hooked (as on one database)", k, got)
		}
	}
}

type stampedByName struct {
	ID   int64 `shardid:""`
	Name string
	Note string
	Age  int
}

// BeforeUpdate stamps the statement with its own row's name.
func (s *stampedByName) BeforeUpdate(tx *gorm.DB) error {
	tx.Statement.SetColumn("note", "by "+s.Name)
	return nil
}

type guardedByLock struct {
	ID     int64 `shardid:""`
	Locked bool
	Age    int
}

// BeforeUpdate keeps the age of a locked row: on one database, of every row
// the statement writes.
func (g *guardedByLock) BeforeUpdate(tx *gorm.DB) error {
	if g.Locked {
		tx.Statement.Omit("age")
	}
	return nil
}

// TestSliceUpdateWhoseHooksSetDifferentlyPerDatabaseIsRefused: a slice's
// rows on two databases are written by one SET on one database, built after
// every row's hooks. When the hooks of the rows of each database leave
// another SET (a value of their own row, an Omit of a locked row), no part
// may write its own: the statement is refused, and nothing is written.
func TestSliceUpdateWhoseHooksSetDifferentlyPerDatabaseIsRefused(t *testing.T) {
	db, p, direct := revRouted(t, &stampedByName{}, &guardedByLock{})
	stamped := revOnBoth(t, db, p, func() *stampedByName { return &stampedByName{Name: "a"} }, func(s *stampedByName) int64 { return s.ID })
	stamped[1].Name = "b"
	if err := db.Model(&[]stampedByName{*stamped[0], *stamped[1]}).Update("age", 5).Error; !errors.Is(err, ErrCrossShard) {
		t.Fatalf("hooks that set their own row's note: %v; want ErrCrossShard", err)
	}
	guarded := revOnBoth(t, db, p, func() *guardedByLock { return &guardedByLock{} }, func(g *guardedByLock) int64 { return g.ID })
	guarded[1].Locked = true
	if err := db.Model(&[]guardedByLock{*guarded[0], *guarded[1]}).Updates(map[string]any{"age": 5}).Error; !errors.Is(err, ErrCrossShard) {
		t.Fatalf("a hook that omits the age of a locked row: %v; want ErrCrossShard", err)
	}
	for k, d := range direct {
		var changed int64
		must(t, d.Model(&stampedByName{}).Where("age <> 0 OR note <> ''").Count(&changed).Error)
		var aged int64
		must(t, d.Model(&guardedByLock{}).Where("age <> 0").Count(&aged).Error)
		if changed+aged != 0 {
			t.Errorf("database %d: %d rows written by a refused update", k, changed+aged)
		}
	}
	// Hooks that set alike write every database.
	stamped[0].Name = "b"
	must(t, db.Model(&[]stampedByName{*stamped[0], *stamped[1]}).Update("age", 5).Error)
	for k, d := range direct {
		var got stampedByName
		must(t, d.First(&got, stamped[k].ID).Error)
		if got.Note != "by b" || got.Age != 5 {
			t.Errorf("database %d: %+v, want age 5 and note \"by b\"", k, got)
		}
	}
}

type taggedRow struct {
	ID   int64 `shardid:""`
	Name string
	Tags []string `gorm:"serializer:json"`
}

// TestSliceUpdateOfASerializedFieldIsWrittenOnEveryDatabase: each part's
// SET holds its own serializer of the field (with the part's context); the
// parts write the same, and the update runs.
func TestSliceUpdateOfASerializedFieldIsWrittenOnEveryDatabase(t *testing.T) {
	db, p, direct := revRouted(t, &taggedRow{})
	rows := revOnBoth(t, db, p, func() *taggedRow { return &taggedRow{Name: "a"} }, func(r *taggedRow) int64 { return r.ID })
	must(t, db.Model(&[]taggedRow{*rows[0], *rows[1]}).Updates(taggedRow{Name: "b", Tags: []string{"x"}}).Error)
	for k, d := range direct {
		var got taggedRow
		must(t, d.First(&got, rows[k].ID).Error)
		if got.Name != "b" || !slices.Equal(got.Tags, []string{"x"}) {
			t.Errorf("database %d: %+v, want name b and tags [x]", k, got)
		}
	}
}

type stampedRow struct {
	ID        int64 `shardid:""`
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TestCreateSplitOverTwoDatabasesStampsOneTime: GORM gives the rows of one
// Create one CreatedAt; a Create split over two databases does too, in the
// caller's rows and in each database's.
func TestCreateSplitOverTwoDatabasesStampsOneTime(t *testing.T) {
	db, p, direct := revRouted(t, &stampedRow{})
	placed := revOnBoth(t, db, p, func() *stampedRow { return &stampedRow{} }, func(r *stampedRow) int64 { return r.ID })
	layout := p.Layout()
	rows := []stampedRow{ // new rows, one in each placed row's shard
		{ID: layout.Compose(time.Now(), layout.Shard(placed[0].ID), 7)},
		{ID: layout.Compose(time.Now(), layout.Shard(placed[1].ID), 7)},
	}
	must(t, db.Create(&rows).Error)
	if !rows[0].CreatedAt.Equal(rows[1].CreatedAt) || !rows[0].UpdatedAt.Equal(rows[1].UpdatedAt) {
		t.Fatalf("the rows of one Create were stamped %v and %v", rows[0].CreatedAt, rows[1].CreatedAt)
	}
	var stored [2]stampedRow
	for k, d := range direct {
		must(t, d.First(&stored[k], rows[k].ID).Error)
	}
	if !stored[0].CreatedAt.Equal(stored[1].CreatedAt) {
		t.Fatalf("the databases hold %v and %v", stored[0].CreatedAt, stored[1].CreatedAt)
	}
}

type failsAfterCreate struct {
	ID   int64 `shardid:""`
	Name string
}

func (r *failsAfterCreate) AfterCreate(*gorm.DB) error {
	if r.Name == "bad" {
		return gorm.ErrInvalidData
	}
	return nil
}

// TestWriteOverTwoDatabasesCountsRowsAsOneStatement: a statement whose After
// hook fails once its rows were written reports them, rolled back, as GORM
// does on one database; one that a part's own write refused reports none.
func TestWriteOverTwoDatabasesCountsRowsAsOneStatement(t *testing.T) {
	plain, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "plain.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	must(t, plain.AutoMigrate(&failsAfterCreate{}))
	db, p, direct := revRouted(t, &failsAfterCreate{})
	placed := revOnBoth(t, db, p, func() *failsAfterCreate { return &failsAfterCreate{Name: "placed"} }, func(r *failsAfterCreate) int64 { return r.ID })
	layout := p.Layout()
	rows := func(second string) []failsAfterCreate {
		return []failsAfterCreate{
			{ID: layout.Compose(time.Now(), layout.Shard(placed[0].ID), 9), Name: "ok"},
			{ID: layout.Compose(time.Now(), layout.Shard(placed[1].ID), 9), Name: second},
		}
	}
	before := rowsOn(t, direct, &failsAfterCreate{})
	bad := rows("bad")
	want := plain.Create(&bad)
	bad = rows("bad")
	got := db.Create(&bad)
	if !errors.Is(got.Error, gorm.ErrInvalidData) || got.RowsAffected != want.RowsAffected {
		t.Fatalf("an AfterCreate failing on the second database: %d rows, %v; GORM on one database: %d rows, %v", got.RowsAffected, got.Error, want.RowsAffected, want.Error)
	}
	if n := rowsOn(t, direct, &failsAfterCreate{}); n != before {
		t.Fatalf("%d rows stored; want the %d stored before, the failed Create's rolled back", n, before)
	}
	taken := rows("ok")
	taken[1].ID = placed[1].ID // its key is taken: the second part's INSERT fails
	want = plain.Create(&[]failsAfterCreate{{ID: 1, Name: "x"}, {ID: 1, Name: "y"}})
	got = db.Create(&taken)
	if got.Error == nil || got.RowsAffected != want.RowsAffected {
		t.Fatalf("an INSERT refused on the second database: %d rows, %v; GORM on one database: %d rows, %v", got.RowsAffected, got.Error, want.RowsAffected, want.Error)
	}
}

type shelf struct {
	ID    int64   `shardid:""`
	Items []thing `gorm:"many2many:shelf_things"`
}

type thing struct {
	ID   int64
	Name string
}

// TestManyToManyPreloadWithALimitOverSeveralDatabasesIsRefused: a many2many
// preload reads its join rows, and then its targets, on each database of
// the owners: a LIMIT of the preload's own would hold per database, not over
// the whole preload as on one database. Refused; without one, every owner
// gets its targets as GORM gives them on one database.
func TestManyToManyPreloadWithALimitOverSeveralDatabasesIsRefused(t *testing.T) {
	db, p, _ := revRouted(t, &shelf{}, &thing{})
	things := []thing{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	must(t, db.Create(&things).Error)
	shelves := revOnBoth(t, db, p, func() *shelf { return &shelf{} }, func(s *shelf) int64 { return s.ID })
	must(t, db.Model(shelves[0]).Omit("Items.*").Association("Items").Append(&things[0], &things[1]))
	must(t, db.Model(shelves[1]).Omit("Items.*").Association("Items").Append(&things[1], &things[2]))
	ids := []int64{shelves[0].ID, shelves[1].ID}
	var got []shelf
	err := db.Preload("Items", func(tx *gorm.DB) *gorm.DB { return tx.Order("name desc").Limit(2) }).Find(&got, ids).Error
	if !errors.Is(err, ErrCrossShard) {
		t.Fatalf("a many2many preload with a limit over two databases: %v; want ErrCrossShard", err)
	}
	got = nil
	must(t, db.Preload("Items", func(tx *gorm.DB) *gorm.DB { return tx.Order("name desc") }).Find(&got, ids).Error)
	names := map[int64]string{}
	for _, s := range got {
		for _, item := range s.Items {
			names[s.ID] += item.Name
		}
	}
	if names[ids[0]] != "ba" || names[ids[1]] != "cb" {
		t.Fatalf("preloaded %v; want ba and cb", names)
	}
}

type seenUser struct {
	ID   int64 `shardid:""`
	Name string
}

var seenAfterFind atomic.Int64

func (*seenUser) AfterFind(*gorm.DB) error { seenAfterFind.Add(1); return nil }

// TestPluginsRegisteredBeforeSeeAStatementOverSeveralDatabasesSucceed: GORM
// runs the after-callbacks of a plugin registered before shardid (as
// gorm.io/plugin/opentelemetry is told to be) after its own. A statement
// shardid ran part by part must reach them as a success with SQL, as on one
// database, and GORM's own hooks must still run once per row.
func TestPluginsRegisteredBeforeSeeAStatementOverSeveralDatabasesSucceed(t *testing.T) {
	dir := t.TempDir()
	half := Layout{}.ShardCount() / 2
	db, err := gorm.Open(sqlite.Open(filepath.Join(dir, "main.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	type seen struct {
		err error
		sql string
	}
	var last seen
	observe := func(db *gorm.DB) { last = seen{db.Error, db.Statement.SQL.String()} }
	cb := db.Callback()
	must(t, errors.Join(
		cb.Create().After("gorm:create").Register("observer:create", observe),
		cb.Query().After("gorm:query").Register("observer:query", observe),
		cb.Update().After("gorm:update").Register("observer:update", observe),
		cb.Delete().After("gorm:delete").Register("observer:delete", observe),
		cb.Row().After("gorm:row").Register("observer:row", observe)))
	p := New(Config{Atomic: BestEffort, Shards: []Shard{
		{Name: "s0", Dialector: sqlite.Open(filepath.Join(dir, "s0.db")), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "s1", Dialector: sqlite.Open(filepath.Join(dir, "s1.db")), Logical: []Range{{From: half, To: 2*half - 1}}},
	}})
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	must(t, p.AutoMigrate(db, &seenUser{}))
	at := p.Layout().Epoch.AddDate(1, 0, 0)
	rows := []seenUser{{ID: p.Layout().Compose(at, 1, 0), Name: "a"}, {ID: p.Layout().Compose(at, half+1, 0), Name: "b"}}
	ids := []int64{rows[0].ID, rows[1].ID}
	var n int64
	for _, c := range []struct {
		what, verb string
		run        func() error
	}{
		{"a Create split over both", "INSERT", func() error { return db.Create(&rows).Error }},
		{"Find over both", "SELECT", func() error { var all []seenUser; return db.Clauses(AllShards()).Find(&all).Error }},
		{"Count over both", "SELECT", func() error { return db.Model(&seenUser{}).Clauses(AllShards()).Count(&n).Error }},
		{"Row over both", "SELECT", func() error {
			return db.Model(&seenUser{}).Clauses(AllShards()).Select("count(*)").Row().Scan(&n)
		}},
		{"Update over both", "UPDATE", func() error { return db.Model(&seenUser{}).Where("id IN ?", ids).Update("name", "c").Error }},
		{"Delete over both", "DELETE", func() error { return db.Delete(&seenUser{}, ids).Error }},
		{"First over both, finding nothing", "SELECT", func() error {
			var none seenUser
			if err := db.Clauses(AllShards()).First(&none).Error; !errors.Is(err, gorm.ErrRecordNotFound) {
				return fmt.Errorf("want ErrRecordNotFound, got %w", err)
			}
			return nil
		}},
		{"Find over both that fails", "SELECT", func() error {
			var all []seenUser
			if err := db.Clauses(AllShards()).Where("no_such_column = 1").Find(&all).Error; err == nil {
				return errors.New("a condition on a missing column succeeded")
			}
			return nil
		}},
	} {
		last = seen{}
		seenAfterFind.Store(0)
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		failed := strings.Contains(c.what, "fails") || strings.Contains(c.what, "nothing")
		if (last.err != nil) != failed || strings.Contains(fmt.Sprint(last.err), "ran per physical database") || !strings.HasPrefix(strings.ToUpper(last.sql), c.verb) {
			t.Errorf("%s: a plugin registered before shardid sees error %v and SQL %q, want the statement's own outcome and its %s", c.what, last.err, last.sql, c.verb)
		}
		if c.what == "Find over both" && seenAfterFind.Load() != 2 {
			t.Errorf("%s: AfterFind ran %d times, want once per row (2)", c.what, seenAfterFind.Load())
		}
	}
}

type guardedUser struct {
	ID        int64  `shardid:""`
	Name      string `gorm:"default:'unnamed'"`
	CreatedAt time.Time
	DeletedAt gorm.DeletedAt // soft delete, as gorm.Model's
}

// TestWritesOverEveryShardNeedAConditionAsGORMsDo: GORM refuses an update or
// delete with no condition (ErrMissingWhereClause) unless AllowGlobalUpdate;
// over every shard the parts' conditions to their databases' ranges are the
// plugin's own, so the statement is refused all the same, and nothing is
// written anywhere. With a condition, or AllowGlobalUpdate, it runs.
func TestWritesOverEveryShardNeedAConditionAsGORMsDo(t *testing.T) {
	db, p, direct := revRouted(t, &guardedUser{})
	rows := revOnBoth(t, db, p, func() *guardedUser { return &guardedUser{Name: "a"} }, func(u *guardedUser) int64 { return u.ID })
	all := func() *gorm.DB { return db.Clauses(AllShards()) }
	for what, err := range map[string]error{
		"Delete":           all().Delete(&guardedUser{}).Error,
		"Unscoped Delete":  all().Unscoped().Delete(&guardedUser{}).Error,
		"Update":           all().Model(&guardedUser{}).Update("name", "b").Error,
		"Updates of a map": all().Model(&guardedUser{}).Updates(map[string]any{"name": "b"}).Error,
		"UpdateColumn":     all().Model(&guardedUser{}).UpdateColumn("name", "b").Error,
	} {
		if !errors.Is(err, gorm.ErrMissingWhereClause) {
			t.Errorf("%s over every shard with no condition: %v, want gorm.ErrMissingWhereClause", what, err)
		}
	}
	for k, d := range direct {
		var left []guardedUser
		must(t, d.Unscoped().Find(&left).Error)
		if len(left) == 0 || slices.ContainsFunc(left, func(u guardedUser) bool { return u.Name != "a" || u.DeletedAt.Valid }) {
			t.Errorf("database %d after the refused writes: %+v, want its rows as they were", k, left)
		}
	}
	must(t, all().Model(&guardedUser{}).Where("name = ?", "a").Update("name", "b").Error)
	must(t, all().Session(&gorm.Session{AllowGlobalUpdate: true}).Delete(&guardedUser{}).Error)
	var kept int64
	must(t, all().Model(&guardedUser{}).Count(&kept).Error)
	if kept != 0 || rows[0].ID == 0 {
		t.Errorf("%d rows kept after a delete with AllowGlobalUpdate", kept)
	}
}

type scopedUser struct {
	ID     int64 `shardid:""`
	Tenant string
	Rank   int64
}

// BeforeUpdate and BeforeDelete keep every write to one tenant, as an
// application's hooks may.
func (u *scopedUser) BeforeUpdate(tx *gorm.DB) error {
	tx.Statement.Where("tenant = ?", "t1")
	return nil
}

func (u *scopedUser) BeforeDelete(tx *gorm.DB) error {
	tx.Statement.Where("tenant = ?", "t1")
	return nil
}

// TestWritesOverEveryShardTakeTheConditionsOfHooksAsGORMsDo: GORM checks an
// update or delete for conditions after the Before hooks and the callbacks
// before its own, so a condition a hook or a tenant scope's callback adds
// lets it run on one database; over every shard it runs the same, on each
// database, writing only the rows of the condition. It was refused with
// gorm.ErrMissingWhereClause, checked before any hook had run.
func TestWritesOverEveryShardTakeTheConditionsOfHooksAsGORMsDo(t *testing.T) {
	db, p, direct := revRouted(t, &scopedUser{}, &guardedUser{})
	for _, tenant := range []string{"t1", "t2"} {
		revOnBoth(t, db, p, func() *scopedUser { return &scopedUser{Tenant: tenant} }, func(u *scopedUser) int64 { return u.ID })
	}
	tenants := func() (rows map[string]int64) {
		rows = map[string]int64{}
		for _, d := range direct {
			var got []scopedUser
			must(t, d.Find(&got).Error)
			for _, u := range got {
				rows[fmt.Sprintf("%s rank %d", u.Tenant, u.Rank)]++
			}
		}
		return rows
	}
	want := tenants()
	all := func() *gorm.DB { return db.Clauses(AllShards()) }
	r := all().Model(&scopedUser{}).Update("rank", 7)
	if r.Error != nil || r.RowsAffected != want["t1 rank 0"] {
		t.Fatalf("an update over every shard with a hook's condition: %v, %d rows, want the %d rows of t1", r.Error, r.RowsAffected, want["t1 rank 0"])
	}
	want["t1 rank 7"] = want["t1 rank 0"]
	delete(want, "t1 rank 0")
	if got := tenants(); !maps.Equal(got, want) {
		t.Fatalf("after the update: %v, want %v", got, want)
	}
	r = all().Delete(&scopedUser{})
	if r.Error != nil || r.RowsAffected != want["t1 rank 7"] {
		t.Fatalf("a delete over every shard with a hook's condition: %v, %d rows, want the %d rows of t1", r.Error, r.RowsAffected, want["t1 rank 7"])
	}
	delete(want, "t1 rank 7")
	if got := tenants(); !maps.Equal(got, want) {
		t.Fatalf("after the delete: %v, want %v", got, want)
	}

	// A tenant scope's callback, before GORM's delete, counts as well.
	revOnBoth(t, db, p, func() *guardedUser { return &guardedUser{Name: "a"} }, func(u *guardedUser) int64 { return u.ID })
	revOnBoth(t, db, p, func() *guardedUser { return &guardedUser{Name: "b"} }, func(u *guardedUser) int64 { return u.ID })
	must(t, db.Callback().Delete().Before("gorm:delete").Register("test:tenant", func(tx *gorm.DB) {
		if tx.Statement.Schema != nil && tx.Statement.Schema.Name == "guardedUser" {
			tx.Statement.Where("name = ?", "a")
		}
	}))
	must(t, all().Delete(&guardedUser{}).Error)
	for k, d := range direct {
		var left []guardedUser
		must(t, d.Find(&left).Error)
		if len(left) == 0 || slices.ContainsFunc(left, func(u guardedUser) bool { return u.Name != "b" }) {
			t.Errorf("database %d after a delete of the rows named a: %+v, want those named b", k, left)
		}
	}
}

// TestCreateReturningEveryColumnOverTwoDatabases: GORM scans what RETURNING
// gives back into the created rows; split over two databases, each row gets
// its own back, the database's default included.
func TestCreateReturningEveryColumnOverTwoDatabases(t *testing.T) {
	db, p, direct := revRouted(t, &guardedUser{})
	at := p.Layout().Epoch.AddDate(1, 0, 0)
	half := p.Layout().ShardCount() / 2
	rows := []guardedUser{{ID: p.Layout().Compose(at, 1, 0)}, {ID: p.Layout().Compose(at, half+1, 0), Name: "given"}, {ID: p.Layout().Compose(at, 2, 0)}}
	must(t, db.Clauses(clause.Returning{}).Create(&rows).Error)
	for i, want := range []string{"unnamed", "given", "unnamed"} {
		if rows[i].Name != want || rows[i].CreatedAt.IsZero() {
			t.Errorf("row %d after RETURNING: %+v, want name %q and its creation time", i, rows[i], want)
		}
	}
	for k, want := range [][]int64{{rows[0].ID, rows[2].ID}, {rows[1].ID}} {
		var ids []int64
		must(t, direct[k].Model(&guardedUser{}).Order("id").Pluck("id", &ids).Error)
		if !slices.Equal(ids, want) {
			t.Errorf("database %d holds %v, want %v", k, ids, want)
		}
	}
}

// TestCreateWithSelectedFieldsInsertsTheID: GORM's "create with selected
// fields" inserts the ID the plugin made with them; leaving the ID out on
// purpose (Omit) is refused, as the database would give no key naming a shard.
func TestCreateWithSelectedFieldsInsertsTheID(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{})
	row := revUser{Name: "s"}
	must(t, db.Select("Name").Create(&row).Error)
	k := p.Layout().Shard(row.ID) * len(direct) / p.Layout().ShardCount()
	var got revUser
	if err := direct[k].First(&got, row.ID).Error; err != nil || got.Name != "s" {
		t.Errorf("the row created with Select(\"Name\") on its database: %+v, %v", got, err)
	}
	if err := db.Omit("ID").Create(&revUser{Name: "o"}).Error; !errors.Is(err, ErrNoShard) {
		t.Errorf("Omit(\"ID\").Create: %v, want ErrNoShard", err)
	}
}

// TestFindOverEveryShardRaisesNotFoundWhenToldTo: a Find whose statement asks
// for ErrRecordNotFound gets it when no database has a row, as gorm.Scan
// gives it on one database.
func TestFindOverEveryShardRaisesNotFoundWhenToldTo(t *testing.T) {
	db, _, _ := revRouted(t, &revUser{})
	q := db.Clauses(AllShards()).Where("name = ?", "nobody")
	q.Statement.RaiseErrorOnNotFound = true
	var users []revUser
	if err := q.Find(&users).Error; !errors.Is(err, gorm.ErrRecordNotFound) {
		t.Errorf("a Find over every shard finding nothing, told to raise it: %v, want ErrRecordNotFound", err)
	}
}

// TestSliceWriteWithARowWithoutAKeyWritesOnlyTheKeyedRows: GORM restricts
// a slice's update to the keys of its rows when its last row has one, and
// its delete to the rows that have one; a row without a key (not created
// yet) adds no row to the write on any database. An update whose last row
// has no key has no key condition, and no other, and writes nothing.
func TestSliceWriteWithARowWithoutAKeyWritesOnlyTheKeyedRows(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{})
	mk := func() *revUser { return &revUser{Name: "a"} }
	id := func(r *revUser) int64 { return r.ID }
	named := revOnBoth(t, db, p, mk, id)
	bystanders := revOnBoth(t, db, p, mk, id)
	unchanged := func(what string) {
		t.Helper()
		for k, r := range bystanders {
			var got revUser
			must(t, direct[k].First(&got, r.ID).Error)
			if got.Name != "a" {
				t.Errorf("%s: a row it does not name, on database %d, became %+v", what, k, got)
			}
		}
	}

	res := db.Model(&[]revUser{*named[0], {Name: "new"}, *named[1]}).Updates(map[string]any{"name": "z"})
	must(t, res.Error)
	if res.RowsAffected != 2 {
		t.Errorf("update of two keyed rows and one without a key: %d rows affected, want 2", res.RowsAffected)
	}
	for k, r := range named {
		var got revUser
		must(t, direct[k].First(&got, r.ID).Error)
		if got.Name != "z" {
			t.Errorf("database %d: the named row is %+v, want name z", k, got)
		}
	}
	unchanged("an update naming a row without a key")

	if err := db.Model(&[]revUser{*named[0], *named[1], {Name: "new"}}).Updates(map[string]any{"name": "w"}).Error; err == nil {
		t.Error("an update whose last row has no key, without conditions: no error; GORM refuses it (no WHERE)")
	}
	unchanged("an update whose last row has no key")

	res = db.Delete(&[]revUser{*named[0], {Name: "new"}, *named[1]})
	must(t, res.Error)
	if res.RowsAffected != 2 {
		t.Errorf("delete of two keyed rows and one without a key: %d rows affected, want 2", res.RowsAffected)
	}
	unchanged("a delete naming a row without a key")
	for k, r := range named {
		if err := direct[k].First(&revUser{}, r.ID).Error; !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Errorf("database %d: the named row after the delete: %v, want it gone", k, err)
		}
	}
}

// TestDeleteOfTheModelsRowsDeletesThemWhereTheyAre: GORM's Delete adds the
// keys of the statement's Model beside its value's (Model(&rows).Delete(&T{})):
// they name the rows, on one database or on two, and no other row.
func TestDeleteOfTheModelsRowsDeletesThemWhereTheyAre(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{})
	mk := func() *revUser { return &revUser{Name: "a"} }
	id := func(r *revUser) int64 { return r.ID }
	gone := func(what string, rows []*revUser, want bool) {
		t.Helper()
		for k, r := range rows {
			err := direct[k].First(&revUser{}, r.ID).Error
			if deleted := errors.Is(err, gorm.ErrRecordNotFound); deleted != want {
				t.Errorf("%s: the row on database %d deleted: %v, want %v", what, k, deleted, want)
			}
		}
	}
	rows, bystanders := revOnBoth(t, db, p, mk, id), revOnBoth(t, db, p, mk, id)
	must(t, db.Model(rows[0]).Delete(&revUser{}).Error)
	gone("Model(&row).Delete", rows[:1], true)
	rows = revOnBoth(t, db, p, mk, id)
	res := db.Model(&[]revUser{*rows[0], *rows[1]}).Delete(&revUser{})
	must(t, res.Error)
	if res.RowsAffected != 2 {
		t.Errorf("Model(&rows).Delete over two databases: %d rows affected, want 2", res.RowsAffected)
	}
	gone("Model(&rows).Delete", rows, true)
	gone("rows the deletes did not name", bystanders, false)
}

// TestAStatementUsedAgainCountsOnlyItsOwnRows: a *gorm.DB used for a second
// write over several databases reports that write's rows, as GORM's
// RowsAffected does on one database, not the sum of both.
func TestAStatementUsedAgainCountsOnlyItsOwnRows(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{})
	rows := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "a"} }, func(r *revUser) int64 { return r.ID })
	q := db.Model(&revUser{}).Where("id IN ?", []int64{rows[0].ID, rows[1].ID})
	for i, write := range []func() *gorm.DB{
		func() *gorm.DB { return q.Update("name", "b") },
		func() *gorm.DB { return q.Update("name", "c") },
		func() *gorm.DB { return q.Delete(&revUser{}) },
	} {
		res := write()
		must(t, res.Error)
		if res.RowsAffected != 2 {
			t.Errorf("write %d on the statement used again: %d rows affected, want 2", i, res.RowsAffected)
		}
	}
	created := db.Model(&revUser{})
	for i := range 2 {
		batch := []revUser{{Name: "x"}, {Name: "y"}, {Name: "z"}, {Name: "w"}, {Name: "v"}, {Name: "u"}}
		res := created.Create(&batch)
		must(t, res.Error)
		if res.RowsAffected != int64(len(batch)) {
			t.Errorf("Create %d on the statement used again: %d rows affected, want %d", i, res.RowsAffected, len(batch))
		}
	}
}

// TestAStatementUsedAgainAfterGORMsOwnTransactionEndsNoneThatIsNotThere: a
// *gorm.DB whose first write (Create, Update, Delete) ran on one database,
// in a transaction GORM began there, and whose next write runs over two
// databases, or is refused before GORM's begin, succeeds, or fails with its
// own error only: GORM's note of the first transaction, kept in the
// statement, does not make it end one the second did not begin.
func TestAStatementUsedAgainAfterGORMsOwnTransactionEndsNoneThatIsNotThere(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{})
	ids := spreadIDs(p.Layout(), 2)
	if p.ShardMap().Physical(p.Layout().Shard(ids[0])) == p.ShardMap().Physical(p.Layout().Shard(ids[1])) {
		t.Fatal("the two IDs are on one database")
	}
	created := db.Model(&revUser{})
	must(t, created.Create(&revUser{Name: "on one"}).Error)
	split := []revUser{{ID: ids[0], Name: "x"}, {ID: ids[1], Name: "y"}}
	res := created.Create(&split)
	must(t, res.Error)
	if res.RowsAffected != 2 {
		t.Errorf("the split Create affected %d rows, want 2", res.RowsAffected)
	}
	var n int64
	must(t, db.Clauses(AllShards()).Model(&revUser{}).Count(&n).Error)
	if n != 3 {
		t.Errorf("%d rows stored, want 3", n)
	}
	must(t, created.Create(&revUser{Name: "on one again"}).Error)
	err := created.Create(&revUser{ID: -1}).Error
	if err == nil || errors.Is(err, gorm.ErrInvalidTransaction) || strings.Contains(err.Error(), gorm.ErrInvalidTransaction.Error()) {
		t.Errorf("a refused Create on the statement used again: %v; want its own error only", err)
	}
	// An update and a delete, on one database and then, with GORM's
	// conditions kept and one more, on two.
	updated := db.Model(&revUser{}).Where("id = ?", ids[0])
	must(t, updated.Update("name", "on one").Error)
	res = updated.Or("id = ?", ids[1]).Update("name", "on two")
	must(t, res.Error)
	if res.RowsAffected != 2 {
		t.Errorf("the update over two databases affected %d rows, want 2", res.RowsAffected)
	}
	deleted := db.Where("id = ?", ids[0])
	must(t, deleted.Delete(&revUser{}).Error)
	res = deleted.Or("id = ?", ids[1]).Delete(&revUser{})
	must(t, res.Error)
	if res.RowsAffected != 1 {
		t.Errorf("the delete over two databases affected %d rows, want 1 (the other was deleted before)", res.RowsAffected)
	}
}

// TestACountAfterAFindWhoseOffsetDropsItsRowIsZero: Find(...).Count(&n) on
// a page past the first over several databases counts 0, as one database
// does (its OFFSET drops the count's one row, and GORM reads no row as 0),
// not the number of rows the Find before it read.
func TestACountAfterAFindWhoseOffsetDropsItsRowIsZero(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{})
	rows := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "a"} }, func(r *revUser) int64 { return r.ID })
	extra := revUser{Name: "b"}
	must(t, db.Clauses(ByID(rows[0].ID)).Create(&extra).Error)
	ids := []int64{rows[0].ID, rows[1].ID, extra.ID}
	for name, q := range map[string]*gorm.DB{
		"AllShards": db.Clauses(AllShards()).Model(&revUser{}),
		"IN list":   db.Model(&revUser{}).Where("id IN ?", ids),
	} {
		var page []revUser
		var n int64
		res := q.Order("id").Limit(2).Offset(1).Find(&page).Count(&n)
		must(t, res.Error)
		if len(page) != 2 || n != 0 {
			t.Errorf("%s: Find read %d rows, then Count %d; want 2 rows, then 0", name, len(page), n)
		}
	}
}

// A read over several databases fills the destinations GORM fills on one:
// an array (its first rows, the count of all) and a pointer to a nil slice
// pointer, which GORM allocates.
func TestFanOutIntoAnArrayOrAPointerToASlicePointer(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "u"} }, func(u *revUser) int64 { return u.ID })
	ids := []int64{users[0].ID, users[1].ID}
	var three [3]revUser
	res := db.Where("id IN ?", ids).Order("id").Find(&three)
	if res.Error != nil || res.RowsAffected != 2 || three[0].ID != min(ids[0], ids[1]) || three[1].ID != max(ids[0], ids[1]) || three[2].ID != 0 {
		t.Errorf("Find into [3]T: %v, %d rows, %v", res.Error, res.RowsAffected, three)
	}
	var one [1]*revUser
	res = db.Where("id IN ?", ids).Order("id desc").Find(&one)
	if res.Error != nil || res.RowsAffected != 2 || one[0] == nil || one[0].ID != max(ids[0], ids[1]) {
		t.Errorf("Find into [1]*T: %v, %d rows, %v", res.Error, res.RowsAffected, one)
	}
	var rows *[]revUser
	if err := db.Where("id IN ?", ids).Find(&rows).Error; err != nil || rows == nil || len(*rows) != 2 {
		t.Errorf("Find into **[]T: %v, %v", err, rows)
	}
	var row *revUser
	if err := db.Where("id IN ?", ids).First(&row).Error; err != nil || row == nil || row.ID != min(ids[0], ids[1]) {
		t.Errorf("First into **T: %v, %v", err, row)
	}
}

// A read over every shard of a soft-deleted model whose first condition is
// given by Or reads what GORM reads on one database: GORM's soft delete wraps
// such a list in clause.And, which keeps the Or first and joins the next
// condition with AND (`id = a AND qty > 2`), where a list without it moves
// the Or behind (`qty > 2 OR id = a`).
func TestLeadingOrOfSoftDeletedModelReadsAsOneDatabase(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 4, &diffRow{})
	ids := spreadIDs(p.Layout(), 4)
	must(t, db.Create(&[]diffRow{{ID: ids[0], Qty: 1}, {ID: ids[1], Qty: 5}, {ID: ids[2], Qty: 7}}).Error)
	var rows []diffRow
	must(t, db.Clauses(AllShards()).Or("id = ?", ids[0]).Where("qty > ?", 2).Find(&rows).Error)
	if len(rows) != 0 {
		t.Fatalf("read %d rows, GORM on one database reads none (id = a AND qty > 2)", len(rows))
	}
	must(t, db.Clauses(AllShards()).Unscoped().Or("id = ?", ids[0]).Where("qty > ?", 2).Find(&rows).Error)
	if len(rows) != 3 {
		t.Fatalf("Unscoped read %d rows, GORM on one database reads 3 (qty > 2 OR id = a)", len(rows))
	}
}

// flagDeleted is a soft-delete field of the application's own, built as
// gorm.io/plugin/soft_delete builds its flag: its query clause wraps a WHERE
// list of more than one condition holding an Or in clause.And, and adds
// `deleted = 0`.
type flagDeleted int

func (flagDeleted) QueryClauses(f *schema.Field) []clause.Interface {
	return []clause.Interface{flagDeletedQuery{f}}
}

type flagDeletedQuery struct{ field *schema.Field }

func (flagDeletedQuery) Name() string               { return "" }
func (flagDeletedQuery) Build(clause.Builder)       {}
func (flagDeletedQuery) MergeClause(*clause.Clause) {}

func (q flagDeletedQuery) ModifyStatement(stmt *gorm.Statement) {
	if _, done := stmt.Clauses["soft_delete_enabled"]; done || stmt.Statement.Unscoped {
		return
	}
	if c, ok := stmt.Clauses["WHERE"]; ok {
		if where, ok := c.Expression.(clause.Where); ok && len(where.Exprs) > 1 {
			if slices.ContainsFunc(where.Exprs, func(e clause.Expression) bool { _, or := e.(clause.OrConditions); return or }) {
				c.Expression = clause.Where{Exprs: []clause.Expression{clause.And(where.Exprs...)}}
				stmt.Clauses["WHERE"] = c
			}
		}
	}
	stmt.AddClause(clause.Where{Exprs: []clause.Expression{clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: q.field.DBName}, Value: 0}}})
	stmt.Clauses["soft_delete_enabled"] = clause.Clause{}
}

type flagRow struct {
	ID      int64 `shardid:""`
	Qty     int
	Deleted flagDeleted
}

// A soft-delete type of the application's own that wraps a list holding an Or
// in clause.And, as GORM's does, is read as it will build: db.Or(a).Where(b)
// over every shard is a AND b, as on one database.
func TestLeadingOrOfAnOwnSoftDeleteTypeReadsAsOneDatabase(t *testing.T) {
	db, p, direct, _ := revRoutedN(t, 4, &flagRow{})
	ids := spreadIDs(p.Layout(), 4)
	must(t, db.Create(&[]flagRow{{ID: ids[0], Qty: 1}, {ID: ids[1], Qty: 5}, {ID: ids[2], Qty: 7}}).Error)
	var rows []flagRow
	must(t, db.Clauses(AllShards()).Or("id = ?", ids[0]).Where("qty > ?", 2).Find(&rows).Error)
	if len(rows) != 0 {
		t.Fatalf("read %d rows, GORM on one database reads none (id = a AND qty > 2)", len(rows))
	}
	var n int64
	must(t, db.Clauses(AllShards()).Model(&flagRow{}).Or("id = ?", ids[0]).Where("qty > ?", 2).Count(&n).Error)
	if n != 0 {
		t.Fatalf("counted %d rows, GORM on one database counts none", n)
	}
	res := db.Clauses(AllShards()).Model(&flagRow{}).Or("id = ?", ids[0]).Where("qty > ?", 2).Update("qty", 9)
	if res.Error != nil || res.RowsAffected != 0 {
		t.Fatalf("update: %v, %d rows; GORM on one database updates none", res.Error, res.RowsAffected)
	}
	for k, d := range direct { // each database as it is, not as the plugin reports it
		var changed int64
		must(t, d.Model(&flagRow{}).Where("qty = ?", 9).Count(&changed).Error)
		if changed != 0 {
			t.Errorf("physical database %d holds %d rows the update wrote; GORM on one database writes none", k, changed)
		}
	}
}

// A soft-deleted model's conditions whose first is given by Or name the shard
// of its key as GORM builds them, AND-ed to the next (db.Or("id = ?",
// a).Where(b) is a AND b): routed to a's database, not refused for naming
// none; Unscoped, GORM builds b OR a, which names none.
func TestLeadingOrOnTheKeyOfASoftDeletedModelNamesItsShard(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 4, &diffRow{})
	ids := spreadIDs(p.Layout(), 4)
	must(t, db.Create(&[]diffRow{{ID: ids[0], Qty: 1}, {ID: ids[1], Qty: 5}, {ID: ids[2], Qty: 7}}).Error)
	var n int64
	must(t, db.Model(&diffRow{}).Or("id = ?", ids[0]).Where("qty > ?", 0).Count(&n).Error)
	var rows []diffRow
	must(t, db.Or("id = ?", ids[1]).Where("qty > ?", 2).Find(&rows).Error)
	if n != 1 || len(rows) != 1 || rows[0].ID != ids[1] {
		t.Fatalf("counted %d, read %v; GORM on one database counts 1 and reads the row of ids[1]", n, rows)
	}
	err := db.Unscoped().Or("id = ?", ids[1]).Where("qty > ?", 2).Find(&rows).Error
	if !errors.Is(err, ErrNoShard) {
		t.Fatalf("Unscoped (qty > 2 OR id = b): %v, want ErrNoShard", err)
	}
}

type m2mOrg struct {
	ID int64 `shardid:""`
}

type m2mBox struct {
	ID     int64 `shardid:"colocate:OrgID"`
	OrgID  int64
	Labels []m2mLabel `gorm:"many2many:m2m_box_labels"`
}

type m2mLabel struct {
	ID    int64 `shardid:"colocate:OrgID"`
	OrgID int64
	Name  string
}

// A many2many's Association Find joins its targets with the join rows on the
// owner's database: refused without a clause, the error saying the two ways
// (Preload, or the owner's shard where the targets live beside it); with the
// owner's shard it reads them there, as one database does.
func TestManyToManyAssociationFindOnTheOwnersShard(t *testing.T) {
	db, _, _ := revRouted(t, &m2mOrg{}, &m2mBox{}, &m2mLabel{})
	org := m2mOrg{}
	must(t, db.Create(&org).Error)
	box := m2mBox{OrgID: org.ID}
	labels := []m2mLabel{{OrgID: org.ID, Name: "a"}, {OrgID: org.ID, Name: "b"}}
	must(t, db.Create(&box).Error)
	must(t, db.Create(&labels).Error)
	must(t, db.Model(&box).Omit("Labels.*").Association("Labels").Append(&labels[0], &labels[1]))
	var got []m2mLabel
	err := db.Model(&box).Association("Labels").Find(&got)
	if !errors.Is(err, ErrCrossShard) || !strings.Contains(err.Error(), "shardid.ByID(ownerID)") {
		t.Fatalf("Association Find without a clause: %v, want ErrCrossShard naming Preload and the owner's shard", err)
	}
	must(t, db.Clauses(ByID(box.ID)).Model(&box).Association("Labels").Find(&got))
	if len(got) != 2 {
		t.Fatalf("Association Find on the owner's shard: %d labels, want 2", len(got))
	}
}

// sentIDs records how many IDs the SQL of the statements it logs carries.
type sentIDs struct{ ids atomic.Int64 }

func (s *sentIDs) LogMode(logger.LogLevel) logger.Interface { return s }
func (s *sentIDs) Info(context.Context, string, ...any)     {}
func (s *sentIDs) Warn(context.Context, string, ...any)     {}
func (s *sentIDs) Error(context.Context, string, ...any)    {}
func (s *sentIDs) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	line, _ := fc()
	s.ids.Add(int64(len(regexp.MustCompile(`\b\d{15,19}\b`).FindAllStringIndex(line, -1))))
}

// TestAReadOfAListMostlyOnOneDatabaseSendsTheOthersTheirOwnIDs: parts of a
// read of many IDs, most of one database, carry about as many IDs in all as
// the list holds: a part shares the others' SQL only where its list, padded
// to theirs, would not be many times its own.
func TestAReadOfAListMostlyOnOneDatabaseSendsTheOthersTheirOwnIDs(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 4, &revUser{})
	l := p.Layout()
	ids := spreadIDs(l, 4) // one ID on each database
	at := time.Now().Add(-time.Second)
	for seq := range 3000 { // and 3,000 on the first
		ids = append(ids, l.Compose(at, 0, 2+seq%1000)+int64(seq/1000)<<(l.SequenceBits+l.ShardBits))
	}
	log := &sentIDs{}
	var got []revUser
	must(t, db.Session(&gorm.Session{Logger: log}).Find(&got, ids).Error)
	if sent := log.ids.Load(); sent < int64(len(ids)) || sent > 2*int64(len(ids)) {
		t.Fatalf("a read of %d IDs sent %d", len(ids), sent)
	}
}

// TestAWriteOfALongListOverManyDatabasesCopiesTheListOnce: an update of
// 30,000 IDs allocates about as much over 16 databases as over 2: no part
// copies the whole list to keep its own values.
func TestAWriteOfALongListOverManyDatabasesCopiesTheListOnce(t *testing.T) {
	allocs := map[int]uint64{}
	for _, n := range []int{2, 16} {
		db, p, _, _ := revRoutedN(t, n, &revUser{})
		ids := spreadIDs(p.Layout(), 30000)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		must(t, db.Model(&revUser{}).Where("id IN ?", ids).Update("name", "y").Error)
		runtime.ReadMemStats(&after)
		allocs[n] = after.Mallocs - before.Mallocs
	}
	if allocs[16] > 2*allocs[2] {
		t.Fatalf("an update of 30,000 IDs: %d allocations over 2 databases, %d over 16", allocs[2], allocs[16])
	}
}
