package shardid

import (
	"context"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type uqMember struct {
	ID    int64  `shardid:"strategy:snowflake"`
	Email string `gorm:"size:64;uniqueIndex"`
}

// TestMoveOnSQLiteCarriesAUniqueValueTakenOverFromADeletedRow: in a move's
// catch-up, a member of the range is deleted and another made with its
// email: the replay deletes the target's copy of the first before it
// writes the second, instead of failing on the unique index on every run.
func TestMoveOnSQLiteCarriesAUniqueValueTakenOverFromADeletedRow(t *testing.T) {
	ps := processes{t, t.TempDir()}
	count := Layout{}.ShardCount()
	db, p, err := ps.open(Config{Shards: []Shard{
		{Name: "a", Dialector: ps.file("a.db"), Logical: []Range{{From: 0, To: count - 1}}},
		{Name: "b", Dialector: ps.file("b.db")},
	}})
	must(t, err)
	must(t, p.AutoMigrate(db, &uqMember{}))
	moved := Range{From: count / 2, To: count - 1}
	first := uqMember{Email: "taken@example.com"}
	must(t, db.Clauses(OnShard(moved.From)).Create(&first).Error)
	var second uqMember
	ctx := context.Background()
	_, err = p.Move(ctx, Move{Logical: moved, To: "b", CatchUpBelow: 1, Progress: func(pr MoveProgress) {
		if second.ID != 0 || pr.Phase != PhaseCatchUp {
			return
		}
		must(t, db.Delete(&uqMember{}, first.ID).Error)
		second = uqMember{Email: first.Email}
		must(t, db.Clauses(OnShard(moved.From+1)).Create(&second).Error)
	}})
	if second.ID == 0 {
		t.Fatal("no member was made again in the catch-up")
	}
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	target, err := gorm.Open(ps.file("b.db"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	var ids []int64
	must(t, target.Raw("SELECT id FROM uq_members WHERE email = ?", first.Email).Scan(&ids).Error)
	if len(ids) != 1 || ids[0] != second.ID {
		t.Errorf("the target's members with the email: %v, want only %d", ids, second.ID)
	}
}
