package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// An application's tables before the plugin, made by plain GORM: each
// post has a foreign key to its author, fk_ad_fk_authors_posts.
type (
	AdFkOldAuthor struct {
		gorm.Model
		Name  string
		Posts []AdFkOldPost `gorm:"foreignKey:AuthorID"`
	}
	AdFkOldPost struct {
		gorm.Model
		AuthorID uint
		Title    string
	}
	AdFkAuthor struct {
		gorm.Model
		ID    uint64 `shardid:""`
		Name  string
		Posts []AdFkPost `gorm:"foreignKey:AuthorID"`
	}
	AdFkPost struct {
		gorm.Model
		ID       uint64 `shardid:"colocate:AuthorID"`
		AuthorID uint64
		Title    string
	}
)

func (AdFkOldAuthor) TableName() string { return "ad_fk_authors" }
func (AdFkOldPost) TableName() string   { return "ad_fk_posts" }
func (AdFkAuthor) TableName() string    { return "ad_fk_authors" }
func (AdFkPost) TableName() string      { return "ad_fk_posts" }

// TestACreateWithChildrenIsHeldWhileAMoveCreatesItsTriggers: on MariaDB,
// over adopted tables whose foreign key ties posts to their authors (a
// move carries them, parents first), the Create of an author with posts
// that begins while the move creates its triggers would insert the author,
// then wait for the trigger being created on ad_fk_posts, which waits for
// the author's insert's metadata lock on ad_fk_authors: the server ends the
// Create as the deadlock's victim, and GORM's transaction, which saved the
// author and then its posts, cannot be run again alone. It is held until
// the triggers are made, then written, author and posts, where the map
// says.
func TestACreateWithChildrenIsHeldWhileAMoveCreatesItsTriggers(t *testing.T) {
	b := backends[1]
	if b.name != "mariadb" {
		t.Fatalf("backends[1] is %s, want mariadb", b.name)
	}
	dir, old, second, main := adoptionRig(t, b, "ad_fk_posts", "ad_fk_authors")
	must(t, old.AutoMigrate(&AdFkOldAuthor{}, &AdFkOldPost{}))
	if !old.Migrator().HasConstraint(&AdFkOldAuthor{}, "Posts") {
		t.Fatalf("plain GORM made no foreign key from ad_fk_posts to ad_fk_authors")
	}
	count := shardid.Layout{}.ShardCount()
	db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	ids := shardid.New(shardid.Config{Shards: []shardid.Shard{
		{Name: "old", Dialector: b.physical(t, dir, moveSource), Logical: []shardid.Range{{From: 0, To: count - 1}}},
		{Name: "second", Dialector: b.physical(t, dir, moveTarget)},
	}})
	must(t, db.Use(ids))
	t.Cleanup(func() { _ = ids.Close() })
	must(t, ids.AutoMigrate(db, &AdFkAuthor{}, &AdFkPost{}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Once the author is inserted, its Create waits for the move to begin
	// creating the trigger on ad_fk_posts (waiting, then, for the
	// author's lock), or for the move to have made them all.
	inserted, installed := make(chan struct{}), make(chan struct{})
	var once, installedOnce sync.Once
	closeInstalled := func() { installedOnce.Do(func() { close(installed) }) }
	must(t, db.Callback().Create().After("gorm:create").Before("gorm:save_after_associations").Register("test:after_author", func(tx *gorm.DB) {
		if tx.Statement.Table != "ad_fk_authors" {
			return
		}
		once.Do(func() { close(inserted) })
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			select {
			case <-installed:
				return
			default:
			}
			var waiting int64
			must(t, main.Raw("SELECT count(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for table metadata lock' AND INFO LIKE '%TRIGGER%ad_fk_posts%'").Scan(&waiting).Error)
			if waiting > 0 {
				return
			}
		}
	}))

	author := AdFkAuthor{Name: "written while the triggers are made", Posts: []AdFkPost{{Title: "a"}, {Title: "b"}}}
	created := make(chan error, 1)
	lower := shardid.Range{From: 0, To: count/2 - 1}
	_, err = ids.Move(ctx, shardid.Move{Logical: lower, To: "second", Progress: func(p shardid.MoveProgress) {
		if p.Step != "triggers" {
			return
		}
		switch p.Table {
		case "ad_fk_authors": // made first: the posts reference the authors
			go func() { created <- db.Create(&author).Error }()
			select { // unheld, it inserts the author at once
			case <-inserted:
			case <-time.After(time.Second):
			}
		case "ad_fk_posts":
			closeInstalled()
		}
	}})
	must(t, err)
	if err := <-created; err != nil {
		t.Fatalf("the Create of an author with posts begun while the move made its triggers: %v", err)
	}
	must(t, ids.CleanupMove(ctx, lower))

	// Where the map sends them, once each.
	at, other := old, second
	if shard := ids.Layout().Shard(int64(author.ID)); shard >= lower.From && shard <= lower.To {
		at, other = second, old
	}
	for table, want := range map[string]int64{"ad_fk_authors": 1, "ad_fk_posts": 2} {
		var here, there int64
		must(t, at.Table(table).Where("id IN ?", []uint64{author.ID, author.Posts[0].ID, author.Posts[1].ID}).Count(&here).Error)
		must(t, other.Table(table).Where("id IN ?", []uint64{author.ID, author.Posts[0].ID, author.Posts[1].ID}).Count(&there).Error)
		if here != want || there != 0 {
			t.Errorf("%s: %d rows of the Create where the map sends them, %d on the other database; want %d and none", table, here, there, want)
		}
	}
	var got AdFkAuthor
	must(t, db.Preload("Posts").First(&got, author.ID).Error)
	if len(got.Posts) != 2 {
		t.Fatalf("the author read back has %d posts, want 2", len(got.Posts))
	}
}
