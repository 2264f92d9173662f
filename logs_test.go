package shardid

import (
	"bytes"
	"fmt"
	"log"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type logUser struct {
	ID     int64 `shardid:""`
	Name   string
	Photos []logPhoto `gorm:"foreignKey:UserID"`
}

type logPhoto struct {
	ID     int64 `shardid:"colocate:UserID"`
	UserID int64
}

// here is the file and line it is called from.
func here() string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("%s:%d", filepath.Base(file), line)
}

// TestLogLines captures GORM's logger: each statement's line names the
// physical database it ran on (Config.LogPhysical), a statement over several
// databases names each part's, and every line points at the caller's file
// and line, not at the plugin's.
func TestLogLines(t *testing.T) {
	db, p, _, _ := routedOverN(t, 3, Config{LogPhysical: true}, &logUser{}, &logPhoto{})
	var out bytes.Buffer
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info, Colorful: false})
	lineOf := func(run func() string) string {
		out.Reset()
		where := run()
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		for i, l := range lines {
			if strings.Contains(l, where) && i+1 < len(lines) {
				return l + " " + lines[i+1] // the default logger writes the place, then the SQL
			}
		}
		t.Fatalf("no line from %s in:\n%s", where, out.String())
		return ""
	}
	users := []logUser{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	for i, s := range []int{10, 3000, 6000} {
		must(t, db.Clauses(OnShard(s)).Create(&users[i]).Error)
	}
	for _, c := range []struct {
		what string
		run  func() string
		want []string
	}{
		{"first by ID", func() string {
			var u logUser
			err, where := db.First(&u, users[1].ID).Error, here()
			must(t, err)
			return where
		}, []string{"[s1] SELECT"}},
		{"create", func() string {
			err, where := db.Clauses(OnShard(6001)).Create(&logUser{Name: "d"}).Error, here()
			must(t, err)
			return where
		}, []string{"[s2] INSERT"}},
		{"fan-out query", func() string {
			var all []logUser
			err, where := db.Clauses(AllShards()).Find(&all).Error, here()
			must(t, err)
			return where
		}, []string{"[s0] SELECT", "[s1] SELECT", "[s2] SELECT"}},
		{"fan-out update", func() string {
			err, where := db.Model(&logUser{}).Clauses(AllShards()).Where("name = ?", "zzz").Update("name", "y").Error, here()
			must(t, err)
			return where
		}, []string{"[s0] UPDATE", "[s1] UPDATE", "[s2] UPDATE"}},
		{"split create", func() string {
			two := []logUser{{ID: p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), 11, 0), Name: "e"}, {ID: p.Layout().Compose(p.Layout().Epoch.AddDate(1, 0, 0), 6002, 0), Name: "f"}}
			err, where := db.Create(&two).Error, here()
			must(t, err)
			return where
		}, []string{"[s0] INSERT", "[s2] INSERT"}},
		{"fan-out with preload", func() string {
			var all []logUser
			err, where := db.Clauses(AllShards()).Preload("Photos").Find(&all, []int64{users[0].ID, users[2].ID}).Error, here()
			must(t, err)
			return where
		}, []string{"[s0] SELECT * FROM `log_users`", "[s2] SELECT * FROM `log_users`", "[s0] SELECT * FROM `log_photos`", "[s2] SELECT * FROM `log_photos`"}},
	} {
		line := lineOf(c.run)
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: %q not in its line %q", c.what, w, line)
			}
		}
		for _, own := range []string{"fanout.go", "querypart.go", "callbacks.go", "route.go"} {
			if strings.Contains(out.String(), own) {
				t.Errorf("%s: a line points at the plugin's %s:\n%s", c.what, own, out.String())
			}
		}
	}
}

var rev2KeptTx *gorm.DB

type rev2Keeper struct {
	ID int64 `shardid:""`
}

// AfterCreate keeps the session it is given, as a model that loads lazily does.
func (k *rev2Keeper) AfterCreate(tx *gorm.DB) error {
	rev2KeptTx = tx.Session(&gorm.Session{NewDB: true})
	return nil
}

// TestKeptPartSessionLogsItsStatements: a session a part's hook kept, used
// after the statement, logs its statements as the application's logger
// would; the part's logger must not swallow them into a line already printed.
func TestKeptPartSessionLogsItsStatements(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 3, &rev2Keeper{})
	var out bytes.Buffer
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info})
	at := p.Layout().Epoch.AddDate(1, 0, 0)
	rows := []rev2Keeper{{ID: p.Layout().Compose(at, 11, 0)}, {ID: p.Layout().Compose(at, 6002, 0)}}
	must(t, db.Create(&rows).Error)
	out.Reset()
	var n int64
	must(t, rev2KeptTx.Model(&rev2Keeper{}).Clauses(ByID(rows[0].ID)).Count(&n).Error)
	if !strings.Contains(out.String(), "SELECT count(*)") {
		t.Errorf("a later statement on the kept session is not logged: %q", out.String())
	}
}

type rev2Owner struct {
	ID   int64     `shardid:""`
	Tags []rev2Tag `gorm:"foreignKey:OwnerID"`
}

type rev2Tag struct { // sharded on its own: an owner's tags lie on any database
	ID      int64 `shardid:""`
	OwnerID int64
}

// TestNestedFanOutPartsAreInTheStatementsLine: a preload run from a fan-out's
// part that itself runs over several databases (tags are not colocated with
// their owner) has its parts' SQL kept in the statement's one line, as it was
// before the part's lines were kept by the last callback.
func TestNestedFanOutPartsAreInTheStatementsLine(t *testing.T) {
	db, _, _, _ := revRoutedN(t, 3, &rev2Owner{}, &rev2Tag{})
	owners := []rev2Owner{{}, {}}
	must(t, db.Clauses(OnShard(10)).Create(&owners[0]).Error)
	must(t, db.Clauses(OnShard(6000)).Create(&owners[1]).Error)
	for i, s := range []int{20, 3000, 6001} {
		must(t, db.Clauses(OnShard(s)).Create(&rev2Tag{OwnerID: owners[i%2].ID}).Error)
	}
	var out bytes.Buffer
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info})
	var all []rev2Owner
	must(t, db.Clauses(AllShards()).Preload("Tags", func(tx *gorm.DB) *gorm.DB { return tx.Clauses(AllShards()) }).Find(&all).Error)
	tags := 0
	for _, o := range all {
		tags += len(o.Tags)
	}
	if len(all) != 2 || tags != 3 {
		t.Fatalf("%d owners, %d tags; want 2 and 3", len(all), tags)
	}
	if !strings.Contains(out.String(), "`rev2_tags`") {
		t.Errorf("the preload of tags, itself over several databases, is missing from the log:\n%s", out.String())
	}
}

type rev2Hooked struct {
	ID int64 `shardid:""`
}

// AfterCreate counts with Raw(...).Scan, which GORM runs under a logger of
// its own (logger.Recorder), then traces on the part's logger.
func (h *rev2Hooked) AfterCreate(tx *gorm.DB) error {
	var n int64
	return tx.Clauses(ByID(h.ID)).Raw("SELECT count(*) FROM rev2_hookeds").Scan(&n).Error
}

// TestPartHookScanIsInTheStatementsLine: a split create's part runs its
// hook's Raw(...).Scan; the statement's one line must keep that SQL, as it
// did when the part's logger kept what GORM traced.
func TestPartHookScanIsInTheStatementsLine(t *testing.T) {
	db, p, _, _ := revRoutedN(t, 3, &rev2Hooked{})
	var out bytes.Buffer
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info})
	at := p.Layout().Epoch.AddDate(1, 0, 0)
	rows := []rev2Hooked{{ID: p.Layout().Compose(at, 11, 0)}, {ID: p.Layout().Compose(at, 6002, 0)}}
	must(t, db.Create(&rows).Error)
	if got := strings.Count(out.String(), "SELECT count(*) FROM rev2_hookeds"); got != 2 {
		t.Errorf("the hooks' Raw(...).Scan appear %d time(s) in the log, want 2 (one per part):\n%s", got, out.String())
	}
}

type revObsNote struct { // unsharded: on the plugin's own database
	ID   int64
	Text string
}

type revObsHooked struct {
	ID int64 `shardid:""`
}

// AfterCreate reads an unsharded table: the plugin reads it on its own
// database, outside the part's transaction.
func (h *revObsHooked) AfterCreate(tx *gorm.DB) error {
	var n int64
	return tx.Model(&revObsNote{}).Count(&n).Error
}

// TestPartHookLineNamesThePluginsDatabase: the statement a split create's
// part runs from its AfterCreate hook runs on the plugin's own database, and
// the statement's one line must not name it after the part's database.
func TestPartHookLineNamesThePluginsDatabase(t *testing.T) {
	db, p, _, _ := routedOverN(t, 3, Config{LogPhysical: true}, &revObsHooked{}, &revObsNote{})
	var out bytes.Buffer
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info})
	at := p.Layout().Epoch.AddDate(1, 0, 0)
	rows := []revObsHooked{{ID: p.Layout().Compose(at, 11, 0)}, {ID: p.Layout().Compose(at, 6002, 0)}}
	must(t, db.Create(&rows).Error)
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "s0] SELECT count(*) FROM `rev_obs_notes`") || strings.Contains(line, "s2] SELECT count(*) FROM `rev_obs_notes`") {
			t.Errorf("the hook's count, which ran on the plugin's own database, is named after a shard: %s", line)
		}
	}
	out.Reset()
	one := revObsHooked{}
	must(t, db.Create(&one).Error)
	if strings.Contains(out.String(), "s0] SELECT count(*) FROM `rev_obs_notes`") || strings.Contains(out.String(), "s1] SELECT count(*) FROM `rev_obs_notes`") || strings.Contains(out.String(), "s2] SELECT count(*) FROM `rev_obs_notes`") {
		t.Errorf("a plain create's hook count is named after a shard:\n%s", out.String())
	}
}

type m2mUser struct {
	ID     int64 `shardid:""`
	Name   string
	Groups []m2mGroup `gorm:"many2many:m2m_user_groups"`
}

type m2mGroup struct {
	ID   int64
	Name string
}

// TestJoinTableStatementsAreNoted: the statements on a sharded model's
// many2many join table, also a preload's that names no owner in its
// conditions, are logged with their database and counted on it.
func TestJoinTableStatementsAreNoted(t *testing.T) {
	db, p, _, _ := routedOverN(t, 2, Config{LogPhysical: true}, &m2mUser{}, &m2mGroup{})
	p.CountStatements()
	var out bytes.Buffer
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info, Colorful: false})
	g := m2mGroup{Name: "g"}
	must(t, db.Create(&g).Error)
	u := m2mUser{Name: "a", Groups: []m2mGroup{g}}
	must(t, db.Omit("Groups.*").Create(&u).Error)
	name := p.ShardMap().Name(p.ShardMap().Physical(p.Layout().Shard(u.ID)))
	var got m2mUser
	must(t, db.Preload("Groups").First(&got, u.ID).Error)
	must(t, db.Model(&got).Association("Groups").Clear())
	for _, want := range []string{"[" + name + "] INSERT INTO `m2m_user_groups`", "[" + name + "] SELECT * FROM `m2m_user_groups`", "[" + name + "] DELETE FROM `m2m_user_groups`"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no line %q in:\n%s", want, out.String())
		}
	}
	counted := map[string]uint64{}
	for _, s := range p.StatementStats() {
		if s.Physical == name {
			counted[s.Kind] = s.Count
		}
	}
	// The user's INSERT and its join row's; the user's SELECT and the preload's join rows'; the Clear.
	if counted["create"] != 2 || counted["query"] != 2 || counted["delete"] != 1 {
		t.Errorf("counted on %s: %v, want 2 creates, 2 queries and a delete", name, counted)
	}
}

type lateLoggedUser struct {
	ID   int64 `shardid:""`
	Name string
}

// TestMigrationLinesGoToTheCallersLogger: the DDL a migration runs on each
// physical database is logged by the logger of the caller's session (one set
// after the databases opened, db.Debug()), as GORM's own migrator logs it,
// not by the logger the database had when it opened.
func TestMigrationLinesGoToTheCallersLogger(t *testing.T) {
	db, p, _, _ := routedOverN(t, 2, Config{}, &logUser{}) // opened with logger.Discard
	var out bytes.Buffer
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info})
	must(t, p.AutoMigrate(db, &lateLoggedUser{}))
	if n := strings.Count(out.String(), "CREATE TABLE `late_logged_users`"); n != 2 {
		t.Errorf("%d CREATE TABLE lines in the caller's logger, want one per physical database (2):\n%s", n, out.String())
	}
	out.Reset()
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Silent})
	must(t, p.Migrator(db.Debug()).DropTable(&lateLoggedUser{}))
	if n := strings.Count(out.String(), "DROP TABLE"); n != 2 {
		t.Errorf("%d DROP TABLE lines from db.Debug(), want 2:\n%s", n, out.String())
	}
}

// TestMigrationLinesNameTheirDatabase: with Config.LogPhysical, each line of
// the DDL a migration runs on a physical database begins with that
// database's name, as the lines of the statements the plugin routes do.
func TestMigrationLinesNameTheirDatabase(t *testing.T) {
	db, p, _, _ := routedOverN(t, 2, Config{LogPhysical: true}, &logUser{})
	var out bytes.Buffer
	db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info})
	must(t, p.AutoMigrate(db, &lateLoggedUser{}))
	for _, name := range []string{"s0", "s1"} {
		if n := strings.Count(out.String(), "["+name+"] CREATE TABLE `late_logged_users`"); n != 1 {
			t.Errorf("%d CREATE TABLE lines naming %s, want 1:\n%s", n, name, out.String())
		}
	}
	out.Reset()
	must(t, p.Migrator(db.Debug()).DropTable(&lateLoggedUser{}))
	for _, name := range []string{"s0", "s1"} {
		if n := strings.Count(out.String(), "["+name+"] DROP TABLE"); n != 1 {
			t.Errorf("%d DROP TABLE lines naming %s from db.Debug(), want 1:\n%s", n, name, out.String())
		}
	}
}
