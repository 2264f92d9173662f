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

type User struct {
	ID     int64 `shardid:""` // instagram, the default strategy; shard picked uniformly
	Name   string
	Photos []Photo
}

type Photo struct {
	ID     shardid.ID `shardid:"colocate:UserID"` // in its user's logical shard
	UserID int64
	URL    string
}

// The quickstart of the README: register the plugin, and every User and
// Photo gets a time-ordered ID that carries its logical shard before it is
// inserted.
func Example() {
	dir := tempDir()
	defer os.RemoveAll(dir)

	db, err := gorm.Open(sqlite.Open(filepath.Join(dir, "app.db")), &gorm.Config{Logger: logger.Discard})
	check(err)
	ids := shardid.New(shardid.Config{})
	check(db.Use(ids))
	check(ids.AutoMigrate(db, &User{}, &Photo{})) // id is a plain BIGINT: no AUTO_INCREMENT, serial or identity
	user := User{Name: "ada", Photos: []Photo{{URL: "a.jpg"}}}
	check(db.Create(&user).Error)        // user.ID and the photo's ID are set before the INSERT
	shard := ids.Layout().Shard(user.ID) // the logical shard, from the ID alone
	var photo Photo
	check(db.First(&photo, user.Photos[0].ID).Error) // routed by the shard inside the ID

	fmt.Println("photo beside its user:", ids.Layout().Shard(int64(photo.ID)) == shard)

	fmt.Println("user has an ID:", user.ID > 0)
	fmt.Println("read back:", photo.URL)
	// Output:
	// photo beside its user: true
	// user has an ID: true
	// read back: a.jpg
}

// check stops an example at its first error.
func check(err error) {
	if err != nil {
		panic(err)
	}
}

// tempDir makes a folder for an example's SQLite files.
func tempDir() string {
	dir, err := os.MkdirTemp("", "shardid-example")
	check(err)
	return dir
}

// openShards opens the plugin's own database, main.db, and one physical
// database per name, SQLite files in dir, the logical shards split evenly
// over them in order; the plugin is registered and User and Photo migrated.
func openShards(dir string, names ...string) (*gorm.DB, *shardid.Plugin) {
	open := func(name string) gorm.Dialector { return sqlite.Open(filepath.Join(dir, name+".db")) }
	db, err := gorm.Open(open("main"), &gorm.Config{Logger: logger.Discard})
	check(err)
	count := 8192 / len(names)
	var shards []shardid.Shard
	for i, name := range names {
		r := shardid.Range{From: i * count, To: (i+1)*count - 1}
		if i == len(names)-1 {
			r.To = 8191
		}
		shards = append(shards, shardid.Shard{Name: name, Dialector: open(name), Logical: []shardid.Range{r}})
	}
	ids := shardid.New(shardid.Config{Shards: shards})
	check(db.Use(ids))
	check(ids.AutoMigrate(db, &User{}, &Photo{}))
	return db, ids
}

// withoutPlugin opens an SQLite file of an example as it is, to show what
// the plugin wrote there.
func withoutPlugin(path string) *gorm.DB {
	db, err := gorm.Open(sqlite.Open(path), &gorm.Config{Logger: logger.Discard})
	check(err)
	return db
}
