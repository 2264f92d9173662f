package integration

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// The application before the plugin: authors with a many2many of tags,
// whose join table plain GORM made with a foreign key to each side.
type (
	AdM2mOldAuthor struct {
		gorm.Model
		Name string
		Tags []AdM2mTag `gorm:"many2many:ad_m2m_author_tags;joinForeignKey:AuthorID;joinReferences:TagID"`
	}
	// AdM2mTag stays untagged: its rows are the plugin's database's.
	AdM2mTag struct {
		gorm.Model
		Name string
	}
	AdM2mAuthor struct {
		gorm.Model
		ID   uint64 `shardid:""`
		Name string
		Tags []AdM2mTag `gorm:"many2many:ad_m2m_author_tags;joinForeignKey:AuthorID;joinReferences:TagID"`
	}
)

func (AdM2mOldAuthor) TableName() string { return "ad_m2m_authors" }
func (AdM2mTag) TableName() string       { return "ad_m2m_tags" }
func (AdM2mAuthor) TableName() string    { return "ad_m2m_authors" }

// lockedBuffer is a log's output, written by several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestAdoptingWarnsOfAForeignKeyToAnUnshardedTable: on MariaDB and
// PostgreSQL, adopting tables whose many2many join table has a foreign key
// to an untagged model's table: the migration warns of that key, naming it
// (not of the key to the sharded authors), as it checks links on the old
// database against the old copy of the tags, which lacks those made on the
// plugin's database since; dropped, as docs/adopting.md says, a new tag is
// linked to an old author.
func TestAdoptingWarnsOfAForeignKeyToAnUnshardedTable(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir, old, _, main := adoptionRig(t, b, "ad_m2m_author_tags", "ad_m2m_authors", "ad_m2m_tags")
		must(t, main.Migrator().DropTable("ad_m2m_author_tags", "ad_m2m_tags"))
		must(t, old.AutoMigrate(&AdM2mOldAuthor{}, &AdM2mTag{}))
		tags := []AdM2mTag{{Name: "go"}, {Name: "sql"}}
		must(t, old.Create(&tags).Error)
		authors := []AdM2mOldAuthor{{Name: "ada", Tags: tags[:1]}, {Name: "bob", Tags: tags}}
		must(t, old.Omit("Tags.*").Create(&authors).Error)
		keyToTags, keyToAuthors := "fk_ad_m2m_author_tags_ad_m2m_tag", "fk_ad_m2m_author_tags_ad_m2m_old_author"
		for _, key := range []string{keyToTags, keyToAuthors} {
			if !old.Migrator().HasConstraint("ad_m2m_author_tags", key) {
				t.Fatalf("plain GORM made no foreign key %s", key)
			}
		}

		var log lockedBuffer
		count := shardid.Layout{}.ShardCount()
		db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		ids := shardid.New(shardid.Config{Atomic: b.atomicity(), Log: slog.New(slog.NewTextHandler(&log, nil)), Shards: []shardid.Shard{
			{Name: "old", Dialector: b.physical(t, dir, moveSource), Logical: []shardid.Range{{From: 0, To: count - 1}}},
			{Name: "second", Dialector: b.physical(t, dir, moveTarget)},
		}})
		must(t, db.Use(ids))
		t.Cleanup(func() { _ = ids.Close() })
		must(t, ids.AutoMigrate(db, &AdM2mAuthor{}, &AdM2mTag{}))
		var warned []string
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.Contains(line, "foreign key to a table that is not sharded") {
				warned = append(warned, line)
			}
		}
		if len(warned) != 1 || !strings.Contains(warned[0], "foreign_key="+keyToTags) || !strings.Contains(warned[0], "references=ad_m2m_tags") || !strings.Contains(warned[0], "database=old") {
			t.Fatalf("the migration's warnings of foreign keys to unsharded tables: %q, want one of %s", warned, keyToTags)
		}

		// The tags copied to the plugin's database, and a new one made
		// there: with the key, linking it to an old author is refused.
		var copied []AdM2mTag
		must(t, old.Find(&copied).Error)
		must(t, db.Create(&copied).Error)
		if b.name == "postgres" {
			must(t, db.Exec("SELECT setval('ad_m2m_tags_id_seq', (SELECT max(id) FROM ad_m2m_tags))").Error)
		}
		fresh := AdM2mTag{Name: "new"}
		must(t, db.Create(&fresh).Error)
		var ada AdM2mAuthor
		must(t, db.First(&ada, authors[0].ID).Error)
		if err := db.Model(&ada).Omit("Tags.*").Association("Tags").Append(&fresh); err == nil {
			t.Fatalf("a new tag linked to an old author through the key to the old tags: no error, want the database's refusal")
		}

		// As docs/adopting.md says: the key dropped, then the old copy.
		must(t, old.Migrator().DropConstraint("ad_m2m_author_tags", keyToTags))
		must(t, old.Migrator().DropTable("ad_m2m_tags"))
		must(t, db.Model(&ada).Omit("Tags.*").Association("Tags").Append(&fresh))
		must(t, db.Preload("Tags").First(&ada, authors[0].ID).Error)
		if names := fmt.Sprint(ada.Tags); len(ada.Tags) != 2 || !strings.Contains(names, "new") {
			t.Fatalf("the old author's tags: %+v, want go and new", ada.Tags)
		}
		var links int64
		must(t, old.Table("ad_m2m_author_tags").Count(&links).Error)
		if links != 4 {
			t.Fatalf("the old database holds %d links, want 4", links)
		}
	})
}
