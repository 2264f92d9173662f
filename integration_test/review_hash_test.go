package integration

import (
	"errors"
	"testing"

	"github.com/shardid/shardid"
)

type revCoded struct {
	ID   int64  `shardid:"hash:Code"`
	Code string `gorm:"type:char(8)"`
}

// PostgreSQL's char(n) compares ignoring trailing spaces ('ab' = 'ab '), as a
// PAD SPACE collation does, but the migrator accepts it for a hash key: a
// lookup with a trailing space goes to another shard and finds nothing.
func TestReviewPostgresCharHashColumnComparesLoosely(t *testing.T) {
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
// made it: the refusal leaves the table, with its loose collation, on every
// shard.
func TestReviewRefusedHashColumnMigrationLeavesTheTable(t *testing.T) {
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
