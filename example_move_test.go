package shardid_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// Moving a range of logical shards to another database while the
// application runs: here two SQLite files, one holding every shard at first.
func ExamplePlugin_Move() {
	dir, err := os.MkdirTemp("", "shardid-move")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	open := func(name string) gorm.Dialector { return sqlite.Open(filepath.Join(dir, name)) }
	db, err := gorm.Open(open("main.db"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	ids := shardid.New(shardid.Config{Shards: []shardid.Shard{
		{Name: "a", Dialector: open("a.db"), Logical: []shardid.Range{{From: 0, To: 8191}}},
		{Name: "b", Dialector: open("b.db")}, // holds no logical shards yet
	}})
	if err := db.Use(ids); err != nil {
		panic(err)
	}
	defer ids.Close()
	if err := ids.AutoMigrate(db, &User{}, &Photo{}); err != nil {
		panic(err)
	}
	user := User{Name: "ada", Photos: []Photo{{URL: "a.jpg"}}}
	if err := db.Clauses(shardid.OnShard(7000)).Create(&user).Error; err != nil {
		panic(err)
	}

	ctx := context.Background()
	report, err := ids.Move(ctx, shardid.Move{Logical: shardid.Range{From: 6144, To: 8191}, To: "b", Models: []any{&User{}, &Photo{}}})
	if err != nil {
		panic(err)
	}
	fmt.Println("copied:", report.Rows["users"], "user,", report.Rows["photos"], "photo; map version", report.MapVersion)
	m := ids.ShardMap()
	fmt.Println("shard 7000 is on", m.Name(m.Physical(7000)))
	if err := ids.CleanupMove(ctx, report.Logical, &User{}, &Photo{}); err != nil {
		panic(err)
	}
	var again User
	db.Preload("Photos").First(&again, user.ID)
	fmt.Println("read back:", again.Name, len(again.Photos), "photo")
	// Output:
	// copied: 1 user, 1 photo; map version 5
	// shard 7000 is on b
	// read back: ada 1 photo
}

// A dry run gives a move's plan; Audit finds the rows that sit on a database
// their shard does not map to, such as the frozen copy a move leaves on its
// source until CleanupMove.
func ExamplePlugin_Audit() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, ids := openShards(dir, "a", "b")
	defer ids.Close()
	check(db.Clauses(shardid.OnShard(100)).Create(&User{Name: "ada", Photos: []Photo{{URL: "a.jpg"}}}).Error)
	ctx := context.Background()
	move := shardid.Move{Logical: shardid.Range{From: 0, To: 1023}, To: "b"} // every table the plugin migrated

	plan, err := ids.Move(ctx, shardid.Move{Logical: move.Logical, To: move.To, DryRun: true})
	check(err)
	fmt.Println("plan:", plan.From, "to", plan.To, plan.Tables, "users", plan.Rows["users"])
	_, err = ids.Move(ctx, move)
	check(err)
	misplaced, err := ids.Audit(ctx)
	check(err)
	for _, m := range misplaced {
		fmt.Println("on", m.Database+":", m.Rows, m.Table, "left by the move:", m.LeftByMove)
	}
	check(ids.CleanupMove(ctx, move.Logical))
	misplaced, err = ids.Audit(ctx)
	check(err)
	fmt.Println("after the cleanup:", len(misplaced), "misplaced")
	// Output:
	// plan: a to b [photos users] users 1
	// on a: 1 photos left by the move: true
	// on a: 1 users left by the move: true
	// after the cleanup: 0 misplaced
}
