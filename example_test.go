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

type User struct {
	ID     int64 `shardid:""` // default strategy (instagram), shard picked uniformly
	Name   string
	Photos []Photo
}

type Photo struct {
	ID     shardid.ID `shardid:"colocate:UserID"` // same logical shard as its user
	UserID int64
	URL    string
}

// The quickstart: register the plugin, and every User and Photo gets a
// shard-aware, time-ordered ID before it is inserted.
func Example() {
	db, err := gorm.Open(sqlite.Open("file:quickstart?mode=memory&cache=shared"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	ids := shardid.New(shardid.Config{})
	if err := db.Use(ids); err != nil {
		panic(err)
	}
	if err := ids.AutoMigrate(db, &User{}, &Photo{}); err != nil {
		panic(err)
	}

	user := User{Name: "ada", Photos: []Photo{{URL: "a.jpg"}, {URL: "b.jpg"}}}
	if err := db.Create(&user).Error; err != nil {
		panic(err)
	}

	layout := ids.Layout()
	shard := layout.Shard(user.ID)
	fmt.Println("user has an ID:", user.ID > 0)
	for _, p := range user.Photos {
		fmt.Println("photo beside its user:", layout.Shard(int64(p.ID)) == shard)
	}
	var again Photo
	db.First(&again, user.Photos[1].ID)
	fmt.Println("read back:", again.URL)
	// Output:
	// user has an ID: true
	// photo beside its user: true
	// photo beside its user: true
	// read back: b.jpg
}

type Invoice struct {
	ID     int64 `shardid:"strategy:segment"` // blocks of a counter kept in the shard's database
	Amount int
}

type Document struct {
	ID    string `gorm:"size:36" shardid:"strategy:uuidv7"` // a UUID that carries its shard
	Title string
}

type Reading struct {
	ID    int64 `shardid:"strategy:snowflake"` // in-process, under a leased worker ID
	Value int
}

// Other strategies per model, and their counters.
func ExamplePlugin_Stats() {
	db, err := gorm.Open(sqlite.Open("file:strategies?mode=memory&cache=shared"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		panic(err)
	}
	ids := shardid.New(shardid.Config{}) // 64 snowflake worker IDs per database by default
	if err := db.Use(ids); err != nil {
		panic(err)
	}
	defer ids.Close() // releases the snowflake worker lease
	if err := ids.AutoMigrate(db, &Invoice{}, &Document{}, &Reading{}); err != nil {
		panic(err)
	}
	for range 3 {
		db.Create(&Invoice{Amount: 10})
		db.Create(&Reading{Value: 7})
	}
	doc := Document{Title: "plan"}
	db.Create(&doc)
	var again Document
	db.First(&again, "id = ?", doc.ID) // routed by the shard inside the UUID
	fmt.Println("document read back:", again.Title)

	stats := ids.Stats()
	fmt.Println("segment issued:", stats["segment"].Issued)
	fmt.Println("snowflake issued:", stats["snowflake"].Issued)
	fmt.Println("uuidv7 issued:", stats["uuidv7"].Issued)
	lease := stats["snowflake"].Leases[0]
	fmt.Println("snowflake lease held:", lease.Held, "worker", lease.Worker)
	// Output:
	// document read back: plan
	// segment issued: 3
	// snowflake issued: 3
	// uuidv7 issued: 1
	// snowflake lease held: true worker 0
}

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
	// copied: 1 user, 1 photo; map version 2
	// shard 7000 is on b
	// read back: ada 1 photo
}
