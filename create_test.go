package shardid

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
)

type user struct {
	ID      int64 `shardid:""`
	Name    string
	Profile *profile
	Photos  []photo
	Groups  []group `gorm:"many2many:user_groups"`
}

type profile struct {
	ID     ID `shardid:"colocate:UserID"`
	UserID int64
	Bio    string
}

type photo struct {
	ID     ID `shardid:"colocate:UserID"`
	UserID int64
	User   *user
	URL    string
}

type group struct {
	ID   uint64 `shardid:"strategy:snowflake"`
	Name string
}

func allModels() []any { return []any{&user{}, &profile{}, &photo{}, &group{}} }

// mustFind reads the row with id back and fails the test when it is missing.
func mustFind[T any](t *testing.T, db *gorm.DB, id any) T {
	t.Helper()
	var row T
	if err := db.First(&row, id).Error; err != nil {
		t.Fatalf("reading %T %v back: %v", row, id, err)
	}
	return row
}

func TestCreateAssignsIDsToEveryShape(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, allModels()...)
	seen := map[int64]bool{}
	check := func(shape string, users ...*user) {
		t.Helper()
		for _, u := range users {
			if u.ID <= 0 || seen[u.ID] {
				t.Fatalf("%s: ID %d is not new", shape, u.ID)
			}
			seen[u.ID] = true
			if got := mustFind[user](t, db, u.ID); got.Name != u.Name {
				t.Fatalf("%s: row %d has name %q, want %q", shape, u.ID, got.Name, u.Name)
			}
		}
	}

	one := user{Name: "pointer"}
	must(t, db.Create(&one).Error)
	check("pointer", &one)

	structs := []user{{Name: "s1"}, {Name: "s2"}}
	must(t, db.Create(&structs).Error)
	check("slice of structs", &structs[0], &structs[1])

	pointers := []*user{{Name: "p1"}, {Name: "p2"}}
	must(t, db.Create(pointers).Error)
	check("slice of pointers", pointers...)

	array := [2]user{{Name: "a1"}, {Name: "a2"}}
	must(t, db.Create(&array).Error)
	check("array", &array[0], &array[1])

	batches := make([]user, 10)
	for i := range batches {
		batches[i].Name = "b" + string(rune('0'+i))
	}
	must(t, db.CreateInBatches(&batches, 3).Error)
	for i := range batches {
		check("CreateInBatches", &batches[i])
	}

	saved := user{Name: "save"}
	must(t, db.Save(&saved).Error)
	check("Save", &saved)

	var found user
	must(t, db.Where(user{Name: "first-or-create"}).FirstOrCreate(&found).Error)
	check("FirstOrCreate", &found)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type hooked struct {
	ID         int64 `shardid:""`
	SeenInHook int64 `gorm:"-"`
}

func (h *hooked) BeforeCreate(*gorm.DB) error {
	h.SeenInHook = h.ID
	return nil
}

func TestBeforeCreateSeesTheID(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, &hooked{})
	h := hooked{}
	must(t, db.Create(&h).Error)
	if h.SeenInHook == 0 || h.SeenInHook != h.ID {
		t.Fatalf("BeforeCreate saw ID %d, the row got %d", h.SeenInHook, h.ID)
	}
}

type textUUIDRow struct {
	ID   string `gorm:"size:36" shardid:"strategy:uuidv7"`
	Name string
}

// TestNilUUIDTextIsRefusedAsAPreset: a UUID key held as text that is the
// nil UUID is no ID (a uuid.UUID field's nil is empty, and gets a new one):
// refused with ErrInvalidID, nothing written; an empty one gets a new UUID.
func TestNilUUIDTextIsRefusedAsAPreset(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, &textUUIDRow{})
	row := textUUIDRow{ID: "00000000-0000-0000-0000-000000000000", Name: "nil"}
	if err := db.Create(&row).Error; !errors.Is(err, ErrInvalidID) {
		t.Fatalf("a nil UUID preset: %v, want ErrInvalidID", err)
	}
	var n int64
	must(t, db.Model(&textUUIDRow{}).Clauses(AllShards()).Count(&n).Error)
	if n != 0 {
		t.Fatalf("%d rows written", n)
	}
	fresh := textUUIDRow{Name: "new"}
	must(t, db.Create(&fresh).Error)
	if fresh.ID == "" || strings.Trim(fresh.ID, "0-") == "" {
		t.Fatalf("an empty key got %q", fresh.ID)
	}
}

func TestPresetIDIsKeptOrRefused(t *testing.T) {
	db, p := testDB(t, Config{})
	migrate(t, db, allModels()...)
	other := user{Name: "other"}
	must(t, db.Create(&other).Error)

	preset := user{ID: other.ID + 1, Name: "preset"}
	must(t, db.Create(&preset).Error)
	if preset.ID != other.ID+1 || mustFind[user](t, db, other.ID+1).Name != "preset" {
		t.Fatalf("the preset ID was replaced by %d", preset.ID)
	}
	if p.Layout().Shard(preset.ID) != p.Layout().Shard(other.ID) {
		t.Fatal("ID+1 should be in the same shard")
	}

	for _, bad := range []int64{-5, p.Layout().ComposeTicks(1<<39, 1, 1)} { // negative; decades in the future
		u := user{ID: bad, Name: "bad"}
		if err := db.Create(&u).Error; !errors.Is(err, ErrInvalidID) || !strings.Contains(err.Error(), "user.ID") {
			t.Errorf("preset %d: got %v, want ErrInvalidID naming user.ID", bad, err)
		}
	}
	big := group{ID: math.MaxUint64, Name: "too big"}
	if err := db.Create(&big).Error; !errors.Is(err, ErrInvalidID) {
		t.Errorf("uint64 above 2^63: got %v, want ErrInvalidID", err)
	}
	var n int64
	db.Model(&user{}).Where("name = ?", "bad").Count(&n)
	if n != 0 {
		t.Fatalf("%d rows with a refused ID were written", n)
	}
}

type plain struct {
	ID   int64
	Name string
}

func TestUntaggedModelIsUntouched(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, &plain{})
	rows := []plain{{Name: "a"}, {Name: "b"}}
	must(t, db.Create(&rows).Error)
	if rows[0].ID != 1 || rows[1].ID != 2 {
		t.Fatalf("auto-increment IDs %d, %d; want 1, 2", rows[0].ID, rows[1].ID)
	}
}

type withReference struct {
	ID        int64  // auto-increment, untouched
	Reference uint64 `shardid:"strategy:snowflake"`
	Tracking  ID     `shardid:"colocate:Reference"`
}

func TestNonPrimaryKeyFieldsAreFilled(t *testing.T) {
	db, p := testDB(t, Config{})
	migrate(t, db, &withReference{})
	r := withReference{}
	must(t, db.Create(&r).Error)
	if r.ID != 1 || r.Reference == 0 || r.Tracking == 0 {
		t.Fatalf("got %+v; want auto-increment ID 1 and both tagged fields filled", r)
	}
	if p.Layout().Shard(int64(r.Tracking)) != p.Layout().Shard(int64(r.Reference)) {
		t.Fatal("Tracking is not in Reference's shard")
	}
	if got := mustFind[withReference](t, db, 1); got != r {
		t.Fatalf("stored %+v, want %+v", got, r)
	}
}

func TestAssociationsGetIDsAndFollowTheirOwner(t *testing.T) {
	db, p := testDB(t, Config{})
	migrate(t, db, allModels()...)
	layout := p.Layout()

	u := user{
		Name:    "owner",
		Profile: &profile{Bio: "has-one"},
		Photos:  []photo{{URL: "has-many 1"}, {URL: "has-many 2"}},
		Groups:  []group{{Name: "many2many"}},
	}
	must(t, db.Create(&u).Error)
	shard := layout.Shard(u.ID)
	if u.Profile.ID == 0 || u.Profile.UserID != u.ID || layout.Shard(int64(u.Profile.ID)) != shard {
		t.Fatalf("has-one: %+v, user %d", u.Profile, u.ID)
	}
	for _, ph := range u.Photos {
		if ph.ID == 0 || ph.UserID != u.ID || layout.Shard(int64(ph.ID)) != shard {
			t.Fatalf("has-many: %+v, user %d", ph, u.ID)
		}
		mustFind[photo](t, db, int64(ph.ID))
	}
	if u.Groups[0].ID == 0 {
		t.Fatal("many2many: the group has no ID")
	}
	var joined int64
	db.Table("user_groups").Where("user_id = ? AND group_id = ?", u.ID, u.Groups[0].ID).Count(&joined)
	if joined != 1 {
		t.Fatal("many2many: no join row")
	}

	// belongs-to: the photo's owner is created in the same call, and the
	// photo, colocated on UserID, lands in the owner's shard.
	ph := photo{URL: "belongs-to", User: &user{Name: "new owner"}}
	must(t, db.Create(&ph).Error)
	if ph.User.ID == 0 || ph.UserID != ph.User.ID || layout.Shard(int64(ph.ID)) != layout.Shard(ph.User.ID) {
		t.Fatalf("belongs-to: photo %d user %d / %d", ph.ID, ph.UserID, ph.User.ID)
	}
	mustFind[user](t, db, ph.User.ID)
}

func TestColocateWithoutOwnerIsNoShard(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, allModels()...)
	err := db.Create(&photo{URL: "orphan"}).Error
	if !errors.Is(err, ErrNoShard) || !strings.Contains(err.Error(), "colocate:UserID") {
		t.Fatalf("got %v, want ErrNoShard explaining colocate:UserID", err)
	}
	var n int64
	db.Model(&photo{}).Count(&n)
	if n != 0 {
		t.Fatal("the orphan was written")
	}
}

type account struct {
	ID    int64 `shardid:"strategy:snowflake;hash:Email"`
	Email string
}

func TestHashChoosesTheShard(t *testing.T) {
	db, p := testDB(t, Config{})
	migrate(t, db, &account{})
	for _, email := range []string{"user@example.com", "b@example.org", "ü@example.net"} {
		a := account{Email: email}
		must(t, db.Create(&a).Error)
		h, _ := HashKey(email)
		if p.Layout().Shard(a.ID) != int(h%8192) {
			t.Fatalf("%s is in shard %d, want %d", email, p.Layout().Shard(a.ID), h%8192)
		}
	}
	if err := db.Create(&account{}).Error; !errors.Is(err, ErrNoShard) || !strings.Contains(err.Error(), "hash:Email is empty") {
		t.Fatalf("empty key: got %v", err)
	}
}

// lowerEmail is stored lower-cased: its Value method changes it.
type lowerEmail string

func (e lowerEmail) Value() (driver.Value, error) { return strings.ToLower(string(e)), nil }

type valuedAccount struct {
	ID    int64      `shardid:"strategy:snowflake;hash:Email"`
	Email lowerEmail `gorm:"size:100"`
}

// TestHashKeyIsHashedAsItsGoValue: a key is placed by its Go value, whatever
// its type's Value method stores, as every earlier version placed it, and is
// found by a value of its type.
func TestHashKeyIsHashedAsItsGoValue(t *testing.T) {
	db, p, _, _ := routedOverN(t, 2, Config{}, &valuedAccount{})
	for i := range 20 {
		row := valuedAccount{Email: lowerEmail(fmt.Sprintf("User%d@Example.COM", i))}
		must(t, db.Create(&row).Error)
		if h, _ := HashKey(string(row.Email)); p.Layout().Shard(row.ID) != int(h%uint64(p.Layout().ShardCount())) {
			t.Fatalf("%s is in shard %d, not that of its Go value", row.Email, p.Layout().Shard(row.ID))
		}
		var found []valuedAccount
		if err := db.Where(&valuedAccount{Email: row.Email}).Find(&found).Error; err != nil || len(found) != 1 {
			t.Fatalf("%s found by a value of its type: %d rows, %v", row.Email, len(found), err)
		}
	}
}

type uniqueAccount struct {
	ID    int64  `shardid:"strategy:snowflake;hash:Email"`
	Email string `gorm:"uniqueIndex"`
}

// TestCreateThatWroteNothingLeavesItsIDUnset: as GORM leaves an
// auto-increment key unset when its INSERT fails, a Create that wrote nothing
// leaves the rows' IDs zero, so the row retried with another key is placed
// by that key, on one database and on several.
func TestCreateThatWroteNothingLeavesItsIDUnset(t *testing.T) {
	one, onePlugin := testDB(t, Config{})
	migrate(t, one, &uniqueAccount{})
	several, severalPlugin, _, _ := routedOverN(t, 2, Config{}, &uniqueAccount{})
	for name, db := range map[string]*gorm.DB{"one database": one, "two databases": several} {
		p := map[string]*Plugin{"one database": onePlugin, "two databases": severalPlugin}[name]
		must(t, db.Create(&uniqueAccount{Email: "taken@example.com"}).Error)
		row := uniqueAccount{Email: "taken@example.com"}
		if err := db.Create(&row).Error; err == nil {
			t.Fatalf("%s: a second row with the same email was created", name)
		}
		if row.ID != 0 {
			t.Fatalf("%s: the failed Create left ID %d in the row", name, row.ID)
		}
		row.Email = "free@example.com"
		if err := db.Create(&row).Error; err != nil {
			t.Fatalf("%s: the row retried with another email: %v", name, err)
		}
		if h, _ := HashKey(row.Email); p.Layout().Shard(row.ID) != int(h%uint64(p.Layout().ShardCount())) {
			t.Fatalf("%s: the retried row is in shard %d, not its email's", name, p.Layout().Shard(row.ID))
		}
		// A row given its ID keeps it when the Create fails.
		preset := uniqueAccount{ID: row.ID, Email: "other@example.com"}
		if err := db.Create(&preset).Error; err == nil || preset.ID != row.ID {
			t.Fatalf("%s: a preset ID after a failed Create: %d, %v", name, preset.ID, err)
		}
	}
}

type spread struct {
	ID int64 `shardid:"strategy:snowflake"`
}

// TestNoRuleSpreadsUniformly: rows without colocate or hash spread evenly over
// the logical shards (a chi-square test over 64 ranges of 128 shards).
func TestNoRuleSpreadsUniformly(t *testing.T) {
	db, p := testDB(t, Config{})
	migrate(t, db, &spread{})
	// Few enough rows that the SQLite write transaction of CreateInBatches
	// never holds the lease renewal off for a TTL on a busy machine.
	rows := make([]spread, 8192)
	must(t, db.CreateInBatches(&rows, 2048).Error)
	const buckets = 64
	counts := make([]float64, buckets)
	for _, r := range rows {
		counts[p.Layout().Shard(r.ID)*buckets/8192]++
	}
	expected := float64(len(rows)) / buckets
	chi2 := 0.0
	for _, c := range counts {
		chi2 += (c - expected) * (c - expected) / expected
	}
	// 63 degrees of freedom: above 130 happens by chance less than once in a million runs.
	if chi2 > 130 {
		t.Fatalf("chi-square %.1f over %d ranges: not uniform (%v)", chi2, buckets, counts)
	}
}

func TestCreateFromMapIsRefused(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, allModels()...)
	err := db.Model(&user{}).Create(map[string]any{"Name": "map"}).Error
	if !errors.Is(err, ErrNoShard) || !strings.Contains(err.Error(), "map") {
		t.Fatalf("got %v, want ErrNoShard explaining maps", err)
	}
	err = db.Model(&user{}).Create([]map[string]any{{"Name": "a"}, {"Name": "b"}}).Error
	if !errors.Is(err, ErrNoShard) || !strings.Contains(err.Error(), "map") {
		t.Fatalf("a slice of maps: got %v, want ErrNoShard explaining maps", err)
	}
	var n int64
	db.Model(&user{}).Count(&n)
	if n != 0 {
		t.Fatalf("%d rows were written without shardid IDs", n)
	}
}

func TestOmittedParentGetsNoID(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, allModels()...)
	ph := photo{URL: "x", User: &user{Name: "omitted"}}
	err := db.Omit(clause.Associations).Create(&ph).Error
	if !errors.Is(err, ErrNoShard) || ph.User.ID != 0 {
		t.Fatalf("got %v and parent ID %d; want ErrNoShard and no ID for a parent that is not created", err, ph.User.ID)
	}
}

func TestFirstUseInsideARolledBackTransaction(t *testing.T) {
	db, _ := testDB(t, Config{})
	if err := db.Migrator().CreateTable(&plain{}); err != nil { // no shardid model: the clock is not made yet
		t.Fatal(err)
	}
	if err := db.Exec("CREATE TABLE hookeds (id integer primary key)").Error; err != nil {
		t.Fatal(err)
	}
	_ = db.Transaction(func(tx *gorm.DB) error {
		must(t, tx.Create(&hooked{}).Error)
		return errors.New("roll back, clock table and all")
	})
	if err := db.Create(&hooked{}).Error; err != nil {
		t.Fatalf("after a rolled-back first use: %v", err)
	}
}

func TestAutoMigrateMakesAPlainBigint(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, &user{}, &plain{})
	var tagged, untagged string
	db.Raw("SELECT sql FROM sqlite_master WHERE name = 'users'").Scan(&tagged)
	db.Raw("SELECT sql FROM sqlite_master WHERE name = 'plains'").Scan(&untagged)
	if strings.Contains(strings.ToUpper(tagged), "AUTOINCREMENT") || !strings.Contains(strings.ToUpper(untagged), "AUTOINCREMENT") {
		t.Fatalf("users: %s\nplains: %s\nwant AUTOINCREMENT on plains only", tagged, untagged)
	}
}

// A table migrated by another name than its model's (Migrator(db.Table(name)),
// a table per region) is made of a schema GORM keeps for that name: its
// tagged key is a plain BIGINT too, on every shard, not auto-increment, which
// would give a row inserted without its ID a key that names no shard.
func TestAutoMigrateByAnotherNameMakesAPlainBigint(t *testing.T) {
	db, p, direct := revRouted(t)
	must(t, p.AutoMigrate(db.Table("users_eu"), &user{}))
	for k, d := range direct {
		var made string
		must(t, d.Raw("SELECT sql FROM sqlite_master WHERE name = 'users_eu'").Scan(&made).Error)
		if made == "" || strings.Contains(strings.ToUpper(made), "AUTOINCREMENT") {
			t.Fatalf("shard %d: users_eu: %q; want a plain key", k, made)
		}
	}
	u := user{Name: "eu"}
	must(t, db.Table("users_eu").Create(&u).Error)
	var back user
	must(t, db.Table("users_eu").First(&back, u.ID).Error)
}

type segParent struct {
	ID       int64 `shardid:""`
	Children []segChild
}
type segChild struct {
	ID          int64 `shardid:"strategy:segment;colocate:SegParentID"`
	SegParentID int64
}

// Children are created inside GORM's transaction: on SQLite a segment block
// reserved on another connection would wait on that transaction's lock.
func TestSegmentFirstBlockInsideASQLiteTransaction(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, &segParent{}, &segChild{})
	parent := segParent{Children: []segChild{{}, {}}}
	must(t, db.Create(&parent).Error)
	if a, b := parent.Children[0].ID, parent.Children[1].ID; a <= 0 || b <= a {
		t.Fatalf("children got IDs %d and %d", a, b)
	}
}

// GORM leaves its transaction callbacks out under SkipDefaultTransaction:
// the plugin's still run first, so writes are routed and hooks see the ID.
func TestWritesRoutedWithoutTheDefaultTransaction(t *testing.T) {
	db, p, direct, _ := routedOverNWith(t, 2, gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true}, Config{}, &hooked{}, &revUser{})
	h := hooked{}
	must(t, db.Create(&h).Error)
	if h.SeenInHook == 0 || h.SeenInHook != h.ID {
		t.Fatalf("BeforeCreate saw ID %d, the row got %d", h.SeenInHook, h.ID)
	}
	users := revOnBoth(t, db, p, func() *revUser { return &revUser{Name: "a"} }, func(u *revUser) int64 { return u.ID })
	for _, u := range users {
		must(t, db.Model(u).Update("name", "b").Error)
		u.Name = "c"
		must(t, db.Save(u).Error)
	}
	for k, u := range users {
		var got revUser
		must(t, direct[k].First(&got, u.ID).Error)
		if got.Name != "c" {
			t.Fatalf("database %d holds %+v, want name c", k, got)
		}
		must(t, db.Delete(u).Error)
		var n int64
		must(t, direct[k].Model(&revUser{}).Where("id = ?", u.ID).Count(&n).Error)
		if n != 0 {
			t.Fatalf("database %d keeps user %d after its delete", k, u.ID)
		}
	}
}

type unshardedNote struct {
	ID   uint
	Text string
}

// A Create whose rows are not of the statement's model (Connection reuses
// its statement, Model and all) is refused; IDs are written into no field.
func TestCreateOfAnotherTypeThanTheModelIsRefused(t *testing.T) {
	db, _, direct, _ := revRoutedN(t, 2, &revUser{}, &unshardedNote{})
	for name, create := range map[string]func() error{
		"Model": func() error { return db.Model(&revUser{}).Create(&unshardedNote{Text: "a"}).Error },
		"slice": func() error { return db.Model(&revUser{}).Create(&[]unshardedNote{{Text: "a"}}).Error },
		"Connection": func() error {
			return db.Connection(func(tx *gorm.DB) error {
				must(t, tx.Create(&revUser{Name: "u"}).Error)
				return tx.Create(&unshardedNote{Text: "a"}).Error
			})
		},
	} {
		// Text, not errors.Is: in Connection GORM's rollback of a transaction it did not begin joins an error after it.
		if err := create(); err == nil || !strings.Contains(err.Error(), ErrNoShard.Error()) || !strings.Contains(err.Error(), "unshardedNote") {
			t.Errorf("%s: %v, want ErrNoShard naming the rows' type", name, err)
		}
	}
	type sameFields revUser
	must(t, db.Model(&revUser{}).Create(&sameFields{Name: "s"}).Error) // the model's fields, under another name
	var n int64
	for _, d := range direct {
		var users int64
		must(t, d.Model(&revUser{}).Where("name <> ?", "u").Count(&users).Error)
		n += users
	}
	if n != 1 {
		t.Fatalf("%d users other than u on the shards, want the one of the same fields", n)
	}
}

type invoiceInLedger struct {
	ID     int64 `shardid:"strategy:segment"`
	Amount int
}

type creditNoteInLedger struct {
	ID     int64 `shardid:"strategy:segment"`
	Amount int
}

// TestSegmentCountsPerTableWritten: two models written into one table with
// Table share its counter, so their IDs differ there.
func TestSegmentCountsPerTableWritten(t *testing.T) {
	db, p := testDB(t, Config{})
	if err := p.Migrator(db.Table("ledger")).CreateTable(&invoiceInLedger{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := db.Table("ledger").Clauses(OnShard(3)).Create(&invoiceInLedger{Amount: 1}).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Table("ledger").Clauses(OnShard(3)).Create(&creditNoteInLedger{Amount: -1}).Error; err != nil {
			t.Fatal(err)
		}
	}
	var ids []int64
	if err := db.Table("ledger").Clauses(OnShard(3)).Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	if slices.Sort(ids); len(slices.Compact(slices.Clone(ids))) != 4 {
		t.Fatalf("IDs in ledger: %v, want four distinct ones", ids)
	}
}

type placedOwner struct {
	ID    int64 `shardid:"strategy:snowflake;hash:Email"`
	Email string
}

type ownedPicture struct {
	ID            int64 `shardid:"strategy:snowflake;colocate:PlacedOwnerID"`
	PlacedOwnerID int64
	PlacedOwner   *placedOwner
	Caption       string `gorm:"uniqueIndex"`
}

// TestCreateThatWroteNothingLeavesItsParentsIDUnset: a Create that failed,
// with a belongs-to parent created in the same call and rolled back with it,
// leaves the parent's ID and the key naming it zero too: retried with
// another email, the parent is placed by it. The error names the database.
func TestCreateThatWroteNothingLeavesItsParentsIDUnset(t *testing.T) {
	db, _, direct, _ := routedOverN(t, 2, Config{}, &placedOwner{}, &ownedPicture{})
	for _, d := range direct {
		must(t, d.Create(&ownedPicture{ID: 1, Caption: "taken"}).Error)
	}
	picture := ownedPicture{PlacedOwner: &placedOwner{Email: "a@example.com"}, Caption: "taken"}
	err := db.Create(&picture).Error
	if err == nil || !strings.HasPrefix(err.Error(), "shardid: on s") {
		t.Fatalf("a caption taken on both databases: %v; want an error naming the database", err)
	}
	if picture.ID != 0 || picture.PlacedOwnerID != 0 || picture.PlacedOwner.ID != 0 {
		t.Fatalf("the failed Create left IDs %d, %d, %d", picture.ID, picture.PlacedOwnerID, picture.PlacedOwner.ID)
	}
	picture.PlacedOwner.Email, picture.Caption = "b@example.com", "free"
	must(t, db.Create(&picture).Error)
}

type segmentRow struct {
	ID   int64 `shardid:"strategy:segment"`
	Name string
}

// TestPresetSegmentIDIsNotReadAsATime: a segment ID holds a counter where
// an instagram one holds time; a preset segment ID whose counter reads as a
// time ahead (a restored row, under a coarse layout) is created, where an
// instagram ID of that time is refused as one the plugin cannot have made.
func TestPresetSegmentIDIsNotReadAsATime(t *testing.T) {
	db, p := testDB(t, Config{})
	migrate(t, db, &segmentRow{}, &revUser{})
	l := p.Layout()
	ahead := l.ComposeTicks(l.Ticks(time.Now().Add(72*time.Hour)), 5, 1)
	must(t, db.Create(&segmentRow{ID: ahead, Name: "restored"}).Error)
	if err := db.Create(&revUser{ID: ahead}).Error; !errors.Is(err, ErrInvalidID) {
		t.Errorf("an instagram ID timed three days ahead: %v, want ErrInvalidID", err)
	}
}

// TestCreateOfANilRowOrOneRowTwiceIsRefusedWritingNothing: a batch holding a
// nil row is refused as GORM refuses it (gorm.ErrInvalidData), and one
// holding one row twice (one pointer, which gets one ID) with
// ErrInvalidID: on two databases, nothing written.
func TestCreateOfANilRowOrOneRowTwiceIsRefusedWritingNothing(t *testing.T) {
	db, _, direct := revRouted(t, &revUser{})
	batch := func() []*revUser {
		rows := make([]*revUser, 10)
		for i := range rows {
			rows[i] = &revUser{Name: fmt.Sprint("r", i)}
		}
		return rows
	}
	withNil := batch()
	withNil[3] = nil
	if err := db.Create(withNil).Error; !errors.Is(err, gorm.ErrInvalidData) {
		t.Errorf("a batch with a nil row: %v, want gorm.ErrInvalidData", err)
	}
	twice := batch()
	twice[7] = twice[2]
	if err := db.Create(twice).Error; !errors.Is(err, ErrInvalidID) {
		t.Errorf("a batch with one row twice: %v, want ErrInvalidID", err)
	}
	if n := rowsOn(t, direct, &revUser{}); n != 0 {
		t.Errorf("%d rows written by refused batches", n)
	}
}

type uniqueEmail struct {
	ID    int64  `shardid:"hash:Email"`
	Email string `gorm:"uniqueIndex"`
}

// TestCreateSkippedByDoNothingLeavesTheIDZero: an upsert whose row
// conflicts, ON CONFLICT DO NOTHING, writes nothing and reports no error;
// its ID is left zero, as GORM leaves an auto-increment key, not an ID that
// names no row.
func TestCreateSkippedByDoNothingLeavesTheIDZero(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, &uniqueEmail{})
	must(t, db.Create(&uniqueEmail{Email: "taken@example.com"}).Error)
	row := uniqueEmail{Email: "taken@example.com"}
	res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
	must(t, res.Error)
	if res.RowsAffected != 0 || row.ID != 0 {
		t.Errorf("a skipped row: %d rows affected, ID %d; want 0 and 0", res.RowsAffected, row.ID)
	}
	fresh := uniqueEmail{Email: "new@example.com"}
	must(t, db.Clauses(clause.OnConflict{DoNothing: true}).Create(&fresh).Error)
	if fresh.ID == 0 {
		t.Error("a row written with DO NOTHING lost its ID")
	}
}

type photoOfNewOwner struct {
	ID     int64 `shardid:"colocate:UserID"`
	UserID int64
	User   *revUser
}

// TestBelongsToParentCreatedInTheCallPlacesItsChild: GORM sets a child's
// foreign key to the parent it creates in the same call, whatever the key
// held; the child is placed beside that parent, on its database.
func TestBelongsToParentCreatedInTheCallPlacesItsChild(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{}, &photoOfNewOwner{})
	for i := range 10 { // former owners of several shards
		former := revUser{Name: fmt.Sprint("former", i)}
		must(t, db.Create(&former).Error)
		photo := photoOfNewOwner{UserID: former.ID, User: &revUser{Name: "new"}}
		must(t, db.Create(&photo).Error)
		if photo.UserID != photo.User.ID || p.Layout().Shard(photo.ID) != p.Layout().Shard(photo.User.ID) {
			t.Fatalf("photo %+v of user %d: want it beside its new user", photo, photo.User.ID)
		}
		k := p.ShardMap().Physical(p.Layout().Shard(photo.ID))
		if err := direct[k].First(&photoOfNewOwner{}, photo.ID).Error; err != nil {
			t.Fatalf("the photo on its shard's database: %v", err)
		}
	}
}

// TestNewParentOfAPresetChildIsMadeOnItsShard: a child created with its
// ID preset and a belongs-to parent created in the same call gives that
// parent an ID on the child's shard, so the two stay side by side, both on
// that shard's database.
func TestNewParentOfAPresetChildIsMadeOnItsShard(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{}, &photoOfNewOwner{})
	l := p.Layout()
	for _, shard := range []int{3, l.ShardCount() - 5} {
		photo := photoOfNewOwner{ID: l.Compose(time.Now().Add(-time.Minute), shard, 1), User: &revUser{Name: "new"}}
		must(t, db.Create(&photo).Error)
		if l.Shard(photo.User.ID) != shard || photo.UserID != photo.User.ID {
			t.Fatalf("the new parent of a child preset on shard %d: ID %d (shard %d), child's key %d", shard, photo.User.ID, l.Shard(photo.User.ID), photo.UserID)
		}
		k := p.ShardMap().Physical(shard)
		must(t, direct[k].First(&photoOfNewOwner{}, photo.ID).Error)
		must(t, direct[k].First(&revUser{}, photo.User.ID).Error)
	}
}

// TestPresetIDAheadOfTheClockIsNotMadeAgain: rows created with IDs timed a
// little ahead of now move the clock-sequence past them, as an insert with
// an explicit key moves an auto-increment; the IDs the plugin makes after
// never repeat them, when the clock reaches their ticks.
func TestPresetIDAheadOfTheClockIsNotMadeAgain(t *testing.T) {
	db, p := testDB(t, Config{})
	migrate(t, db, &revUser{})
	l := p.Layout()
	const shard = 77
	start := l.Ticks(time.Now()) + 50
	var preset []revUser
	for tick := start; tick < start+200; tick++ {
		for seq := range 4 {
			preset = append(preset, revUser{ID: l.ComposeTicks(tick, shard, seq), Name: "preset"})
		}
	}
	must(t, db.CreateInBatches(&preset, 200).Error)
	for end := l.TimeOf(start + 200); time.Now().Before(end); {
		row := revUser{Name: "new"}
		if err := db.Clauses(OnShard(shard)).Create(&row).Error; err != nil {
			t.Fatalf("a new row of shard %d beside preset IDs of the coming ticks: %v", shard, err)
		}
	}
}

// TestDryRunCreateOverTwoDatabasesShowsEveryRow: DryRun builds the
// statement and runs it nowhere; a Create whose rows are on two databases
// shows GORM's one INSERT of every row, as a query over several databases
// shows its SQL as written, and writes nothing.
func TestDryRunCreateOverTwoDatabasesShowsEveryRow(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{})
	rows := make([]revUser, 16)
	for i, id := range spreadIDs(p.Layout(), len(rows)) {
		rows[i].ID = id
	}
	res := db.Session(&gorm.Session{DryRun: true}).Create(&rows)
	must(t, res.Error)
	databases := map[int]bool{}
	for _, r := range rows {
		databases[p.ShardMap().Physical(p.Layout().Shard(r.ID))] = true
	}
	if len(databases) != 2 {
		t.Fatalf("the rows are on %d databases, want both", len(databases))
	}
	if sql := res.Statement.SQL.String(); strings.Count(sql, "),(")+1 != len(rows) {
		t.Errorf("the DryRun SQL of 16 rows on two databases: %s", sql)
	}
	if n := rowsOn(t, direct, &revUser{}); n != 0 {
		t.Errorf("%d rows written by a DryRun", n)
	}
}

type photoOfValueOwner struct {
	ID     int64 `shardid:"colocate:UserID"`
	UserID int64
	User   revUser
}

// TestZeroBelongsToParentLeavesTheKeyAsGiven: GORM saves no belongs-to
// parent that is a zero struct, and keeps the foreign key the row holds;
// the row is placed by that key, and no parent row is made.
func TestZeroBelongsToParentLeavesTheKeyAsGiven(t *testing.T) {
	db, p := testDB(t, Config{})
	migrate(t, db, &revUser{}, &photoOfValueOwner{})
	owner := revUser{Name: "owner"}
	must(t, db.Create(&owner).Error)
	photo := photoOfValueOwner{UserID: owner.ID}
	must(t, db.Create(&photo).Error)
	var users int64
	must(t, db.Model(&revUser{}).Count(&users).Error)
	if photo.UserID != owner.ID || users != 1 || p.Layout().Shard(photo.ID) != p.Layout().Shard(owner.ID) {
		t.Errorf("photo %+v beside owner %d, %d users; want the owner's key kept and no user made", photo, owner.ID, users)
	}
}

type (
	presetRolledBack struct {
		ID   int64 `shardid:""`
		Name string
	}
	presetOther struct {
		ID   int64 `shardid:""`
		Name string
	}
)

// A preset instagram ID advanced past in a transaction that rolled back
// (SQLite's clock-sequence runs in it, and goes back with it) does not stand
// for the database's clock: a later preset ID nearer now still moves the
// clock past it, and no process makes it again.
func TestAPresetIDAfterAnAdvanceRolledBackIsNotMadeAgain(t *testing.T) {
	dir := t.TempDir()
	file := "file:" + filepath.Join(dir, "main.db") + "?_pragma=busy_timeout(10000)"
	open := func() (*gorm.DB, *Plugin) {
		db, err := gorm.Open(sqlite.Open(file), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		p := New(Config{Layout: Layout{TimeUnit: time.Second}})
		must(t, db.Use(p))
		return db, p
	}
	db, p := open()
	must(t, p.AutoMigrate(db, &presetRolledBack{}, &presetOther{}))
	const shard = 5
	l := p.Layout()
	first := presetRolledBack{Name: "first"}
	must(t, db.Clauses(OnShard(shard)).Create(&first).Error)
	now := l.Decode(first.ID).Ticks
	tx := db.Begin()
	must(t, tx.Create(&presetRolledBack{ID: l.ComposeTicks(now+60, shard, 5), Name: "rolled back"}).Error)
	must(t, tx.Rollback().Error)
	preset := presetRolledBack{ID: l.ComposeTicks(now+3, shard, 0), Name: "preset"}
	must(t, db.Create(&preset).Error)
	must(t, p.Close())
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}

	db, p = open() // another process
	t.Cleanup(func() { _ = p.Close() })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		row := presetOther{Name: "new"}
		must(t, db.Clauses(OnShard(shard)).Create(&row).Error)
		if row.ID == preset.ID {
			t.Fatalf("the preset ID %d was made again", preset.ID)
		}
		if l.Decode(row.ID).Ticks > now+3 {
			return
		}
	}
	t.Fatal("no ID past the preset's tick in 10 s")
}

type (
	keyedByName struct {
		ID   int64 `shardid:"hash:Name"`
		Name string
	}
	keyedByNameUntagged struct {
		ID   int64
		Name string
	}
)

func (keyedByName) TableName() string         { return "keyed_by_names" }
func (keyedByNameUntagged) TableName() string { return "keyed_by_names" }

// TestAModelWithoutTheTagCreatesNoKeylessRowInAShardedTable: without
// Config.Shards, a model of a sharded table without the shardid tag may not
// create a row without its ID, which the database's counter would give
// (max(id)+1, an ID the table's strategy issues too); it may with the ID
// set, and read the table.
func TestAModelWithoutTheTagCreatesNoKeylessRowInAShardedTable(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, &keyedByName{})
	sharded := keyedByName{Name: "k"}
	must(t, db.Create(&sharded).Error)
	for _, value := range []any{&keyedByNameUntagged{Name: "k"}, &[]keyedByNameUntagged{{ID: sharded.ID + 1, Name: "k"}, {Name: "k"}}} {
		err := db.Create(value).Error
		if !errors.Is(err, ErrInvalidTag) || !strings.Contains(err.Error(), "keyed_by_names is sharded (model keyedByName)") {
			t.Errorf("Create of %T without an ID: %v; want ErrInvalidTag naming the sharded model", value, err)
		}
	}
	var n int64
	must(t, db.Model(&keyedByNameUntagged{}).Count(&n).Error)
	if n != 1 {
		t.Errorf("the table holds %d rows after the refused Creates; want 1", n)
	}
	must(t, db.Create(&keyedByNameUntagged{ID: sharded.ID + 1, Name: "k"}).Error) // a row copied with its ID
	must(t, db.Create(&keyedByName{Name: "k"}).Error)
}

// A callback that fills in a new row's colocate field (a tenant from the
// context) places the row when it runs before shardid:assign_ids; run after
// it, as one before gorm:create does, it is too late, and the error says
// where to register it.
func TestAColocateFieldACallbackFillsInPlacesTheRowBeforeAssignIDs(t *testing.T) {
	db, p := testDB(t, Config{})
	migrate(t, db, allModels()...)
	owner := user{Name: "owner"}
	must(t, db.Create(&owner).Error)
	fill := func(db *gorm.DB) {
		if ph, ok := db.Statement.Dest.(*photo); ok && ph.UserID == 0 {
			ph.UserID = owner.ID
		}
	}
	must(t, db.Callback().Create().Before("gorm:create").Register("test:late_owner", fill))
	err := db.Create(&photo{URL: "late"}).Error
	if !errors.Is(err, ErrNoShard) || !strings.Contains(err.Error(), `Before("shardid:assign_ids")`) {
		t.Fatalf("colocate field set after the row was placed: %v, want ErrNoShard naming shardid:assign_ids", err)
	}
	must(t, db.Callback().Create().Remove("test:late_owner"))
	must(t, db.Callback().Create().Before("shardid:assign_ids").Register("test:owner", fill))
	ph := photo{URL: "early"}
	must(t, db.Create(&ph).Error)
	if p.Layout().Shard(int64(ph.ID)) != p.Layout().Shard(owner.ID) {
		t.Errorf("photo in shard %d, its owner in %d", p.Layout().Shard(int64(ph.ID)), p.Layout().Shard(owner.ID))
	}
}

type validated struct {
	ID   int64 `shardid:""`
	Name string
}

// invalidFields is a hook's error of an uncomparable type, as validators
// return (a slice of field errors).
type invalidFields []string

func (e invalidFields) Error() string { return strings.Join(e, "; ") }

func (v *validated) BeforeCreate(*gorm.DB) error {
	if v.Name == "" {
		return invalidFields{"Name is required"}
	}
	return nil
}

// TestAHooksErrorOfAnUncomparableTypeIsTheStatementsError: a Before hook
// failing with a slice of errors fails the Create with it, in GORM's
// transaction and without, and writes nothing.
func TestAHooksErrorOfAnUncomparableTypeIsTheStatementsError(t *testing.T) {
	db, _ := testDB(t, Config{})
	migrate(t, db, &validated{})
	for _, tx := range []*gorm.DB{db, db.Session(&gorm.Session{SkipDefaultTransaction: true})} {
		err := tx.Create(&validated{}).Error
		if !errors.As(err, new(invalidFields)) {
			t.Fatalf("Create failed with %v, want the hook's invalidFields", err)
		}
	}
	var n int64
	must(t, db.Model(&validated{}).Clauses(AllShards()).Count(&n).Error)
	if n != 0 {
		t.Fatalf("%d rows written by refused Creates", n)
	}
}

// hookFault is an application's error type whose Error method reads its
// fields, as most do: on a typed nil pointer, which a hook returns when it
// declares its result as *hookFault, it panics.
type hookFault struct{ field string }

func (e *hookFault) Error() string { return e.field + " is invalid" }

type nilFaulted struct {
	ID   int64 `shardid:""`
	Name string
}

var nilFaultedFails bool

func (v *nilFaulted) BeforeSave(*gorm.DB) error {
	var fault *hookFault
	if nilFaultedFails {
		return fault // a typed nil: an error that is not nil, as GORM takes it
	}
	return nil
}

func (v *nilFaulted) AfterFind(db *gorm.DB) error { return v.BeforeSave(db) }

// faultingValuer fails with a typed nil *hookFault.
type faultingValuer struct{}

func (faultingValuer) Value() (driver.Value, error) { return nil, (*hookFault)(nil) }

// TestAHooksTypedNilErrorFailsTheStatementWithoutAPanic: a hook's error
// that is a typed nil pointer, whose Error method panics, fails the
// statement with it, as without the plugin, on one shard and on all of
// them, over several databases: the plugin does not crash reading its text,
// nor does errors.Is with the plugin's errors on what the statement returns.
// Nor does a Valuer's error that is such a nil, which database/sql wraps.
func TestAHooksTypedNilErrorFailsTheStatementWithoutAPanic(t *testing.T) {
	db, _, _, _ := routedOverN(t, 3, Config{}, &nilFaulted{})
	rows := []nilFaulted{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	must(t, db.Create(&rows).Error)
	nilFaultedFails = true
	defer func() { nilFaultedFails = false }()
	for name, run := range map[string]func(*gorm.DB) error{
		"Create":      func(tx *gorm.DB) error { return tx.Create(&nilFaulted{Name: "d"}).Error },
		"Save":        func(tx *gorm.DB) error { return tx.Save(&rows[0]).Error },
		"Update":      func(tx *gorm.DB) error { return tx.Model(&rows[1]).Update("name", "e").Error },
		"First":       func(tx *gorm.DB) error { return tx.First(&nilFaulted{}, rows[2].ID).Error },
		"Find on all": func(tx *gorm.DB) error { return tx.Clauses(AllShards()).Find(&[]nilFaulted{}).Error },
		"in a Transaction": func(tx *gorm.DB) error {
			return tx.Clauses(ByID(rows[2].ID)).Transaction(func(tx *gorm.DB) error { return tx.Save(&rows[2]).Error })
		},
	} {
		for _, tx := range []*gorm.DB{db, db.Session(&gorm.Session{SkipDefaultTransaction: true})} {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s: panicked: %v", name, p)
					}
				}()
				err := run(tx)
				if !errors.As(err, new(*hookFault)) {
					t.Errorf("%s failed with %v, want the hook's *hookFault", name, err)
				}
				if errors.Is(err, ErrShardUnavailable) || errors.Is(err, ErrShardMoved) {
					t.Errorf("%s failed with %v, taken for the plugin's", name, err)
				}
			}()
		}
	}
	nilFaultedFails = false
	for name, run := range map[string]func() error{
		"Update on all": func() error {
			return db.Model(&nilFaulted{}).Clauses(AllShards()).Where("id > 0").Update("name", faultingValuer{}).Error
		},
		"Find on all": func() error {
			return db.Clauses(AllShards()).Where("name = ?", faultingValuer{}).Find(&[]nilFaulted{}).Error
		},
		"Find by ID": func() error {
			return db.Where("id = ? AND name = ?", rows[0].ID, faultingValuer{}).Find(&[]nilFaulted{}).Error
		},
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("a Valuer's nil error, %s: panicked: %v", name, p)
				}
			}()
			err := run()
			if !errors.As(err, new(*hookFault)) || errors.Is(err, ErrShardUnavailable) {
				t.Errorf("a Valuer's nil error, %s: failed with %v, want the Valuer's *hookFault", name, err)
			}
			_ = err.Error()
		}()
	}
	var n int64
	must(t, db.Model(&nilFaulted{}).Clauses(AllShards()).Count(&n).Error)
	if n != int64(len(rows)) {
		t.Fatalf("%d rows, want the %d written before the hook failed", n, len(rows))
	}
}
