package integration

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shardid/shardid"
)

type (
	// hcMember's email column gets its type from the plugin: exact.
	hcMember struct {
		ID    int64  `shardid:"hash:Email"`
		Email string `gorm:"size:120"`
	}
	// hcLoose's column is given a type that compares loosely on each backend.
	hcLoose struct {
		ID    int64 `shardid:"hash:Email"`
		Email string
	}
	// hcPadded's char(n) column ignores trailing spaces on MariaDB and PostgreSQL, whatever its collation.
	hcPadded struct {
		ID   int64  `shardid:"hash:Code"`
		Code string `gorm:"type:char(8)"`
	}
)

// TestHashColumnsCompareExactly: a hash key's column compares byte for byte,
// as the key is hashed, so the database never finds a row under a key that
// hashes to another shard; a column given a loose collation is refused.
func TestHashColumnsCompareExactly(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		m := r.plugin.Migrator(r.db)
		must(t, m.DropTable(&hcMember{}))
		must(t, r.plugin.AutoMigrate(r.db, &hcMember{}))
		must(t, r.plugin.AutoMigrate(r.db, &hcMember{})) // again: nothing to change, nothing refused
		row := hcMember{Email: "dan@x.io"}
		must(t, r.db.Create(&row).Error)
		home := r.direct[r.physicalOf(row.ID)]
		for _, other := range []string{"Dan@x.io", "dan@x.io ", "dän@x.io"} {
			var n int64
			must(t, home.Model(&hcMember{}).Where("email = ?", other).Count(&n).Error)
			if n != 0 {
				t.Fatalf("%s finds the row of %q on its own database: the column does not compare exactly", other, row.Email)
			}
			var found []hcMember
			must(t, r.db.Where("email = ?", other).Find(&found).Error)
			if len(found) != 0 {
				t.Fatalf("the plugin found %v for %q", found, other)
			}
		}
		var found hcMember
		must(t, r.db.Where("email = ?", "dan@x.io").First(&found).Error)

		loose := map[string]string{
			"sqlite":   "ALTER TABLE hc_looses ADD COLUMN email text COLLATE NOCASE",
			"mariadb":  "ALTER TABLE hc_looses ADD COLUMN email varchar(191) COLLATE utf8mb4_general_ci",
			"postgres": "ALTER TABLE hc_looses ADD COLUMN email text COLLATE shardid_test_ci",
		}[b.name]
		if b.name == "postgres" {
			for _, db := range r.direct {
				must(t, db.Exec("CREATE COLLATION IF NOT EXISTS shardid_test_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)").Error)
			}
		}
		for _, db := range r.direct {
			must(t, db.Exec("DROP TABLE IF EXISTS hc_looses").Error)
			must(t, db.Exec("CREATE TABLE hc_looses (id bigint PRIMARY KEY)").Error)
			must(t, db.Exec(loose).Error)
		}
		err := r.plugin.AutoMigrate(r.db, &hcLoose{})
		if !errors.Is(err, shardid.ErrInvalidTag) || !strings.Contains(err.Error(), "hc_looses.email") {
			t.Fatalf("a hash column with a loose collation: %v; want ErrInvalidTag naming it", err)
		}

		must(t, m.DropTable(&hcPadded{}))
		if b.name == "mariadb" { // char(n) drops trailing spaces even with a NO PAD binary collation
			for _, db := range r.direct {
				must(t, db.Exec("CREATE TABLE hc_paddeds (id bigint PRIMARY KEY, code char(8) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin)").Error)
			}
		}
		err = r.plugin.AutoMigrate(r.db, &hcPadded{})
		if b.name == "sqlite" {
			must(t, err) // SQLite's char(8) is text, compared byte for byte
		} else if !errors.Is(err, shardid.ErrInvalidTag) || !strings.Contains(err.Error(), "char(n)") {
			t.Fatalf("a char(8) hash column: %v; want ErrInvalidTag naming char(n)", err)
		}
	})
}

// hcVarcharNocase's hash column is case-insensitive after a type with
// parentheses; hcNocaseAfterBackup's comes after a column whose name ends
// with its own.
type hcVarcharNocase struct {
	ID    int64  `shardid:"hash:Email"`
	Email string `gorm:"type:varchar(255) COLLATE NOCASE"`
}

type hcNocaseAfterBackup struct {
	ID          int64 `shardid:"hash:Email"`
	BackupEmail string
	Email       string `gorm:"type:text COLLATE NOCASE"`
}

// TestSQLiteHashColumnCollationIsReadWhole: SQLite's collation of a hash
// column is read from its whole definition, past a type's parentheses, and
// from its own definition, not one whose name ends with it: both columns
// are refused, as a plain text COLLATE NOCASE is.
func TestSQLiteHashColumnCollationIsReadWhole(t *testing.T) {
	b := backends[0]
	if b.name != "sqlite" {
		t.Fatalf("backends[0] is %s", b.name)
	}
	r := newRouting(t, b)
	for _, model := range []any{&hcVarcharNocase{}, &hcNocaseAfterBackup{}} {
		must(t, r.plugin.Migrator(r.db).DropTable(model))
		err := r.plugin.AutoMigrate(r.db, model)
		if !errors.Is(err, shardid.ErrInvalidTag) || !strings.Contains(err.Error(), ".email has collation NOCASE") {
			t.Errorf("AutoMigrate(%T): %v; want ErrInvalidTag naming the column's NOCASE", model, err)
		}
	}
}

// qualifiedOwner and qualifiedPart name their tables with SQLite's schema.
type (
	qualifiedOwner struct {
		ID int64 `shardid:""`
	}
	qualifiedPart struct {
		ID               int64 `shardid:"colocate:QualifiedOwnerID"`
		QualifiedOwnerID int64
	}
)

func (qualifiedOwner) TableName() string { return "main.qualified_owners" }
func (qualifiedPart) TableName() string  { return "main.qualified_parts" }

// TestTableNamedWithItsSchema: the routing index of a colocate column is
// named as GORM names indexes, without the schema's dot, so a table whose
// name carries its schema migrates; and SQL naming the table with its
// schema or without is routed as the model's.
func TestTableNamedWithItsSchema(t *testing.T) {
	b := backends[0]
	if b.name != "sqlite" {
		t.Fatalf("backends[0] is %s", b.name)
	}
	r := newRouting(t, b)
	must(t, r.plugin.AutoMigrate(r.db, &qualifiedOwner{}, &qualifiedPart{}))
	if !r.plugin.Migrator(r.db).HasIndex(&qualifiedPart{}, "idx_shardid_main_qualified_parts_qualified_owner_id") {
		t.Fatal("no routing index on main.qualified_parts.qualified_owner_id")
	}
	// Its table is known by name, with the schema or without: raw SQL and
	// Table() that name it without a shard are refused, not sent to the
	// plugin's database.
	owner := qualifiedOwner{}
	must(t, r.db.Create(&owner).Error)
	must(t, r.db.Create(&qualifiedPart{QualifiedOwnerID: owner.ID}).Error)
	var back qualifiedOwner
	must(t, r.db.First(&back, owner.ID).Error)
	var ids []int64
	for form, err := range map[string]error{
		"raw SQL by the bare name":      r.db.Raw("SELECT id FROM qualified_owners").Scan(&ids).Error,
		"raw SQL by the qualified name": r.db.Raw("SELECT id FROM main.qualified_owners").Scan(&ids).Error,
		"Table() by the qualified name": r.db.Table("main.qualified_owners").Pluck("id", &ids).Error,
		"Table() by the bare name":      r.db.Table("qualified_owners").Pluck("id", &ids).Error,
		"Exec by the qualified name":    r.db.Exec("UPDATE main.qualified_owners SET id = 2").Error,
	} {
		if !errors.Is(err, shardid.ErrNoShard) {
			t.Errorf("%s: %v (read %v); want ErrNoShard", form, err, ids)
		}
	}
}

// TestAHashColumnOfATableMigratedByAnotherNameComparesExactly: a string
// hash column whose type the model leaves to the plugin gets an exact
// collation in a table migrated by another name than its model's
// (Migrator(db.Table(name)), a table per region), as in the model's own:
// GORM makes that table of a schema of its own, which the plugin types too.
func TestAHashColumnOfATableMigratedByAnotherNameComparesExactly(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		const table = "hc_members_eu"
		must(t, r.plugin.Migrator(r.db).DropTable(table))
		must(t, r.plugin.AutoMigrate(r.db.Table(table), &hcMember{}))
		must(t, r.plugin.AutoMigrate(r.db.Table(table), &hcMember{})) // again: nothing to change, nothing refused
		row := hcMember{Email: "dan@x.io"}
		must(t, r.db.Table(table).Create(&row).Error)
		var n int64
		must(t, r.direct[r.physicalOf(row.ID)].Table(table).Where("email = ?", "Dan@x.io").Count(&n).Error)
		if n != 0 {
			t.Fatalf("Dan@x.io finds the row of dan@x.io on its own database: the column does not compare exactly")
		}
		var found hcMember
		must(t, r.db.Table(table).Where("email = ?", "dan@x.io").First(&found).Error)
	})
}

// hcTyped's hash column has an exact type the model gives, shorter than an
// index prefix of TEXT.
type hcTyped struct {
	ID   int64  `shardid:"hash:Code"`
	Code string `gorm:"type:varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"`
}

// TestHashColumnOfAGivenExactTypeIsIndexed: the routing index of a hash
// column the model types as a short varchar covers the whole column.
func TestHashColumnOfAGivenExactTypeIsIndexed(t *testing.T) {
	b := backends[1] // mariadb: the type is MySQL's
	r := newRouting(t, b)
	m := r.plugin.Migrator(r.db)
	must(t, m.DropTable(&hcTyped{}))
	must(t, r.plugin.AutoMigrate(r.db, &hcTyped{}))
	if !m.HasIndex(&hcTyped{}, "idx_shardid_hc_typeds_code") {
		t.Fatal("no routing index on hc_typeds.code")
	}
}

type revCoded struct {
	ID   int64  `shardid:"hash:Code"`
	Code string `gorm:"type:char(8)"`
}

// PostgreSQL's char(n) compares ignoring trailing spaces ('ab' = 'ab '), as a
// PAD SPACE collation does: the migrator refuses it for a hash key, or else a
// lookup with a trailing space must still find the row, as one database does.
func TestPostgresCharHashColumnIsRefusedOrFindsTrailingSpaces(t *testing.T) {
	b := backends[2] // postgres
	dir := t.TempDir()
	db := open(t, b, dir, shardid.Config{Shards: shards(t, b, dir)})
	err := migrator(db).DropTable(&revCoded{})
	if err == nil {
		err = migrator(db).AutoMigrate(&revCoded{})
	}
	if errors.Is(err, shardid.ErrInvalidTag) {
		return // refused, as the README promises for loose comparisons
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&revCoded{Code: "ab"}).Error; err != nil {
		t.Fatal(err)
	}
	var got []revCoded
	err = db.Where("code = ?", "ab ").Find(&got).Error
	if err == nil && len(got) != 1 {
		t.Errorf("Where(code = 'ab '): %d rows, no error; the column finds 'ab' equal (one database returns it)", len(got))
	}
}

type revMailed struct {
	ID    int64  `shardid:"hash:Email"`
	Email string `gorm:"type:varchar(100)"`
}

// A hash column whose type the model gives is checked after the migration
// made it: the refusal must not leave the table, with its loose collation, on
// any shard.
func TestRefusedHashColumnMigrationLeavesNoTable(t *testing.T) {
	b := backends[1] // mariadb
	dir := t.TempDir()
	db := open(t, b, dir, shardid.Config{Shards: shards(t, b, dir)})
	_ = migrator(db).DropTable(&revMailed{})
	err := migrator(db).AutoMigrate(&revMailed{})
	if !errors.Is(err, shardid.ErrInvalidTag) {
		t.Fatalf("AutoMigrate of a loose hash column: %v, want ErrInvalidTag", err)
	}
	for i, d := range direct(t, b, dir) {
		if d.Migrator().HasTable("rev_maileds") {
			t.Errorf("refused AutoMigrate (%v) left rev_maileds on physical %d", err, i)
		}
	}
}

// hcFolded's hash key is tagged collation:loose: its column compares
// case- and accent-insensitively, and the key is hashed as LooseKey.
type hcFolded struct {
	ID    int64 `shardid:"hash:Email;collation:loose"`
	Email string
}

// TestLooseHashKeyFindsWhatItsColumnFinds: a key typed in another case (on
// the servers, with other accents and trailing spaces) finds through the
// plugin the row its column finds equal, as one database does.
func TestLooseHashKeyFindsWhatItsColumnFinds(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		column := map[string]string{
			"sqlite":   "email text COLLATE NOCASE", // ASCII case only
			"mariadb":  "email varchar(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
			"postgres": "email text COLLATE shardid_test_ai",
		}[b.name]
		for _, db := range r.direct {
			if b.name == "postgres" {
				must(t, db.Exec("CREATE COLLATION IF NOT EXISTS shardid_test_ai (provider = icu, locale = 'und-u-ks-level1', deterministic = false)").Error)
			}
			must(t, db.Exec("DROP TABLE IF EXISTS hc_foldeds").Error)
			must(t, db.Exec("CREATE TABLE hc_foldeds (id bigint PRIMARY KEY, "+column+")").Error)
		}
		must(t, r.plugin.AutoMigrate(r.db, &hcFolded{})) // the loose column is the model's choice, not refused
		variant := func(email string) string {
			switch b.name {
			case "sqlite":
				return strings.ToUpper(email)
			case "mariadb": // PAD SPACE
				return strings.ToUpper(strings.Replace(email, "u", "ú", 1)) + " "
			}
			return strings.ToUpper(strings.Replace(email, "u", "ú", 1))
		}
		missed := 0
		for i := range 40 {
			row := hcFolded{Email: fmt.Sprintf("user%d@example.com", i)}
			must(t, r.db.Create(&row).Error)
			key := variant(row.Email)
			var direct int64 // the premise: the column finds the row by the variant
			must(t, r.direct[r.physicalOf(row.ID)].Model(&hcFolded{}).Where("email = ?", key).Count(&direct).Error)
			if direct != 1 {
				t.Fatalf("the column finds %d rows for %q, want 1: not a loose column", direct, key)
			}
			var got hcFolded
			if err := r.db.Where("email = ?", key).First(&got).Error; err != nil || got.ID != row.ID {
				t.Errorf("Where(email = %q): %+v, %v; want row %d", key, got, err, row.ID)
			}
			got = hcFolded{}
			must(t, r.db.Clauses(shardid.ByKey(shardid.LooseKey(key))).Where("email = ?", key).First(&got).Error)
			if exact, _ := shardid.HashKey(key); r.physicalOfShard(int(exact%uint64(r.plugin.Layout().ShardCount()))) != r.physicalOf(row.ID) {
				missed++
			}
		}
		if missed == 0 {
			t.Fatal("every variant hashed byte for byte lands on its row's database: the test shows nothing")
		}
		if b.name == "mariadb" { // _general_ci weighs every supplementary character alike
			row := hcFolded{Email: "mahjong🀄@example.com"}
			must(t, r.db.Create(&row).Error)
			key := "mahjong😀@example.com"
			var direct int64
			must(t, r.direct[r.physicalOf(row.ID)].Model(&hcFolded{}).Where("email = ?", key).Count(&direct).Error)
			var got hcFolded
			if err := r.db.Where("email = ?", key).First(&got).Error; direct != 1 || err != nil || got.ID != row.ID {
				t.Errorf("Where(email = %q): %+v, %v; the column finds %d rows, want row %d", key, got, err, direct, row.ID)
			}
		}
	})
}

// String hash keys in columns given another type.
type (
	hcUUIDRef struct {
		ID  int64  `shardid:"hash:Ref"`
		Ref string `gorm:"type:uuid"`
	}
	hcIntRef struct {
		ID  int64  `shardid:"hash:Ref"`
		Ref string `gorm:"type:int"`
	}
	hcDomainRef struct {
		ID  int64  `shardid:"hash:Ref"`
		Ref string `gorm:"type:hc_work_email"`
	}
	hcBinaryRef struct {
		ID  int64  `shardid:"hash:Ref"`
		Ref string `gorm:"type:binary(16)"`
	}
	hcByteaRef struct {
		ID  int64  `shardid:"hash:Ref"`
		Ref string `gorm:"type:bytea"`
	}
	// Tagged collation:loose, as the refusal of a loose collation advises:
	// LooseKey folds text, not the spellings a type reads alike.
	hcLooseIntRef struct {
		ID  int64  `shardid:"hash:Ref;collation:loose"`
		Ref string `gorm:"type:int"`
	}
	hcLooseUUIDRef struct {
		ID  int64  `shardid:"hash:Ref;collation:loose"`
		Ref string `gorm:"type:uuid"`
	}
)

// TestAHashColumnThatComparesAsItsTypeIsRefused: a string hash key in a
// column that compares its values as its type (PostgreSQL's uuid, stored
// lower-cased; a number; a citext under two domains; MariaDB's binary(n),
// which pads a short value; PostgreSQL's bytea, which reads a string bound
// to it as bytea's input, storing the key \x6162 as ab; a SQLite column of
// numeric affinity, which stores the key 007 as 7) finds rows the
// key's hash does not place there: refused, as a loose collation is, and
// for a key tagged collation:loose too (007 and 7, a uuid in capitals or
// without hyphens, fold to other keys).
func TestAHashColumnThatComparesAsItsTypeIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		models := map[string][]any{
			"sqlite":   {&hcIntRef{}, &hcUUIDRef{}, &hcLooseIntRef{}, &hcLooseUUIDRef{}}, // INTEGER and NUMERIC affinity: '007' is stored as 7
			"mariadb":  {&hcBinaryRef{}, &hcIntRef{}, &hcLooseIntRef{}},
			"postgres": {&hcUUIDRef{}, &hcIntRef{}, &hcDomainRef{}, &hcByteaRef{}, &hcLooseIntRef{}, &hcLooseUUIDRef{}},
		}[b.name]
		if b.name == "postgres" {
			for _, db := range r.direct {
				must(t, db.Exec("CREATE EXTENSION IF NOT EXISTS citext").Error)
				must(t, db.Exec("DROP DOMAIN IF EXISTS hc_work_email CASCADE").Error)
				must(t, db.Exec("DROP DOMAIN IF EXISTS hc_email CASCADE").Error)
				must(t, db.Exec("CREATE DOMAIN hc_email AS citext").Error)
				must(t, db.Exec("CREATE DOMAIN hc_work_email AS hc_email").Error)
			}
		}
		for _, model := range models {
			must(t, r.plugin.Migrator(r.db).DropTable(model))
			if err := r.plugin.AutoMigrate(r.db, model); !errors.Is(err, shardid.ErrInvalidTag) || !strings.Contains(err.Error(), ".ref") {
				t.Errorf("a string hash key in the column of %T: %v; want ErrInvalidTag naming it", model, err)
			}
		}
	})
}

// hcSizedCode's hash column holds ten characters; hcSizedText's is text,
// which keeps a longer key whole.
type (
	hcSizedCode struct {
		ID   int64  `shardid:"hash:Code"`
		Code string `gorm:"size:10;uniqueIndex"`
	}
	hcSizedText struct {
		ID   int64  `shardid:"hash:Code"`
		Code string `gorm:"type:text;size:10"`
	}
	hcRegionKey struct { // an enum's labels compare exactly
		ID     int64  `shardid:"hash:Region"`
		Region string `gorm:"type:hc_region"`
	}
)

// TestAHashKeyLongerThanItsColumnIsRefused: the database drops the trailing
// spaces of a value past its column's size, and would store a key other
// than the one its row was placed by: such a key is refused, nothing
// written.
func TestAHashKeyLongerThanItsColumnIsRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		must(t, r.plugin.Migrator(r.db).DropTable(&hcSizedCode{}))
		must(t, r.plugin.AutoMigrate(r.db, &hcSizedCode{}))
		row := hcSizedCode{Code: "ABCDE00000  "}
		if err := r.db.Create(&row).Error; !errors.Is(err, shardid.ErrNoShard) {
			t.Errorf("a key two spaces past its column's size: %v; want ErrNoShard", err)
		}
		if n := r.count(t, &hcSizedCode{}); n != 0 {
			t.Errorf("%d rows written", n)
		}
		must(t, r.db.Create(&hcSizedCode{Code: "ABCDE00000"}).Error)
		if b.name == "postgres" {
			must(t, r.plugin.Migrator(r.db).DropTable(&hcSizedText{}))
			must(t, r.plugin.AutoMigrate(r.db, &hcSizedText{}))
			must(t, r.db.Create(&hcSizedText{Code: "ABCDE00000  "}).Error) // text keeps it whole
		}
	})
}

// TestAHashKeyInAnEnumColumnMigrates: PostgreSQL compares an enum's labels
// exactly, as the key is hashed.
func TestAHashKeyInAnEnumColumnMigrates(t *testing.T) {
	b := backends[2] // postgres
	r := newRouting(t, b)
	must(t, r.plugin.Migrator(r.db).DropTable(&hcRegionKey{}))
	for _, db := range r.direct {
		must(t, db.Exec("DROP TYPE IF EXISTS hc_region").Error)
		must(t, db.Exec("CREATE TYPE hc_region AS ENUM ('north', 'south')").Error)
	}
	must(t, r.plugin.AutoMigrate(r.db, &hcRegionKey{}))
	row := hcRegionKey{Region: "north"}
	must(t, r.db.Create(&row).Error)
	var got hcRegionKey
	must(t, r.db.Where("region = ?", "north").First(&got).Error)
	must(t, r.plugin.Migrator(r.db).DropTable(&hcRegionKey{}))
}

// Loose hash keys in columns of a language's collation, and of the root's.
type (
	hcGermanKey struct {
		ID    int64  `shardid:"hash:Email;collation:loose"`
		Email string `gorm:"type:varchar(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_german2_ci"`
	}
	hcRootKey struct {
		ID    int64  `shardid:"hash:Email;collation:loose"`
		Email string `gorm:"type:varchar(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"`
	}
	hcAccentKey struct { // the root's, telling accents apart: no coarser than the key
		ID    int64  `shardid:"hash:Email;collation:loose"`
		Email string `gorm:"type:varchar(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_uca1400_as_ci"`
	}
)

// TestALooseHashKeyOnALanguagesCollationIsRefused: collation:loose folds
// keys as the root collation compares them; MariaDB's german2_ci finds
// müller equal to mueller, which the key tells apart: refused.
func TestALooseHashKeyOnALanguagesCollationIsRefused(t *testing.T) {
	b := backends[1] // mariadb
	r := newRouting(t, b)
	m := r.plugin.Migrator(r.db)
	must(t, m.DropTable(&hcGermanKey{}, &hcRootKey{}))
	if err := r.plugin.AutoMigrate(r.db, &hcGermanKey{}); !errors.Is(err, shardid.ErrInvalidTag) || !strings.Contains(err.Error(), "utf8mb4_german2_ci") {
		t.Errorf("a loose key on utf8mb4_german2_ci: %v; want ErrInvalidTag naming it", err)
	}
	must(t, r.plugin.AutoMigrate(r.db, &hcRootKey{}, &hcAccentKey{}))
	must(t, m.DropTable(&hcGermanKey{}, &hcRootKey{}, &hcAccentKey{}))
}

// Loose hash keys in MariaDB columns of an 8-bit character set's
// "general" collation, which is not MySQL's general algorithm (cp1250's finds
// S equal to §), and of utf8mb3's, which weighs as utf8mb4's.
type (
	hcCp1250Key struct {
		ID    int64  `shardid:"hash:Email;collation:loose"`
		Email string `gorm:"type:varchar(191) CHARACTER SET cp1250 COLLATE cp1250_general_ci"`
	}
	hcUtf8mb3Key struct {
		ID    int64  `shardid:"hash:Email;collation:loose"`
		Email string `gorm:"type:varchar(191) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci"`
	}
)

// TestALooseHashKeyOnALegacyCharacterSetsCollationIsRefused: LooseKey folds
// as the Unicode collations compare; cp1250_general_ci finds S equal to §
// and macce_general_ci M equal to N, which the key tells apart: a lookup by
// one would miss the row of the other. Refused, as a language's collation is.
func TestALooseHashKeyOnALegacyCharacterSetsCollationIsRefused(t *testing.T) {
	b := backends[1] // mariadb
	r := newRouting(t, b)
	m := r.plugin.Migrator(r.db)
	must(t, m.DropTable(&hcCp1250Key{}, &hcUtf8mb3Key{}))
	if err := r.plugin.AutoMigrate(r.db, &hcCp1250Key{}); !errors.Is(err, shardid.ErrInvalidTag) || !strings.Contains(err.Error(), "cp1250_general_ci") {
		t.Errorf("a loose key on cp1250_general_ci: %v; want ErrInvalidTag naming it", err)
	}
	must(t, r.plugin.AutoMigrate(r.db, &hcUtf8mb3Key{}))
	must(t, m.DropTable(&hcCp1250Key{}, &hcUtf8mb3Key{}))
}

// Loose hash keys in PostgreSQL columns of nondeterministic ICU collations:
// a language's, one that ignores punctuation, one that compares digits as
// numbers, and the root's, as a locale tag and in ICU's own form.
type (
	hcDanishKey struct {
		ID    int64  `shardid:"hash:Email;collation:loose"`
		Email string `gorm:"type:text COLLATE shardid_test_da_ci"`
	}
	hcShiftedKey struct {
		ID    int64  `shardid:"hash:Email;collation:loose"`
		Email string `gorm:"type:text COLLATE shardid_test_shifted_ci"`
	}
	hcNumericKey struct {
		ID    int64  `shardid:"hash:Email;collation:loose"`
		Email string `gorm:"type:text COLLATE shardid_test_numeric_ci"`
	}
	hcEnglishKey struct {
		ID    int64  `shardid:"hash:Email;collation:loose"`
		Email string `gorm:"type:text COLLATE shardid_test_en_ci"`
	}
	hcICUFormKey struct {
		ID    int64  `shardid:"hash:Email;collation:loose"`
		Email string `gorm:"type:text COLLATE shardid_test_icuform_ci"`
	}
)

// TestALooseHashKeyOnAPostgresCollationItDoesNotFollowIsRefused: LooseKey
// folds as ICU's root collation compares; Danish finds "aa" equal to "å",
// alternate=shifted "a-b" to "ab", numeric ordering "01" to "1", which the
// key tells apart, so a lookup by one spelling would miss the row of the
// other on one database's column. Refused, as MariaDB's german2_ci is; the
// root's, and English (which CLDR does not tailor), migrate.
func TestALooseHashKeyOnAPostgresCollationItDoesNotFollowIsRefused(t *testing.T) {
	b := backends[2] // postgres
	r := newRouting(t, b)
	m := r.plugin.Migrator(r.db)
	locales := map[string]string{
		"shardid_test_da_ci":      "da-u-ks-level1",
		"shardid_test_shifted_ci": "und-u-ka-shifted-ks-level2",
		"shardid_test_numeric_ci": "und-u-kn-true-ks-level2",
		"shardid_test_en_ci":      "en-US-u-ks-level2",
		"shardid_test_icuform_ci": "und@colStrength=secondary",
	}
	for _, db := range r.direct {
		for name, locale := range locales {
			must(t, db.Exec("CREATE COLLATION IF NOT EXISTS "+name+" (provider = icu, locale = '"+locale+"', deterministic = false)").Error)
		}
	}
	// The premise: the column finds what the keys tell apart.
	var equal bool
	must(t, r.direct[0].Raw("SELECT 'aa@x.io' = 'å@x.io' COLLATE shardid_test_da_ci AND 'a-b@x.io' = 'ab@x.io' COLLATE shardid_test_shifted_ci AND 'n01@x.io' = 'n1@x.io' COLLATE shardid_test_numeric_ci").Scan(&equal).Error)
	if !equal || shardid.LooseKey("aa@x.io") == shardid.LooseKey("å@x.io") || shardid.LooseKey("a-b@x.io") == shardid.LooseKey("ab@x.io") {
		t.Fatalf("the collations find the keys equal: %v, and LooseKey tells them apart: the test shows nothing", equal)
	}
	models := []any{&hcDanishKey{}, &hcShiftedKey{}, &hcNumericKey{}, &hcEnglishKey{}, &hcICUFormKey{}}
	must(t, m.DropTable(models...))
	for _, refused := range []struct {
		model     any
		collation string
	}{{&hcDanishKey{}, "shardid_test_da_ci"}, {&hcShiftedKey{}, "shardid_test_shifted_ci"}, {&hcNumericKey{}, "shardid_test_numeric_ci"}} {
		if err := r.plugin.AutoMigrate(r.db, refused.model); !errors.Is(err, shardid.ErrInvalidTag) || !strings.Contains(err.Error(), refused.collation) {
			t.Errorf("a loose key on %s: %v; want ErrInvalidTag naming it", refused.collation, err)
		}
	}
	must(t, r.plugin.AutoMigrate(r.db, &hcEnglishKey{}, &hcICUFormKey{}))
	must(t, m.DropTable(models...))
}

// Hash columns of ten characters given as their type, and one left to the
// plugin without a size (varchar(191) on MariaDB).
type (
	hcTypedVarcharCode struct {
		ID   int64  `shardid:"hash:Code"`
		Code string `gorm:"type:varchar(10)"`
	}
	hcTypedNopadCode struct {
		ID   int64  `shardid:"hash:Code"`
		Code string `gorm:"type:varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"`
	}
	hcUnsizedCode struct {
		ID   int64 `shardid:"hash:Code"`
		Code string
	}
)

// TestAHashKeyLongerThanAVarcharItsTypeOrThePluginGivesIsRefused: the
// database drops the trailing spaces past a varchar's size whether the
// model gives the type (varchar(10)) or leaves it, without a size, to the
// plugin's migrator (varchar(191) on MariaDB): the row would be stored
// under a key other than the one it was placed by, on a database a lookup
// by the stored key does not ask. Refused, nothing written.
func TestAHashKeyLongerThanAVarcharItsTypeOrThePluginGivesIsRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		m := r.plugin.Migrator(r.db)
		var typed any = &hcTypedVarcharCode{}
		if b.name == "mariadb" {
			typed = &hcTypedNopadCode{}
		}
		models := []any{typed}
		if b.name == "mariadb" { // PostgreSQL's is text, which keeps a key whole
			models = append(models, &hcUnsizedCode{})
		}
		for _, model := range models {
			must(t, m.DropTable(model))
			must(t, r.plugin.AutoMigrate(r.db, model))
		}
		create := func(code string) error {
			if b.name == "mariadb" {
				return r.db.Create(&hcTypedNopadCode{Code: code}).Error
			}
			return r.db.Create(&hcTypedVarcharCode{Code: code}).Error
		}
		for i := range 8 { // each would land, stored cut, on the shard of its padded key
			if err := create(fmt.Sprintf("ABCDE0000%d  ", i)); !errors.Is(err, shardid.ErrNoShard) {
				t.Errorf("a key two spaces past its varchar(10): %v; want ErrNoShard", err)
			}
		}
		if n := r.count(t, typed); n != 0 {
			t.Errorf("%d rows written", n)
		}
		must(t, create("ABCDE00000"))
		if b.name == "mariadb" {
			for i := range 8 {
				long := strings.Repeat("a", 190) + fmt.Sprint(i) + "  "
				if err := r.db.Create(&hcUnsizedCode{Code: long}).Error; !errors.Is(err, shardid.ErrNoShard) {
					t.Errorf("a key two spaces past its varchar(191): %v; want ErrNoShard", err)
				}
			}
			if n := r.count(t, &hcUnsizedCode{}); n != 0 {
				t.Errorf("%d rows written", n)
			}
			must(t, r.db.Create(&hcUnsizedCode{Code: strings.Repeat("a", 191)}).Error)
		}
		for _, model := range models {
			must(t, m.DropTable(model))
		}
	})
}

// TestAnUpdateToAHashKeyLongerThanItsColumnIsRefused: an update whose new
// key, padded past its column's size, hashes to the row's own shard would
// be stored cut to a key whose hash names another database, where a lookup
// by it does not find the row: refused, as on Create.
func TestAnUpdateToAHashKeyLongerThanItsColumnIsRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		must(t, r.plugin.Migrator(r.db).DropTable(&hcSizedCode{}))
		must(t, r.plugin.AutoMigrate(r.db, &hcSizedCode{}))
		row := hcSizedCode{Code: "ROW0000000"}
		must(t, r.db.Create(&row).Error)
		count := uint64(r.plugin.Layout().ShardCount())
		shardOf := func(key string) int { h, _ := shardid.HashKey(key); return int(h % count) }
		own := shardOf(row.Code)
		stored := "" // a key of ten whose padded form hashes to the row's shard, and itself to another database's
		for i := 0; stored == ""; i++ {
			key := fmt.Sprintf("K%09d", i)
			if shardOf(key+"  ") == own && r.physicalOfShard(shardOf(key)) != r.physicalOf(row.ID) {
				stored = key
			}
		}
		err := r.db.Model(&row).Update("code", stored+"  ").Error
		if !errors.Is(err, shardid.ErrCrossShard) {
			t.Errorf("an update to a key two spaces past its column's size: %v; want ErrCrossShard", err)
		}
		var got []hcSizedCode
		if err := r.db.Where("code = ?", stored).Find(&got).Error; err != nil || r.count(t, &hcSizedCode{}, "code = ?", stored) != int64(len(got)) {
			t.Errorf("the row stored under %q: found %v, %v; its databases hold %d", stored, got, err, r.count(t, &hcSizedCode{}, "code = ?", stored))
		}
	})
}

// hcToken's hash key is bytes (bytea on PostgreSQL, varbinary on MariaDB,
// blob on SQLite).
type hcToken struct {
	ID    int64  `shardid:"hash:Token"`
	Token []byte `gorm:"size:64"`
}

// TestABytesHashKeyGivenAsTextFindsWhatItsColumnFinds: a []byte key given
// in a condition as a string is compared by PostgreSQL as bytea's input
// reads it (\x6162 and \141b are the bytes ab), so the plugin hashes those
// bytes, not the text's, and finds the row one database finds; on MariaDB
// the text is its bytes, and SQLite finds no blob equal to text.
func TestABytesHashKeyGivenAsTextFindsWhatItsColumnFinds(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &hcToken{})
		elsewhere := 0
		for i := range 8 {
			token := []byte(fmt.Sprintf("t%d\\k", i))
			row := hcToken{Token: token}
			must(t, r.db.Create(&row).Error)
			spellings := []string{string(token), fmt.Sprintf(`\x%x`, token), strings.ReplaceAll(string(token), `\`, `\\`), strings.ReplaceAll(string(token), `\`, `\134`)}
			for _, key := range spellings {
				var direct int64
				if err := r.direct[r.physicalOf(row.ID)].Model(&hcToken{}).Where("token = ?", key).Count(&direct).Error; err != nil {
					direct = -1 // PostgreSQL refuses the text as bytea input
				}
				var found []hcToken
				err := r.db.Where("token = ?", key).Find(&found).Error
				switch {
				case direct < 0:
					if err == nil && len(found) != 0 {
						t.Errorf("Where(token = %q): %d rows; its database refuses the text", key, len(found))
					}
				case err != nil || int64(len(found)) != direct:
					t.Errorf("Where(token = %q): %d rows, %v; its database finds %d", key, len(found), err, direct)
				}
				if h, _ := shardid.HashKey(key); direct == 1 && r.physicalOfShard(int(h%uint64(r.plugin.Layout().ShardCount()))) != r.physicalOf(row.ID) {
					elsewhere++
				}
			}
		}
		if b.name == "postgres" && elsewhere == 0 {
			t.Fatal("every spelling the column finds hashes, as text, to its row's database: the test shows nothing")
		}
	})
}

// String hash keys of tables named with their schema, one exact and one
// in a column given a loose collation.
type (
	hcMainMember struct {
		ID    int64 `shardid:"hash:Email"`
		Email string
	}
	hcPublicMember struct {
		ID    int64 `shardid:"hash:Email"`
		Email string
	}
	hcMainNocase struct {
		ID    int64  `shardid:"hash:Email"`
		Email string `gorm:"type:text COLLATE NOCASE"`
	}
	hcPublicCitext struct {
		ID    int64  `shardid:"hash:Email"`
		Email string `gorm:"type:citext"`
	}
)

func (hcMainMember) TableName() string   { return "main.hc_main_members" }
func (hcPublicMember) TableName() string { return "public.hc_public_members" }
func (hcMainNocase) TableName() string   { return "main.hc_main_nocases" }
func (hcPublicCitext) TableName() string { return "public.hc_public_citexts" }

// TestAStringHashKeyOfATableNamedWithItsSchemaIsChecked: the check of a
// string hash column reads the column of a table whose name carries its
// schema (main.accounts on SQLite, public.accounts on PostgreSQL) where the
// catalog lists it, as accounts in that schema: an exact one migrates, a
// loose one is refused, where both failed, the column not found.
func TestAStringHashKeyOfATableNamedWithItsSchemaIsChecked(t *testing.T) {
	for _, b := range []backend{backends[0], backends[2]} { // a MariaDB schema is a database: each physical one has its own name
		t.Run(b.name, func(t *testing.T) { aStringHashKeyOfATableNamedWithItsSchemaIsChecked(t, b) })
	}
}

func aStringHashKeyOfATableNamedWithItsSchemaIsChecked(t *testing.T, b backend) {
	{
		r := newRouting(t, b)
		m := r.plugin.Migrator(r.db)
		exact, loose := any(&hcMainMember{}), any(&hcMainNocase{})
		if b.name == "postgres" {
			exact, loose = &hcPublicMember{}, &hcPublicCitext{}
			for _, db := range r.direct {
				must(t, db.Exec("CREATE EXTENSION IF NOT EXISTS citext").Error)
			}
		}
		must(t, m.DropTable(exact, loose))
		must(t, r.plugin.AutoMigrate(r.db, exact))
		if err := r.plugin.AutoMigrate(r.db, loose); !errors.Is(err, shardid.ErrInvalidTag) || !strings.Contains(err.Error(), ".email") {
			t.Errorf("a loose hash column of a table named with its schema: %v; want ErrInvalidTag naming it", err)
		}
		must(t, m.DropTable(exact, loose))
	}
}
