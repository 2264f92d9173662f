package shardid

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type recordedLanguage struct {
	ID   uint
	Name string
}

type recordedUser struct {
	ID        int64 `shardid:""`
	Name      string
	Languages []recordedLanguage `gorm:"many2many:recorded_user_languages"`
}

// processesOnOneSetOfFiles returns how to start the plugin on the same
// SQLite files again, as each process of one application does (openIn), and
// the two physical databases opened without it.
func processesOnOneSetOfFiles(t *testing.T) (start func() (*gorm.DB, *Plugin), direct []*gorm.DB) {
	t.Helper()
	dir := t.TempDir()
	for i := range 2 {
		d, err := gorm.Open(sqlite.Open(filepath.Join(dir, fmt.Sprintf("s%d.db", i))), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		direct = append(direct, d)
	}
	return func() (*gorm.DB, *Plugin) { return openIn(t, dir) }, direct
}

// A process that has not used a sharded model yet knows its tables from
// the record of migrations: the join table GORM names in Association's
// query, or raw SQL, is not read on the plugin's database, where a table of
// that name holds no rows of the shards (here one left from before the
// plugin was adopted).
func TestShardedTablesOfModelsNotYetUsedAreKnownFromTheRecord(t *testing.T) {
	start, _ := processesOnOneSetOfFiles(t)
	first, p := start()
	// A join table left on the plugin's database from before the plugin.
	must(t, first.Exec("CREATE TABLE recorded_user_languages (recorded_user_id INTEGER, recorded_language_id INTEGER)").Error)
	must(t, p.AutoMigrate(first, &recordedUser{}, &recordedLanguage{}))
	second, _ := start()
	language := recordedLanguage{Name: "go"}
	must(t, first.Create(&language).Error)
	user := recordedUser{Name: "u", Languages: []recordedLanguage{language}}
	must(t, first.Omit("Languages.*").Create(&user).Error)

	var languages []recordedLanguage
	err := second.Model(&recordedUser{ID: user.ID}).Association("Languages").Find(&languages)
	if !errors.Is(err, ErrNoShard) && !errors.Is(err, ErrCrossShard) {
		t.Fatalf("Association Find in a process that has not used the owner: %v, %d languages; want ErrNoShard or ErrCrossShard", err, len(languages))
	}
	var n int64
	if err := second.Raw("SELECT count(*) FROM recorded_users").Scan(&n).Error; !errors.Is(err, ErrNoShard) {
		t.Fatalf("raw SQL on a sharded table in a process that has not used its model: %v; want ErrNoShard", err)
	}
	// Preload reads the join rows on the owner's shard: the supported form.
	var found recordedUser
	must(t, second.Preload("Languages").First(&found, user.ID).Error)
	if len(found.Languages) != 1 || found.Languages[0].Name != "go" {
		t.Fatalf("Preload found %+v, want the one language", found.Languages)
	}
}

type recordedUserNowPlain struct {
	ID   int64
	Name string
}

func (recordedUserNowPlain) TableName() string { return "recorded_users" }

// A table the record lists as sharded stays so in a process that has not
// used its model until it is dropped through the plugin's migrator: then a
// model of that name that is not sharded has its table where its rows live,
// on the plugin's database.
func TestARecordedTableIsShardedUntilDropped(t *testing.T) {
	start, direct := processesOnOneSetOfFiles(t)
	first, p := start()
	must(t, p.AutoMigrate(first, &recordedUser{}, &recordedLanguage{}))
	second, p2 := start()
	if err := second.AutoMigrate(&recordedUserNowPlain{}); !errors.Is(err, ErrNoShard) {
		t.Fatalf("plain AutoMigrate of a recorded sharded table's name on the plugin's database: %v; want ErrNoShard", err)
	}
	must(t, p2.Migrator(second).DropTable("recorded_users"))
	for _, direct := range direct {
		if direct.Migrator().HasTable("recorded_users") {
			t.Fatal("DropTable by name left the sharded table on a physical database")
		}
	}
	must(t, second.AutoMigrate(&recordedUserNowPlain{}))
	must(t, second.Create(&recordedUserNowPlain{ID: 1, Name: "plain"}).Error)
	var n int64
	must(t, second.Raw("SELECT count(*) FROM recorded_users").Scan(&n).Error)
	if n != 1 {
		t.Fatalf("count %d, want 1", n)
	}
}

type recordedTag struct {
	ID     uint
	Name   string
	Owners []recordedTagOwner `gorm:"many2many:recorded_owner_tags"`
}

type recordedTagOwner struct {
	ID   int64         `shardid:""`
	Tags []recordedTag `gorm:"many2many:recorded_owner_tags"`
}

// The join table of a sharded owner's many2many, reached from the unsharded
// side (Preload of the back-reference) in a process that has not used the
// owner, is still the owner's: not read on the plugin's database.
func TestAJoinTableReachedFromItsUnshardedSideStaysSharded(t *testing.T) {
	start, _ := processesOnOneSetOfFiles(t)
	first, p := start()
	must(t, first.Exec("CREATE TABLE recorded_owner_tags (recorded_tag_owner_id INTEGER, recorded_tag_id INTEGER)").Error) // left from before the plugin
	must(t, p.AutoMigrate(first, &recordedTagOwner{}, &recordedTag{}))
	tag := recordedTag{Name: "t"}
	must(t, first.Create(&tag).Error)
	must(t, first.Omit("Tags.*").Create(&recordedTagOwner{Tags: []recordedTag{tag}}).Error)

	second, _ := start()
	var found recordedTag
	err := second.Preload("Owners").First(&found, tag.ID).Error
	if err == nil && len(found.Owners) != 1 {
		t.Fatalf("Preload of the owners from the unsharded side: %d owners, no error; want the owner, or a refusal", len(found.Owners))
	}
}

// The plugin's migrator does not make a model without tags the owner of a
// table it recorded as sharded: its rows are on the physical databases.
func TestTheMigratorRefusesAnUntaggedModelForARecordedTable(t *testing.T) {
	start, _ := processesOnOneSetOfFiles(t)
	first, p := start()
	must(t, p.AutoMigrate(first, &recordedUser{}, &recordedLanguage{}))
	second, p2 := start()
	if err := p2.AutoMigrate(second, &recordedUserNowPlain{}); !errors.Is(err, ErrInvalidTag) {
		t.Fatalf("the plugin's AutoMigrate of an untagged model for a recorded table: %v, want ErrInvalidTag", err)
	}
}

// A table made sharded whose rows a model without tags put on the plugin's
// database (the last deploy's, still writing there in a rolling restart)
// is warned of on Config.Log, naming it: the sharded table on the physical
// databases holds none of those rows. A copy without rows is not.
func TestMigratingATableShardedWarnsOfItsRowsOnThePluginsDatabase(t *testing.T) {
	dir := t.TempDir()
	last, p := openIn(t, dir)
	must(t, p.AutoMigrate(last, &recordedUserNowPlain{}, &recordedLanguage{}))
	must(t, last.Create(&recordedUserNowPlain{Name: "u"}).Error)
	must(t, last.Exec("CREATE TABLE recorded_user_languages (recorded_user_id INTEGER, recorded_language_id INTEGER)").Error) // empty
	var out bytes.Buffer
	next, p2 := openWith(t, dir, Config{Log: slog.New(slog.NewTextHandler(&out, nil))})
	must(t, p2.AutoMigrate(next, &recordedUser{}, &recordedLanguage{}))
	if !strings.Contains(out.String(), "holds rows on the plugin's database") || !strings.Contains(out.String(), "table=recorded_users") {
		t.Fatalf("log of the migration: %q; want a warning naming recorded_users", out.String())
	}
	if strings.Contains(out.String(), "table=recorded_user_languages") {
		t.Errorf("log of the migration: %q; want no warning of the empty join table", out.String())
	}
}

// A migration records again the tables it migrates in place: a process
// starting meanwhile (every pod of a rolling restart migrates as it starts)
// reads each of them, never a record with the table gone from it, which
// would leave it unaware the table is sharded.
func TestMigratingAgainNeverTakesATableOutOfTheRecord(t *testing.T) {
	start, _ := processesOnOneSetOfFiles(t)
	first, p := start()
	must(t, p.AutoMigrate(first, &recordedUser{}, &recordedLanguage{}))
	must(t, first.Exec("CREATE TABLE recorded_gone (name TEXT)").Error)
	must(t, first.Exec("CREATE TRIGGER recorded_gone_log AFTER DELETE ON shardid_tables BEGIN INSERT INTO recorded_gone VALUES (old.name); END").Error)
	second, p2 := start()
	must(t, p2.AutoMigrate(second, &recordedUser{}, &recordedLanguage{}))
	var gone []string
	must(t, first.Raw("SELECT name FROM recorded_gone").Scan(&gone).Error)
	if len(gone) > 0 {
		t.Fatalf("the migration took %v out of the record for a while; want each updated in place", gone)
	}
	var names []string
	must(t, first.Raw("SELECT name FROM shardid_tables ORDER BY name").Scan(&names).Error)
	if !slices.Equal(names, []string{"recorded_user_languages", "recorded_users"}) {
		t.Fatalf("recorded tables %v; want the sharded table and its join table", names)
	}
}

// Every process migrates the same models again at its start (a deploy): the
// tables it recorded as sharded, join tables among them, are its models'.
func TestAnotherProcessMigratesTheRecordedModelsAgain(t *testing.T) {
	start, _ := processesOnOneSetOfFiles(t)
	first, p := start()
	must(t, p.AutoMigrate(first, &recordedUser{}, &recordedLanguage{}))
	second, p2 := start()
	must(t, p2.AutoMigrate(second, &recordedUser{}, &recordedLanguage{}))
	must(t, p2.Migrator(second).AutoMigrate(&recordedUser{}))
}

type recordedRegional struct {
	ID   int64 `shardid:""`
	Name string
}

// A table the process itself migrated by another name than its model's
// (Migrator(db.Table(name)), a table per region or year) is sharded in that
// process at once, as in one started after: a statement without its model
// is not run on the plugin's database, where a table of that name (here one
// left from before the plugin was adopted) holds none of its rows.
func TestATableMigratedByAnotherNameIsShardedInTheProcessThatMigratedIt(t *testing.T) {
	start, _ := processesOnOneSetOfFiles(t)
	first, p := start()
	must(t, first.Exec("CREATE TABLE recorded_regionals_eu (id INTEGER PRIMARY KEY, name TEXT)").Error)
	must(t, first.Exec("INSERT INTO recorded_regionals_eu VALUES (1, 'legacy')").Error)
	must(t, p.AutoMigrate(first.Table("recorded_regionals_eu"), &recordedRegional{}))
	row := recordedRegional{Name: "new"}
	must(t, first.Table("recorded_regionals_eu").Create(&row).Error)
	second, _ := start()
	for name, db := range map[string]*gorm.DB{"the migrating process": first, "a process started after": second} {
		var n int64
		if err := db.Table("recorded_regionals_eu").Count(&n).Error; !errors.Is(err, ErrNoShard) {
			t.Errorf("%s: Table(name).Count: %v, %d rows; want ErrNoShard", name, err, n)
		}
		if err := db.Table("recorded_regionals_eu").Where("id = ?", row.ID).Update("name", "x").Error; !errors.Is(err, ErrNoShard) {
			t.Errorf("%s: Table(name).Update: %v; want ErrNoShard", name, err)
		}
		if err := db.Raw("SELECT count(*) FROM recorded_regionals_eu").Scan(&n).Error; !errors.Is(err, ErrNoShard) {
			t.Errorf("%s: raw SQL: %v; want ErrNoShard", name, err)
		}
		var found recordedRegional
		if err := db.Table("recorded_regionals_eu").First(&found, row.ID).Error; err != nil || found.Name != "new" {
			t.Errorf("%s: First by ID: %v, %+v", name, err, found)
		}
	}
}
