package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// The application before the plugin: plain GORM on one database,
// gorm.Model's auto-increment keys, posts with a foreign key to their
// author.
type (
	AdOldAuthor struct {
		gorm.Model
		Name  string
		Posts []AdOldPost `gorm:"foreignKey:AuthorID"`
	}
	AdOldPost struct {
		gorm.Model
		AuthorID uint
		Title    string
	}
)

func (AdOldAuthor) TableName() string { return "ad_authors" }
func (AdOldPost) TableName() string   { return "ad_posts" }

// The same tables once the plugin is adopted, as docs/adopting.md says:
// an ID beside gorm.Model hides its ID; uint64 keeps MariaDB's
// BIGINT UNSIGNED columns as they are.
type (
	AdAuthor struct {
		gorm.Model
		ID    uint64 `shardid:""`
		Name  string
		Posts []AdPost `gorm:"foreignKey:AuthorID"`
	}
	AdPost struct {
		gorm.Model
		ID       uint64 `shardid:"colocate:AuthorID"`
		AuthorID uint64
		Title    string
	}
)

// AdTopic stays untagged: its rows live on the plugin's own database.
type AdTopic struct {
	ID   uint
	Name string
}

func (AdAuthor) TableName() string { return "ad_authors" }
func (AdPost) TableName() string   { return "ad_posts" }

// adoptionRig starts an adoption test on b afresh: the plugin's tables gone
// from its own database, tables and a move's leftovers gone from the two
// physical databases, and again at the test's end. It returns the test's
// directory, the old database, the second one and the plugin's own.
func adoptionRig(t *testing.T, b backend, tables ...string) (dir string, old, second, main *gorm.DB) {
	dir = t.TempDir()
	phys := direct(t, b, dir)
	old, second = phys[moveSource], phys[moveTarget]
	main, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	for _, table := range []string{"shardid_shard_map", "shardid_moves", "shardid_tables", "shardid_process_maps", "shardid_shard_databases", "shardid_layout"} {
		must(t, main.Exec("DROP TABLE IF EXISTS "+table).Error)
	}
	var dropped []any
	for _, table := range append(tables, "shardid_move_fence", "shardid_move_changes") {
		dropped = append(dropped, table)
	}
	for _, db := range []*gorm.DB{old, second} {
		must(t, db.Migrator().DropTable(dropped...))
		must(t, dropFenceTriggers(db, b.name))
	}
	t.Cleanup(func() {
		for _, db := range []*gorm.DB{old, second} {
			_ = db.Migrator().DropTable(dropped...)
			_ = dropFenceTriggers(db, b.name)
		}
		_ = main.Exec("DROP TABLE IF EXISTS shardid_moves").Error
	})
	return dir, old, second, main
}

// TestAdoptingAnExistingDatabase is the path of docs/adopting.md: an
// application's database of auto-increment rows becomes the one physical
// shard of every logical shard, its rows read and written by their old
// IDs, children of old parents placed beside them, and later half the
// logical shards, the old rows among them, moved to a second database.
func TestAdoptingAnExistingDatabase(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir, old, second, main := adoptionRig(t, b, "ad_posts", "ad_authors", "ad_topics")
		must(t, main.Migrator().DropTable("ad_topics"))

		// The application as it was: thousands of rows, each post's key
		// of another logical shard than its author's, mostly.
		must(t, old.AutoMigrate(&AdOldAuthor{}, &AdOldPost{}, &AdTopic{}))
		must(t, old.Create(&[]AdTopic{{Name: "go"}, {Name: "sql"}}).Error)
		authors := make([]AdOldAuthor, 3000)
		for i := range authors {
			authors[i].Name = fmt.Sprintf("author-%d", i)
		}
		must(t, old.CreateInBatches(authors, 500).Error)
		posts := make([]AdOldPost, 6000)
		for i := range posts {
			posts[i] = AdOldPost{AuthorID: authors[(i*7)%len(authors)].ID, Title: fmt.Sprintf("post-%d", i)}
		}
		must(t, old.CreateInBatches(posts, 500).Error)
		postsOf := map[uint]int{}
		for _, p := range posts {
			postsOf[p.AuthorID]++
		}

		// The plugin's own database is another database than the old one
		// (the same server here): a shard cannot be it.
		count := shardid.Layout{}.ShardCount()
		oldShard := shardid.Shard{Name: "old", Dialector: b.physical(t, dir, moveSource), Logical: []shardid.Range{{From: 0, To: count - 1}}}
		onOld, err := gorm.Open(b.physical(t, dir, moveSource), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		if err := onOld.Use(shardid.New(shardid.Config{Shards: []shardid.Shard{oldShard}})); !errors.Is(err, shardid.ErrInvalidConfig) {
			t.Fatalf("the old database as the plugin's and as its only shard: %v, want ErrInvalidConfig", err)
		}
		db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		ids := shardid.New(shardid.Config{Atomic: b.atomicity(), Shards: []shardid.Shard{
			oldShard,
			{Name: "second", Dialector: b.physical(t, dir, moveTarget)}, // added later, holding nothing yet
		}})
		must(t, db.Use(ids))
		t.Cleanup(func() { _ = ids.Close() })
		must(t, ids.AutoMigrate(db, &AdAuthor{}, &AdPost{}, &AdTopic{}))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()

		// An untagged model is the plugin's database's: its old rows are
		// read there once copied.
		var topics []AdTopic
		must(t, db.Find(&topics).Error)
		if len(topics) != 0 {
			t.Fatalf("the plugin's database holds %d topics before the copy, want none", len(topics))
		}
		must(t, old.Find(&topics).Error)
		must(t, db.Create(&topics).Error)
		must(t, old.Migrator().DropTable(&AdTopic{}))
		if b.name == "postgres" { // rows written with their keys leave the sequence behind them
			must(t, db.Exec("SELECT setval('ad_topics_id_seq', (SELECT max(id) FROM ad_topics))").Error)
		}
		must(t, db.Create(&AdTopic{Name: "new"}).Error)
		topics = nil
		must(t, db.Order("id").Find(&topics).Error)
		if len(topics) != 3 || topics[1].Name != "sql" || topics[2].ID != 3 {
			t.Fatalf("topics after the copy: %+v", topics)
		}

		// What the migrator did to the old tables: rows and indexes kept,
		// an index on the colocate column added, the tables recorded; the
		// key's auto-increment left, for the application to drop.
		var n int64
		must(t, old.Table("ad_posts").Count(&n).Error)
		if n != int64(len(posts)) {
			t.Fatalf("ad_posts has %d rows after the migration, want %d", n, len(posts))
		}
		for _, index := range []string{"idx_ad_posts_deleted_at", "idx_shardid_ad_posts_author_id"} {
			if !old.Migrator().HasIndex("ad_posts", index) {
				t.Errorf("ad_posts lacks the index %s after the migration", index)
			}
		}
		var placement string
		must(t, main.Raw("SELECT placement FROM shardid_tables WHERE name = 'ad_posts'").Scan(&placement).Error)
		if placement != "colocate:author_id" {
			t.Errorf("shardid_tables records ad_posts' placement %q, want colocate:author_id", placement)
		}
		if !autoIncrementKey(t, old, b.name, "ad_authors") || !autoIncrementKey(t, old, b.name, "ad_posts") {
			t.Errorf("the migrator changed the old key's auto-increment; docs/adopting.md says it leaves it")
		}
		if !second.Migrator().HasTable("ad_posts") || autoIncrementKey(t, second, b.name, "ad_posts") {
			t.Errorf("the second database lacks ad_posts with a plain key after the migration")
		}
		dropAutoIncrement(t, old, b.name, "ad_authors")
		dropAutoIncrement(t, old, b.name, "ad_posts")
		if autoIncrementKey(t, old, b.name, "ad_authors") {
			t.Fatalf("ad_authors' key is still auto-increment after the documented statements")
		}

		// Old rows, by their old IDs, each on the database of its shard.
		if misplaced, err := ids.Audit(ctx); err != nil || len(misplaced) != 0 {
			t.Fatalf("the audit after the migration: %v %+v, want nothing misplaced", err, misplaced)
		}
		for i := 0; i < len(authors); i += 97 {
			var a AdAuthor
			must(t, db.Preload("Posts").First(&a, authors[i].ID).Error)
			if a.Name != authors[i].Name || len(a.Posts) != postsOf[authors[i].ID] {
				t.Fatalf("old author %d: %q with %d posts, want %q with %d", authors[i].ID, a.Name, len(a.Posts), authors[i].Name, postsOf[authors[i].ID])
			}
		}
		var p AdPost
		must(t, db.First(&p, posts[5000].ID).Error)
		if uint(p.AuthorID) != posts[5000].AuthorID {
			t.Fatalf("old post %d: author %d, want %d", p.ID, p.AuthorID, posts[5000].AuthorID)
		}
		must(t, db.Model(&p).Update("title", "edited").Error)
		// Save writes the colocate column too, whose shard is not the old
		// key's: the value the row holds is written again; another
		// author's is refused, nothing written.
		p.Title = "saved"
		must(t, db.Save(&p).Error)
		moved := p
		moved.Title, moved.AuthorID = "moved", uint64(authors[0].ID)
		if err := db.Save(&moved).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Fatalf("Save of an old post with another author: %v, want ErrCrossShard", err)
		}
		if err := db.Model(&p).Update("author_id", authors[0].ID).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Fatalf("Update of an old post's author: %v, want ErrCrossShard", err)
		}
		var title string
		must(t, old.Table("ad_posts").Where("id = ?", p.ID).Pluck("title", &title).Error)
		if title != "saved" {
			t.Fatalf("old post's title %q after its Saves, want saved", title)
		}
		must(t, db.Delete(&AdPost{}, posts[1].ID).Error)
		postsOf[posts[1].AuthorID]--

		// New rows: keys past every old one, a post on its old author's
		// logical shard, found with the old posts.
		layout := ids.Layout()
		parent := authors[2500]
		created := AdPost{AuthorID: uint64(parent.ID), Title: "new"}
		must(t, db.Create(&created).Error)
		postsOf[parent.ID]++
		if created.ID <= uint64(posts[len(posts)-1].ID) || layout.Shard(int64(created.ID)) != layout.Shard(int64(parent.ID)) {
			t.Fatalf("a new post of old author %d (shard %d): ID %d of shard %d", parent.ID, layout.Shard(int64(parent.ID)), created.ID, layout.Shard(int64(created.ID)))
		}
		fresh := make([]AdAuthor, 200)
		for i := range fresh {
			fresh[i] = AdAuthor{Name: fmt.Sprintf("fresh-%d", i), Posts: []AdPost{{Title: "a"}, {Title: "b"}}}
		}
		must(t, db.CreateInBatches(fresh, 50).Error)
		var a AdAuthor
		must(t, db.Preload("Posts").First(&a, parent.ID).Error)
		if len(a.Posts) != postsOf[parent.ID] {
			t.Fatalf("old author %d has %d posts after a new one, want %d", parent.ID, len(a.Posts), postsOf[parent.ID])
		}

		// A move that would part old posts from their authors: refused by
		// the foreign key, and without it by the colocate rule.
		split := shardid.Range{From: 0, To: 1}
		if _, err := ids.Move(ctx, shardid.Move{Logical: split, To: "second"}); !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "foreign key") {
			t.Fatalf("a move parting old posts from their authors with the foreign key: %v, want ErrMoveInvalid", err)
		}
		must(t, old.Migrator().DropConstraint(&AdOldAuthor{}, "Posts"))
		if _, err := ids.Move(ctx, shardid.Move{Logical: split, To: "second"}); !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "colocate column author_id") {
			t.Fatalf("a move parting old posts from their authors: %v, want ErrMoveInvalid", err)
		}
		must(t, second.Table("ad_posts").Count(&n).Error)
		if n != 0 {
			t.Fatalf("the refused move left %d posts on the second database", n)
		}

		// The lower half holds every old row's logical shard: it moves
		// them all, with the new rows of its shards.
		// The application runs meanwhile: it saves old posts and writes
		// new posts of old authors.
		lower := shardid.Range{From: 0, To: count/2 - 1}
		stop, done := make(chan struct{}), make(chan error, 1)
		saved := map[uint64]string{}
		go func() {
			for i := 2; ; i++ {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				var p AdPost
				if err := db.First(&p, posts[i%len(posts)].ID).Error; err != nil {
					done <- fmt.Errorf("reading old post %d during the move: %w", posts[i%len(posts)].ID, err)
					return
				}
				p.Title = fmt.Sprintf("during-%d", i)
				if err := db.Save(&p).Error; err != nil {
					done <- fmt.Errorf("saving old post %d during the move: %w", p.ID, err)
					return
				}
				saved[p.ID] = p.Title
				author := authors[(i*13)%len(authors)].ID
				if err := db.Create(&AdPost{AuthorID: uint64(author), Title: "during"}).Error; err != nil {
					done <- fmt.Errorf("a new post of old author %d during the move: %w", author, err)
					return
				}
				postsOf[author]++
			}
		}()
		_, err = ids.Move(ctx, shardid.Move{Logical: lower, To: "second"})
		close(stop)
		if err != nil {
			t.Fatalf("moving the lower half: %v", err)
		}
		must(t, <-done)
		if len(saved) == 0 {
			t.Fatalf("no old post was saved during the move")
		}
		must(t, ids.CleanupMove(ctx, lower))
		for id, title := range saved {
			var got string
			must(t, second.Table("ad_posts").Where("id = ?", id).Pluck("title", &got).Error)
			if got != title && !strings.HasPrefix(got, "during-") {
				t.Fatalf("old post %d on the second database is titled %q, want %q", id, got, title)
			}
		}
		if misplaced, err := ids.Audit(ctx); err != nil || len(misplaced) != 0 {
			t.Fatalf("the audit after the move: %v %+v, want nothing misplaced", err, misplaced)
		}
		for _, table := range []string{"ad_authors", "ad_posts"} {
			var keys []uint64
			must(t, old.Table(table).Pluck("id", &keys).Error)
			for _, k := range keys {
				if s := layout.Shard(int64(k)); s <= lower.To {
					t.Fatalf("%s %d of logical shard %d is still on the old database after the move and its cleanup", table, k, s)
				}
			}
			var oldKeys int64
			must(t, second.Table(table).Where("id < ?", 1<<32).Count(&oldKeys).Error)
			want := int64(len(authors))
			if table == "ad_posts" {
				want = int64(len(posts)) // the deleted one soft-deleted: still a row
			}
			if oldKeys != want {
				t.Fatalf("the second database holds %d old rows of %s, want %d", oldKeys, table, want)
			}
		}
		for i := 0; i < len(authors); i += 97 {
			var a AdAuthor
			must(t, db.Preload("Posts").First(&a, authors[i].ID).Error)
			if len(a.Posts) != postsOf[authors[i].ID] {
				t.Fatalf("old author %d has %d posts after the move, want %d", authors[i].ID, len(a.Posts), postsOf[authors[i].ID])
			}
		}
		for _, f := range fresh {
			var a AdAuthor
			must(t, db.Preload("Posts").First(&a, f.ID).Error)
			if len(a.Posts) != 2 {
				t.Fatalf("new author %d has %d posts after the move, want 2", f.ID, len(a.Posts))
			}
		}
		p.Title = "saved after the move"
		must(t, db.Save(&p).Error)
		must(t, db.Create(&AdPost{AuthorID: uint64(parent.ID), Title: "after"}).Error)
	})
}

// autoIncrementKey reports whether table's id column on db is filled by
// the database: AUTO_INCREMENT, or a default taking a sequence's nextval.
func autoIncrementKey(t *testing.T, db *gorm.DB, backend, table string) bool {
	t.Helper()
	var n int64
	if backend == "mariadb" {
		must(t, db.Raw("SELECT count(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'id' AND EXTRA LIKE '%auto_increment%'", table).Scan(&n).Error)
	} else {
		must(t, db.Raw("SELECT count(*) FROM information_schema.columns WHERE table_name = ? AND column_name = 'id' AND (column_default LIKE 'nextval%' OR is_identity = 'YES')", table).Scan(&n).Error)
	}
	return n > 0
}

// dropAutoIncrement runs docs/adopting.md's statements that make table's
// old auto-increment key a plain one.
func dropAutoIncrement(t *testing.T, db *gorm.DB, backend, table string) {
	t.Helper()
	if backend == "mariadb" {
		must(t, db.Exec("ALTER TABLE "+table+" MODIFY id BIGINT UNSIGNED NOT NULL").Error)
		return
	}
	must(t, db.Exec("ALTER TABLE "+table+" ALTER COLUMN id DROP DEFAULT").Error)
	must(t, db.Exec("DROP SEQUENCE IF EXISTS "+table+"_id_seq").Error)
}

// TestSaveOfAnAdoptedRowLosingAMetadataLockDeadlockRunsAgain: on MariaDB,
// the Save of an old post reads the author its row holds in its
// transaction before its UPDATE (the colocate value names another shard
// than the old key); a move's CREATE TRIGGER arriving between the two
// waits for that read's metadata lock while the UPDATE waits for the
// trigger's, and the server ends the Save's transaction as the deadlock's
// victim. Nothing of it was written: the plugin runs it again.
func TestSaveOfAnAdoptedRowLosingAMetadataLockDeadlockRunsAgain(t *testing.T) {
	b := backends[1]
	if b.name != "mariadb" {
		t.Fatalf("backends[1] is %s, want mariadb", b.name)
	}
	dir := t.TempDir()
	old := direct(t, b, dir)[moveSource]
	main, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	for _, table := range []string{"shardid_shard_map", "shardid_moves", "shardid_tables", "shardid_process_maps", "shardid_shard_databases"} {
		must(t, main.Exec("DROP TABLE IF EXISTS "+table).Error)
	}
	must(t, old.Migrator().DropTable("ad_posts", "ad_authors"))
	t.Cleanup(func() { _ = old.Migrator().DropTable("ad_posts", "ad_authors") })
	must(t, old.AutoMigrate(&AdOldAuthor{}, &AdOldPost{}))
	authors := make([]AdOldAuthor, 1500)
	must(t, old.CreateInBatches(authors, 500).Error)
	posts := []AdOldPost{{AuthorID: authors[1400].ID, Title: "old"}} // post 1 of shard 0, author 1401 of shard 1
	must(t, old.Create(&posts).Error)

	db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	ids := shardid.New(shardid.Config{Shards: []shardid.Shard{
		{Name: "old", Dialector: b.physical(t, dir, moveSource), Logical: []shardid.Range{{From: 0, To: shardid.Layout{}.ShardCount() - 1}}},
	}})
	must(t, db.Use(ids))
	t.Cleanup(func() { _ = ids.Close() })
	must(t, ids.AutoMigrate(db, &AdAuthor{}, &AdPost{}))

	// Between the transaction's first read and its UPDATE, a CREATE
	// TRIGGER that waits for the read's metadata lock.
	ddl, err := gorm.Open(b.physical(t, dir, moveSource), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		_ = ddl.Exec("DROP TRIGGER IF EXISTS ad_posts_racing").Error
		if sqlDB, err := ddl.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	created := make(chan error, 1)
	var raced bool
	must(t, db.Callback().Update().Before("gorm:update").Register("test:racing_trigger", func(tx *gorm.DB) {
		if raced || tx.Statement.Table != "ad_posts" {
			return
		}
		raced = true
		rows, err := tx.Statement.ConnPool.QueryContext(tx.Statement.Context, "SELECT 1 FROM ad_posts LIMIT 1")
		if err != nil {
			t.Errorf("the first read: %v", err)
			return
		}
		_ = rows.Close()
		go func() {
			created <- ddl.Exec("CREATE TRIGGER ad_posts_racing BEFORE UPDATE ON ad_posts FOR EACH ROW SET NEW.title = NEW.title").Error
		}()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			var waiting int64
			must(t, main.Raw("SELECT count(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for table metadata lock' AND INFO LIKE 'CREATE TRIGGER ad_posts_racing%'").Scan(&waiting).Error)
			if waiting > 0 {
				return
			}
		}
		t.Errorf("the CREATE TRIGGER never waited for the metadata lock")
	}))

	var p AdPost
	must(t, db.First(&p, posts[0].ID).Error)
	p.Title = "saved"
	if err := db.Save(&p).Error; err != nil {
		t.Fatalf("the Save that raced the trigger's creation: %v", err)
	}
	must(t, <-created)
	var title string
	must(t, old.Table("ad_posts").Where("id = ?", p.ID).Pluck("title", &title).Error)
	if !raced || title != "saved" {
		t.Fatalf("raced %v, the old post's title %q, want saved", raced, title)
	}
}
