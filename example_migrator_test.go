package shardid_test

import (
	"fmt"
	"os"
	"path/filepath"
)

type Country struct { // no shardid tag: an unsharded model, on the plugin's own database
	ID   uint
	Name string
}

// AutoMigrate makes the tables of sharded models on every physical database
// and those of unsharded models on the plugin's own database only.
func ExamplePlugin_AutoMigrate() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, ids := openShards(dir, "a", "b") // User and Photo migrated
	defer ids.Close()
	check(ids.AutoMigrate(db, &Country{}))

	fmt.Println("users, asked of every database:", ids.Migrator(db).HasTable(&User{}))
	for _, name := range []string{"main", "a", "b"} { // each file read without the plugin
		m := withoutPlugin(filepath.Join(dir, name+".db")).Migrator()
		fmt.Printf("%s.db: users %v, photos %v, countries %v\n", name, m.HasTable("users"), m.HasTable("photos"), m.HasTable("countries"))
	}
	// Output:
	// users, asked of every database: true
	// main.db: users false, photos false, countries true
	// a.db: users true, photos true, countries false
	// b.db: users true, photos true, countries false
}

type Comment struct {
	ID     int64 `shardid:""`
	Text   string
	Rating int
}

// The shard-aware migrator runs every gorm.Migrator method on every
// physical database a sharded table lives on.
func ExamplePlugin_Migrator() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, ids := openShards(dir, "a", "b")
	defer ids.Close()
	m := ids.Migrator(db)
	check(m.CreateTable(&Comment{}))
	check(m.DropColumn(&Comment{}, "Rating"))
	fmt.Println("rating dropped:", !m.HasColumn(&Comment{}, "Rating"))
	check(m.AddColumn(&Comment{}, "Rating"))
	fmt.Println("rating added:", m.HasColumn(&Comment{}, "Rating"))
	for _, name := range []string{"a", "b"} {
		plain := withoutPlugin(filepath.Join(dir, name+".db"))
		fmt.Printf("%s.db: comments.rating %v\n", name, plain.Migrator().HasColumn("comments", "rating"))
	}
	fmt.Println("db.Migrator() is GORM's own, on main.db:", db.Migrator().HasTable("comments"))
	// Output:
	// rating dropped: true
	// rating added: true
	// a.db: comments.rating true
	// b.db: comments.rating true
	// db.Migrator() is GORM's own, on main.db: false
}
