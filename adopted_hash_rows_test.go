package shardid

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// adoptedUser is a model placed by the hash of its email whose table held
// rows before it was sharded: their keys are auto-increment numbers, of
// logical shards unrelated to their email's hash (docs/adopting.md).
type adoptedUser struct {
	ID    int64 `shardid:"hash:Email"`
	Email string
	Name  string
}

// looseAdoptedUser is adoptedUser whose email compares loosely.
type looseAdoptedUser struct {
	ID    int64  `shardid:"hash:Email;collation:loose"`
	Email string `gorm:"type:text COLLATE NOCASE"`
	Name  string
}

// emailOfShardIn returns an email whose hash names a logical shard from
// from to to.
func emailOfShardIn(t *testing.T, from, to int) (string, int) {
	t.Helper()
	count := uint64(Layout{}.ShardCount())
	for i := 0; ; i++ {
		email := fmt.Sprintf("user%d@x.io", i)
		h, err := HashKey(email)
		must(t, err)
		if shard := int(h % count); shard >= from && shard <= to {
			return email, shard
		}
	}
}

// TestSaveOfARowWrittenBeforeShardingKeepsItsHashValue: on SQLite, a Save of
// an old row of a hash-placed model, which writes its hash column again, is
// taken; one writing another value of another shard is refused, and so is a
// Save of an old row whose hash column compares loosely (the value the row
// holds may be another spelling).
func TestSaveOfARowWrittenBeforeShardingKeepsItsHashValue(t *testing.T) {
	db, _, a := adoptedRig(t, false, &adoptedUser{}, &looseAdoptedUser{})
	count := Layout{}.ShardCount()
	// User 3000 is of logical shard 2, its email's hash of another.
	email, _ := emailOfShardIn(t, 3, 4095)
	other, _ := emailOfShardIn(t, 4096, count-1)
	must(t, a.Exec("INSERT INTO adopted_users (id, email, name) VALUES (3000, ?, 'old')", email).Error)
	must(t, a.Exec("INSERT INTO loose_adopted_users (id, email, name) VALUES (3000, ?, 'old')", email).Error)

	if err := db.Save(&adoptedUser{ID: 3000, Email: email, Name: "saved"}).Error; err != nil {
		t.Fatalf("Save of an old user writing its own email again: %v", err)
	}
	if err := db.Save(&adoptedUser{ID: 3000, Email: other, Name: "changed"}).Error; !errors.Is(err, ErrCrossShard) {
		t.Fatalf("Save of an old user with an email of another shard: %v, want ErrCrossShard", err)
	}
	var name string
	must(t, a.Table("adopted_users").Where("id = 3000").Pluck("name", &name).Error)
	if name != "saved" {
		t.Fatalf("the old user's name is %q, want saved", name)
	}
	var found adoptedUser
	must(t, db.Where("email = ?", email).First(&found).Error)
	if found.ID != 3000 || found.Name != "saved" {
		t.Fatalf("the old user by its email: %+v", found)
	}
	if err := db.Save(&looseAdoptedUser{ID: 3000, Email: strings.ToUpper(email), Name: "loose"}).Error; !errors.Is(err, ErrCrossShard) {
		t.Fatalf("Save of an old user whose email compares loosely: %v, want ErrCrossShard", err)
	}
	if err := db.Model(&looseAdoptedUser{ID: 3000}).Update("name", "updated").Error; err != nil {
		t.Fatalf("Update of another column of an old user whose email compares loosely: %v", err)
	}
}

// TestMoveRefusesToPartRowsWrittenBeforeShardingFromTheirHash: on SQLite, a
// move whose range holds an old row's key's shard and not its email's hash's
// is refused before it changes anything, and one of a range holding both
// moves the row, found by its email after.
func TestMoveRefusesToPartRowsWrittenBeforeShardingFromTheirHash(t *testing.T) {
	db, p, a := adoptedRig(t, true, &adoptedUser{})
	count := Layout{}.ShardCount()
	email, shard := emailOfShardIn(t, 4096, count-1)
	must(t, a.Exec("INSERT INTO adopted_users (id, email, name) VALUES (3000, ?, 'old')", email).Error)
	// Rows the plugin keys agree with their hash.
	for i := range 20 {
		must(t, db.Create(&adoptedUser{Email: fmt.Sprintf("new%d@x.io", i), Name: "new"}).Error)
	}

	ctx := context.Background()
	if _, err := p.Move(ctx, Move{Logical: Range{From: 0, To: 4095}, To: "b"}); !errors.Is(err, ErrMoveInvalid) || !strings.Contains(err.Error(), "[3000]") {
		t.Fatalf("a move parting an old user from its email's shard: %v, want ErrMoveInvalid naming user 3000", err)
	}
	moves, err := p.Moves(ctx)
	must(t, err)
	if len(moves) != 0 {
		t.Fatalf("the refused move is recorded: %+v", moves)
	}
	if _, err := p.Move(ctx, Move{Logical: Range{From: 0, To: shard}, To: "b"}); err != nil {
		t.Fatalf("a move of both sides: %v", err)
	}
	must(t, p.CleanupMove(ctx, Range{From: 0, To: shard}))
	var found adoptedUser
	must(t, db.Where("email = ?", email).First(&found).Error)
	if found.ID != 3000 {
		t.Fatalf("the old user by its email after the move: %+v", found)
	}
}
