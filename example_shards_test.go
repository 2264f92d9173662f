package shardid_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// The logical shards spread over two physical databases, here SQLite files:
// each row is written to the file that holds its logical shard, and read
// back from there by its ID.
func ExampleShard() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	open := func(name string) gorm.Dialector { return sqlite.Open(filepath.Join(dir, name)) }

	db, err := gorm.Open(open("main.db"), &gorm.Config{Logger: logger.Discard}) // the unsharded models
	check(err)
	ids := shardid.New(shardid.Config{Shards: []shardid.Shard{
		{Name: "a", Dialector: open("a.db"), Logical: []shardid.Range{{From: 0, To: 4095}}},
		{Name: "b", Dialector: open("b.db"), Logical: []shardid.Range{{From: 4096, To: 8191}}},
	}})
	check(db.Use(ids))
	defer ids.Close()
	check(ids.AutoMigrate(db, &User{}, &Photo{})) // users and photos on a.db and b.db

	ada := User{Name: "ada", Photos: []Photo{{URL: "a.jpg"}}}
	bob := User{Name: "bob", Photos: []Photo{{URL: "b.jpg"}, {URL: "c.jpg"}}}
	check(db.Clauses(shardid.OnShard(100)).Create(&ada).Error)  // a new row goes to the shard a clause names
	check(db.Clauses(shardid.OnShard(5000)).Create(&bob).Error) // or else to one picked uniformly

	shardMap := ids.ShardMap()
	for _, u := range []User{ada, bob} {
		var again User
		check(db.Preload("Photos").First(&again, u.ID).Error) // routed by the ID, photos by their user_id
		shard := ids.Layout().Shard(u.ID)
		fmt.Printf("%s: logical shard %d, on %s, photos: %d\n", again.Name, shard, shardMap.Name(shardMap.Physical(shard)), len(again.Photos))
	}
	for _, file := range []string{"a.db", "b.db"} { // each file read without the plugin
		plain := withoutPlugin(filepath.Join(dir, file))
		var users, photos int64
		plain.Table("users").Count(&users)
		plain.Table("photos").Count(&photos)
		fmt.Printf("%s: users %d, photos %d\n", file, users, photos)
	}
	// Output:
	// ada: logical shard 100, on a, photos: 1
	// bob: logical shard 5000, on b, photos: 2
	// a.db: users 1, photos 1
	// b.db: users 1, photos 2
}
