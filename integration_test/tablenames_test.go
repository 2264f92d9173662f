package integration

import (
	"errors"
	"strings"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// PostgreSQL keeps the first 63 bytes of a longer name, and so does the
// plugin's reading of SQL: a sharded table is known by that name too.
const tnLongTable = "customer_accounts_with_verified_billing_addresses_and_payment_profiles"

type (
	TnAccount struct {
		ID   int64 `shardid:""`
		Name string
	}
	TnOrder struct {
		ID        int64 `shardid:"colocate:AccountID"`
		AccountID int64
	}
	// TnMember is sharded, in schema tn_app of every database.
	TnMember struct {
		ID   int64 `shardid:""`
		Name string
	}
	// TnLegacyMember is unsharded, public.tn_members: the same name in
	// another schema.
	TnLegacyMember struct {
		ID   int64
		Name string
	}
)

func (TnAccount) TableName() string      { return tnLongTable }
func (TnMember) TableName() string       { return "tn_app.tn_members" }
func (TnLegacyMember) TableName() string { return "public.tn_members" }

// A sharded table whose name PostgreSQL cuts is refused where SQL names it
// outside its routing: off a shard, and in a select item of another model's
// statement on one shard, which would count that database's rows only.
func TestATableNameLongerThanPostgreSQLKeepsIsKnownByWhatItKeeps(t *testing.T) {
	b := backends[2]
	r := newRouting(t, b)
	fresh(t, r.db, &TnAccount{}, &TnOrder{})
	count := r.plugin.Layout().ShardCount()
	var accounts []TnAccount
	for k := range physicalShards {
		a := TnAccount{Name: "a"}
		must(t, r.db.Clauses(shardid.OnShard(k*count/physicalShards)).Create(&a).Error)
		accounts = append(accounts, a)
	}
	order := TnOrder{AccountID: accounts[0].ID}
	must(t, r.db.Create(&order).Error)

	var n int64
	if err := r.db.Raw("SELECT count(*) FROM " + tnLongTable).Scan(&n).Error; !errors.Is(err, shardid.ErrNoShard) {
		t.Errorf("raw SQL naming it off a shard: %v (count %d), want ErrNoShard", err, n)
	}
	var got []map[string]any
	err := r.db.Model(&TnOrder{}).Where("account_id = ?", order.AccountID).
		Select("id, (SELECT count(*) FROM " + tnLongTable + ") AS accounts").Find(&got).Error
	if !errors.Is(err, shardid.ErrCrossShard) {
		t.Errorf("a select item naming it on one shard: %v, %v; want ErrCrossShard", err, got)
	}
	// Its own statements, which name it in full, run.
	var all []TnAccount
	must(t, r.db.Clauses(shardid.AllShards()).Find(&all).Error)
	if len(all) != physicalShards {
		t.Errorf("its own Find over all shards read %d rows, want %d", len(all), physicalShards)
	}
}

// A process that knows a sharded table from shardid_tables only, and uses
// an unsharded model of the same name in another schema, still refuses SQL
// naming the sharded one off a shard: the plugin's database holds a copy
// left from before the data was sharded.
func TestARecordedShardedTableIsNotHiddenByAnUnshardedTableOfItsNameInAnotherSchema(t *testing.T) {
	b := backends[2]
	dir := t.TempDir()
	main, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	for _, d := range append(direct(t, b, dir), main) {
		must(t, d.Exec("CREATE SCHEMA IF NOT EXISTS tn_app").Error)
	}
	for _, sql := range []string{
		"DROP TABLE IF EXISTS public.tn_members", "DROP TABLE IF EXISTS tn_app.tn_members",
		"CREATE TABLE public.tn_members (id bigint PRIMARY KEY, name text)",
		"CREATE TABLE tn_app.tn_members (id bigint PRIMARY KEY, name text)",
		"INSERT INTO tn_app.tn_members VALUES (1, 'left behind'), (2, 'left behind')",
	} {
		must(t, main.Exec(sql).Error)
	}
	cfg := shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity()}
	first := shardid.New(cfg)
	firstStart(t, main)
	must(t, main.Use(first))
	fresh(t, main, &TnMember{}) // recorded in shardid_tables as sharded
	must(t, main.Create(&TnMember{Name: "sharded"}).Error)
	must(t, first.Close())

	other, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := shardid.New(cfg)
	must(t, other.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	var legacy []TnLegacyMember
	_ = other.Find(&legacy).Error // the process knows its unsharded model of public.tn_members
	var n int64
	if err := other.Raw("SELECT count(*) FROM tn_app.tn_members").Scan(&n).Error; !errors.Is(err, shardid.ErrNoShard) {
		t.Errorf("raw SQL naming the recorded sharded table: %v (read %d rows of the plugin's database), want ErrNoShard", err, n)
	}
}

type (
	// TnHashed is sharded by the hash of its code, in schema tn_app.
	TnHashed struct {
		ID   int64 `shardid:"hash:Code"`
		Code string
	}
	// TnNote is colocated with its TnHashed, in schema tn_app.
	TnNote struct {
		ID       int64 `shardid:"colocate:HashedID"`
		HashedID int64
	}
)

func (TnHashed) TableName() string { return "tn_app.tn_hashed" }
func (TnNote) TableName() string   { return "tn_app.tn_notes" }

// The plugin's migrator checks and indexes the hash and colocate columns of
// a table named with its schema in that schema, as GORM migrates it there:
// the migration runs on every database, and a read by the key finds its row.
func TestAModelInASchemaWithAHashOrColocateKeyMigrates(t *testing.T) {
	b := backends[2]
	r := newRouting(t, b)
	for _, d := range r.direct {
		must(t, d.Exec("CREATE SCHEMA IF NOT EXISTS tn_app").Error)
	}
	fresh(t, r.db, &TnHashed{}, &TnNote{})
	t.Cleanup(func() { _ = migrator(r.db).DropTable(&TnNote{}, &TnHashed{}) }) // forgotten in shardid_tables: a move carries no table named with its schema
	for i, d := range r.direct {
		for _, index := range [][2]string{{"tn_app.tn_hashed", "idx_shardid_tn_app_tn_hashed_code"}, {"tn_app.tn_notes", "idx_shardid_tn_app_tn_notes_hashed_id"}} {
			var n int64
			must(t, d.Raw("SELECT count(*) FROM pg_indexes WHERE schemaname = 'tn_app' AND indexname = ?", index[1]).Scan(&n).Error)
			if n != 1 {
				t.Errorf("physical %d: %s has no index %s", i, index[0], index[1])
			}
		}
	}
	h := TnHashed{Code: "k"}
	must(t, r.db.Create(&h).Error)
	must(t, r.db.Create(&TnNote{HashedID: h.ID}).Error)
	var got TnHashed
	if err := r.db.Where("code = ?", "k").First(&got).Error; err != nil || got.ID != h.ID {
		t.Errorf("a read by the hash key: %v, %+v", err, got)
	}
	var notes []TnNote
	if err := r.db.Where("hashed_id = ?", h.ID).Find(&notes).Error; err != nil || len(notes) != 1 {
		t.Errorf("a read by the colocate column: %v, %+v", err, notes)
	}
}

// A sharded model whose TableName() names its schema is read, updated and
// deleted by its ID, as GORM does on one database: GORM qualifies the ID's
// condition by the bare table name (`tn_members.id IN (?)`), which is the
// model's own.
func TestAModelInASchemaIsReadAndWrittenByItsID(t *testing.T) {
	b := backends[2]
	r := newRouting(t, b)
	for _, d := range r.direct {
		must(t, d.Exec("CREATE SCHEMA IF NOT EXISTS tn_app").Error)
	}
	fresh(t, r.db, &TnMember{})
	t.Cleanup(func() { _ = migrator(r.db).DropTable(&TnMember{}) })
	count := r.plugin.Layout().ShardCount()
	var members []TnMember
	for k := range physicalShards {
		m := TnMember{Name: "m"}
		must(t, r.db.Clauses(shardid.OnShard(k*count/physicalShards)).Create(&m).Error)
		members = append(members, m)
	}
	var got TnMember
	if err := r.db.First(&got, members[1].ID).Error; err != nil || got.ID != members[1].ID {
		t.Errorf("First(&x, id): %v, %+v", err, got)
	}
	var some []TnMember
	if err := r.db.Find(&some, []int64{members[0].ID, members[3].ID}).Error; err != nil || len(some) != 2 {
		t.Errorf("Find(&xs, ids) over two databases: %v, %d rows", err, len(some))
	}
	if err := r.db.Model(&TnMember{}).Where("tn_members.id = ?", members[2].ID).Update("name", "n").Error; err != nil {
		t.Errorf("an update by the ID qualified by the bare table name: %v", err)
	}
	if err := r.db.Delete(&TnMember{}, members[0].ID).Error; err != nil {
		t.Errorf("Delete(&T{}, id): %v", err)
	}
	var all []TnMember
	must(t, r.db.Clauses(shardid.AllShards()).Order("id").Find(&all).Error)
	if len(all) != 3 || all[1].Name != "n" {
		t.Errorf("every shard's rows after the update and the delete: %+v", all)
	}
}

// TnArchived is sharded, migrated into a table named with its schema by
// Migrator(db.Table("tn_app.tn_archived")).
type TnArchived struct {
	ID   int64 `shardid:""`
	Name string
}

// Migrator(db.Table("schema.table")) records the table with its schema in
// shardid_tables, as it made it, so that a move, which reads the tables
// there, refuses it (it carries the tables of each database's own schema)
// rather than carrying a table of that name in the search path and leaving
// this one's rows of the range behind, where the new map no longer reads
// them; DropTable forgets it.
func TestAMigratorOfATableNamedWithItsSchemaRecordsTheSchema(t *testing.T) {
	b := backends[2]
	r := newRouting(t, b)
	for _, d := range r.direct {
		must(t, d.Exec("CREATE SCHEMA IF NOT EXISTS tn_app").Error)
		must(t, d.Exec("DROP TABLE IF EXISTS public.tn_archived").Error)
		must(t, d.Exec("CREATE TABLE public.tn_archived (id bigint PRIMARY KEY, name text)").Error) // another table of the name, in the search path
	}
	t.Cleanup(func() {
		for _, d := range r.direct {
			_ = d.Exec("DROP TABLE IF EXISTS public.tn_archived").Error
		}
	})
	named := migrator(r.db.Table("tn_app.tn_archived"))
	must(t, named.DropTable(&TnArchived{}))
	must(t, named.AutoMigrate(&TnArchived{}))
	recorded := func() []string {
		var names []string
		must(t, r.db.Raw("SELECT name FROM shardid_tables WHERE name LIKE '%tn_archived'").Scan(&names).Error)
		return names
	}
	if got := recorded(); len(got) != 1 || got[0] != "tn_app.tn_archived" {
		t.Errorf("shardid_tables records %v, want [tn_app.tn_archived]", got)
	}
	row := TnArchived{Name: "a"}
	must(t, r.db.Table("tn_app.tn_archived").Clauses(shardid.OnShard(0)).Create(&row).Error)
	var got TnArchived
	if err := r.db.Table("tn_app.tn_archived").First(&got, row.ID).Error; err != nil || got.Name != "a" {
		t.Errorf("First by its ID: %v, %+v", err, got)
	}
	must(t, named.DropTable(&TnArchived{}))
	if got := recorded(); len(got) != 0 {
		t.Errorf("shardid_tables records %v after DropTable", got)
	}
}

// TnQualified is sharded, in the table tn_rows of another database on the
// MySQL server, named in its TableName (qualifiedDatabase).
type TnQualified struct {
	ID   int64 `shardid:""`
	Name string
}

// tnQualifiedTable is TnQualified's table, set by the test.
var tnQualifiedTable = "tn_rows"

func (TnQualified) TableName() string { return tnQualifiedTable }

// A merge over several databases of a MySQL table named with its database
// reads the collation of that table's column, not of one of its name in the
// connection's database: ORDER BY a case-insensitive column there is refused,
// as one database would order "a" before "B" and the merge of bytes after it.
func TestAMergeReadsTheCollationOfATableNamedWithItsDatabase(t *testing.T) {
	b := backends[1]
	r := newRouting(t, b)
	cfg, err := mysqldriver.ParseDSN(requireDSN(t, mysqlDSNVar))
	must(t, err)
	other := cfg.DBName + "_q"
	must(t, r.direct[0].Exec("CREATE DATABASE IF NOT EXISTS `"+other+"`").Error)
	t.Cleanup(func() { _ = r.direct[0].Exec("DROP DATABASE IF EXISTS `" + other + "`").Error })
	tnQualifiedTable = other + ".tn_rows"
	t.Cleanup(func() { tnQualifiedTable = "tn_rows" })
	must(t, r.direct[0].Exec("DROP TABLE IF EXISTS `"+other+"`.tn_rows").Error)
	// One table for every shard: they are databases of one server. Its name
	// compares without case; each shard's own tn_rows byte for byte.
	must(t, r.direct[0].Exec("CREATE TABLE `"+other+"`.tn_rows (id BIGINT PRIMARY KEY, name VARCHAR(64) COLLATE utf8mb4_general_ci)").Error)
	for _, d := range r.direct {
		must(t, d.Exec("DROP TABLE IF EXISTS tn_rows").Error)
		must(t, d.Exec("CREATE TABLE tn_rows (id BIGINT PRIMARY KEY, name VARCHAR(64) COLLATE utf8mb4_bin)").Error)
	}
	t.Cleanup(func() {
		for _, d := range r.direct {
			_ = d.Exec("DROP TABLE IF EXISTS tn_rows").Error
		}
	})
	count := r.plugin.Layout().ShardCount()
	for k, name := range []string{"a", "B"} {
		must(t, r.db.Clauses(shardid.OnShard(k*count/physicalShards)).Create(&TnQualified{Name: name}).Error)
	}
	var rows []TnQualified
	err = r.db.Clauses(shardid.AllShards()).Order("name").Find(&rows).Error
	if !errors.Is(err, shardid.ErrCrossShard) || !strings.Contains(err.Error(), "utf8mb4_general_ci") {
		t.Errorf("ORDER BY the case-insensitive column over every shard: %v, %+v; want ErrCrossShard naming utf8mb4_general_ci", err, rows)
	}
	must(t, r.direct[0].Exec("ALTER TABLE `"+other+"`.tn_rows MODIFY name VARCHAR(64) COLLATE utf8mb4_bin").Error)
	rows = nil
	if err := r.db.Clauses(shardid.AllShards()).Order("name").Find(&rows).Error; err != nil || len(rows) != 2 || rows[0].Name != "B" {
		t.Errorf("ORDER BY the column once byte for byte: %v, %+v; want B, a", err, rows)
	}
}
