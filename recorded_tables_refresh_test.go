package shardid

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type refreshEvent struct {
	ID    int64 `shardid:""`
	Title string
}

// A table another process shards after this one started (AutoMigrate of a
// newly tagged model, Migrator(db.Table(name)) of a model) is sharded here
// too after this process's next refresh of the map: SQL naming it without
// its model is refused, not run on the plugin's database, where a table of
// that name (left from before) holds no rows of the shards. One that
// process drops through the plugin's migrator is no longer sharded here
// after the next refresh.
func TestATableAnotherProcessShardsIsShardedHereAfterTheNextRefresh(t *testing.T) {
	dir := t.TempDir()
	a, pa := openWith(t, dir, Config{MapRefresh: time.Hour}) // refreshed by RefreshMap alone
	must(t, a.Exec("CREATE TABLE refresh_events (id INTEGER, title TEXT)").Error)
	must(t, a.Exec("CREATE TABLE refresh_events_2027 (id INTEGER, title TEXT)").Error)
	must(t, a.Exec("INSERT INTO refresh_events_2027 VALUES (1, 'on the plugin''s database')").Error)

	b, pb := openWith(t, dir, Config{MapRefresh: time.Hour})
	must(t, pb.AutoMigrate(b, &refreshEvent{}))
	must(t, pb.Migrator(b.Table("refresh_events_2027")).AutoMigrate(&refreshEvent{}))
	event := refreshEvent{Title: "sharded"}
	must(t, b.Table("refresh_events_2027").Create(&event).Error)

	_, err := pa.RefreshMap(t.Context())
	must(t, err)
	var n int64
	if err := a.Raw("SELECT count(*) FROM refresh_events").Scan(&n).Error; !errors.Is(err, ErrNoShard) {
		t.Fatalf("raw SQL on a table another process sharded, after a refresh: %v (count %d); want ErrNoShard", err, n)
	}
	if err := a.Table("refresh_events_2027").Count(&n).Error; !errors.Is(err, ErrNoShard) {
		t.Fatalf("Table(name) without a model, of a table another process sharded by that name, after a refresh: %v (count %d); want ErrNoShard", err, n)
	}
	var found refreshEvent
	must(t, a.Table("refresh_events_2027").First(&found, event.ID).Error)
	if found.Title != "sharded" {
		t.Fatalf("read through the model by the table's name: %+v; want the row the other process wrote", found)
	}
	must(t, a.Clauses(ByID(event.ID)).Table("refresh_events_2027").Count(&n).Error)
	if n != 1 {
		t.Fatalf("count on the row's shard: %d, want 1", n)
	}

	must(t, pb.Migrator(b).DropTable("refresh_events_2027"))
	must(t, b.Exec("CREATE TABLE refresh_events_2027 (id INTEGER, title TEXT)").Error) // an unsharded table of that name now
	must(t, b.Exec("INSERT INTO refresh_events_2027 VALUES (1, 'on the plugin''s database')").Error)
	_, err = pa.RefreshMap(t.Context())
	must(t, err)
	if err := a.Raw("SELECT count(*) FROM refresh_events_2027").Scan(&n).Error; err != nil || n != 1 {
		t.Fatalf("raw SQL on a table another process dropped through the plugin's migrator, after a refresh: %v (count %d); want the plugin's database's one row", err, n)
	}
}

type refreshToken struct {
	ID    int64 `shardid:"hash:Token"`
	Token string
}

// refreshTokenInt is the next deploy's model of refresh_tokens: its key is
// an integer, which hashes the same value to another shard.
type refreshTokenInt struct {
	ID    int64 `shardid:"hash:Token"`
	Token int64
}

func (refreshTokenInt) TableName() string { return "refresh_tokens" }

// A process whose model's hash key has another type than the one another
// process records for its table (the record of an earlier version gave
// none) is refused after its next refresh of the map, as it is at its
// start: its reads by the key would miss the other's rows.
func TestAHashKeyTypeAnotherProcessRecordsIsRefusedAfterTheNextRefresh(t *testing.T) {
	dir := t.TempDir()
	first, p := openWith(t, dir, Config{MapRefresh: time.Hour})
	must(t, p.AutoMigrate(first, &refreshToken{}))
	must(t, first.Exec("UPDATE shardid_tables SET hash_key = NULL").Error) // as an earlier version recorded it

	a, pa := openWith(t, dir, Config{MapRefresh: time.Hour})
	must(t, a.Create(&refreshToken{Token: "7"}).Error)
	var found refreshToken
	must(t, a.Where("token = ?", "7").First(&found).Error)

	b, pb := openWith(t, dir, Config{MapRefresh: time.Hour})
	must(t, pb.AutoMigrate(b, &refreshTokenInt{}))
	_, err := pa.RefreshMap(t.Context())
	must(t, err)
	if err := a.Where("token = ?", "7").First(&found).Error; !errors.Is(err, ErrInvalidTag) {
		t.Fatalf("a read by a hash key of another type than another process recorded, after a refresh: %v; want ErrInvalidTag", err)
	}
	if err := a.Create(&refreshToken{Token: "8"}).Error; !errors.Is(err, ErrInvalidTag) {
		t.Fatalf("a Create by a hash key of another type than another process recorded, after a refresh: %v; want ErrInvalidTag", err)
	}
}

type refreshReading struct {
	ID    int64 `shardid:""` // the default strategy, instagram
	Value int
}

// refreshReadingSnowflake is the next deploy's model of refresh_readings,
// whose IDs snowflake makes.
type refreshReadingSnowflake struct {
	ID    int64 `shardid:"strategy:snowflake"`
	Value int
}

func (refreshReadingSnowflake) TableName() string { return "refresh_readings" }

// Two processes whose models of one table make its IDs by two strategies
// (two deploys of a rolling restart) never both create rows: the one whose
// strategy the record does not give has its Creates refused, the next
// deploy's until its migration records its strategy, and then the last
// deploy's after its next refresh of the map. Reads go on in both.
func TestCreatesByAnotherStrategyThanTheRecordedOneAreRefused(t *testing.T) {
	dir := t.TempDir()
	a, pa := openWith(t, dir, Config{MapRefresh: time.Hour})
	must(t, pa.AutoMigrate(a, &refreshReading{}))
	old := refreshReading{Value: 1}
	must(t, a.Create(&old).Error)

	b, pb := openWith(t, dir, Config{MapRefresh: time.Hour})
	if err := b.Create(&refreshReadingSnowflake{Value: 2}).Error; !errors.Is(err, ErrInvalidTag) {
		t.Fatalf("a Create by snowflake on a table recorded as instagram's: %v; want ErrInvalidTag", err)
	}
	var found refreshReadingSnowflake
	must(t, b.First(&found, old.ID).Error)
	// A Create of a row whose ID is given makes none: copying a row keeps its key.
	copied := refreshReadingSnowflake{ID: pb.Layout().Compose(time.Now(), 5, 1), Value: 4}
	must(t, b.Create(&copied).Error)
	var readBack refreshReadingSnowflake
	must(t, b.First(&readBack, copied.ID).Error)
	must(t, pb.AutoMigrate(b, &refreshReadingSnowflake{}))
	must(t, b.Create(&refreshReadingSnowflake{Value: 2}).Error)

	_, err := pa.RefreshMap(t.Context())
	must(t, err)
	if err := a.Create(&refreshReading{Value: 3}).Error; !errors.Is(err, ErrInvalidTag) {
		t.Fatalf("a Create by instagram after another process recorded snowflake for the table, after a refresh: %v; want ErrInvalidTag", err)
	}
	var read refreshReading
	must(t, a.First(&read, old.ID).Error)
}

// A refresh of the map does not wait for this process's own write of the
// record of sharded tables, which waits on the database's locks (here
// another connection's write transaction on the plugin's database, up to
// its busy timeout): the refresh follows the map and renews the trust in
// it within its context, and the record another process changed is read
// at the next refresh after the write.
func TestARefreshDoesNotWaitForThisProcessWritingTheRecord(t *testing.T) {
	dir := t.TempDir()
	a, pa := openWith(t, dir, Config{MapRefresh: time.Hour})
	must(t, pa.AutoMigrate(a, &refreshEvent{}))
	b, pb := openWith(t, dir, Config{MapRefresh: time.Hour})
	must(t, pb.AutoMigrate(b, &refreshReading{})) // the record changes under a

	own, err := gorm.Open(sqlite.Open("file:"+filepath.Join(dir, "main.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	sqlDB, err := own.DB()
	must(t, err)
	t.Cleanup(func() { _ = sqlDB.Close() })
	conn, err := sqlDB.Conn(t.Context())
	must(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(t.Context(), "BEGIN IMMEDIATE")
	must(t, err)
	migrated := make(chan error, 1)
	go func() { migrated <- pa.AutoMigrate(a, &refreshEvent{}) }() // its write of the record waits for the lock
	time.Sleep(time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Second)
	defer cancel()
	start := time.Now()
	_, err = pa.RefreshMap(ctx)
	took := time.Since(start)
	_, _ = conn.ExecContext(t.Context(), "ROLLBACK")
	if err != nil || took > 5*time.Second { // waiting for the write, it took the lock's 10 s
		t.Errorf("a refresh while this process's migration waits to write the record: %v after %v; want the map followed at once", err, took)
	}
	must(t, <-migrated)
	_, err = pa.RefreshMap(t.Context())
	must(t, err)
	var n int64
	if err := a.Raw("SELECT count(*) FROM refresh_readings").Scan(&n).Error; !errors.Is(err, ErrNoShard) {
		t.Fatalf("raw SQL on a table another process sharded, after the refresh that follows the write: %v (count %d); want ErrNoShard", err, n)
	}
}

// A refresh that finds many recorded tables gone at once (another process
// dropped them, as a teardown of tables by the day does) forgets them in
// time proportional to the tables recorded, not to its product with the
// tables gone: 10,000 such tables are forgotten within seconds, not
// minutes, while the map's refresh waits. The tables left stay sharded.
func TestManyTablesAnotherProcessDropsAreForgottenAtOnce(t *testing.T) {
	dir := t.TempDir()
	a, pa := openWith(t, dir, Config{MapRefresh: time.Hour})
	must(t, pa.AutoMigrate(a, &refreshEvent{}))
	// As many Migrator(db.Table("day_N")) of another process would record them.
	must(t, a.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
		INSERT INTO shardid_tables (name, key_column, key_kind, strategy, id_columns, placement, hash_key, stamp)
		SELECT 'day_' || i, 'id', 0, 'instagram', '', '', '', i FROM n`).Error)
	_, err := pa.RefreshMap(t.Context())
	must(t, err)
	var n int64
	if err := a.Raw("SELECT count(*) FROM day_7").Scan(&n).Error; !errors.Is(err, ErrNoShard) {
		t.Fatalf("raw SQL on a table another process recorded, after a refresh: %v; want ErrNoShard", err)
	}
	must(t, a.Exec("DELETE FROM shardid_tables WHERE name LIKE 'day%'").Error)
	start := time.Now()
	_, err = pa.RefreshMap(t.Context())
	must(t, err)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a refresh forgetting 10,000 tables took %v", took)
	}
	must(t, a.Exec("CREATE TABLE day_7 (id INTEGER)").Error) // an unsharded table of that name now
	if err := a.Raw("SELECT count(*) FROM day_7").Scan(&n).Error; err != nil {
		t.Fatalf("raw SQL on a table another process dropped, after a refresh: %v; want it run on the plugin's database", err)
	}
	if err := a.Raw("SELECT count(*) FROM refresh_events").Scan(&n).Error; !errors.Is(err, ErrNoShard) {
		t.Fatalf("raw SQL on a table still recorded, after a refresh forgetting others: %v; want ErrNoShard", err)
	}
}

type refreshInvoice struct {
	ID     int64 `shardid:""`
	Number int64 `shardid:"strategy:snowflake"` // another ID column
}

// refreshInvoiceInstagram is the next deploy's model of refresh_invoices,
// whose numbers instagram makes.
type refreshInvoiceInstagram struct {
	ID     int64 `shardid:""`
	Number int64 `shardid:"strategy:instagram"`
}

func (refreshInvoiceInstagram) TableName() string { return "refresh_invoices" }

// An ID column other than the key is held to the strategy recorded for it
// as the key is: two processes filling it by two strategies never both
// create rows, whose numbers could be equal.
func TestCreatesFillingAnIDColumnByAnotherStrategyThanTheRecordedOneAreRefused(t *testing.T) {
	dir := t.TempDir()
	a, pa := openWith(t, dir, Config{MapRefresh: time.Hour})
	must(t, pa.AutoMigrate(a, &refreshInvoice{}))
	old := refreshInvoice{}
	must(t, a.Create(&old).Error)

	b, pb := openWith(t, dir, Config{MapRefresh: time.Hour})
	if err := b.Create(&refreshInvoiceInstagram{}).Error; !errors.Is(err, ErrInvalidTag) {
		t.Fatalf("a Create filling a column by instagram, recorded as snowflake's: %v; want ErrInvalidTag", err)
	}
	given := refreshInvoiceInstagram{Number: old.Number + 1} // the key made by the recorded strategy, the number given
	must(t, b.Create(&given).Error)
	if given.ID == 0 {
		t.Fatal("a Create of a given number made no key")
	}
	must(t, pb.AutoMigrate(b, &refreshInvoiceInstagram{}))
	must(t, b.Create(&refreshInvoiceInstagram{}).Error)
	_, err := pa.RefreshMap(t.Context())
	must(t, err)
	if err := a.Create(&refreshInvoice{}).Error; !errors.Is(err, ErrInvalidTag) {
		t.Fatalf("a Create filling a column by snowflake after another process recorded instagram, after a refresh: %v; want ErrInvalidTag", err)
	}
	var found refreshInvoice
	must(t, a.First(&found, old.ID).Error)
}
