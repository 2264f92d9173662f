package shardid

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Models of a table that held rows before it was sharded: their keys are
// auto-increment numbers, a post's of another logical shard than its
// author's (docs/adopting.md).
type (
	adoptedAuthor struct {
		ID   int64 `shardid:""`
		Name string
	}
	adoptedPost struct {
		ID       int64 `shardid:"colocate:AuthorID"`
		AuthorID int64
		Title    string
	}
)

// adoptedRig is a plugin on SQLite whose shard "a" holds every logical
// shard (with second, a shard "b" of none, a move's target), models
// migrated, and a's database opened directly, where a test writes the rows
// of before the plugin.
func adoptedRig(t *testing.T, second bool, models ...any) (db *gorm.DB, p *Plugin, a *gorm.DB) {
	ps := processes{t, t.TempDir()}
	shards := []Shard{{Name: "a", Dialector: ps.file("a.db"), Logical: []Range{{From: 0, To: Layout{}.ShardCount() - 1}}}}
	if second {
		shards = append(shards, Shard{Name: "b", Dialector: ps.file("b.db")})
	}
	db, p, err := ps.open(Config{Atomic: BestEffort, Shards: shards})
	must(t, err)
	must(t, p.AutoMigrate(db, models...))
	a, err = gorm.Open(ps.file("a.db"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := a.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db, p, a
}

// TestRowsWrittenBeforeShardingKeepTheirColocateValue: on SQLite, a Save of
// an old post, which writes its author again, is taken, and one naming
// another author of another shard refused; a move that would part old
// posts from their authors is refused before it changes anything, and one
// of a range holding both sides moves them.
func TestRowsWrittenBeforeShardingKeepTheirColocateValue(t *testing.T) {
	db, p, a := adoptedRig(t, true, &adoptedAuthor{}, &adoptedPost{})
	// Author 1500 is of logical shard 1, post 3000 of shard 2.
	must(t, a.Exec("INSERT INTO adopted_authors (id, name) VALUES (1, 'one'), (1500, 'old')").Error)
	must(t, a.Exec("INSERT INTO adopted_posts (id, author_id, title) VALUES (3000, 1500, 'old')").Error)

	post := adoptedPost{ID: 3000, AuthorID: 1500, Title: "saved"}
	must(t, db.Save(&post).Error)
	other := adoptedPost{ID: 3000, AuthorID: 1, Title: "moved"}
	if err := db.Save(&other).Error; !errors.Is(err, ErrCrossShard) {
		t.Fatalf("Save of an old post naming an author of another shard: %v, want ErrCrossShard", err)
	}
	var title string
	must(t, a.Table("adopted_posts").Where("id = 3000").Pluck("title", &title).Error)
	if title != "saved" {
		t.Fatalf("the old post's title is %q, want saved", title)
	}

	ctx := context.Background()
	if _, err := p.Move(ctx, Move{Logical: Range{From: 2, To: 4095}, To: "b"}); !errors.Is(err, ErrMoveInvalid) || !strings.Contains(err.Error(), "[3000]") {
		t.Fatalf("a move parting an old post from its author: %v, want ErrMoveInvalid naming post 3000", err)
	}
	moves, err := p.Moves(ctx)
	must(t, err)
	if len(moves) != 0 {
		t.Fatalf("the refused move is recorded: %+v", moves)
	}
	if _, err := p.Move(ctx, Move{Logical: Range{From: 0, To: 4095}, To: "b"}); err != nil {
		t.Fatalf("a move of both sides: %v", err)
	}
	must(t, p.CleanupMove(ctx, Range{From: 0, To: 4095}))
	var found []adoptedPost
	must(t, db.Where("author_id = ?", 1500).Find(&found).Error)
	if len(found) != 1 || found[0].Title != "saved" {
		t.Fatalf("the old author's posts after the move: %+v", found)
	}
}
