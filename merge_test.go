package shardid

import (
	"cmp"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// An ordered merge over several databases whose destination lacks the key
// column is refused where the merge cannot read the column it orders by,
// and gives one database's answer where it can.
func TestOrderedMergeWithoutTheKeySelected(t *testing.T) {
	db, p, _ := revRouted(t, &revPlain{})
	var all []*revPlain
	for range 6 {
		all = append(all, revOnBoth(t, db, p, func() *revPlain { return &revPlain{Name: "n", Rank: 1} }, func(r *revPlain) int64 { return r.ID })...)
	}
	var total int64
	must(t, db.Clauses(AllShards()).Model(&revPlain{}).Count(&total).Error)
	// name each row by its rank in id order, as one database would return them
	var want []int64
	must(t, db.Clauses(AllShards()).Order("id").Limit(3).Find(&all).Error)
	for _, r := range all {
		want = append(want, r.ID)
		must(t, db.Model(r).Update("name", r.ID).Error)
	}
	refused := func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, ErrCrossShard) {
			t.Fatalf("%v, want ErrCrossShard: the merge cannot read id", err)
		}
	}
	t.Run("pluck", func(t *testing.T) {
		var names []string
		refused(t, db.Model(&revPlain{}).Clauses(AllShards()).Order("id").Limit(3).Pluck("name", &names).Error)
	})
	t.Run("struct", func(t *testing.T) {
		var out []struct{ Name string }
		refused(t, db.Model(&revPlain{}).Clauses(AllShards()).Order("id").Limit(3).Find(&out).Error)
	})
	t.Run("select", func(t *testing.T) {
		var out []revPlain
		refused(t, db.Clauses(AllShards()).Select("name").Order("id").Limit(3).Find(&out).Error)
	})
	t.Run("alias", func(t *testing.T) { // ordered by rank, the same in every row: any three rows
		var out []revPlain
		must(t, db.Clauses(AllShards()).Select("rank AS id, name").Order("id").Limit(3).Find(&out).Error)
		if len(out) != 3 || slices.ContainsFunc(out, func(r revPlain) bool { return r.ID != 1 }) {
			t.Fatalf("%+v, want three rows whose id is their rank, 1", out)
		}
	})
	t.Run("maps", func(t *testing.T) {
		var out []map[string]any
		must(t, db.Model(&revPlain{}).Clauses(AllShards()).Order("id").Limit(3).Find(&out).Error)
		var got []int64
		for _, row := range out {
			got = append(got, row["id"].(int64))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ids %v, want %v", got, want)
		}
	})
	t.Run("batches", func(t *testing.T) {
		seen := map[int64]bool{}
		var rows []revPlain
		must(t, db.Clauses(AllShards()).FindInBatches(&rows, 5, func(tx *gorm.DB, batch int) error {
			for _, r := range rows {
				seen[r.ID] = true
			}
			return nil
		}).Error)
		if int64(len(seen)) != total {
			t.Fatalf("the batches held %d distinct rows of %d", len(seen), total)
		}
	})
}

type softDeleted struct {
	ID        int64 `shardid:""`
	DeletedAt gorm.DeletedAt
	Seen      sql.NullTime
}

// Rows ordered by a soft-delete column (gorm.DeletedAt) or an sql.NullTime
// over several databases merge as one database orders them, NULLs where it
// puts them.
func TestOrderedMergeByNullableTimes(t *testing.T) {
	db, p, _ := revRouted(t, &softDeleted{})
	one, _ := testDB(t, Config{})
	migrate(t, one, &softDeleted{})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		for j, row := range revOnBoth(t, db, p, func() *softDeleted { return &softDeleted{} }, func(r *softDeleted) int64 { return r.ID }) {
			if (i+j)%3 != 0 {
				row.Seen = sql.NullTime{Time: base.Add(time.Duration((i*7+j*3)%5) * time.Hour), Valid: true}
				must(t, db.Save(row).Error)
			}
			if (i+j)%2 == 0 {
				must(t, db.Delete(row).Error)
			}
		}
	}
	var all []softDeleted
	must(t, db.Unscoped().Clauses(AllShards()).Find(&all).Error)
	must(t, one.Create(&all).Error)
	for _, order := range []string{"deleted_at", "deleted_at desc", "seen", "seen desc"} {
		var merged, want []softDeleted
		must(t, db.Unscoped().Clauses(AllShards()).Order(order).Order("id").Find(&merged).Error)
		must(t, one.Unscoped().Order(order).Order("id").Find(&want).Error)
		if len(merged) != len(want) {
			t.Fatalf("ORDER BY %s: %d rows, want %d", order, len(merged), len(want))
		}
		for i := range want {
			if merged[i].ID != want[i].ID {
				t.Fatalf("ORDER BY %s: row %d is %d, one database puts %d there", order, i, merged[i].ID, want[i].ID)
			}
		}
	}
}

// TestOrderByANameTheSelectListGivesAValueOfAnotherType: a select item of
// another type named as a column ("name AS rank") is what the database
// orders by, and the merge would read it as the column's type: refused.
// Another column of a type that orders alike ("rank AS id") merges, as does
// an order beside the key's name given to another column.
func TestOrderByANameTheSelectListGivesAValueOfAnotherType(t *testing.T) {
	db, p, _ := revRouted(t, &revPlain{})
	for i := range 3 {
		revOnBoth(t, db, p, func() *revPlain { return &revPlain{Name: strconv.Itoa(9 + i), Rank: int64(i)} }, func(r *revPlain) int64 { return r.ID })
	}
	var out []revPlain
	if err := db.Clauses(AllShards()).Select("id, name AS rank").Order("rank").Find(&out).Error; !errors.Is(err, ErrCrossShard) {
		t.Errorf("ORDER BY rank, which is the text name: %v, want ErrCrossShard", err)
	}
	out = nil
	must(t, db.Clauses(AllShards()).Select("rank AS id, name").Order("name").Find(&out).Error)
	if !slices.IsSortedFunc(out, func(a, b revPlain) int { return strings.Compare(a.Name, b.Name) }) || len(out) < 6 {
		t.Errorf("ORDER BY name beside rank AS id: %+v, want them ordered by name", out)
	}
}

// TestDistinctOfAValueAliasedAsTheKey: the key makes rows distinct only as
// itself; another column aliased as the key ("rank AS id") is merged as
// DISTINCT values, each once.
func TestDistinctOfAValueAliasedAsTheKey(t *testing.T) {
	db, p, _ := revRouted(t, &revPlain{})
	for range 3 {
		revOnBoth(t, db, p, func() *revPlain { return &revPlain{Name: "n", Rank: 7} }, func(r *revPlain) int64 { return r.ID })
	}
	var ranks []int64
	must(t, db.Model(&revPlain{}).Clauses(AllShards()).Distinct("rank AS id").Pluck("id", &ranks).Error)
	if !slices.Equal(ranks, []int64{7}) {
		t.Errorf("DISTINCT rank AS id over two databases: %v, want [7]", ranks)
	}
}

type jsonBodied struct {
	ID   int64  `shardid:""`
	Body string `gorm:"type:json"`
}

// TestOrderByTextOfANumericAffinityColumnOnSQLite: SQLite stores "9" sent
// to a column declared json (NUMERIC affinity) as the number 9, and orders
// it before 10; the merge, reading strings, would order "10" first: refused.
func TestOrderByTextOfANumericAffinityColumnOnSQLite(t *testing.T) {
	db, p, _ := revRouted(t, &jsonBodied{})
	revOnBoth(t, db, p, func() *jsonBodied { return &jsonBodied{Body: "9"} }, func(r *jsonBodied) int64 { return r.ID })
	var out []jsonBodied
	if err := db.Clauses(AllShards()).Order("body").Find(&out).Error; !errors.Is(err, ErrCrossShard) {
		t.Errorf("ORDER BY a json column over two SQLite databases: %v, want ErrCrossShard", err)
	}
}

// TestTakeOverEveryShardKeepsTheFieldsItDoesNotRead: GORM scans a row into
// the caller's struct, setting the selected columns' fields only; over
// several databases the other fields keep what the caller put there.
func TestTakeOverEveryShardKeepsTheFieldsItDoesNotRead(t *testing.T) {
	db, p, _ := revRouted(t, &revPlain{})
	rows := revOnBoth(t, db, p, func() *revPlain { return &revPlain{Name: "n", Rank: 3} }, func(r *revPlain) int64 { return r.ID })
	got := revPlain{Rank: 42}
	must(t, db.Clauses(AllShards()).Select("id", "name").Where("id IN ?", []int64{rows[0].ID, rows[1].ID}).Order("id").Take(&got).Error)
	if got.Rank != 42 || got.Name != "n" || got.ID != min(rows[0].ID, rows[1].ID) {
		t.Errorf("Take of id and name into a struct holding rank 42: %+v", got)
	}
	got = revPlain{Rank: 42}
	must(t, db.Select("id", "name").Where("id IN ?", []int64{rows[0].ID, rows[1].ID}).First(&got).Error)
	if got.Rank != 42 || got.ID != min(rows[0].ID, rows[1].ID) {
		t.Errorf("First of an IN list into a struct holding rank 42: %+v", got)
	}
}

// TestTakeAndFirstIntoOneMapOverEveryShard: one row of the merged rows goes
// into the caller's map, as GORM scans one database's row into it; none
// found is gorm.ErrRecordNotFound.
func TestTakeAndFirstIntoOneMapOverEveryShard(t *testing.T) {
	db, p, direct := revRouted(t, &revPlain{})
	rows := revOnBoth(t, db, p, func() *revPlain { return &revPlain{Name: "n", Rank: 3} }, func(r *revPlain) int64 { return r.ID })
	lowest := int64(math.MaxInt64)
	for _, d := range direct {
		var first revPlain
		must(t, d.Order("id").First(&first).Error)
		lowest = min(lowest, first.ID)
	}
	got := map[string]any{"kept": true}
	must(t, db.Model(&revPlain{}).Clauses(AllShards()).Where("id = ?", rows[1].ID).Take(&got).Error)
	if got["id"] != rows[1].ID || got["kept"] != true {
		t.Errorf("Take into a map: %v, want row %d beside the key it held", got, rows[1].ID)
	}
	got = map[string]any{}
	must(t, db.Model(&revPlain{}).Clauses(AllShards()).First(&got).Error)
	if got["id"] != lowest {
		t.Errorf("First into a map: %v, want the lowest ID %d", got, lowest)
	}
	if err := db.Model(&revPlain{}).Clauses(AllShards()).Where("name = ?", "nobody").Take(&got).Error; !errors.Is(err, gorm.ErrRecordNotFound) {
		t.Errorf("Take into a map of no row: %v, want gorm.ErrRecordNotFound", err)
	}
}

type distinctCountRow struct {
	ID   int64 `shardid:""`
	Name string
	Qty  int64
}

// TestDistinctColumnsCountOverEveryShardAsPlainGORM: GORM builds
// Distinct("name", "qty").Count(&n) (and Distinct("lower(name)").Count) as
// SELECT DISTINCT count(*) FROM ...: one row, the number of rows. Over every
// shard it is merged as Count(&n) is, to plain GORM's answer on one database.
func TestDistinctColumnsCountOverEveryShardAsPlainGORM(t *testing.T) {
	db, _, _ := revRouted(t, &distinctCountRow{})
	ref, err := gorm.Open(sqlite.Open("file:"+filepath.Join(t.TempDir(), "ref.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	must(t, ref.AutoMigrate(&distinctCountRow{}))
	names := []string{"a", "b", "a", "c"}
	for i := 0; i < 24; i++ {
		r := distinctCountRow{Name: names[i%len(names)], Qty: int64(i % 3)}
		must(t, db.Create(&r).Error)
		must(t, ref.Create(&r).Error)
	}
	for _, form := range []struct {
		name string
		run  func(*gorm.DB, *int64) error
	}{
		{`Distinct("name", "qty").Count`, func(d *gorm.DB, n *int64) error {
			return d.Model(&distinctCountRow{}).Distinct("name", "qty").Count(n).Error
		}},
		{`Distinct("lower(name)").Count`, func(d *gorm.DB, n *int64) error {
			return d.Model(&distinctCountRow{}).Distinct("lower(name)").Count(n).Error
		}},
	} {
		var want, got int64
		must(t, form.run(ref, &want))
		err := form.run(db.Clauses(AllShards()), &got)
		if err != nil || got != want {
			t.Errorf("%s over every shard: %d, %v; plain GORM on one database: %d", form.name, got, err, want)
		}
	}
}

// TestOrderByTheTablesAliasOverEveryShard: a query whose Table names its table
// with an alias, ordered by the alias's columns, merges the rows of every
// database in that order, as one database gives them.
func TestOrderByTheTablesAliasOverEveryShard(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{})
	rows := make([]revUser, 6)
	for i, id := range spreadIDs(p.Layout(), len(rows)) {
		rows[i] = revUser{ID: id, Name: string(rune('f' - i%3))}
	}
	must(t, db.Create(&rows).Error)
	for _, table := range []string{"rev_users AS u", "rev_users u"} {
		var got []revUser
		must(t, db.Clauses(AllShards()).Table(table).Order("u.name").Order("u.id DESC").Find(&got).Error)
		want := slices.Clone(rows)
		slices.SortFunc(want, func(a, b revUser) int { return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(b.ID, a.ID)) })
		if !slices.Equal(got, want) {
			t.Errorf("Table(%q) ordered by u.name, u.id DESC over every shard: %v, want %v", table, got, want)
		}
	}
}

// TestRowOfAFailedStatementScansItsError: Row of a statement on a sharded
// model that failed (a part over several databases, a refusal) gives a row
// whose Scan returns the error, as Row on one database does for a query
// that failed; not nil, whose Scan panics.
func TestRowOfAFailedStatementScansItsError(t *testing.T) {
	db, _, direct, _ := revRoutedN(t, 3, &revUser{})
	must(t, direct[1].Exec("DROP TABLE rev_users").Error)
	var n int64
	for name, row := range map[string]func() *sql.Row{
		"a part failing":  func() *sql.Row { return db.Model(&revUser{}).Clauses(AllShards()).Select("count(*)").Row() },
		"one database's":  func() *sql.Row { return db.Model(&revUser{}).Clauses(OnShard(3000)).Select("count(*)").Row() },
		"a refused query": func() *sql.Row { return db.Model(&revUser{}).Where("name = ?", "x").Select("count(*)").Row() },
	} {
		r := row()
		if r == nil {
			t.Errorf("Row of %s: nil", name)
			continue
		}
		if err := r.Scan(&n); err == nil {
			t.Errorf("Row of %s: Scan succeeded; want the statement's error", name)
		} else if name == "a refused query" && !errors.Is(err, ErrNoShard) {
			t.Errorf("Row of %s: Scan: %v; want ErrNoShard", name, err)
		}
	}
	if r := db.Model(&revUser{}).Clauses(OnShard(0)).Select("count(*)").Row(); r == nil || r.Scan(&n) != nil || n != 0 {
		t.Errorf("Row of a database that answers: %v", r)
	}
}

// foldedText is sent as it is and read back lower-cased.
type foldedText string

func (f foldedText) Value() (driver.Value, error) { return string(f), nil }
func (f *foldedText) Scan(v any) error {
	switch s := v.(type) {
	case string:
		*f = foldedText(strings.ToLower(s))
	case []byte:
		*f = foldedText(strings.ToLower(string(s)))
	default:
		return fmt.Errorf("foldedText: %T", v)
	}
	return nil
}

type foldedRow struct {
	ID    int64      `shardid:""`
	Email foldedText `gorm:"not null"`
}

// TestOrderByATypeWhoseScanChangesItsValue: a field whose Value sends what
// it holds but whose Scan reads back another value (lower-cased) orders in
// Go otherwise than the database orders the stored text ("Bob" before
// "alice" as bytes, "alice" before "bob" once read): rows ordered by it over
// several databases are refused, or come in one database's order.
func TestOrderByATypeWhoseScanChangesItsValue(t *testing.T) {
	db, p, _ := revRouted(t, &foldedRow{})
	one, err := gorm.Open(sqlite.Open("file:"+filepath.Join(t.TempDir(), "one.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := one.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	must(t, one.AutoMigrate(&foldedRow{}))
	ids := spreadIDs(p.Layout(), 2)
	for i, email := range []foldedText{"Bob", "alice"} {
		must(t, db.Create(&foldedRow{ID: ids[i], Email: email}).Error)
		must(t, one.Create(&foldedRow{ID: ids[i], Email: email}).Error)
	}
	var want, got []foldedRow
	must(t, one.Order("email").Find(&want).Error)
	err = db.Clauses(AllShards()).Order("email").Find(&got).Error
	if !errors.Is(err, ErrCrossShard) && (err != nil || !slices.Equal(want, got)) {
		t.Errorf("ORDER BY a field whose Scan lower-cases it: one database %v, two %v (%v); want one database's rows or ErrCrossShard", want, got, err)
	}
	var wantMaps, gotMaps []map[string]any // GORM scans a map's value of the model's column through its field
	must(t, one.Model(&foldedRow{}).Order("email").Find(&wantMaps).Error)
	err = db.Clauses(AllShards()).Model(&foldedRow{}).Order("email").Find(&gotMaps).Error
	if !errors.Is(err, ErrCrossShard) && (err != nil || fmt.Sprint(wantMaps) != fmt.Sprint(gotMaps)) {
		t.Errorf("ORDER BY a field whose Scan lower-cases it, into maps: one database %v, two %v (%v); want one database's rows or ErrCrossShard", wantMaps, gotMaps, err)
	}
}

// scannedFolded has no Value (GORM sends the text it holds) and a Scan
// that reads it back lower-cased.
type scannedFolded string

func (f *scannedFolded) Scan(v any) error {
	var s foldedText
	err := s.Scan(v)
	*f = scannedFolded(s)
	return err
}

type scannedFoldedRow struct {
	ID    int64         `shardid:""`
	Email scannedFolded `gorm:"not null"`
}

// TestOrderByATypeWithOnlyAScanThatChangesItsValue: a Scan alone that
// reads the stored text back lower-cased orders in Go otherwise than the
// database: rows ordered by it over several databases are refused, or come
// in one database's order.
func TestOrderByATypeWithOnlyAScanThatChangesItsValue(t *testing.T) {
	db, p, _ := revRouted(t, &scannedFoldedRow{})
	one, err := gorm.Open(sqlite.Open("file:"+filepath.Join(t.TempDir(), "one.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := one.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	must(t, one.AutoMigrate(&scannedFoldedRow{}))
	ids := spreadIDs(p.Layout(), 2)
	for i, email := range []scannedFolded{"Bob", "alice"} {
		must(t, db.Create(&scannedFoldedRow{ID: ids[i], Email: email}).Error)
		must(t, one.Create(&scannedFoldedRow{ID: ids[i], Email: email}).Error)
	}
	var want, got []scannedFoldedRow
	must(t, one.Order("email").Find(&want).Error)
	err = db.Clauses(AllShards()).Order("email").Find(&got).Error
	if !errors.Is(err, ErrCrossShard) && (err != nil || !slices.Equal(want, got)) {
		t.Errorf("ORDER BY a field whose Scan alone lower-cases it: one database %v, two %v (%v); want one database's rows or ErrCrossShard", want, got, err)
	}
}

type serializedLabel struct {
	ID    int64  `shardid:""`
	Label string `gorm:"serializer:json"`
}

// TestOrderByASerializedFieldOverEveryShard: a field with a GORM
// serializer is stored as its encoding ("a<" as the JSON text "a\u003c")
// and the database orders that text, which orders otherwise than the
// decoded values the merge would read ("a<" before "a=", "a\u003c" after
// it): rows ordered by it over several databases are refused, or come in
// one database's order.
func TestOrderByASerializedFieldOverEveryShard(t *testing.T) {
	db, p, _ := revRouted(t, &serializedLabel{})
	one, err := gorm.Open(sqlite.Open("file:"+filepath.Join(t.TempDir(), "one.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := one.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	must(t, one.AutoMigrate(&serializedLabel{}))
	ids := spreadIDs(p.Layout(), 2)
	for i, label := range []string{"a<", "a="} {
		must(t, db.Create(&serializedLabel{ID: ids[i], Label: label}).Error)
		must(t, one.Create(&serializedLabel{ID: ids[i], Label: label}).Error)
	}
	var want, got []serializedLabel
	must(t, one.Order("label").Find(&want).Error)
	err = db.Clauses(AllShards()).Order("label").Find(&got).Error
	if !errors.Is(err, ErrCrossShard) && (err != nil || !slices.Equal(want, got)) {
		t.Errorf("ORDER BY a JSON-serialized field: one database %v, two %v (%v); want one database's rows or ErrCrossShard", want, got, err)
	}
}

// trimmedText has no Value and a Scan that trims the spaces around the
// text, as types for padded CHAR columns do.
type trimmedText string

func (f *trimmedText) Scan(v any) error {
	switch s := v.(type) {
	case string:
		*f = trimmedText(strings.TrimSpace(s))
	case []byte:
		*f = trimmedText(strings.TrimSpace(string(s)))
	default:
		return fmt.Errorf("trimmedText: %T", v)
	}
	return nil
}

type trimmedRow struct {
	ID   int64       `shardid:""`
	Code trimmedText `gorm:"not null"`
}

// TestOrderByATypeWhoseScanTrimsSpaces: a field whose Scan trims the spaces
// around the stored text reads " b" back as "b", which orders after "a"
// where the stored " b" orders before it: rows ordered by it over several
// databases are refused, or come in one database's order.
func TestOrderByATypeWhoseScanTrimsSpaces(t *testing.T) {
	db, p, _ := revRouted(t, &trimmedRow{})
	one, err := gorm.Open(sqlite.Open("file:"+filepath.Join(t.TempDir(), "one.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := one.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	must(t, one.AutoMigrate(&trimmedRow{}))
	ids := spreadIDs(p.Layout(), 2)
	for i, code := range []trimmedText{" b", "a"} {
		must(t, db.Create(&trimmedRow{ID: ids[i], Code: code}).Error)
		must(t, one.Create(&trimmedRow{ID: ids[i], Code: code}).Error)
	}
	var want, got []trimmedRow
	must(t, one.Order("code").Find(&want).Error)
	err = db.Clauses(AllShards()).Order("code").Find(&got).Error
	if !errors.Is(err, ErrCrossShard) && (err != nil || !slices.Equal(want, got)) {
		t.Errorf("ORDER BY a field whose Scan trims it: one database %v, two %v (%v); want one database's rows or ErrCrossShard", want, got, err)
	}
}

type plainEmailRow struct {
	ID    int64  `shardid:""`
	Email string `gorm:"not null"`
}

// TestPluckOrderedIntoATypeWhoseScanChangesItsValue: a column of plain text
// plucked, ordered by itself, over several databases into a type whose Scan
// reads it back lower-cased orders in Go otherwise than the databases order
// the stored text: it is refused, or comes in one database's order.
func TestPluckOrderedIntoATypeWhoseScanChangesItsValue(t *testing.T) {
	db, p, _ := revRouted(t, &plainEmailRow{})
	one, err := gorm.Open(sqlite.Open("file:"+filepath.Join(t.TempDir(), "one.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := one.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	must(t, one.AutoMigrate(&plainEmailRow{}))
	ids := spreadIDs(p.Layout(), 2)
	for i, email := range []string{"Bob", "alice"} {
		must(t, db.Create(&plainEmailRow{ID: ids[i], Email: email}).Error)
		must(t, one.Create(&plainEmailRow{ID: ids[i], Email: email}).Error)
	}
	var want, got []foldedText
	must(t, one.Model(&plainEmailRow{}).Order("email").Pluck("email", &want).Error)
	err = db.Clauses(AllShards()).Model(&plainEmailRow{}).Order("email").Pluck("email", &got).Error
	if !errors.Is(err, ErrCrossShard) && (err != nil || !slices.Equal(want, got)) {
		t.Errorf("Pluck ordered into a type whose Scan lower-cases it: one database %v, two %v (%v); want one database's order or ErrCrossShard", want, got, err)
	}
}
