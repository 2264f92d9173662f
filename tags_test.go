package shardid

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// Models with bad tags, each failing at its first statement.
type (
	badStrategy struct {
		ID int64 `shardid:"strategy:nope"`
	}
	badKey struct {
		ID int64 `shardid:"shard:1"`
	}
	badColocateMissing struct {
		ID int64 `shardid:"colocate:OwnerID"`
	}
	badColocateType struct {
		ID    int64 `shardid:"colocate:Owner"`
		Owner float64
	}
	badUUIDType struct {
		ID int64 `shardid:"strategy:uuidv7"`
	}
	badUUIDArray struct {
		ID [16]byte `shardid:"strategy:uuidv7" gorm:"size:16"`
	}
	badTicketWithoutServers struct {
		ID int64 `shardid:"strategy:ticket"`
	}
	badColocateSelf struct {
		ID int64 `shardid:"colocate:ID"`
	}
	badBoth struct {
		ID      int64 `shardid:"colocate:OwnerID;hash:Email"`
		OwnerID int64
		Email   string
	}
	badHashMissing struct {
		ID int64 `shardid:"hash:Email"`
	}
	badHashType struct {
		ID    int64 `shardid:"hash:Score"`
		Score float64
	}
	badLooseBytes struct {
		ID  int64 `shardid:"hash:Key;collation:loose"`
		Key []byte
	}
	badFieldType struct {
		ID   int64
		Code string `shardid:""`
	}
	badPointerType struct {
		ID  int64
		Ref *int64 `shardid:""`
	}
	badAutoIncrement struct {
		ID int64 `gorm:"primaryKey;autoIncrement" shardid:""`
	}
	badCycle struct {
		ID    int64 `shardid:"colocate:Other"`
		Other int64 `shardid:"colocate:ID"`
	}
	badEmbedded struct {
		gorm.Model `shardid:""`
		Name       string
	}
	embeddedBase struct {
		gorm.Model `shardid:""`
	}
	badEmbeddedDeep struct {
		embeddedBase
		Name string
	}
	badCompositeKey struct {
		ID     int64 `shardid:"" gorm:"primaryKey"`
		Tenant int64 `gorm:"primaryKey"`
	}
	badOffsetKey struct {
		ID offsetID `shardid:""`
	}
	badSelfHash struct {
		ID int64 `shardid:"hash:ID"`
	}
	badReadOnlyKey struct {
		ID int64 `shardid:"" gorm:"<-:false"`
	}
	badUpdateOnlyKey struct {
		ID int64 `shardid:"" gorm:"<-:update"`
	}
	badDefaultKey struct {
		ID int64 `shardid:"" gorm:"default:(abs(random()))"`
	}
	// GORM reads no unexported field, nor any of an unexported embedded struct.
	hiddenBase struct {
		ID int64 `shardid:""`
	}
	badHiddenBase struct {
		hiddenBase
		Name string
	}
	badUnexportedKey struct {
		id   int64 `shardid:""`
		Name string
	}
)

// offsetID stores another number than the one it holds.
type offsetID int64

func (id offsetID) Value() (driver.Value, error) { return int64(id) + 1000, nil }

func TestInvalidTags(t *testing.T) {
	db, p := testDB(t, Config{})
	cases := []struct {
		model  any
		field  string
		detail string
	}{
		{&badStrategy{}, "ID", "allowed: instagram, snowflake"},
		{&badKey{}, "ID", "allowed: strategy, colocate, hash, collation"},
		{&badLooseBytes{}, "ID", "only a string compares by collation"},
		{&badColocateMissing{}, "ID", `no field "OwnerID"`},
		{&badColocateType{}, "ID", "not an ID (int64, uint64, or a UUID)"},
		{&badUUIDType{}, "ID", "cannot hold a UUID (allowed for uuidv7: string, uuid.UUID"},
		{&badUUIDArray{}, "ID", "database/sql binds no array"},
		{&badTicketWithoutServers{}, "ID", "needs ticket servers"},
		{&badColocateSelf{}, "ID", "its own shard"},
		{&badBoth{}, "ID", "use one"},
		{&badHashMissing{}, "ID", `no field "Email"`},
		{&badHashType{}, "ID", "allowed: string, []byte, integers, [16]byte"},
		{&badFieldType{}, "Code", "allowed: int64, uint64, shardid.ID"},
		{&badPointerType{}, "Ref", "allowed: int64, uint64, shardid.ID"},
		{&badAutoIncrement{}, "ID", "cannot be autoIncrement"},
		{&badCycle{}, "ID", "cycle"},
		{&badEmbedded{}, "Model", "put it on the ID field"},
		{&badEmbeddedDeep{}, "Model", "put it on the ID field"},
		{&badCompositeKey{}, "ID", "one primary key"},
		{&badOffsetKey{}, "ID", "its Value sends another number"},
		{&badSelfHash{}, "ID", "its own hash"},
		{&badReadOnlyKey{}, "ID", "keeps it out"},
		{&badUpdateOnlyKey{}, "ID", "keeps it out"},
		{&badDefaultKey{}, "ID", "database default"},
		{&badHiddenBase{}, "ID", "GORM leaves out"},
		{&badUnexportedKey{}, "id", "GORM leaves out"},
	}
	for _, c := range cases {
		// AutoMigrate refuses the tag before creating anything ...
		err := p.AutoMigrate(db, c.model)
		var fe *FieldError
		if !errors.Is(err, ErrInvalidTag) || !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.detail) {
			t.Errorf("AutoMigrate(%T) = %v; want ErrInvalidTag on field %s mentioning %q", c.model, err, c.field, c.detail)
			continue
		}
		if p.Migrator(db).HasTable(c.model) {
			t.Errorf("%T: the table was created despite the bad tag", c.model)
		}
		// ... and so does every statement on the model.
		if err := db.Create(c.model).Error; !errors.Is(err, ErrInvalidTag) || !strings.Contains(err.Error(), fe.Model) {
			t.Errorf("Create(%T) = %v; want ErrInvalidTag naming the model", c.model, err)
		}
		if err := db.Find(c.model).Error; !errors.Is(err, ErrInvalidTag) {
			t.Errorf("Find(%T) = %v; want ErrInvalidTag", c.model, err)
		}
		if err := db.Where("1 = 1").Delete(c.model).Error; !errors.Is(err, ErrInvalidTag) {
			t.Errorf("Delete(%T) = %v; want ErrInvalidTag", c.model, err)
		}
	}
}

type (
	eventByInstagram struct {
		ID   int64 `shardid:"strategy:instagram"`
		Name string
	}
	eventBySnowflake struct {
		ID   int64 `shardid:"strategy:snowflake"`
		Name string
	}
	eventAgainByInstagram struct {
		ID   int64 `shardid:"strategy:instagram"`
		Name string
	}
)

func (eventByInstagram) TableName() string      { return "events" }
func (eventBySnowflake) TableName() string      { return "events" }
func (eventAgainByInstagram) TableName() string { return "events" }

// TestTwoStrategiesOnOneTableAreRefused: two models of one table whose keys
// are made by two strategies would make the same ID within a tick (a raw
// duplicate-key error at insert); the second is refused by its tag, naming
// the first, and a second model with the same strategy is fine.
func TestTwoStrategiesOnOneTableAreRefused(t *testing.T) {
	db, p := testDB(t, Config{})
	must(t, p.AutoMigrate(db, &eventByInstagram{}))
	must(t, db.Create(&eventByInstagram{Name: "a"}).Error)
	err := db.Create(&eventBySnowflake{Name: "b"}).Error
	if !errors.Is(err, ErrInvalidTag) || !strings.Contains(err.Error(), "eventByInstagram") || !strings.Contains(err.Error(), "instagram") {
		t.Errorf("a snowflake model of a table an instagram model fills: %v, want ErrInvalidTag naming the other model and its strategy", err)
	}
	must(t, db.Create(&eventAgainByInstagram{Name: "c"}).Error)
	var n int64
	must(t, db.Model(&eventByInstagram{}).Clauses(AllShards()).Count(&n).Error)
	if n != 2 {
		t.Errorf("%d rows, want the 2 of instagram", n)
	}
}

type hashOfATaggedField struct {
	ID  int64 `shardid:"hash:Ref"`
	Ref int64 `shardid:"strategy:snowflake"`
}

// TestHashOfAnotherTaggedFieldIsTakenOnceItIsFilled: a key hashed from
// another shardid field of the row is placed by that field's new ID, made
// first, and the row is found by it.
func TestHashOfAnotherTaggedFieldIsTakenOnceItIsFilled(t *testing.T) {
	db, p := testDB(t, Config{})
	migrate(t, db, &hashOfATaggedField{})
	row := hashOfATaggedField{}
	must(t, db.Create(&row).Error)
	if row.Ref == 0 || row.ID == 0 {
		t.Fatalf("%+v: want both filled", row)
	}
	var back hashOfATaggedField
	must(t, db.Where("ref = ?", row.Ref).First(&back).Error)
	if back.ID != row.ID || p.Layout().Shard(row.ID) != p.Layout().Shard(back.ID) {
		t.Errorf("found by Ref: %+v, want %+v", back, row)
	}
}

type (
	twoContactsContact struct{ Email string }
	// twoContacts' hash:Email could be either embedded struct's: refused,
	// as Go refuses the selector; its column names one.
	twoContacts struct {
		ID   int64              `shardid:"hash:Email"`
		Home twoContactsContact `gorm:"embedded;embeddedPrefix:home_"`
		Work twoContactsContact `gorm:"embedded;embeddedPrefix:work_"`
	}
	twoContactsByColumn struct {
		ID   int64              `shardid:"hash:work_email"`
		Home twoContactsContact `gorm:"embedded;embeddedPrefix:home_"`
		Work twoContactsContact `gorm:"embedded;embeddedPrefix:work_"`
	}
)

// A tag naming a field that two embedded structs hold at one depth is
// refused rather than read as either's; its column names one.
func TestATagNamingAFieldOfTwoEmbeddedStructsIsRefused(t *testing.T) {
	db, p := testDB(t, Config{})
	if err := p.AutoMigrate(db, &twoContacts{}); !errors.Is(err, ErrInvalidTag) || !strings.Contains(err.Error(), "two embedded structs") {
		t.Errorf("hash:Email over two embedded Email fields: %v; want ErrInvalidTag", err)
	}
	must(t, p.AutoMigrate(db, &twoContactsByColumn{}))
	row := twoContactsByColumn{Home: twoContactsContact{Email: "home@x.io"}, Work: twoContactsContact{Email: "work@x.io"}}
	must(t, db.Create(&row).Error)
	key, err := HashKey("work@x.io")
	must(t, err)
	if shard := p.Layout().Shard(row.ID); shard != int(key%uint64(p.Layout().ShardCount())) {
		t.Errorf("hash:work_email placed the row in shard %d, not its work email's", shard)
	}
}

type (
	PromotedContact struct{ Email string }
	// promotedBesideNamed's Email is its anonymous struct's, which Go
	// promotes, not the named embedded struct's.
	promotedBesideNamed struct {
		ID int64 `shardid:"hash:Email"`
		PromotedContact
		Billing PromotedContact `gorm:"embedded;embeddedPrefix:billing_"`
	}
)

// A tag naming a field one anonymous struct promotes takes it, beside a
// named embedded struct holding a field of the same name.
func TestATagNamesTheFieldGoPromotes(t *testing.T) {
	db, p := testDB(t, Config{})
	must(t, p.AutoMigrate(db, &promotedBesideNamed{}))
	row := promotedBesideNamed{PromotedContact: PromotedContact{Email: "home@x.io"}, Billing: PromotedContact{Email: "bill@x.io"}}
	must(t, db.Create(&row).Error)
	key, err := HashKey("home@x.io")
	must(t, err)
	if shard := p.Layout().Shard(row.ID); shard != int(key%uint64(p.Layout().ShardCount())) {
		t.Errorf("the row is in shard %d, not its promoted Email's", shard)
	}
}

// The same table under three tags a deploy might change between: the rule
// that places its rows by the email, by the work address, and by the email
// compared loosely.
type (
	placedByEmail struct {
		ID    int64  `shardid:"hash:Email"`
		Email string `gorm:"size:100"`
		Work  string `gorm:"size:100"`
	}
	placedByWork struct {
		ID    int64  `shardid:"hash:Work"`
		Email string `gorm:"size:100"`
		Work  string `gorm:"size:100"`
	}
	placedByLooseEmail struct {
		ID    int64  `shardid:"hash:Email;collation:loose"`
		Email string `gorm:"size:100"`
		Work  string `gorm:"size:100"`
	}
)

func (placedByEmail) TableName() string      { return "placed_accounts" }
func (placedByWork) TableName() string       { return "placed_accounts" }
func (placedByLooseEmail) TableName() string { return "placed_accounts" }

// TestAChangedPlacementRuleIsRefused: a table's rows were placed by one
// hash rule; a process whose model of it places by another (a tag changed
// between deploys) would look for them on other shards by its conditions
// and miss them. Its AutoMigrate and its statements are refused with
// ErrInvalidTag naming both rules, nothing written.
func TestAChangedPlacementRuleIsRefused(t *testing.T) {
	open, _ := processesOnOneSetOfFiles(t)
	db, p := open()
	must(t, p.AutoMigrate(db, &placedByEmail{}))
	for i := range 8 {
		must(t, db.Create(&placedByEmail{Email: fmt.Sprintf("dan%d@x.io", i), Work: fmt.Sprintf("w%d", i)}).Error)
	}
	next, nextPlugin := open() // the next deploy's process, beside the last one's
	if err := nextPlugin.AutoMigrate(next, &placedByWork{}); !errors.Is(err, ErrInvalidTag) || !strings.Contains(err.Error(), "hash:email") || !strings.Contains(err.Error(), "hash:work") {
		t.Fatalf("AutoMigrate of the table under another hash column: %v; want ErrInvalidTag naming both rules", err)
	}
	var found placedByWork
	if err := next.Where("work = ?", "w1").First(&found).Error; !errors.Is(err, ErrInvalidTag) {
		t.Fatalf("a read by the new rule's column: %v; want ErrInvalidTag", err)
	}
	if err := next.Create(&placedByLooseEmail{Email: "eve@x.io"}).Error; !errors.Is(err, ErrInvalidTag) || !strings.Contains(err.Error(), "collation:loose") {
		t.Fatalf("a Create under the email compared loosely: %v; want ErrInvalidTag", err)
	}
	var n int64
	must(t, db.Clauses(AllShards()).Model(&placedByEmail{}).Count(&n).Error)
	if n != 8 {
		t.Fatalf("%d rows; want the 8 created by the first rule, nothing written by the refused ones", n)
	}
	var again placedByEmail
	must(t, next.Where("email = ?", "dan3@x.io").First(&again).Error) // the rule the rows were placed by still reads them

	// A table dropped through the plugin's migrator is forgotten: made again, it takes the new rule.
	must(t, p.Migrator(db).DropTable(&placedByEmail{}))
	must(t, p.AutoMigrate(db, &placedByWork{}))
	must(t, db.Create(&placedByWork{Email: "eve@x.io", Work: "w9"}).Error)
}

// renamedEmail is the next deploy's model of renamedAccount's table, its
// hash column renamed.
type (
	renamedAccount struct {
		ID    int64  `shardid:"hash:Email"`
		Email string `gorm:"size:100"`
	}
	renamedEmail struct {
		ID   int64  `shardid:"hash:Mail"`
		Mail string `gorm:"size:100"`
	}
)

func (renamedEmail) TableName() string { return "renamed_accounts" }

// TestRenamingTheHashColumnThroughTheMigratorKeepsTheRule: a hash column
// renamed through the plugin's migrator holds the same keys, placed as
// before: the record names the new column, so the model naming it is not
// refused as placing the rows by another rule (whose advice, to keep the
// tag or copy the rows, could not be followed), and finds every row.
func TestRenamingTheHashColumnThroughTheMigratorKeepsTheRule(t *testing.T) {
	open, _ := processesOnOneSetOfFiles(t)
	db, p := open()
	must(t, p.AutoMigrate(db, &renamedAccount{}))
	for i := range 8 {
		must(t, db.Create(&renamedAccount{Email: fmt.Sprintf("dan%d@x.io", i)}).Error)
	}
	must(t, p.Migrator(db).RenameColumn(&renamedAccount{}, "Email", "mail"))
	next, nextPlugin := open()
	must(t, nextPlugin.AutoMigrate(next, &renamedEmail{}))
	for i := range 8 {
		var found renamedEmail
		if err := next.Where("mail = ?", fmt.Sprintf("dan%d@x.io", i)).First(&found).Error; err != nil {
			t.Fatalf("a read by the renamed column: %v; want the row", err)
		}
	}
}

// The same table's hash key under three Go types: the text of a UUID, the
// UUID itself (hashed as its 16 bytes), a number (hashed as 8 bytes).
type (
	tokenAsText struct {
		ID    int64  `shardid:"hash:Token"`
		Token string `gorm:"size:36"`
	}
	tokenAsUUID struct {
		ID    int64     `shardid:"hash:Token"`
		Token uuid.UUID `gorm:"size:36"`
	}
	codeAsText struct {
		ID   int64  `shardid:"hash:Code"`
		Code string `gorm:"size:20"`
	}
	codeAsNumber struct {
		ID   int64 `shardid:"hash:Code"`
		Code int64
	}
)

func (tokenAsText) TableName() string  { return "placed_tokens" }
func (tokenAsUUID) TableName() string  { return "placed_tokens" }
func (codeAsText) TableName() string   { return "placed_codes" }
func (codeAsNumber) TableName() string { return "placed_codes" }

// TestAChangedHashKeyTypeIsRefused: a hash key's logical shard is the hash
// of its Go value's bytes, so one column's key under another Go type (a
// UUID's text made a uuid.UUID, a numeric code's text made an int64 between
// deploys) places its rows on other shards than the rows already there, and
// its conditions miss them: the same rule's column is not the same rule.
// The next deploy's AutoMigrate, and its statements, are refused with
// ErrInvalidTag naming both key types; the rows stay readable by the type
// they were placed by.
func TestAChangedHashKeyTypeIsRefused(t *testing.T) {
	open, _ := processesOnOneSetOfFiles(t)
	db, p := open()
	must(t, p.AutoMigrate(db, &tokenAsText{}, &codeAsText{}))
	tokens := make([]uuid.UUID, 16)
	for i := range tokens {
		tokens[i] = uuid.New()
		must(t, db.Create(&tokenAsText{Token: tokens[i].String()}).Error)
		must(t, db.Create(&codeAsText{Code: fmt.Sprint(1000 + i)}).Error)
	}
	next, nextPlugin := open() // the next deploy's process, beside the last one's
	if err := nextPlugin.AutoMigrate(next, &tokenAsUUID{}); !errors.Is(err, ErrInvalidTag) || !strings.Contains(err.Error(), "uuid") {
		t.Fatalf("AutoMigrate of the token as a uuid.UUID: %v; want ErrInvalidTag naming the key types", err)
	}
	if err := nextPlugin.AutoMigrate(next, &codeAsNumber{}); !errors.Is(err, ErrInvalidTag) || !strings.Contains(err.Error(), "int") {
		t.Fatalf("AutoMigrate of the code as an int64: %v; want ErrInvalidTag naming the key types", err)
	}
	var found tokenAsUUID
	if err := next.Where("token = ?", tokens[3]).First(&found).Error; !errors.Is(err, ErrInvalidTag) {
		t.Fatalf("a read by the token as a uuid.UUID: %v (%+v); want ErrInvalidTag", err, found)
	}
	if err := next.Create(&codeAsNumber{Code: 1003}).Error; !errors.Is(err, ErrInvalidTag) {
		t.Fatalf("a Create of the code as an int64: %v; want ErrInvalidTag", err)
	}
	var n int64
	must(t, db.Clauses(AllShards()).Model(&codeAsText{}).Count(&n).Error)
	if n != 16 {
		t.Fatalf("%d codes; want the 16 created as text, nothing written by the refused model", n)
	}
	var again tokenAsText
	must(t, next.Where("token = ?", tokens[3].String()).First(&again).Error) // the type the rows were placed by still reads them
}

// A table recorded before the key's type was (no hash_key column, as an
// earlier version made shardid_tables) is not refused for a type it never
// recorded; its next migration records the type, which then holds.
func TestATableRecordedBeforeItsHashKeyTypeLearnsIt(t *testing.T) {
	open, _ := processesOnOneSetOfFiles(t)
	db, p := open()
	must(t, p.AutoMigrate(db, &codeAsText{}))
	must(t, db.Exec("ALTER TABLE shardid_tables DROP COLUMN hash_key").Error) // as an earlier version left it
	next, nextPlugin := open()
	must(t, nextPlugin.AutoMigrate(next, &codeAsText{}))
	var recorded string
	must(t, next.Raw("SELECT hash_key FROM shardid_tables WHERE name = ?", "placed_codes").Scan(&recorded).Error)
	if recorded != "text" {
		t.Fatalf("hash_key %q after the migration; want text", recorded)
	}
	if err := nextPlugin.AutoMigrate(next, &codeAsNumber{}); !errors.Is(err, ErrInvalidTag) {
		t.Fatalf("AutoMigrate of the code as an int64 once its type is recorded: %v; want ErrInvalidTag", err)
	}
}

type placedWithOwner struct {
	ID      int64 `shardid:"colocate:OwnerID"`
	OwnerID int64
	Title   string
}

// placedTitle is a narrower model of placedWithOwner's table, without its rule.
type placedTitle struct {
	ID    int64 `shardid:""`
	Title string
}

func (placedTitle) TableName() string { return "placed_with_owners" }

// A model of a table without the table's placement rule (a narrower model
// of its columns) reads, updates and deletes its rows by their IDs, or on
// every shard, as before the rule was recorded: none is missed. Its Create
// is refused, writing nothing: the row would not be beside its owner,
// where the rule's conditions look for it.
func TestAModelWithoutThePlacementRuleReadsTheRowsAndCreatesNone(t *testing.T) {
	db, _, direct := revRouted(t, &placedWithOwner{})
	row := placedWithOwner{OwnerID: 7, Title: "a"}
	must(t, db.Create(&row).Error)
	var got placedTitle
	if err := db.First(&got, row.ID).Error; err != nil || got.Title != "a" {
		t.Fatalf("a read by ID through the narrower model: %+v, %v; want the row", got, err)
	}
	var all []placedTitle
	if err := db.Clauses(AllShards()).Where("title = ?", "a").Find(&all).Error; err != nil || len(all) != 1 {
		t.Fatalf("a read on every shard through the narrower model: %+v, %v; want the row", all, err)
	}
	if err := db.Model(&placedTitle{ID: row.ID}).Update("title", "b").Error; err != nil {
		t.Fatalf("an update by ID through the narrower model: %v", err)
	}
	must(t, db.First(&row, row.ID).Error)
	if row.Title != "b" {
		t.Fatalf("the row after the update: %+v; want title b", row)
	}
	if err := db.Create(&placedTitle{Title: "c"}).Error; !errors.Is(err, ErrInvalidTag) || !strings.Contains(err.Error(), "colocate:owner_id") {
		t.Fatalf("a Create through the narrower model: %v; want ErrInvalidTag naming the table's rule", err)
	}
	for k, d := range direct {
		var n int64
		must(t, d.Table("placed_with_owners").Where("title = ?", "c").Count(&n).Error)
		if n != 0 {
			t.Errorf("database %d holds %d rows the refused Create wrote", k, n)
		}
	}
	if err := db.Delete(&placedTitle{ID: row.ID}).Error; err != nil {
		t.Fatalf("a delete by ID through the narrower model: %v", err)
	}
}
