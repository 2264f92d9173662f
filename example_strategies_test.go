package shardid_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/glebarez/sqlite"
	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/strategies"
)

type Invoice struct {
	ID     int64 `shardid:"strategy:segment"` // blocks of a counter kept in the shard's database
	Amount int
}

type Reading struct {
	ID    int64 `shardid:"strategy:snowflake"` // in-process, under a worker ID leased from the database
	Value int
}

type Document struct {
	ID    string `gorm:"size:36" shardid:"strategy:uuidv7"` // a time-ordered UUID that carries its shard
	Title string
}

type Token struct {
	ID    uuid.UUID `gorm:"size:36" shardid:"strategy:uuidv4"` // a random UUID that carries its shard
	Owner string
}

// The strategy is chosen per model by the tag; every ID, int64 or UUID,
// carries the logical shard its row was placed in.
func Example_strategies() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, ids := openShards(dir, "a", "b")
	defer ids.Close() // releases the snowflake worker leases
	check(ids.AutoMigrate(db, &Invoice{}, &Reading{}, &Document{}, &Token{}))

	user, invoice, reading := User{Name: "ada"}, Invoice{Amount: 10}, Reading{Value: 7}
	doc, token := Document{Title: "plan"}, Token{Owner: "ada"}
	for _, row := range []any{&user, &invoice, &reading, &doc, &token} {
		check(db.Clauses(shardid.OnShard(7)).Create(row).Error)
	}
	layout := ids.Layout()
	fmt.Println("instagram:", layout.Shard(user.ID))
	fmt.Println("segment:  ", layout.Shard(invoice.ID))
	fmt.Println("snowflake:", layout.Shard(reading.ID))
	uuids, err := strategies.NewUUIDs(layout)
	check(err)
	fmt.Println("uuidv7:   ", uuids.Shard(uuid.MustParse(doc.ID)))
	fmt.Println("uuidv4:   ", uuids.Shard(token.ID))

	var again Document
	check(db.First(&again, "id = ?", doc.ID).Error) // routed by the shard inside the UUID
	fmt.Println("document read back:", again.Title)
	// Output:
	// instagram: 7
	// segment:   7
	// snowflake: 7
	// uuidv7:    7
	// uuidv4:    7
	// document read back: plan
}

// Counters per strategy: IDs issued, waits, and the state of the snowflake
// leases and segment blocks.
func ExamplePlugin_Stats() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	db, err := gorm.Open(sqlite.Open(filepath.Join(dir, "app.db")), &gorm.Config{Logger: logger.Discard})
	check(err)
	ids := shardid.New(shardid.Config{}) // 64 snowflake worker IDs per database by default
	check(db.Use(ids))
	defer ids.Close()
	check(ids.AutoMigrate(db, &Invoice{}, &Reading{}))
	for range 3 {
		check(db.Create(&Invoice{Amount: 10}).Error)
		check(db.Create(&Reading{Value: 7}).Error)
	}

	stats := ids.Stats()
	fmt.Println("segment issued:", stats["segment"].Issued, "in", stats["segment"].Sequences[0].Refills, "block")
	fmt.Println("snowflake issued:", stats["snowflake"].Issued)
	lease := stats["snowflake"].Leases[0]
	fmt.Println("snowflake lease held:", lease.Held, "worker", lease.Worker)
	// Output:
	// segment issued: 3 in 1 block
	// snowflake issued: 3
	// snowflake lease held: true worker 0
}

// An ID writes JSON as a quoted string, which JavaScript reads without
// losing precision, and reads either form.
func ExampleID() {
	out, err := json.Marshal(struct{ ID shardid.ID }{ID: 506214187877944320})
	check(err)
	fmt.Println(string(out))
	var in struct{ ID shardid.ID }
	check(json.Unmarshal([]byte(`{"ID": 506214187877944320}`), &in))
	fmt.Println(in.ID)
	// Output:
	// {"ID":"506214187877944320"}
	// 506214187877944320
}
