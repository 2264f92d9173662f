package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/internal/dsn"
	"github.com/shardid/shardid/internal/mapstore"
)

// warnings is the demo's log of the plugin's events: its leases taken would
// crowd the report.
var warnings = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// DemoUser and DemoPhoto are the demo's models: a photo lives in its user's
// logical shard.
type DemoUser struct {
	ID     int64 `shardid:""`
	Name   string
	Photos []DemoPhoto `gorm:"foreignKey:UserID"`
}

type DemoPhoto struct {
	ID     shardid.ID `shardid:"colocate:UserID"`
	UserID int64
	URL    string
}

func (DemoUser) TableName() string  { return "shardid_demo_users" }
func (DemoPhoto) TableName() string { return "shardid_demo_photos" }

type demoOptions struct {
	users, photos, workers int
	dsns                   []string
	main                   string // the plugin's own database, with dsns
	dir                    string
	keep                   bool
	strategy               string
}

func demoCommand() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Create users and colocated photos on several physical shards, read them back, and check where every row is",
		Long: `The demo maps 8192 logical shards onto four physical databases (embedded
SQLite files, or the servers given with --dsn), creates users with their
photos from several goroutines, reads them back by ID, counts them on every
shard at once, runs a transaction pinned to one user's shard, and checks that
every row is on the physical database its ID names.`,
		Example: `  shardid demo
  shardid demo --rows 20000 --workers 16
  shardid demo --main 'root@tcp(127.0.0.1:3306)/app' --dsn 'root@tcp(127.0.0.1:3306)/shard_a' --dsn 'root@tcp(127.0.0.1:3306)/shard_b'
  shardid demo --main postgres://postgres@127.0.0.1/app --dsn postgres://postgres@127.0.0.1/shard_a --dsn postgres://postgres@127.0.0.1/shard_b`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd.OutOrStdout(), cmd.ErrOrStderr(), o) },
	}
	cmd.Flags().IntVar(&o.users, "rows", 2000, "users to create, each with --photos photos")
	cmd.Flags().IntVar(&o.photos, "photos", 3, "photos per user, created with it")
	cmd.Flags().IntVar(&o.workers, "workers", 8, "goroutines creating users")
	cmd.Flags().StringArrayVar(&o.dsns, "dsn", nil, "a MySQL/MariaDB or PostgreSQL database to use as a physical shard; repeat for each")
	cmd.Flags().StringVar(&o.main, "main", "", "with --dsn: the plugin's own database, of the same server kind and none of the shards")
	cmd.Flags().StringVar(&o.dir, "dir", "", "where the SQLite files go (default: a temporary folder)")
	cmd.Flags().BoolVar(&o.keep, "keep", false, "keep the SQLite files or the demo tables afterwards")
	cmd.Flags().StringVar(&o.strategy, "strategy", "instagram", "the strategy of the users' and photos' IDs: instagram, snowflake or segment")
	return cmd
}

// demoSetup is the databases of one demo run.
type demoSetup struct {
	db      *gorm.DB // with the plugin
	plugin  *shardid.Plugin
	direct  []*gorm.DB // each physical database, without the plugin
	dsns    []string   // the --dsn of each, if given
	dir     string     // else the folder of the SQLite files
	cleanup func() error
}

// demoShardName names the demo's physical database i.
func demoShardName(i int) string { return fmt.Sprintf("physical-%d", i) }

// demoShardNames finds the demo's physical databases in an error.
var demoShardNames = regexp.MustCompile(`\bphysical-(\d+)\b`)

// namingDSNs adds to an error that names the demo's physical databases the
// --dsn each was given as, password hidden.
func (s *demoSetup) namingDSNs(err error) error {
	if err == nil || len(s.dsns) == 0 {
		return err
	}
	err = dsn.RedactError(err, s.dsns...) // a driver's error may print its DSN
	var notes []string
	for _, found := range demoShardNames.FindAllStringSubmatch(err.Error(), -1) {
		if k, _ := strconv.Atoi(found[1]); k < len(s.dsns) && !slices.Contains(notes, found[0]) {
			notes = append(notes, fmt.Sprintf("%s is --dsn %s", found[0], redactDSN(s.dsns[k])))
		}
	}
	if len(notes) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(notes, "; "))
}

// checkDir refuses a --dir the demo cannot put its files in, rather than
// letting SQLite fail on the first file or creating folders.
func checkDir(o demoOptions) error {
	if o.main != "" && len(o.dsns) == 0 {
		return errors.New("--main is the plugin's own database beside the servers given with --dsn; without --dsn the demo runs on SQLite files")
	}
	if o.dir == "" {
		return nil
	}
	if len(o.dsns) > 0 {
		return errors.New("--dir is where the SQLite files go; with --dsn there are none")
	}
	info, err := os.Stat(o.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--dir %s: no such directory; create it, or leave --dir out for a temporary one", o.dir)
	case err != nil:
		return fmt.Errorf("--dir: %w", err)
	case !info.IsDir():
		return fmt.Errorf("--dir %s is not a directory", o.dir)
	}
	return nil
}

func openDemo(o demoOptions) (*demoSetup, error) {
	if err := checkDir(o); err != nil {
		return nil, err
	}
	var dialectors []gorm.Dialector
	var main gorm.Dialector
	s := &demoSetup{dsns: o.dsns}
	cleanup := func() error { return nil }
	if len(o.dsns) == 0 {
		dir := o.dir
		if dir == "" {
			tmp, err := os.MkdirTemp("", "shardid-demo")
			if err != nil {
				return nil, err
			}
			dir = tmp
			if !o.keep {
				cleanup = func() error { return os.RemoveAll(tmp) }
			}
		}
		file := func(name string) gorm.Dialector {
			return sqlite.Open("file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
		}
		main = file("main.db")
		for i := range 4 {
			dialectors = append(dialectors, file(fmt.Sprintf("shard-%d.db", i)))
		}
		s.dir = dir
	} else {
		for _, dsn := range o.dsns {
			d, err := dialectorFor(dsn)
			if err != nil {
				return nil, fmt.Errorf("--dsn %w", err)
			}
			dialectors = append(dialectors, d)
		}
		if o.main == "" {
			return nil, fmt.Errorf("--main: with --dsn, give the plugin's own database too (it holds the unsharded tables, and cannot also be a shard)")
		}
		var err error
		if main, err = dialectorFor(o.main); err != nil {
			return nil, fmt.Errorf("--main: %w", err)
		}
	}
	config := &gorm.Config{Logger: logger.Discard}
	db, err := gorm.Open(main, config)
	if err != nil && len(o.dsns) > 0 {
		return nil, dsnError("--main", o.main, err)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the plugin's database: %w", err)
	}
	count := shardid.Layout{}.ShardCount()
	s.db, s.cleanup = db, cleanup
	var shards []shardid.Shard
	for i, d := range dialectors {
		direct, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
		if err != nil {
			return nil, s.namingDSNs(fmt.Errorf("opening %s: %w", demoShardName(i), err))
		}
		s.direct = append(s.direct, direct)
		shards = append(shards, shardid.Shard{
			Name:    demoShardName(i),
			DB:      direct,
			Logical: []shardid.Range{{From: i * count / len(dialectors), To: (i+1)*count/len(dialectors) - 1}},
		})
	}
	// The demo's own map: the main database may hold an application's.
	atomicity := shardid.TwoPhaseCommit
	if main.Name() == "sqlite" {
		atomicity = shardid.BestEffort // SQLite has no two-phase commit: a batch over several databases is written part by part
	}
	if err := db.Migrator().DropTable(demoMapTable); err != nil { // each run starts afresh: an earlier run's map, on other --dsn, would win
		return nil, s.namingDSNs(err)
	}
	s.plugin = shardid.New(shardid.Config{Shards: shards, DefaultStrategy: o.strategy, MapTable: demoMapTable, Log: warnings, Atomic: atomicity})
	if err := db.Use(s.plugin); err != nil {
		return nil, s.namingDSNs(err)
	}
	// Closing the plugin releases the snowflake worker leases.
	s.cleanup = func() error { return errors.Join(s.plugin.Close(), cleanup()) }
	return s, nil
}

// measureIDs times the plugin's ID assignment alone: a dry run of Creates
// in batches of 100 assigns IDs (from each shard's database) and writes no row.
func measureIDs(db *gorm.DB) (int, time.Duration, error) {
	const batches, size = 100, 100
	dry := db.Session(&gorm.Session{DryRun: true, SkipDefaultTransaction: true})
	users := make([]DemoUser, size)
	start := time.Now()
	for range batches {
		clear(users)
		if err := dry.Create(&users).Error; err != nil {
			return 0, 0, err
		}
	}
	return batches * size, time.Since(start), nil
}

// dialectorFor picks the GORM driver a DSN is written for.
func dialectorFor(dsn string) (gorm.Dialector, error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"), strings.Contains(dsn, "host="):
		return postgres.Open(dsn), nil
	case strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix("):
		return mysql.Open(dsn), nil
	case strings.HasPrefix(dsn, "file:"):
		return sqlite.Open(dsn), nil
	}
	return nil, fmt.Errorf("%q: write a MySQL DSN (user@tcp(host:port)/db), a PostgreSQL URL (postgres://...) or an SQLite file (file:path.db)", redactDSN(dsn))
}

// The demo's bounds, checked before anything is dropped or created.
const (
	demoMaxUsers   = 10_000_000
	demoMaxWorkers = 1024
	demoMaxPhotos  = 1000
)

// createUsers creates o.users users with o.photos photos each from
// o.workers goroutines, calling done after each user.
func createUsers(db *gorm.DB, o demoOptions, done func()) ([]int64, error) {
	var next atomic.Int64
	ids := make([]int64, o.users)
	errs := make([]error, o.workers)
	var wg sync.WaitGroup
	for w := range o.workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < o.users; i = int(next.Add(1)) - 1 {
				u := DemoUser{Name: fmt.Sprintf("user-%d", i)}
				for j := range o.photos {
					u.Photos = append(u.Photos, DemoPhoto{URL: fmt.Sprintf("https://photos.example/%d/%d.jpg", i, j)})
				}
				if err := db.Create(&u).Error; err != nil {
					errs[w] = err
					return
				}
				ids[i] = u.ID
				done()
			}
		})
	}
	wg.Wait()
	return ids, errors.Join(errs...)
}

func runDemo(out, progress io.Writer, o demoOptions) (err error) {
	if o.users < 1 || o.workers < 1 || o.photos < 0 {
		return fmt.Errorf("--rows and --workers must be at least 1, --photos at least 0")
	}
	if o.users > demoMaxUsers || o.workers > demoMaxWorkers || o.photos > demoMaxPhotos {
		return fmt.Errorf("--rows at most %d, --workers at most %d, --photos at most %d: the demo keeps every user's ID in memory", demoMaxUsers, demoMaxWorkers, demoMaxPhotos)
	}
	if !slices.Contains([]string{"instagram", "snowflake", "segment"}, o.strategy) {
		return fmt.Errorf("--strategy %q: the demo runs instagram, snowflake or segment", o.strategy)
	}
	s, err := openDemo(o)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(s.namingDSNs(err), s.cleanup()) }()
	db := s.db
	if err := s.forgetBoundDatabases(); err != nil {
		return err
	}
	migrator := s.plugin.Migrator(db)
	if err := migrator.DropTable(&DemoPhoto{}, &DemoUser{}); err != nil {
		return err
	}
	if err := migrator.AutoMigrate(&DemoUser{}, &DemoPhoto{}); err != nil {
		return err
	}
	if !o.keep && len(o.dsns) > 0 {
		defer func() { err = errors.Join(err, migrator.DropTable(&DemoPhoto{}, &DemoUser{})) }()
	}
	layout := s.plugin.Layout()
	fmt.Fprintf(out, "shardid demo: %s on %s (%s), IDs by %s\n", plural(int64(layout.ShardCount()), "logical shard"), plural(int64(len(s.direct)), "physical database"),
		db.Dialector.Name(), o.strategy)

	bar := progressbar.NewOptions(o.users, progressbar.OptionSetWriter(progress), progressbar.OptionSetDescription("creating users"),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish(),
		progressbar.OptionSetVisibility(isTerminal(progress))) // frames in a log are noise
	start := time.Now()
	ids, err := createUsers(db, o, func() { _ = bar.Add(1) })
	elapsed := time.Since(start)
	_ = bar.Finish()
	if err != nil {
		return err
	}
	rows := o.users * (1 + o.photos)
	fmt.Fprintf(out, "created   %s and %s (%s, each with a new ID) from %s in %s: %.0f rows/s\n",
		plural(int64(o.users), "user"), plural(int64(o.users*o.photos), "photo"), plural(int64(rows), "row"), plural(int64(o.workers), "goroutine"),
		elapsed.Round(time.Millisecond), float64(rows)/elapsed.Seconds())
	made, idTime, err := measureIDs(db)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "IDs       %d more made in batches of 100, without writing rows, in %s: %.0f IDs/s\n",
		made, idTime.Round(time.Millisecond), float64(made)/idTime.Seconds())

	start = time.Now()
	for _, id := range ids {
		var u DemoUser
		if err := db.Preload("Photos").First(&u, id).Error; err != nil {
			return fmt.Errorf("reading user %d back: %w", id, err)
		}
		if len(u.Photos) != o.photos {
			return fmt.Errorf("user %d came back with %d photos, want %d", id, len(u.Photos), o.photos)
		}
	}
	elapsed = time.Since(start)
	fmt.Fprintf(out, "read      every user back by ID with its photos in %s: %.0f users/s\n", elapsed.Round(time.Millisecond), float64(o.users)/elapsed.Seconds())

	owner := ids[0]
	err = db.Clauses(shardid.ByID(owner)).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&DemoPhoto{UserID: owner, URL: "https://photos.example/in-a-transaction.jpg"}).Error; err != nil {
			return err
		}
		return tx.Model(&DemoUser{ID: owner}).Update("name", "renamed in a transaction").Error
	})
	if err != nil {
		return fmt.Errorf("the pinned transaction: %w", err)
	}
	shardMap := s.plugin.ShardMap()
	fmt.Fprintf(out, "pinned    a transaction to user %d's shard (%s): added a photo, renamed the user\n",
		owner, shardMap.Name(shardMap.Physical(layout.Shard(owner))))

	var users, photos int64
	if err := db.Model(&DemoUser{}).Clauses(shardid.AllShards()).Count(&users).Error; err != nil {
		return err
	}
	if err := db.Model(&DemoPhoto{}).Clauses(shardid.AllShards()).Count(&photos).Error; err != nil {
		return err
	}
	fmt.Fprintf(out, "counted   %s and %s across all shards at once\n", plural(users, "user"), plural(photos, "photo"))
	st := s.plugin.Stats()[o.strategy]
	fmt.Fprintf(out, "stats     %s issued %s; callers waited %s for a full tick, %d for the clock, %d for a block\n",
		o.strategy, plural(int64(st.Issued), "ID"), plural(int64(st.Waits.SequenceFull), "time"), st.Waits.ClockBehind, st.Waits.Refill)

	fmt.Fprintln(out, "decoded   a user and its first photo:")
	var sample DemoUser
	if err := db.Preload("Photos").First(&sample, owner).Error; err != nil {
		return err
	}
	describe := func(kind string, id int64) {
		p := layout.Decode(id)
		made := p.Time.UTC().Format("2006-01-02T15:04:05.000Z")
		if o.strategy == "segment" {
			made = "a counter, no time" // split around the shard field instead
		}
		fmt.Fprintf(out, "          %-5s %d  %s  logical shard %4d  %s  sequence %d\n", kind, id,
			made, p.Shard, shardMap.Name(shardMap.Physical(p.Shard)), p.Sequence)
	}
	describe("user", sample.ID)
	if len(sample.Photos) > 0 {
		describe("photo", int64(sample.Photos[0].ID))
	}
	if err := checkPlacement(out, s, users, photos); err != nil {
		return err
	}
	if o.keep && s.dir != "" {
		fmt.Fprintf(out, "kept      the SQLite files in %s\n", s.dir)
	}
	return nil
}

// demoMapTable is the demo's shared map, apart from an application's on the same database.
const demoMapTable = "shardid_demo_shard_map"

// forgetBoundDatabases forgets which databases the demo's shard names opened
// in an earlier run, as operations.md tells for a database replaced on
// purpose: each run starts afresh on the --dsn it is given, which may be
// other databases than the last run's.
func (s *demoSetup) forgetBoundDatabases() error {
	bound := mapstore.KeptTable(demoMapTable, "shardid_shard_databases", "_databases") // the plugin's record of the database each shard name of its map opened
	if !s.db.Migrator().HasTable(bound) {
		return nil
	}
	names := make([]string, len(s.direct))
	for i := range names {
		names[i] = demoShardName(i)
	}
	return s.db.Exec("DELETE FROM "+bound+" WHERE name IN ?", names).Error
}

// checkPlacement reads every physical database directly and checks that each
// row is on the one its ID names, and that none is missing.
func checkPlacement(out io.Writer, s *demoSetup, users, photos int64) error {
	layout, shardMap := s.plugin.Layout(), s.plugin.ShardMap()
	fmt.Fprintln(out, "placement rows per physical database, read directly:")
	var checked, misplaced int64
	for k, db := range s.direct {
		var userIDs, photoIDs []int64
		if err := db.Model(&DemoUser{}).Pluck("id", &userIDs).Error; err != nil {
			return fmt.Errorf("reading %s directly: %w", shardMap.Name(k), err)
		}
		if err := db.Model(&DemoPhoto{}).Pluck("id", &photoIDs).Error; err != nil {
			return fmt.Errorf("reading %s directly: %w", shardMap.Name(k), err)
		}
		for _, id := range append(userIDs, photoIDs...) {
			checked++
			if shardMap.Physical(layout.Shard(id)) != k {
				misplaced++
			}
		}
		fmt.Fprintf(out, "          %s: %s, %s\n", shardMap.Name(k), plural(int64(len(userIDs)), "user"), plural(int64(len(photoIDs)), "photo"))
	}
	if misplaced > 0 || checked != users+photos {
		return fmt.Errorf("check failed: %d of %d rows are away from the database their ID names (%d counted through the plugin)", misplaced, checked, users+photos)
	}
	fmt.Fprintf(out, "check     all %d rows are on the physical database their ID names\n", checked) // never one: a user and the pinned photo
	return nil
}
