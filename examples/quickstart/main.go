// Command quickstart shows shardid on an embedded SQLite database: users and
// their photos get time-ordered IDs that carry their logical shard, photos
// land in their user's shard, and every ID decodes back to when and where it
// was made.
package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

type User struct {
	ID     int64 `shardid:""` // instagram strategy: sequence and time from the database
	Name   string
	Photos []Photo
}

type Photo struct {
	ID     shardid.ID `shardid:"colocate:UserID"` // in the logical shard of its user
	UserID int64
	URL    string
}

const (
	workers        = 4
	usersPerWorker = 250
	photosPerUser  = 3
)

func main() {
	dir, err := os.MkdirTemp("", "shardid-quickstart")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	dsn := "file:" + filepath.Join(dir, "quickstart.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		log.Fatal(err)
	}
	ids := shardid.New(shardid.Config{})
	if err := db.Use(ids); err != nil {
		log.Fatal(err)
	}
	if err := ids.AutoMigrate(db, &User{}, &Photo{}); err != nil {
		log.Fatal(err)
	}
	layout := ids.Layout()
	fmt.Printf("layout: %d bits of %s since %s, %d logical shards, a sequence of %d per tick, good until %s\n",
		layout.TimeBits, layout.TimeUnit, layout.Epoch.Format(time.DateOnly), layout.ShardCount(), layout.IDsPerTick(),
		layout.RunsOut().Format(time.DateOnly))

	start := time.Now()
	var wg sync.WaitGroup
	users := make([][]User, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range usersPerWorker {
				u := User{Name: fmt.Sprintf("user-%d-%d", w, i)}
				for j := range photosPerUser {
					u.Photos = append(u.Photos, Photo{URL: fmt.Sprintf("%s/%d.jpg", u.Name, j)})
				}
				if err := db.Create(&u).Error; err != nil {
					log.Fatal(err)
				}
				users[w] = append(users[w], u)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	rows := workers * usersPerWorker * (1 + photosPerUser)
	fmt.Printf("created %d users and their %d photos from %d goroutines in %s (%.0f rows/s)\n",
		workers*usersPerWorker, workers*usersPerWorker*photosPerUser, workers, elapsed.Round(time.Millisecond), float64(rows)/elapsed.Seconds())

	sample := users[0][0]
	describe := func(kind string, id int64) {
		p := layout.Decode(id)
		fmt.Printf("  %-5s %d  made %s  logical shard %4d  sequence %d\n", kind, id, p.Time.Format("15:04:05.000"), p.Shard, p.Sequence)
	}
	fmt.Println("a user and its photos:")
	describe("user", sample.ID)
	for _, ph := range sample.Photos {
		describe("photo", int64(ph.ID))
	}

	var photos []Photo
	if err := db.Find(&photos).Error; err != nil {
		log.Fatal(err)
	}
	beside := 0
	for _, ph := range photos {
		if layout.Shard(int64(ph.ID)) == layout.Shard(ph.UserID) {
			beside++
		}
	}
	fmt.Printf("photos read back: %d, in their user's logical shard: %d\n", len(photos), beside)
	if beside != len(photos) || len(photos) != workers*usersPerWorker*photosPerUser {
		log.Fatal("a photo is missing or away from its user")
	}
}
