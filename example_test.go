package shardid_test

import (
	"fmt"

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
	if err := db.AutoMigrate(&User{}, &Photo{}); err != nil {
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
