package shardid_test

import (
	"errors"
	"fmt"
	"os"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// A statement for one logical shard: a new row placed in it, and raw SQL,
// which carries no model to route by, sent to its database.
func ExampleOnShard() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, ids := openShards(dir, "a", "b")
	defer ids.Close()

	user := User{Name: "ada"}
	check(db.Clauses(shardid.OnShard(42)).Create(&user).Error)
	fmt.Println("logical shard:", ids.Layout().Shard(user.ID))

	var users int64
	check(db.Clauses(shardid.OnShard(42)).Raw("SELECT count(*) FROM users").Scan(&users).Error) // on shard 42's database, a
	fmt.Println("users on shard 42's database:", users)
	err := db.Raw("SELECT count(*) FROM users").Scan(&users).Error
	fmt.Println("raw SQL on a sharded table without a clause:", errors.Is(err, shardid.ErrNoShard))
	// Output:
	// logical shard: 42
	// users on shard 42's database: 1
	// raw SQL on a sharded table without a clause: true
}

// A condition that names no ID, such as a photo's URL, says nothing about the
// shard; ByID says which user's shard to look in.
func ExampleByID() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, ids := openShards(dir, "a", "b")
	defer ids.Close()
	user := User{Name: "ada", Photos: []Photo{{URL: "a.jpg"}, {URL: "b.jpg"}}}
	check(db.Create(&user).Error)

	var photos []Photo
	check(db.Clauses(shardid.ByID(user.ID)).Where("url = ?", "b.jpg").Find(&photos).Error)
	fmt.Println("found:", len(photos), photos[0].URL)
	err := db.Where("url = ?", "b.jpg").Find(&photos).Error
	fmt.Println("without the clause:", errors.Is(err, shardid.ErrNoShard))
	// Output:
	// found: 1 b.jpg
	// without the clause: true
}

// A transaction pinned to one user's physical database: everything in it
// runs there, and a statement that belongs to another database is refused.
func ExampleByID_transaction() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, ids := openShards(dir, "a", "b")
	defer ids.Close()
	ada, bob := User{Name: "ada"}, User{Name: "bob"}
	check(db.Clauses(shardid.OnShard(100)).Create(&ada).Error)  // on a
	check(db.Clauses(shardid.OnShard(5000)).Create(&bob).Error) // on b

	err := db.Clauses(shardid.ByID(ada.ID)).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&Photo{UserID: ada.ID, URL: "a.jpg"}).Error; err != nil {
			return err
		}
		if err := tx.Model(&User{ID: ada.ID}).Update("name", "ada l.").Error; err != nil {
			return err
		}
		err := tx.First(&User{}, bob.ID).Error // bob's row is on b
		fmt.Println("bob inside ada's transaction:", errors.Is(err, shardid.ErrCrossShard))
		return nil
	})
	check(err)

	var again User
	check(db.Preload("Photos").First(&again, ada.ID).Error)
	fmt.Println("committed:", again.Name, len(again.Photos), "photo")
	// Output:
	// bob inside ada's transaction: true
	// committed: ada l. 1 photo
}

type Account struct {
	ID    int64  `shardid:"hash:Email"` // the shard is the hash of the email
	Email string `gorm:"uniqueIndex"`
}

// A model placed by the hash of a key: conditions on the key route by it,
// and ByKey names its shard for raw SQL.
func ExampleByKey() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, ids := openShards(dir, "a", "b")
	defer ids.Close()
	check(ids.AutoMigrate(db, &Account{}))

	account := Account{Email: "ada@example.com"}
	check(db.Create(&account).Error)
	hash, err := shardid.HashKey("ada@example.com")
	check(err)
	fmt.Println("shard is the key's hash:", ids.Layout().Shard(account.ID) == int(hash%8192))

	var found Account
	check(db.Where("email = ?", "ada@example.com").First(&found).Error) // routed by the hash
	fmt.Println("found by email:", found.ID == account.ID)
	var n int64
	check(db.Clauses(shardid.ByKey("ada@example.com")).Raw("SELECT count(*) FROM accounts WHERE email = ?", "ada@example.com").Scan(&n).Error)
	fmt.Println("raw SQL on the key's shard:", n)
	// Output:
	// shard is the key's hash: true
	// found by email: true
	// raw SQL on the key's shard: 1
}

type Score struct {
	ID     int64 `shardid:""`
	Points int   `gorm:"not null"` // a NOT NULL integer: rows over several databases merge by it
}

// A query over every physical database: counts are summed, and rows ordered
// by the key or a NOT NULL integer or time column are merged, with LIMIT
// applied to the whole. What cannot be merged right is refused.
func ExampleAllShards() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, ids := openShards(dir, "a", "b", "c")
	defer ids.Close()
	check(ids.AutoMigrate(db, &Score{}))
	for i, points := range []int{30, 10, 50, 20, 40} {
		check(db.Clauses(shardid.OnShard(i * 2000)).Create(&Score{Points: points}).Error) // over a, b and c
	}

	var n int64
	check(db.Clauses(shardid.AllShards()).Model(&Score{}).Count(&n).Error)
	fmt.Println("scores:", n)
	var top []Score
	check(db.Clauses(shardid.AllShards()).Order("points desc").Limit(2).Find(&top).Error)
	fmt.Println("top two:", top[0].Points, top[1].Points)
	var total int64
	check(db.Clauses(shardid.AllShards()).Model(&Score{}).Select("sum(points)").Scan(&total).Error)
	fmt.Println("total:", total)
	err := db.Clauses(shardid.AllShards()).Model(&Score{}).Select("points * 2").Scan(&total).Error
	fmt.Println("an expression over several databases:", errors.Is(err, shardid.ErrCrossShard))
	err = db.Find(&top).Error
	fmt.Println("no shard, no clause:", errors.Is(err, shardid.ErrNoShard))
	// Output:
	// scores: 5
	// top two: 50 40
	// total: 150
	// an expression over several databases: true
	// no shard, no clause: true
}
