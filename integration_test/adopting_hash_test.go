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

// AdUser is a table of auto-increment rows adopted as placed by the hash of
// its email: each old row's key names a logical shard unrelated to its
// email's hash.
type AdUser struct {
	ID    uint64 `shardid:"hash:Email"`
	Email string `gorm:"size:191"`
	Name  string `gorm:"size:100"`
}

func (AdUser) TableName() string { return "ad_users" }

// TestMoveRefusesToPartAdoptedRowsFromTheirHash: on MariaDB and PostgreSQL, a
// move of half the logical shards over a hash-placed table of thousands of
// rows written before sharding (keys of the low shards, emails' hashes of
// every shard) is refused before it changes anything, naming the table;
// Save of an old row writes its email again; a move of every logical shard,
// which holds both sides of every row, carries them all, each found by its
// email after.
func TestMoveRefusesToPartAdoptedRowsFromTheirHash(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir, old, second, _ := adoptionRig(t, b, "ad_users")
		// The application's table: auto-increment keys, an email compared
		// exactly (as a hash column must be).
		if b.name == "postgres" {
			must(t, old.Exec("CREATE TABLE ad_users (id BIGSERIAL PRIMARY KEY, email VARCHAR(191) NOT NULL, name VARCHAR(100))").Error)
		} else {
			must(t, old.Exec("CREATE TABLE ad_users (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, email VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL, name VARCHAR(100))").Error)
		}
		const rows = 6000 // more than one chunk of the check
		for from := 0; from < rows; from += 500 {
			values := make([]string, 0, 500)
			for i := from; i < from+500; i++ {
				values = append(values, fmt.Sprintf("('user-%d@x.io', 'user-%d')", i, i))
			}
			must(t, old.Exec("INSERT INTO ad_users (email, name) VALUES "+strings.Join(values, ", ")).Error)
		}

		count := shardid.Layout{}.ShardCount()
		db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		ids := shardid.New(shardid.Config{Atomic: b.atomicity(), Shards: []shardid.Shard{
			{Name: "old", Dialector: b.physical(t, dir, moveSource), Logical: []shardid.Range{{From: 0, To: count - 1}}},
			{Name: "second", Dialector: b.physical(t, dir, moveTarget)},
		}})
		must(t, db.Use(ids))
		t.Cleanup(func() { _ = ids.Close() })
		must(t, ids.AutoMigrate(db, &AdUser{}))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()

		// An old row by its email, and its Save, which writes the email
		// again; another email of another shard is refused.
		var u AdUser
		must(t, db.Where("email = ?", "user-4321@x.io").First(&u).Error)
		u.Name = "saved"
		must(t, db.Save(&u).Error)
		other := u
		other.Email = "user-0@x.io"
		for i := 0; ; i++ {
			h, err := shardid.HashKey(other.Email)
			must(t, err)
			if int(h%uint64(count)) != int(u.ID>>10)&(count-1) {
				break
			}
			other.Email = fmt.Sprintf("other-%d@x.io", i)
		}
		if err := db.Save(&other).Error; !errors.Is(err, shardid.ErrCrossShard) {
			t.Fatalf("Save of an old user with an email of another shard: %v, want ErrCrossShard", err)
		}
		var name string
		must(t, old.Table("ad_users").Where("id = ?", u.ID).Pluck("name", &name).Error)
		if name != "saved" {
			t.Fatalf("the old user's name on the old database is %q, want saved", name)
		}

		// Half the logical shards: every old key's shard (0 to 5) is in the
		// range, about half the emails' hashes are not.
		half := shardid.Range{From: 0, To: count/2 - 1}
		if _, err := ids.Move(ctx, shardid.Move{Logical: half, To: "second"}); !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "ad_users") || !strings.Contains(err.Error(), "column email") {
			t.Fatalf("a move parting old users from their emails' shards: %v, want ErrMoveInvalid naming ad_users", err)
		}
		moves, err := ids.Moves(ctx)
		must(t, err)
		if len(moves) != 0 {
			t.Fatalf("the refused move is recorded: %+v", moves)
		}
		var n int64
		must(t, second.Table("ad_users").Count(&n).Error)
		if n != 0 {
			t.Fatalf("the second database holds %d users after the refused move, want none", n)
		}
		must(t, old.Table("ad_users").Count(&n).Error)
		if n != rows {
			t.Fatalf("the old database holds %d users after the refused move, want %d", n, rows)
		}

		// Every logical shard: both sides of every row move together.
		every := shardid.Range{From: 0, To: count - 1}
		if _, err := ids.Move(ctx, shardid.Move{Logical: every, To: "second"}); err != nil {
			t.Fatalf("a move of every logical shard: %v", err)
		}
		must(t, ids.CleanupMove(ctx, every))
		must(t, second.Table("ad_users").Count(&n).Error)
		if n != rows {
			t.Fatalf("the second database holds %d users after the move, want %d", n, rows)
		}
		must(t, old.Table("ad_users").Count(&n).Error)
		if n != 0 {
			t.Fatalf("the old database holds %d users after the move, want none", n)
		}
		for i := 0; i < rows; i += 397 {
			var found AdUser
			must(t, db.Where("email = ?", fmt.Sprintf("user-%d@x.io", i)).First(&found).Error)
			if found.Name != fmt.Sprintf("user-%d", i) && found.ID != u.ID {
				t.Fatalf("user %d by its email after the move: %+v", i, found)
			}
		}
	})
}
