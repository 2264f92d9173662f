package shardid

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"testing"
)

// loweredKey is a hash key whose Value method stores it lower-cased: the
// plugin places a row by the key as given (docs/models.md), so the column
// holds another value than the one hashed.
type loweredKey string

func (e loweredKey) Value() (driver.Value, error) { return strings.ToLower(string(e)), nil }

type loweredKeyUser struct {
	ID    int64 `shardid:"hash:Email"`
	Email loweredKey
	Name  string
}

// TestMoveTakesRowsWhoseHashKeyTypeStoresAnotherValue: on SQLite, rows the
// plugin placed by the hash of a key whose type's Value method stores
// another value (lower-cased) do not make a move refuse them as rows whose
// key and hash column name shards on two sides of its edge: the stored
// value is not the one hashed, so it tells nothing of the row's shard.
func TestMoveTakesRowsWhoseHashKeyTypeStoresAnotherValue(t *testing.T) {
	db, p, _ := adoptedRig(t, true, &loweredKeyUser{})
	for i := range 40 {
		must(t, db.Create(&loweredKeyUser{Email: loweredKey(fmt.Sprintf("User%d@X.io", i)), Name: "new"}).Error)
	}
	ctx := context.Background()
	if _, err := p.Move(ctx, Move{Logical: Range{From: 0, To: 4095}, To: "b"}); err != nil {
		t.Fatalf("a move of rows the plugin placed: %v", err)
	}
	must(t, p.CleanupMove(ctx, Range{From: 0, To: 4095}))
	var n int64
	must(t, db.Clauses(AllShards()).Model(&loweredKeyUser{}).Count(&n).Error)
	if n != 40 {
		t.Fatalf("%d users after the move, want 40", n)
	}
}
