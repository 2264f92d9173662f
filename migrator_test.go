package shardid

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// openIn opens the plugin's database and two shards in dir with a fresh plugin.
func openIn(t *testing.T, dir string) (*gorm.DB, *Plugin) {
	t.Helper()
	return openLogged(t, dir, logger.Discard)
}

// openLogged is openIn with GORM's logger log, which the shards get too.
func openLogged(t *testing.T, dir string, log logger.Interface) (*gorm.DB, *Plugin) {
	t.Helper()
	return openWithLogged(t, dir, Config{}, log)
}

// openWith is openIn with cfg, whose Shards it sets.
func openWith(t *testing.T, dir string, cfg Config) (*gorm.DB, *Plugin) {
	t.Helper()
	return openWithLogged(t, dir, cfg, logger.Discard)
}

func openWithLogged(t *testing.T, dir string, cfg Config, log logger.Interface) (*gorm.DB, *Plugin) {
	t.Helper()
	dsn := func(name string) string {
		return "file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	}
	half := Layout{}.ShardCount() / 2
	db, err := gorm.Open(sqlite.Open(dsn("main.db")), &gorm.Config{Logger: log})
	must(t, err)
	cfg.Shards = []Shard{
		{Name: "s0", Dialector: sqlite.Open(dsn("s0.db")), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "s1", Dialector: sqlite.Open(dsn("s1.db")), Logical: []Range{{From: half, To: 2*half - 1}}},
	}
	p := New(cfg)
	must(t, db.Use(p))
	t.Cleanup(func() {
		_ = p.Close()
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db, p
}

// A process that has not seen a sharded model yet, as after a restart, finds
// its table by name on the shards: HasTable("rev_plains") says true and
// DropTable("rev_plains") drops it there.
func TestMigratorFindsATableByNameAfterARestart(t *testing.T) {
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &revPlain{}))
	must(t, db.Create(&revPlain{Name: "kept"}).Error)
	if !p.Migrator(db).HasTable("rev_plains") {
		t.Fatal("HasTable by name, in the process that migrated: false")
	}

	db2, p2 := openIn(t, dir) // the next process
	if !p2.Migrator(db2).HasTable("rev_plains") {
		t.Errorf("HasTable(\"rev_plains\") after a restart: false, though every shard has the table")
	}
	err := p2.Migrator(db2).DropTable("rev_plains")
	if err == nil && p2.Migrator(db2).HasTable(&revPlain{}) {
		t.Errorf("DropTable(\"rev_plains\") after a restart returned nil and the shards still have the table")
	}
}

// A table name found both on the plugin's database (a copy plain
// db.AutoMigrate left) and on the shards is acted on everywhere: DropTable
// leaves no copy behind.
func TestMigratorByTableNameOnBothSides(t *testing.T) {
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &revPlain{}))
	own, err := gorm.Open(sqlite.Open("file:"+filepath.Join(dir, "main.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := own.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	must(t, own.Exec("CREATE TABLE rev_plains (id integer)").Error)

	db2, p2 := openIn(t, dir) // a process that has not seen the model
	if !p2.Migrator(db2).HasTable("rev_plains") {
		t.Fatal("HasTable(\"rev_plains\") with the table everywhere: false")
	}
	must(t, p2.Migrator(db2).DropTable("rev_plains"))
	if own.Migrator().HasTable("rev_plains") {
		t.Error("DropTable(\"rev_plains\") left the copy on the plugin's database")
	}
	if p2.Migrator(db2).HasTable(&revPlain{}) {
		t.Error("DropTable(\"rev_plains\") left the table on the shards")
	}
}

// The plugin's migrator reads a table given by name, and the tables a
// migration would shard, on the plugin's database under a mark that lets
// its SQL name sharded tables there. The mark stays on its own session:
// given the application's db, it was left on that db's statement, which
// every db.WithContext(ctx) copies, so raw SQL naming a sharded table ran
// on the plugin's database instead of being refused.
func TestTheMigratorLeavesNoMarkOnTheDBItWasGiven(t *testing.T) {
	db, p := openIn(t, t.TempDir())
	must(t, p.AutoMigrate(db, &revPlain{}))
	_ = p.Migrator(db).HasTable("rev_unknowns")
	must(t, p.AutoMigrate(db, &recordedUser{}, &recordedLanguage{}))
	for _, table := range []string{"rev_plains", "recorded_users"} {
		err := db.WithContext(context.Background()).Exec("INSERT INTO " + table + " (id, name) VALUES (5, 'x')").Error
		if !errors.Is(err, ErrNoShard) {
			t.Errorf("raw SQL naming sharded table %s without a clause, after the migrator: %v; want ErrNoShard", table, err)
		}
	}
}

// An unsharded model related to a sharded one is migrated on the plugin's
// database without following that relation: the sharded table and the join
// table beside it are on the shards only.
func TestMigratorKeepsShardedRelationsOffThePluginsDatabase(t *testing.T) {
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &revTag{}, &revOwner{}))
	shard, err := gorm.Open(sqlite.Open("file:"+filepath.Join(dir, "s0.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := shard.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	for table, onOwn := range map[string]bool{"rev_tags": true, "rev_owners": false, "rev_owner_tags": false} {
		if got := db.Migrator().HasTable(table); got != onOwn {
			t.Errorf("%s on the plugin's database: %v, want %v", table, got, onOwn)
		}
		if got := shard.Migrator().HasTable(table); got == onOwn {
			t.Errorf("%s on a shard: %v, want %v", table, got, !onOwn)
		}
	}
}

type migLogAccount struct {
	ID    int64 `shardid:"hash:Login"` // its hash column gets an index
	Login string
}

type migLogCountry struct { // unsharded
	ID   int64
	Name string
}

// TestMigratorLogLinesNameTheCaller: GORM's log line of each statement the
// shard-aware migrator runs names the caller's file and line, as those of
// GORM's own migrator do, never a file of the plugin. (The SQLite driver's
// own queries name the driver, whoever migrates.)
func TestMigratorLogLinesNameTheCaller(t *testing.T) {
	var out bytes.Buffer
	db, p := openLogged(t, t.TempDir(), logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info}))
	_, self, _, _ := runtime.Caller(0)
	source := filepath.Dir(self) + string(filepath.Separator) // the plugin's files, tests aside
	for _, c := range []struct {
		what string
		run  func() string
	}{
		{"ids.AutoMigrate", func() string {
			err, where := p.AutoMigrate(db, &migLogAccount{}, &migLogCountry{}), here()
			must(t, err)
			return where
		}},
		{"ids.Migrator(db).CreateTable", func() string {
			must(t, p.Migrator(db).DropTable(&migLogAccount{}, &migLogCountry{}))
			out.Reset()
			err, where := p.Migrator(db).CreateTable(&migLogAccount{}, &migLogCountry{}), here()
			must(t, err)
			return where
		}},
	} {
		out.Reset()
		where := c.run()
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		creates := 0
		for i, line := range lines {
			if strings.HasPrefix(line, source) && !strings.Contains(line, "_test.go:") {
				t.Errorf("%s: a line names the plugin's %s", c.what, strings.TrimPrefix(line, source))
			}
			if i > 0 && strings.Contains(line, "] CREATE ") { // the default logger writes the place, then the SQL
				creates++
				if !strings.HasSuffix(lines[i-1], where) {
					t.Errorf("%s: %q is logged from %q, not from %s", c.what, line, lines[i-1], where)
				}
			}
		}
		if creates < 5 { // two tables on each shard, one index each, one table on the plugin's database
			t.Errorf("%s: %d CREATE statements logged, want 5 or more:\n%s", c.what, creates, out.String())
		}
	}
}

type revTag struct { // unsharded, with the back-reference of a sharded owner's many2many
	ID     int64
	Name   string
	Owners []revOwner `gorm:"many2many:rev_owner_tags"`
}

type revOwner struct {
	ID   int64 `shardid:""`
	Name string
	Tags []revTag `gorm:"many2many:rev_owner_tags"`
}

// ids.AutoMigrate of a sharded owner and its unsharded many2many target that
// names the relation back succeeds: GORM's migrator of the unsharded model
// would make the join table on the plugin's database (its SQL references
// rev_owners), which the raw SQL check refuses as "raw SQL on a sharded table".
func TestAutoMigrateOfAManyToManyBackReference(t *testing.T) {
	db, p := openIn(t, t.TempDir())
	if err := p.AutoMigrate(db, &revOwner{}, &revTag{}); err != nil {
		t.Errorf("ids.AutoMigrate(owner, tag): %v", err)
	}
}

type pkStudent struct { // its ID says primaryKey, as many write it
	ID      int64 `gorm:"primaryKey" shardid:""`
	Name    string
	Courses []pkCourse `gorm:"many2many:pk_student_courses"`
}

type pkCourse struct {
	ID    int64 `gorm:"primaryKey" shardid:""`
	Title string
}

// TestAManyToManyOfKeysTaggedPrimaryKeyIsMigratedAndUsed: GORM copies the
// whole tag of a key that says primaryKey into the join table it makes, so
// the join table's two keys carry shardid tags. It is not a sharded model of
// two keys: it migrates, and its rows are made beside their owner.
func TestAManyToManyOfKeysTaggedPrimaryKeyIsMigratedAndUsed(t *testing.T) {
	db, p, direct := twoSQLiteShards(t)
	must(t, p.AutoMigrate(db, &pkStudent{}, &pkCourse{}))
	course := pkCourse{Title: "c"}
	must(t, db.Create(&course).Error)
	student := pkStudent{Name: "s"}
	must(t, db.Create(&student).Error)
	must(t, db.Model(&student).Omit("Courses.*").Association("Courses").Append(&course)) // the course is written already, maybe on another database
	k := p.ShardMap().Physical(p.Layout().Shard(student.ID))
	var n int64
	must(t, direct[k].Table("pk_student_courses").Where("pk_student_id = ? AND pk_course_id = ?", student.ID, course.ID).Count(&n).Error)
	if n != 1 {
		t.Errorf("the join row on its owner's database %d: %d rows, want 1", k, n)
	}
	var got pkStudent
	must(t, db.Preload("Courses", func(tx *gorm.DB) *gorm.DB { return tx.Clauses(AllShards()) }).First(&got, student.ID).Error)
	if len(got.Courses) != 1 || got.Courses[0].ID != course.ID {
		t.Errorf("the student's courses read back: %+v", got.Courses)
	}
}

// TestAnUnnamedStructWithAShardidTagIsAShardedModel: an application's
// struct literal type under db.Table keeps its tag: a Create under a shard
// clause makes an ID of that shard, on its database.
func TestAnUnnamedStructWithAShardidTagIsAShardedModel(t *testing.T) {
	db, p, direct := twoSQLiteShards(t)
	must(t, p.AutoMigrate(db, &pkCourse{}))
	shard := p.Layout().ShardCount() - 1
	row := struct {
		ID    int64 `shardid:""`
		Title string
	}{Title: "anonymous"}
	must(t, db.Table("pk_courses").Clauses(OnShard(shard)).Create(&row).Error)
	if got := p.Layout().Shard(row.ID); got != shard {
		t.Fatalf("the ID %d is of shard %d, want %d", row.ID, got, shard)
	}
	var n int64
	must(t, direct[p.ShardMap().Physical(shard)].Table("pk_courses").Where("id = ? AND title = ?", row.ID, "anonymous").Count(&n).Error)
	if n != 1 {
		t.Errorf("the row on its shard's database: %d rows, want 1", n)
	}
}

// TestShardedViewNamesItsShards: a view over a sharded model is created on
// every physical database when its query says AllShards; a query naming no
// shard is refused with ErrNoShard and creates nothing, where GORM would
// send CREATE VIEW with no query.
func TestShardedViewNamesItsShards(t *testing.T) {
	db, p, direct := revRouted(t, &revPhoto{})
	viewSQL := func(name string) []string {
		var found []string
		for _, d := range direct {
			var sql string
			must(t, d.Raw("SELECT coalesce(max(sql), '') FROM sqlite_master WHERE type = 'view' AND name = ?", name).Scan(&sql).Error)
			found = append(found, sql)
		}
		return found
	}
	err := p.Migrator(db).CreateView("photo_urls", gorm.ViewOption{Query: db.Model(&revPhoto{}).Select("id, url")})
	if !errors.Is(err, ErrNoShard) {
		t.Fatalf("a view whose query names no shard: %v, want ErrNoShard", err)
	}
	if got := viewSQL("photo_urls"); got[0] != "" || got[1] != "" {
		t.Fatalf("the refused view exists: %q", got)
	}
	must(t, p.Migrator(db).CreateView("photo_urls", gorm.ViewOption{Query: db.Clauses(AllShards()).Model(&revPhoto{}).Select("id, url")}))
	for i, sql := range viewSQL("photo_urls") {
		if sql != "CREATE VIEW `photo_urls` AS SELECT id, url FROM `rev_photos`" {
			t.Errorf("database %d: %q", i, sql)
		}
	}
}

// TestAViewMadePartWaySaysHowToFinishIt: a view refused on one database (a
// view of that name is there already) after it was made on another says so,
// and what to do: dropping it with DropView and creating it again works.
func TestAViewMadePartWaySaysHowToFinishIt(t *testing.T) {
	db, p, direct := revRouted(t, &revPhoto{})
	must(t, direct[1].Exec("CREATE VIEW photo_urls AS SELECT 1 AS id").Error)
	create := func() error {
		return p.Migrator(db).CreateView("photo_urls", gorm.ViewOption{Query: db.Clauses(AllShards()).Model(&revPhoto{}).Select("id, url")})
	}
	err := create()
	if err == nil || !strings.Contains(err.Error(), "drop it with DropView, then create it again") {
		t.Fatalf("a view refused on the second database: %v; want the advice to drop it and create it again", err)
	}
	must(t, p.Migrator(db).DropView("photo_urls"))
	must(t, create())
	for i, d := range direct {
		var sql string
		must(t, d.Raw("SELECT coalesce(max(sql), '') FROM sqlite_master WHERE type = 'view' AND name = 'photo_urls'").Scan(&sql).Error)
		if !strings.Contains(sql, "rev_photos") {
			t.Errorf("database %d after following the advice: %q", i, sql)
		}
	}
}

type dropUser struct {
	ID   int64 `shardid:""` // instagram: a clock-sequence on each database
	Name string
}

type dropFlake struct {
	ID   int64 `shardid:"strategy:snowflake"` // a leased worker ID on each database
	Name string
}

type dropCounter struct {
	ID   int64 `shardid:"strategy:segment"`
	Name string
}

// TestAutoMigrateAfterATeardownDroppedEveryTable: a test's teardown drops
// every table the migrator lists, the plugin's own among them, and the next
// AutoMigrate in the same process makes the plugin work again: IDs, the
// shared map and the audit.
func TestAutoMigrateAfterATeardownDroppedEveryTable(t *testing.T) {
	db, p := openIn(t, t.TempDir())
	models := []any{&dropUser{}, &dropCounter{}, &dropFlake{}}
	must(t, p.AutoMigrate(db, models...))
	must(t, db.Create(&dropUser{Name: "a"}).Error)
	must(t, db.Create(&dropCounter{Name: "a"}).Error)
	tables, err := p.Migrator(db).GetTables()
	must(t, err)
	for _, table := range tables {
		must(t, p.Migrator(db).DropTable(table))
	}
	must(t, p.AutoMigrate(db, models...))
	for _, row := range []any{&dropUser{Name: "b"}, &dropCounter{Name: "b"}, &dropFlake{Name: "b"}} {
		if err := db.Create(row).Error; err != nil {
			t.Errorf("a Create after the tables were dropped and migrated again: %v", err)
		}
	}
	if _, err := p.Audit(t.Context()); err != nil {
		t.Errorf("the audit after the tables were dropped and migrated again: %v", err)
	}
	for _, name := range p.Physicals() { // the leases' rows, which the heartbeat renews
		var leases int64
		must(t, db.Clauses(OnShard(p.Layout().ShardCount()/2*slices.Index(p.Physicals(), name))).Raw("SELECT count(*) FROM shardid_workers").Scan(&leases).Error)
		if leases != 1 {
			t.Errorf("%s holds %d worker leases after the teardown and AutoMigrate, want the one this process holds", name, leases)
		}
	}
	// A teardown, then an AutoMigrate of unsharded models only: the plugin's
	// own tables are made again too.
	tables, err = p.Migrator(db).GetTables()
	must(t, err)
	for _, table := range tables {
		must(t, p.Migrator(db).DropTable(table))
	}
	must(t, p.AutoMigrate(db, &downNote{}))
	if _, err := p.RefreshMap(t.Context()); err != nil {
		t.Errorf("the shared map after a teardown and an AutoMigrate of unsharded models: %v", err)
	}
}

// TestShardOpenedAfterThePluginsTablesWereDropped: the plugin's database
// lost its tables before a shard first opened; the shard opens all the same.
func TestShardOpenedAfterThePluginsTablesWereDropped(t *testing.T) {
	db, _ := openIn(t, t.TempDir())
	must(t, db.Clauses(OnShard(1)).Exec("SELECT 1").Error) // s0 opens, s1 not
	tables, err := db.Migrator().GetTables()
	must(t, err)
	for _, table := range tables {
		must(t, db.Migrator().DropTable(table))
	}
	if err := db.Clauses(OnShard(Layout{}.ShardCount() - 1)).Exec("SELECT 1").Error; err != nil {
		t.Errorf("a statement on the shard that opens after the plugin's tables were dropped: %v", err)
	}
}

// TestMigratorOfATableRecordsIt: a model migrated into a table of another
// name is recorded by that table, which moves and audits then read.
func TestMigratorOfATableRecordsIt(t *testing.T) {
	db, p := openIn(t, t.TempDir())
	must(t, p.Migrator(db.Table("drop_users_archive")).AutoMigrate(&dropUser{}))
	var recorded []string
	must(t, db.Table("shardid_tables").Pluck("name", &recorded).Error)
	if !slices.Contains(recorded, "drop_users_archive") || slices.Contains(recorded, "drop_users") {
		t.Errorf("recorded tables %v, want drop_users_archive and not drop_users, which does not exist", recorded)
	}
	if _, err := p.Audit(t.Context()); err != nil {
		t.Errorf("the audit of the table: %v", err)
	}
	must(t, p.AutoMigrate(db, &dropUser{}))
	must(t, p.Migrator(db.Table("drop_users_archive")).DropTable(&dropUser{}))
	recorded = nil
	must(t, db.Table("shardid_tables").Pluck("name", &recorded).Error)
	if slices.Contains(recorded, "drop_users_archive") || !slices.Contains(recorded, "drop_users") {
		t.Errorf("recorded tables %v after the archive was dropped, want drop_users alone", recorded)
	}
}

type partwayUser struct {
	ID    int64  `shardid:""`
	Email string `gorm:"index:idx_partway_email,unique"`
}

// TestMigratorChangesStoppedPartWayFinishOnTheirNextRun: a change made on
// some physical databases and not on the others (one refused it, or an
// operator made it by hand on one) is finished by running it again: the
// databases that have it are skipped, as GORM's migrator would refuse it
// there.
func TestMigratorChangesStoppedPartWayFinishOnTheirNextRun(t *testing.T) {
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &partwayUser{}))
	mig := p.Migrator(db)
	must(t, mig.DropIndex(&partwayUser{}, "idx_partway_email"))
	half := Layout{}.ShardCount() / 2
	// Two equal emails on s1 only: the unique index is made on s0, refused on s1.
	for _, shard := range []int{half + 1, half + 2} {
		must(t, db.Clauses(OnShard(shard)).Create(&partwayUser{Email: "same"}).Error)
	}
	must(t, db.Clauses(OnShard(1)).Create(&partwayUser{Email: "other"}).Error)
	if err := mig.CreateIndex(&partwayUser{}, "idx_partway_email"); err == nil {
		t.Fatal("a unique index over equal emails on s1 was made")
	}
	must(t, db.Clauses(OnShard(half+2)).Where("email = ?", "same").Limit(1).Delete(&partwayUser{}).Error)
	if err := mig.CreateIndex(&partwayUser{}, "idx_partway_email"); err != nil {
		t.Errorf("CreateIndex run again once s1 allows it: %v", err)
	}
	direct := func(name string) *gorm.DB {
		d, err := gorm.Open(sqlite.Open(filepath.Join(dir, name)), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		return d
	}
	s0 := direct("s0.db")
	must(t, s0.Migrator().RenameIndex(&partwayUser{}, "idx_partway_email", "idx_partway_mail")) // by hand, on s0 only
	if err := mig.RenameIndex(&partwayUser{}, "idx_partway_email", "idx_partway_mail"); err != nil {
		t.Errorf("RenameIndex finished on s1 after s0 had it: %v", err)
	}
	must(t, s0.Migrator().DropIndex(&partwayUser{}, "idx_partway_mail"))
	if err := mig.DropIndex(&partwayUser{}, "idx_partway_mail"); err != nil {
		t.Errorf("DropIndex finished on s1 after s0 had it: %v", err)
	}
	must(t, s0.Migrator().RenameTable("partway_users", "partway_people"))
	if err := mig.RenameTable("partway_users", "partway_people"); err != nil {
		t.Errorf("RenameTable finished on s1 after s0 had it: %v", err)
	}
	for _, name := range []string{"s0.db", "s1.db"} {
		d := direct(name)
		if !d.Migrator().HasTable("partway_people") || d.Migrator().HasTable("partway_users") || d.Migrator().HasIndex("partway_people", "idx_partway_mail") {
			t.Errorf("%s: not renamed and dropped as asked", name)
		}
	}
	if err := mig.DropIndex(&partwayUser{}, "idx_partway_mail"); err == nil {
		t.Error("DropIndex of an index no database has succeeded, where GORM's migrator fails")
	}
}

type downNote struct { // unsharded
	ID   int64
	Text string
}

// TestDropTableWithADatabaseDownDropsNothing: DropTable of an unsharded and a
// sharded model, with a physical database down, is refused before it drops
// either, as a change of a sharded table alone is.
func TestDropTableWithADatabaseDownDropsNothing(t *testing.T) {
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &downNote{}, &partwayUser{}))
	must(t, p.Close())
	half := Layout{}.ShardCount() / 2
	again, err := gorm.Open(sqlite.Open(filepath.Join(dir, "main.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	down := New(Config{Shards: []Shard{
		{Name: "s0", Dialector: sqlite.Open(filepath.Join(dir, "s0.db")), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "s1", Dialector: sqlite.Open(filepath.Join(dir, "gone", "s1.db")), Logical: []Range{{From: half, To: 2*half - 1}}},
	}})
	must(t, again.Use(down))
	t.Cleanup(func() { _ = down.Close() })
	if err := down.Migrator(again).DropTable(&downNote{}, &partwayUser{}); !errors.Is(err, ErrShardUnavailable) {
		t.Fatalf("DropTable with s1 down: %v, want ErrShardUnavailable", err)
	}
	if !again.Migrator().HasTable(&downNote{}) {
		t.Error("the unsharded table was dropped before the sharded one was refused")
	}
	must(t, again.Exec("CREATE VIEW down_texts AS SELECT text FROM down_notes").Error)
	if err := down.Migrator(again).DropView("down_texts"); !errors.Is(err, ErrShardUnavailable) {
		t.Errorf("DropView with s1 down: %v, want ErrShardUnavailable", err)
	}
	var views int64
	must(t, again.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name = 'down_texts'").Scan(&views).Error)
	if views != 1 {
		t.Error("DropView with s1 down dropped the view on the plugin's database before it was refused")
	}
}

type renameMember struct {
	ID   int64 `shardid:""`
	Name string
}

// TestRenameTableRenamesItsRecord: RenameTable of a sharded model renames
// its record in shardid_tables once every database has the renamed table,
// so that the audit and a move read it; a rename that stopped part way
// keeps the old record until it is run again.
func TestRenameTableRenamesItsRecord(t *testing.T) {
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &renameMember{}))
	must(t, db.Create(&renameMember{Name: "a"}).Error)
	s1, err := gorm.Open(sqlite.Open(filepath.Join(dir, "s1.db")), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	must(t, s1.Exec("CREATE TABLE rename_people (id integer)").Error) // the rename is made on s0, refused on s1
	if err := p.Migrator(db).RenameTable(&renameMember{}, "rename_people"); err == nil {
		t.Fatal("RenameTable onto a table s1 has: no error")
	}
	var recorded []string
	must(t, db.Table("shardid_tables").Pluck("name", &recorded).Error)
	if !slices.Equal(recorded, []string{"rename_members"}) {
		t.Errorf("recorded tables %v after a rename that stopped part way, want rename_members, which s1 still has", recorded)
	}
	must(t, s1.Exec("DROP TABLE rename_people").Error)
	must(t, p.Migrator(db).RenameTable(&renameMember{}, "rename_people")) // finishes it on s1
	recorded = nil
	must(t, db.Table("shardid_tables").Pluck("name", &recorded).Error)
	if !slices.Contains(recorded, "rename_people") || slices.Contains(recorded, "rename_members") {
		t.Errorf("recorded tables %v after the rename, want rename_people and not rename_members", recorded)
	}
	if _, err := p.Audit(t.Context()); err != nil {
		t.Errorf("the audit after the rename: %v", err)
	}
}

// TestShardedViewOverATableNamesItsShards: a view whose query names a sharded
// table with db.Table and no model is refused with ErrNoShard without a
// shard, as one on the model is, and with AllShards is created on every
// physical database.
func TestShardedViewOverATableNamesItsShards(t *testing.T) {
	db, p, direct := revRouted(t, &revPhoto{})
	err := p.Migrator(db).CreateView("photo_urls", gorm.ViewOption{Query: db.Table("rev_photos").Select("id, url")})
	if !errors.Is(err, ErrNoShard) {
		t.Fatalf("a view whose query names no shard: %v, want ErrNoShard", err)
	}
	must(t, p.Migrator(db).CreateView("photo_urls", gorm.ViewOption{Query: db.Clauses(AllShards()).Table("rev_photos").Select("id, url")}))
	for i, d := range direct {
		var sql string
		must(t, d.Raw("SELECT coalesce(max(sql), '') FROM sqlite_master WHERE type = 'view' AND name = 'photo_urls'").Scan(&sql).Error)
		if sql != "CREATE VIEW `photo_urls` AS SELECT id, url FROM `rev_photos`" {
			t.Errorf("database %d: %q", i, sql)
		}
	}
	var own int64
	must(t, db.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name = 'photo_urls'").Scan(&own).Error)
	if own != 0 {
		t.Error("the view is on the plugin's database too")
	}
}

type partlyUserBefore struct {
	ID   int64 `shardid:""`
	Code string
}

func (partlyUserBefore) TableName() string { return "partly_users" }

type partlyUser struct {
	ID   int64  `shardid:""`
	Code string `gorm:"uniqueIndex"`
	Note string
}

// TestAutoMigrateNamesTheDatabaseItFailedOnPartWay: GORM migrates a table
// that is there with several statements (a column, then an index): the
// error of one database that refuses the index names it beside those
// migrated before it, where MySQL and PostgreSQL keep the column added
// before; SQLite migrates each database in one transaction (which keeps a
// move's triggers), so there it takes the column back.
func TestAutoMigrateNamesTheDatabaseItFailedOnPartWay(t *testing.T) {
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &partlyUserBefore{}))
	half := Layout{}.ShardCount() / 2
	for _, shard := range []int{1, half + 1, half + 2} { // equal codes on s1 only
		must(t, db.Clauses(OnShard(shard)).Create(&partlyUserBefore{Code: "same"}).Error)
	}
	err := p.AutoMigrate(db, &partlyUser{})
	if err == nil {
		t.Fatal("a unique index over equal codes on s1 was made")
	}
	s1, openErr := gorm.Open(sqlite.Open(filepath.Join(dir, "s1.db")), &gorm.Config{Logger: logger.Discard})
	must(t, openErr)
	if s1.Migrator().HasColumn("partly_users", "note") {
		t.Fatal("s1 has the note column of the migration that failed there: its transaction was not rolled back")
	}
	_, changed, _ := strings.Cut(err.Error(), "there before")
	if !strings.Contains(changed, "s0") || !strings.Contains(changed, "s1") {
		t.Errorf("the error of a migration that changed s0, and s1 part way: %v", err)
	}
}

type nilModelUser struct {
	ID   int64 `shardid:""`
	Name string
}

// TestMigratorRefusesANilModel: a nil among the models fails with GORM's
// ErrInvalidValue before anything is changed, where GORM's migrator panics.
func TestMigratorRefusesANilModel(t *testing.T) {
	db, p := openIn(t, t.TempDir())
	refused := func(name string, call func() error) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s panicked: %v", name, r)
			}
		}()
		if err := call(); !errors.Is(err, gorm.ErrInvalidValue) {
			t.Errorf("%s: %v, want gorm.ErrInvalidValue", name, err)
		}
	}
	refused("AutoMigrate(&M{}, nil)", func() error { return p.AutoMigrate(db, &nilModelUser{}, nil) })
	if p.Migrator(db).HasTable(&nilModelUser{}) {
		t.Error("AutoMigrate(&M{}, nil) migrated M")
	}
	refused("CreateTable(nil)", func() error { return p.Migrator(db).CreateTable(nil) })
	refused("DropTable(nil)", func() error { return p.Migrator(db).DropTable(nil) })
	must(t, p.AutoMigrate(db, &nilModelUser{}))
	refused("DropTable(&M{}, nil)", func() error { return p.Migrator(db).DropTable(&nilModelUser{}, nil) })
	if !p.Migrator(db).HasTable(&nilModelUser{}) {
		t.Error("DropTable(&M{}, nil) dropped M")
	}
	refused("AddColumn(nil, \"Name\")", func() error { return p.Migrator(db).AddColumn(nil, "Name") })
}

// TestMigratorRefusesAValueThatIsNotAModel: a number, a pointer to one or a
// map among the models fails with GORM's ErrInvalidValue naming its type
// before anything is changed on any database, where GORM's AutoMigrate
// panics; AutoMigrate of a table name, which GORM cannot make from its name,
// is refused before it fails on each database part way.
func TestMigratorRefusesAValueThatIsNotAModel(t *testing.T) {
	db, p, direct, _ := routedOverN(t, 2, Config{Log: quiet})
	for _, value := range []any{5, new(int), map[string]any{"name": "x"}, "rev_users"} {
		for name, call := range map[string]func() error{
			"AutoMigrate": func() error { return p.AutoMigrate(db, &revUser{}, value) },
			"CreateTable": func() error { return p.Migrator(db).CreateTable(&revUser{}, value) },
		} {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s(%#v) panicked: %v", name, value, r)
					}
				}()
				if err := call(); !errors.Is(err, gorm.ErrInvalidValue) || !strings.Contains(err.Error(), fmt.Sprintf("%T", value)) && !strings.Contains(err.Error(), "table name") {
					t.Errorf("%s(%#v): %v, want gorm.ErrInvalidValue naming what it was given", name, value, err)
				}
			}()
			for i, d := range append(direct, db) {
				if d.Migrator().HasTable(&revUser{}) {
					t.Fatalf("%s(%#v) made the model beside it on database %d", name, value, i)
				}
			}
		}
	}
}

// TestDryRunMigratorChangesNoDatabase: the plugin's migrator of a DryRun
// session, like GORM's own, builds its changes and runs none: a sharded
// table it drops is still on every shard, and still takes rows. AutoMigrate, which needs a connection of its own,
// says DryRun is unsupported and makes nothing.
func TestDryRunMigratorChangesNoDatabase(t *testing.T) {
	db, p, direct := revRouted(t, &revUser{})
	dry := db.Session(&gorm.Session{DryRun: true})
	must(t, p.Migrator(dry).DropTable(&revUser{}))
	for i, d := range direct {
		if !d.Migrator().HasTable(&revUser{}) {
			t.Fatalf("a DryRun DropTable dropped the table on physical database %d", i)
		}
	}
	if err := p.Migrator(dry).AutoMigrate(&revPlain{}); !errors.Is(err, gorm.ErrDryRunModeUnsupported) {
		t.Fatalf("a DryRun AutoMigrate: %v, want gorm.ErrDryRunModeUnsupported", err)
	}
	for i, d := range direct {
		if d.Migrator().HasTable(&revPlain{}) {
			t.Fatalf("a DryRun AutoMigrate made a table on physical database %d", i)
		}
	}
	must(t, db.Create(&revUser{Name: "still there"}).Error)
}

type migRegion struct { // unsharded
	ID   int64
	Name string
}

type migBadge struct { // sharded, of a shard of its own
	ID   int64 `shardid:""`
	Name string
}

type migMember struct {
	ID       int64 `shardid:""`
	RegionID int64
	Region   migRegion
	Badges   []migBadge `gorm:"many2many:mig_member_badges"`
}

// TestAutoMigrateMakesTheModelsAShardedModelRelatesTo: as GORM's AutoMigrate
// makes the tables of the models a model belongs to and of its many2many
// targets, so does the plugin's, each where its rows live: an unsharded
// parent on the plugin's database only, a sharded target and the join table
// on every shard.
func TestAutoMigrateMakesTheModelsAShardedModelRelatesTo(t *testing.T) {
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &migMember{}))
	shard := openFile(t, dir, "s1.db")
	for table, onOwn := range map[string]bool{"mig_regions": true, "mig_members": false, "mig_badges": false, "mig_member_badges": false} {
		if got := db.Migrator().HasTable(table); got != onOwn {
			t.Errorf("%s on the plugin's database: %v, want %v", table, got, onOwn)
		}
		if got := shard.Migrator().HasTable(table); got == onOwn {
			t.Errorf("%s on a shard: %v, want %v", table, got, !onOwn)
		}
	}
	must(t, db.Create(&migRegion{Name: "north"}).Error)
	must(t, db.Create(&migBadge{Name: "gold"}).Error)
}

// TestTableDroppedUnderAnotherSpellingIsForgotten: SQLite finds a table by
// its name in any case; one dropped through the plugin's migrator by
// another spelling of its name is gone from every shard and from the
// plugin's record of sharded tables, so a move no longer looks for it.
func TestTableDroppedUnderAnotherSpellingIsForgotten(t *testing.T) {
	db, p := openIn(t, t.TempDir())
	must(t, p.AutoMigrate(db, &dropUser{}, &revUser{}))
	must(t, p.Migrator(db).DropTable("DROP_USERS"))
	var recorded []string
	must(t, db.Table("shardid_tables").Pluck("name", &recorded).Error)
	if slices.Contains(recorded, "drop_users") || !slices.Contains(recorded, "rev_users") {
		t.Fatalf("recorded tables %v after DROP_USERS was dropped, want rev_users alone", recorded)
	}
	if _, err := p.Move(t.Context(), Move{Logical: Range{From: 0, To: 99}, To: "s1", DryRun: true}); err != nil {
		t.Fatalf("a move after the drop: %v", err)
	}
}

type failedShelf struct {
	ID      uint
	Books   []failedBook `gorm:"many2many:failed_shelf_books"`
	OwnerID uint
	Owner   failedOwner
}

type failedBook struct {
	ID   uint
	Name string
}

type failedOwner struct {
	ID   uint
	Name string
}

type failedNote struct {
	ID   int64 `shardid:""`
	Text string
}

// TestAFailedMigrationDropsTheTablesOfItsModelsRelations: a migration that
// fails on a shard drops what it made on the plugin's database by following
// an unsharded model's relations (the related models' tables and the join
// table), not only the listed model's.
func TestAFailedMigrationDropsTheTablesOfItsModelsRelations(t *testing.T) {
	db, p, direct, _ := routedOverN(t, 2, Config{})
	must(t, direct[1].Exec("CREATE VIEW failed_notes AS SELECT 1 AS id").Error)
	if err := p.AutoMigrate(db, &failedShelf{}, &failedNote{}); err == nil {
		t.Fatal("AutoMigrate over a view named as the sharded table succeeded")
	}
	for _, table := range []string{"failed_shelves", "failed_books", "failed_shelf_books", "failed_owners"} {
		if db.Migrator().HasTable(table) {
			t.Errorf("the failed migration left %s, which it created, on the plugin's database", table)
		}
	}
	if direct[0].Migrator().HasTable("failed_notes") {
		t.Error("the failed migration left failed_notes on s0")
	}
	must(t, direct[1].Exec("DROP VIEW failed_notes").Error)
	must(t, p.AutoMigrate(db, &failedShelf{}, &failedNote{}))
	for _, table := range []string{"failed_shelves", "failed_books", "failed_shelf_books", "failed_owners"} {
		if !db.Migrator().HasTable(table) {
			t.Errorf("the migration run again made no %s", table)
		}
	}
}

type crossingFolder struct {
	ID      uint
	OwnerID uint
	Owner   crossingOwner
	Labels  []crossingLabel `gorm:"many2many:crossing_folder_labels"`
	Files   []crossingFile  `gorm:"foreignKey:FolderID"`
}

type crossingOwner struct {
	ID   uint
	Name string
}

type crossingLabel struct {
	ID   uint
	Name string
}

type crossingFile struct {
	ID       int64 `shardid:""`
	FolderID uint
}

// TestAnUnshardedModelWithAShardedChildGetsItsOtherRelationsTables: an
// unsharded model with a has-many of a sharded model is migrated on the
// plugin's database with the tables GORM makes for its other relations (its
// parent, its many2many target and join table), and is then created with
// them as without the plugin.
func TestAnUnshardedModelWithAShardedChildGetsItsOtherRelationsTables(t *testing.T) {
	db, p, direct, _ := routedOverN(t, 2, Config{})
	must(t, p.AutoMigrate(db, &crossingFolder{}))
	for _, table := range []string{"crossing_folders", "crossing_owners", "crossing_labels", "crossing_folder_labels"} {
		if !db.Migrator().HasTable(table) {
			t.Errorf("no %s on the plugin's database", table)
		}
	}
	for i, d := range direct {
		if d.Migrator().HasTable("crossing_folders") || d.Migrator().HasTable("crossing_owners") {
			t.Errorf("an unsharded table on s%d", i)
		}
	}
	folder := crossingFolder{Owner: crossingOwner{Name: "acme"}, Labels: []crossingLabel{{Name: "x"}}}
	must(t, db.Create(&folder).Error)
	var got crossingFolder
	must(t, db.Preload("Owner").Preload("Labels").First(&got, folder.ID).Error)
	if got.Owner.Name != "acme" || len(got.Labels) != 1 {
		t.Errorf("read back %+v", got)
	}
}

type crossingPhoto struct {
	ID      int64 `shardid:""`
	OwnerID uint
	Owner   crossingOwner
}

// TestCreateTableMakesTheModelsGivenAlone: the migrator's CreateTable, as
// GORM's, makes the tables of the models it is given, not their parents':
// with a parent's table already there, an unsharded model with a sharded
// child and a sharded model with an unsharded parent are created all the
// same.
func TestCreateTableMakesTheModelsGivenAlone(t *testing.T) {
	db, p, direct, _ := routedOverN(t, 2, Config{}, &crossingFile{})
	must(t, p.AutoMigrate(db, &crossingOwner{}))
	must(t, p.Migrator(db).CreateTable(&crossingFolder{}))
	must(t, p.Migrator(db).CreateTable(&crossingPhoto{}))
	if !db.Migrator().HasTable(&crossingFolder{}) {
		t.Error("no crossing_folders on the plugin's database")
	}
	for i, d := range direct {
		if !d.Migrator().HasTable(&crossingPhoto{}) || d.Migrator().HasTable(&crossingOwner{}) {
			t.Errorf("s%d: crossing_photos %v, crossing_owners %v; want the sharded table alone", i, d.Migrator().HasTable(&crossingPhoto{}), d.Migrator().HasTable(&crossingOwner{}))
		}
	}
}
