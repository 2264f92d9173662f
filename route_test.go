package shardid

import (
	"database/sql/driver"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid/shardrouter"
)

// swapOnSecondRead is an ID whose second reading swaps the shard map in, as
// a SwapShardMap from another goroutine may at that moment.
type swapOnSecondRead struct {
	id    int64
	reads *int
	swap  func()
}

func (s swapOnSecondRead) Value() (driver.Value, error) {
	*s.reads++
	if *s.reads == 2 {
		s.swap()
	}
	return s.id, nil
}

// A query over several databases reads the shard map once, both to choose its
// databases and to split its IN list: a swap in between must not drop a value
// whose shard moved to a database not chosen.
func TestSwapDuringFanOutKeepsEveryRow(t *testing.T) {
	db, p, direct, phys := revRoutedN(t, 3, &revPlain{})
	var onDB [2]*revPlain // one on s0, and b inside s1's range, not at its edges
	for k := range onDB {
		r := phys[k].Logical[0]
		onDB[k] = &revPlain{Name: "r"}
		must(t, db.Clauses(OnShard((r.From+r.To)/2)).Create(onDB[k]).Error)
	}
	b := onDB[1]
	// The move of b's shard to s2: its rows copied first, then the map swapped.
	must(t, direct[2].Create(b).Error)
	shardB := p.Layout().Shard(b.ID)
	moved := append([]shardrouter.Physical(nil), phys...)
	moved[1].Logical = []Range{{From: phys[1].Logical[0].From, To: shardB - 1}, {From: shardB + 1, To: phys[1].Logical[0].To}}
	moved[2].Logical = append([]Range{{From: shardB, To: shardB}}, phys[2].Logical...)
	next, err := shardrouter.NewMap(p.Layout().ShardCount(), moved)
	must(t, err)
	reads := 0
	var got []revPlain
	err = db.Where("id IN ?", []any{onDB[0].ID, swapOnSecondRead{id: b.ID, reads: &reads, swap: func() { must(t, p.SwapShardMap(next)) }}}).Find(&got).Error
	if err == nil && len(got) != 2 {
		t.Errorf("IN (a, b) with b's shard moved while the query ran: %d rows and no error, want 2 (b is on s1 and s2)", len(got))
	}
}

// A condition given by Or is joined by GORM with OR, first or not: a part
// over several databases keeps to its ranges all of the conditions, and the
// IDs of the statement's rows, which GORM appends, do not name its databases.
func TestOrConditionsOverSeveralDatabases(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "a"} }, func(u *revUser) int64 { return u.ID })
	for _, name := range []string{"bob", "bob", "carl", "dan"} {
		must(t, db.Create(&revUser{Name: name}).Error)
	}
	total := func() int64 { return rowsOn(t, direct, &revUser{}) }
	before := total()
	if err := db.Or("name = ?", "nobody").Delete(&[]revUser{*users[0], *users[1]}).Error; !errors.Is(err, ErrCrossShard) {
		t.Fatalf("Or, then Delete of rows: %v, want ErrCrossShard", err)
	}
	if err := db.Model(users[0]).Or("name = ?", "carl").Update("name", "z").Error; !errors.Is(err, ErrCrossShard) {
		t.Fatalf("Model(row), Or, Update: %v, want ErrCrossShard", err)
	}
	var n int64
	must(t, db.Clauses(AllShards()).Model(&revUser{}).Or("name = ?", "bob").Count(&n).Error)
	if n != 2 {
		t.Fatalf("AllShards, Or bob: counted %d, want 2", n)
	}
	var found []revUser
	must(t, db.Clauses(AllShards()).Where("name = ?", "carl").Or("name = ?", "dan").Find(&found).Error)
	if len(found) != 2 {
		t.Fatalf("AllShards, carl or dan: %d rows, want 2", len(found))
	}
	must(t, db.Clauses(AllShards()).Or("name = ?", "bob").Delete(&revUser{}).Error)
	if after := total(); after != before-2 {
		t.Fatalf("AllShards, Or bob, Delete: %d rows left of %d, want the two bobs gone", after, before)
	}
}

// TestIDsJoinedByOrNameEachSidesDatabase: IDs joined by Or, or by
// clause.Or, are the rows of the statement, on the databases of each side's
// IDs: a read finds both, an update and a delete write both and no other
// row; a side naming no ID names no database.
func TestIDsJoinedByOrNameEachSidesDatabase(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "a"} }, func(u *revUser) int64 { return u.ID })
	others := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "a"} }, func(u *revUser) int64 { return u.ID })
	a, b := users[0].ID, users[1].ID
	var found []revUser
	must(t, db.Where("id = ?", a).Or("id = ?", b).Find(&found).Error)
	if len(found) != 2 {
		t.Errorf("Where(a).Or(b): %d rows, want both", len(found))
	}
	found = nil
	must(t, db.Where(clause.Or(clause.Eq{Column: "id", Value: a}, clause.Eq{Column: "id", Value: b})).Find(&found).Error)
	if len(found) != 2 {
		t.Errorf("clause.Or(a, b): %d rows, want both", len(found))
	}
	if err := db.Where("id = ?", a).Or("name = ?", "a").Find(&found).Error; !errors.Is(err, ErrNoShard) {
		t.Errorf("Where(a).Or(name): %v, want ErrNoShard", err)
	}
	res := db.Model(&revUser{}).Where("id = ?", a).Or("id = ?", b).Update("name", "z")
	must(t, res.Error)
	if res.RowsAffected != 2 {
		t.Errorf("an update of a OR b: %d rows, want 2", res.RowsAffected)
	}
	for k, d := range direct {
		var got revUser
		must(t, d.First(&got, users[k].ID).Error)
		var other revUser
		must(t, d.First(&other, others[k].ID).Error)
		if got.Name != "z" || other.Name != "a" {
			t.Errorf("database %d: the named row %+v, another %+v; want only the named one updated", k, got, other)
		}
	}
	must(t, db.Where("id = ?", a).Or("id = ?", b).Delete(&revUser{}).Error)
	for k, d := range direct {
		if err := d.First(&revUser{}, users[k].ID).Error; !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Errorf("database %d: the deleted row: %v", k, err)
		}
		if err := d.First(&revUser{}, others[k].ID).Error; err != nil {
			t.Errorf("database %d: a row the delete did not name: %v", k, err)
		}
	}
}

// TestIDsInAListOfPlaceholders: `id IN (?, ?)` names its rows by each of its
// values, and `(id = ?)` in brackets by its one: a read, an update and a
// delete reach the two rows on the two databases, and only them.
func TestIDsInAListOfPlaceholders(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "a"} }, func(u *revUser) int64 { return u.ID })
	var found []revUser
	must(t, db.Where("id IN (?, ?)", users[0].ID, users[1].ID).Order("id").Find(&found).Error)
	if len(found) != 2 {
		t.Fatalf("id IN (?, ?): %d rows, want 2", len(found))
	}
	var one revUser
	must(t, db.Where("(id = ?)", users[1].ID).First(&one).Error)
	if one.ID != users[1].ID {
		t.Fatalf("(id = ?): row %d, want %d", one.ID, users[1].ID)
	}
	res := db.Model(&revUser{}).Where("id IN (?, ?)", users[0].ID, users[1].ID).Update("name", "b")
	if res.Error != nil || res.RowsAffected != 2 {
		t.Fatalf("update by id IN (?, ?): %v, %d rows", res.Error, res.RowsAffected)
	}
	for k, d := range direct {
		var names []string
		must(t, d.Model(&revUser{}).Where("id = ?", users[k].ID).Pluck("name", &names).Error)
		if len(names) != 1 || names[0] != "b" {
			t.Fatalf("physical %d: %v, want its row renamed", k, names)
		}
	}
	total := func() int64 { return rowsOn(t, direct, &revUser{}) }
	before := total()
	must(t, db.Where("id IN (?, ?)", users[0].ID, users[1].ID).Delete(&revUser{}).Error)
	if left := total(); left != before-2 {
		t.Fatalf("%d rows left of %d, want the two named gone", left, before)
	}
}

// TestAnOrTextGORMLeavesUnbracketedNamesNoShard: GORM brackets a condition
// text only when it holds " OR " or " AND " spelled so; "a = ?\nOR b = ?" or
// "a = ? OR(b = ?)" joins the conditions beside it with OR. Such a text
// beside an ID condition names no shard (the rows it matches may be on any
// database), and over every shard each part's ranges bracket all of it, so
// a copy of a row a database does not serve (a move's) is not read.
func TestAnOrTextGORMLeavesUnbracketedNamesNoShard(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "a"} }, func(u *revUser) int64 { return u.ID })
	var found []revUser
	for _, text := range []string{"name = ?\nOR name = ?", "name = ? OR(name = ?)", "name = ? ||\tname = ?"} {
		if err := db.Where("id = ?", users[0].ID).Where(text, "x", "a").Find(&found).Error; !errors.Is(err, ErrNoShard) {
			t.Errorf("Where(id).Where(%q): %v, want ErrNoShard", text, err)
		}
		if err := db.Where(text, "x", "a").Where("id = ?", users[0].ID).Find(&found).Error; !errors.Is(err, ErrNoShard) {
			t.Errorf("Where(%q).Where(id): %v, want ErrNoShard", text, err)
		}
	}
	stray := *users[1] // database 1's row, copied onto database 0 as a move leaves it
	must(t, direct[0].Create(&stray).Error)
	found = nil
	must(t, db.Clauses(AllShards()).Where("id = ?\nOR name = ?", users[1].ID, "nobody").Find(&found).Error)
	if len(found) != 1 {
		t.Errorf("over every shard, an unbracketed OR: %d rows, want the one row once (database 0's copy is not its own)", len(found))
	}
}

// TestAShardClauseReadsOnlyTheRangesItsDatabaseServes: a statement that a
// shard clause (ByID, OnShard, ByKey) sends to one database, with no key
// condition of its own, reads the rows of the ranges the map gives that
// database, as a part over several databases does: a copy of another
// database's row there (a move's, part way or not yet cleaned up) is not
// read, counted or scanned.
func TestAShardClauseReadsOnlyTheRangesItsDatabaseServes(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "other"} }, func(u *revUser) int64 { return u.ID })
	for _, u := range users { // the two alone of their name
		must(t, db.Model(u).Update("name", "a").Error)
	}
	stray := *users[1] // database 1's row, copied onto database 0 as a move leaves it
	must(t, direct[0].Create(&stray).Error)
	own := p.Layout().Shard(users[0].ID)
	for name, hint := range map[string]Clause{"ByID": ByID(users[0].ID), "OnShard": OnShard(own)} {
		var found []revUser
		must(t, db.Clauses(hint).Where("name = ?", "a").Find(&found).Error)
		if len(found) != 1 || found[0].ID != users[0].ID {
			t.Errorf("%s of database 0's user, Find by name: %v; want that user alone, not database 1's row copied there", name, found)
		}
		var n int64
		must(t, db.Clauses(hint).Model(&revUser{}).Where("name = ?", "a").Count(&n).Error)
		if n != 1 {
			t.Errorf("%s, Count by name: %d, want 1", name, n)
		}
		must(t, db.Clauses(hint).Model(&revUser{}).Select("count(*)").Where("name = ?", "a").Row().Scan(&n))
		if n != 1 {
			t.Errorf("%s, Row of count(*) by name: %d, want 1", name, n)
		}
		found = nil
		must(t, db.Clauses(hint).Where("name = ?", "x").Or("name = ?", "a").Find(&found).Error)
		if len(found) != 1 {
			t.Errorf("%s, Find by name with an Or: %d rows, want 1 (the ranges AND-ed to all of it)", name, len(found))
		}
	}
	var found []revUser
	tx := db.Clauses(ByID(users[0].ID)).Begin()
	must(t, tx.Where("name = ?", "a").Find(&found).Error)
	must(t, tx.Commit().Error)
	if len(found) != 1 {
		t.Errorf("in a transaction begun with ByID, Find by name: %d rows, want 1", len(found))
	}
}

// An ID that is not positive names no row (the plugin writes none): in a
// list beside real IDs it is passed over, as NULL is, and alone it finds and
// changes nothing, as on one database, rather than refusing the statement.
func TestAKeyThatIsNotPositiveMatchesNoRow(t *testing.T) {
	db, p, _ := revRouted(t, &revUser{})
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "u"} }, func(u *revUser) int64 { return u.ID })
	a, b := users[0].ID, users[1].ID
	var before int64
	must(t, db.Model(&revUser{}).Clauses(AllShards()).Count(&before).Error)
	var found []revUser
	must(t, db.Find(&found, []int64{0, a, b, -3}).Error)
	if len(found) != 2 {
		t.Errorf("Find of [0, a, b, -3] found %d rows, want 2", len(found))
	}
	found = nil
	must(t, db.Where("id IN ?", []any{"0", a}).Find(&found).Error)
	if len(found) != 1 || found[0].ID != a {
		t.Errorf(`Where("id IN ?", ["0", a]) found %v, want a`, found)
	}
	var one revUser
	if err := db.First(&one, 0).Error; !errors.Is(err, gorm.ErrRecordNotFound) {
		t.Errorf("First(&row, 0): %v, want gorm.ErrRecordNotFound", err)
	}
	res := db.Delete(&revUser{}, -1)
	if res.Error != nil || res.RowsAffected != 0 {
		t.Errorf("Delete(&row, -1): %v, %d rows, want none", res.Error, res.RowsAffected)
	}
	var n int64
	must(t, db.Model(&revUser{}).Clauses(AllShards()).Count(&n).Error)
	if n != before {
		t.Errorf("%d rows left, want %d", n, before)
	}
	// A condition that is no integer still names no shard, and a written key is still checked.
	if err := db.Where("id = ?", "abc").Find(&found).Error; !errors.Is(err, ErrNoShard) {
		t.Errorf(`Where("id = ?", "abc"): %v, want ErrNoShard`, err)
	}
	if err := db.Create(&revUser{ID: -5}).Error; !errors.Is(err, ErrInvalidID) {
		t.Errorf("Create with ID -5: %v, want ErrInvalidID", err)
	}
	if err := db.Table("rev_users").Clauses(ByID(a)).Create(map[string]any{"id": 0, "name": "m"}).Error; !errors.Is(err, ErrNoShard) || errors.Is(err, shardrouter.ErrNull) {
		t.Errorf("Create from a map with ID 0: %v, want ErrNoShard", err)
	}
}

type emptyUUIDKey struct {
	ID   string `gorm:"size:36" shardid:"strategy:uuidv7"`
	Name string
}

// An empty UUID text names no row (the plugin fills an empty key): passed
// over in a list, answered "no rows" alone, as on one database.
func TestAnEmptyUUIDKeyMatchesNoRow(t *testing.T) {
	db, _, _ := revRouted(t, &emptyUUIDKey{})
	row := emptyUUIDKey{Name: "u"}
	must(t, db.Create(&row).Error)
	var found []emptyUUIDKey
	must(t, db.Where("id IN ?", []string{"", row.ID}).Find(&found).Error)
	if len(found) != 1 {
		t.Errorf(`Where("id IN ?", ["", id]) found %v, want the row`, found)
	}
	if err := db.First(&emptyUUIDKey{}, "id = ?", "").Error; !errors.Is(err, gorm.ErrRecordNotFound) {
		t.Errorf(`First(&row, "id = ?", ""): %v, want gorm.ErrRecordNotFound`, err)
	}
	if err := db.Where("id = ?", "nope").Find(&found).Error; !errors.Is(err, ErrNoShard) {
		t.Errorf(`Where("id = ?", "nope"): %v, want ErrNoShard`, err)
	}
}

// TestAByIDThatIsNoIDSaysWhatItWasGiven: ByID of a uint64 above the 63 bits
// of an ID is ErrNoShard naming the value given, not the -1 it reads as
// an int64; of an int64 ID as decimal text (as JSON carries shardid.ID),
// ErrNoShard saying to give it as a number, not a UUID's length error.
func TestAByIDThatIsNoIDSaysWhatItWasGiven(t *testing.T) {
	db, _, _ := revRouted(t, &revUser{})
	u := revUser{Name: "u"}
	must(t, db.Create(&u).Error)
	cases := []struct {
		clause Clause
		text   string
	}{
		{ByID(uint64(math.MaxUint64)), "ByID(18446744073709551615): above 2^63-1"},
		{ByID(uint64(1) << 63), "ByID(9223372036854775808): above 2^63-1"},
		{ByID(strconv.FormatInt(u.ID, 10)), "give an int64 ID as a number"},
	}
	for _, c := range cases {
		var found []revUser
		if err := db.Clauses(c.clause).Find(&found).Error; !errors.Is(err, ErrNoShard) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("got %v, want ErrNoShard mentioning %q", err, c.text)
		}
	}
	var found []revUser
	must(t, db.Clauses(ByID(uint64(u.ID))).Find(&found).Error)
	if len(found) != 1 {
		t.Fatalf("ByID of the ID as a uint64: %d rows, want 1", len(found))
	}
}
