package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	gormmigrator "gorm.io/gorm/migrator"

	"github.com/shardid/shardid"
)

// Models of the migrator tests: a sharded model with gorm.Model's fields
// (DeletedAt has an index), belonging to an unsharded company, with
// colocated and many2many children.
type (
	mgCompany struct {
		ID   uint
		Name string
	}
	mgUser struct {
		ID        int64 `shardid:""`
		CreatedAt time.Time
		UpdatedAt time.Time
		DeletedAt gorm.DeletedAt `gorm:"index"`
		CompanyID *uint
		Company   *mgCompany
		Email     string    `gorm:"size:120"`
		Orders    []mgOrder `gorm:"foreignKey:UserID"`
		Groups    []mgGroup `gorm:"many2many:mg_user_groups"`
	}
	mgOrder struct {
		ID     int64 `shardid:"colocate:UserID"`
		UserID int64
		Total  int
	}
	mgGroup struct {
		ID   int64 `shardid:""`
		Name string
	}
	mgAccount struct {
		ID    int64  `shardid:"hash:Login"`
		Login string `gorm:"size:64"`
	}
	mgPlain struct { // no shardid tag at all
		gorm.Model
		Name string `gorm:"index"`
	}
)

// TestRegisteringChangesNothingOfGORMs: with the plugin registered, the
// dialector and the migrator are GORM's own, and plain GORM migrates a model
// with gorm.Model (an index) on MariaDB, where a wrapped migrator panicked.
func TestRegisteringChangesNothingOfGORMs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db := open(t, b, dir, shardid.Config{Shards: shards(t, b, dir)})
		switch b.name {
		case "mariadb":
			if _, ok := db.Dialector.(*mysql.Dialector); !ok {
				t.Fatalf("db.Dialector is %T, want *mysql.Dialector", db.Dialector)
			}
			if _, ok := db.Migrator().(gormmigrator.BuildIndexOptionsInterface); !ok {
				t.Fatalf("db.Migrator() is %T, which GORM's MySQL migrator cannot use", db.Migrator())
			}
		case "postgres":
			if _, ok := db.Dialector.(*postgres.Dialector); !ok {
				t.Fatalf("db.Dialector is %T, want *postgres.Dialector", db.Dialector)
			}
		}
		must(t, db.Migrator().DropTable(&mgPlain{}))
		must(t, db.AutoMigrate(&mgPlain{}))
		must(t, db.AutoMigrate(&mgPlain{})) // twice: nothing to change
		if !db.Migrator().HasIndex(&mgPlain{}, "idx_mg_plains_deleted_at") {
			t.Fatal("gorm.Model's DeletedAt index is missing")
		}
		must(t, db.Create(&mgPlain{Name: "x"}).Error)
		var got mgPlain
		must(t, db.First(&got, "name = ?", "x").Error)
	})
}

// TestPluginAutoMigrate: sharded tables, their join tables and the indexes on
// colocate and hash columns on every physical database; unsharded tables on
// the plugin's database only, even when a sharded model belongs to one.
func TestPluginAutoMigrate(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		models := []any{&mgUser{}, &mgOrder{}, &mgGroup{}, &mgAccount{}, &mgCompany{}}
		m := r.plugin.Migrator(r.db)
		must(t, m.DropTable(append(models, "mg_user_groups")...))
		must(t, r.plugin.AutoMigrate(r.db, models...))
		must(t, r.plugin.AutoMigrate(r.db, models...)) // idempotent
		for i, db := range r.direct {
			for _, table := range []string{"mg_users", "mg_orders", "mg_groups", "mg_accounts", "mg_user_groups"} {
				if !db.Migrator().HasTable(table) {
					t.Fatalf("physical %d lacks %s", i, table)
				}
			}
			if db.Migrator().HasTable("mg_companies") {
				t.Fatalf("physical %d has the unsharded table mg_companies", i)
			}
			if typ, generated := idColumn(t, db, b, "mg_users"); generated || b.name != "sqlite" && typ != "bigint" {
				t.Fatalf("physical %d: mg_users.id is %s, generated=%v; want a plain bigint", i, typ, generated)
			}
			for _, idx := range []struct{ table, column string }{{"mg_orders", "user_id"}, {"mg_accounts", "login"}} {
				if !indexed(t, db, b, idx.table, idx.column) {
					t.Fatalf("physical %d: %s.%s has no index", i, idx.table, idx.column)
				}
			}
			if !db.Migrator().HasIndex("mg_users", "idx_mg_users_deleted_at") {
				t.Fatalf("physical %d: gorm.Model's index is missing", i)
			}
		}
		if !r.db.Migrator().HasTable("mg_companies") || r.db.Migrator().HasTable("mg_users") {
			t.Fatal("the plugin's database must hold the unsharded table and no sharded one")
		}
		// Rows of the migrated models go where they belong.
		company := mgCompany{Name: "acme"}
		must(t, r.db.Create(&company).Error)
		u := mgUser{Email: "a@x.io", CompanyID: &company.ID, Orders: []mgOrder{{Total: 3}}, Groups: []mgGroup{{Name: "g"}}}
		must(t, r.db.Create(&u).Error)
		r.mustBeOnItsShard(t, &mgUser{}, u.ID)
		r.mustBeOnItsShard(t, &mgOrder{}, u.Orders[0].ID)
		var joins int64
		must(t, r.direct[r.physicalOf(u.ID)].Table("mg_user_groups").Where("mg_user_id = ?", u.ID).Count(&joins).Error)
		if joins != 1 {
			t.Fatalf("the join row is not beside its owner: %d there", joins)
		}
	})
}

// indexed reports whether an index of table starts with column.
func indexed(t *testing.T, db *gorm.DB, b backend, table, column string) bool {
	t.Helper()
	indexes, err := db.Migrator().GetIndexes(table)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(indexes, func(idx gorm.Index) bool {
		return len(idx.Columns()) > 0 && idx.Columns()[0] == column
	})
}

// TestMigratorEveryMethod: each gorm.Migrator method of the plugin's migrator
// acts on every physical database for a sharded model, and says which
// databases disagree.
func TestMigratorEveryMethod(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		m := r.plugin.Migrator(r.db)
		must(t, m.DropTable(&mgAccount{}))
		must(t, m.CreateTable(&mgAccount{}))
		onEvery := func(what string, check func(db *gorm.DB) bool) {
			t.Helper()
			for i, db := range r.direct {
				if !check(db) {
					t.Fatalf("%s: not so on physical %d", what, i)
				}
			}
		}
		if !m.HasTable(&mgAccount{}) || !m.HasTable("mg_accounts") || !m.HasColumn(&mgAccount{}, "Login") {
			t.Fatal("HasTable/HasColumn: the tables exist on every database")
		}
		type mgAccountV2 struct {
			ID    int64  `shardid:"hash:Login"`
			Login string `gorm:"size:64"`
			Note  string `gorm:"size:30;index:idx_note"`
		}
		v2 := &mgAccountV2{}
		table := r.db.Table("mg_accounts")
		m2 := r.plugin.Migrator(table)
		must(t, m2.AddColumn(v2, "Note"))
		onEvery("AddColumn", func(db *gorm.DB) bool { return db.Migrator().HasColumn("mg_accounts", "note") })
		must(t, m2.CreateIndex(v2, "idx_note"))
		onEvery("CreateIndex", func(db *gorm.DB) bool { return db.Migrator().HasIndex("mg_accounts", "idx_note") })
		if !m2.HasIndex(v2, "idx_note") {
			t.Fatal("HasIndex: the index is on every database")
		}
		must(t, m2.DropIndex(v2, "idx_note"))
		onEvery("DropIndex", func(db *gorm.DB) bool { return !db.Migrator().HasIndex("mg_accounts", "idx_note") })
		if b.name != "sqlite" { // SQLite cannot alter a column's type
			must(t, m2.AlterColumn(v2, "Note"))
		}
		must(t, m2.RenameColumn(v2, "note", "memo"))
		onEvery("RenameColumn", func(db *gorm.DB) bool {
			return db.Migrator().HasColumn("mg_accounts", "memo") && !db.Migrator().HasColumn("mg_accounts", "note")
		})
		columns, err := m.ColumnTypes(&mgAccount{})
		if err != nil || !slices.ContainsFunc(columns, func(c gorm.ColumnType) bool { return c.Name() == "memo" }) {
			t.Fatalf("ColumnTypes = %v, %v; want the columns every database has", columns, err)
		}
		must(t, m.DropColumn(&mgAccount{}, "memo"))
		onEvery("DropColumn", func(db *gorm.DB) bool { return !db.Migrator().HasColumn("mg_accounts", "memo") })
		tables, err := m.GetTables()
		if err != nil || !slices.Contains(tables, "mg_accounts") || !slices.Contains(tables, "settings") {
			t.Fatalf("GetTables = %v, %v; want the sharded and the unsharded tables", tables, err)
		}
		must(t, m.RenameTable(&mgAccount{}, "mg_accounts_old"))
		onEvery("RenameTable", func(db *gorm.DB) bool { return db.Migrator().HasTable("mg_accounts_old") })
		must(t, m.RenameTable("mg_accounts_old", "mg_accounts"))

		// One database drifts: the migrator says so instead of answering for one.
		must(t, r.direct[2].Exec("ALTER TABLE mg_accounts ADD COLUMN drift INTEGER").Error)
		if _, err := m.ColumnTypes(&mgAccount{}); !errors.Is(err, shardid.ErrShardsDisagree) || !strings.Contains(err.Error(), fmt.Sprintf("%s-2", b.name)) {
			t.Fatalf("ColumnTypes with one database drifted: %v; want ErrShardsDisagree naming %s-2", err, b.name)
		}
		if m.HasColumn("mg_accounts", "drift") {
			t.Fatal("HasColumn: true although three databases lack the column")
		}
		// The unsharded model stays on the plugin's database.
		if !m.HasTable(&setting{}) || !m.HasColumn(&setting{}, "Value") {
			t.Fatal("the unsharded table is on the plugin's database")
		}
		if m.CurrentDatabase() != r.db.Migrator().CurrentDatabase() {
			t.Fatal("CurrentDatabase is the plugin's database")
		}
	})
}

// TestShardChecks: a shard that cannot work is refused at db.Use.
func TestShardChecks(t *testing.T) {
	b := backends[0]
	dir := t.TempDir()
	db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	count := shardid.Layout{}.ShardCount()
	half := []shardid.Range{{From: 0, To: count/2 - 1}}
	other := shardid.Shard{Name: "b", Dialector: b.physical(t, dir, 1), Logical: []shardid.Range{{From: count / 2, To: count - 1}}}
	pgShard, err := gorm.Open(postgres.New(postgres.Config{DSN: "host=127.0.0.1 dbname=none"}), &gorm.Config{DisableAutomaticPing: true})
	must(t, err)
	for _, c := range []struct {
		name  string
		shard shardid.Shard
		want  string
	}{
		{"the plugin's database as DB", shardid.Shard{Name: "a", DB: db, Logical: half}, "the plugin's own database"},
		{"the plugin's database by its DSN", shardid.Shard{Name: "a", Dialector: b.dialector(t, dir), Logical: half}, "the plugin's own database"},
		{"another dialect as DB", shardid.Shard{Name: "a", DB: pgShard, Logical: half}, "is postgres"},
		{"both", shardid.Shard{Name: "a", DB: pgShard, Dialector: b.physical(t, dir, 0), Logical: half}, "not both"},
		{"neither", shardid.Shard{Name: "a", Logical: half}, "no Dialector or DB"},
	} {
		firstStart(t, db)
		err := db.Use(shardid.New(shardid.Config{Shards: []shardid.Shard{c.shard, other}}))
		if !errors.Is(err, shardid.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: db.Use = %v; want ErrInvalidConfig saying %q", c.name, err, c.want)
		}
	}
}

type (
	mgPartlyBefore struct {
		ID   int64  `shardid:""`
		Code string `gorm:"size:32"`
	}
	mgPartly struct {
		ID   int64  `shardid:""`
		Code string `gorm:"size:32;uniqueIndex"`
		Note string `gorm:"size:32"`
	}
)

func (mgPartlyBefore) TableName() string { return "mg_partlies" }

// TestAutoMigrateNamesEveryDatabaseItChanged: an AutoMigrate that adds a
// column and a unique index fails on the last database, which holds equal
// codes, after adding the column there: its error names that database as
// changed part way, beside those migrated before it.
func TestAutoMigrateNamesEveryDatabaseItChanged(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		must(t, r.plugin.Migrator(r.db).DropTable(&mgPartly{}))
		must(t, r.plugin.AutoMigrate(r.db, &mgPartlyBefore{}))
		last := r.plugin.Layout().ShardCount() - 1
		for range 2 {
			must(t, r.db.Clauses(shardid.OnShard(last)).Create(&mgPartlyBefore{Code: "same"}).Error)
		}
		err := r.plugin.AutoMigrate(r.db, &mgPartly{})
		if err == nil {
			t.Fatal("a unique index over equal codes was made")
		}
		_, changed, _ := strings.Cut(err.Error(), "there before")
		for i, db := range r.direct {
			if name := fmt.Sprintf("%s-%d", b.name, i); db.Migrator().HasColumn("mg_partlies", "note") && !strings.Contains(changed, name) {
				t.Errorf("%s has the new column; the error does not name it: %v", name, err)
			}
		}
	})
}

type mgRaceItem struct {
	ID   int64 `shardid:""`
	Name string
}

type mgRaceNote struct { // unsharded
	ID   int64
	Text string
}

// TestTwoProcessesMigratingAtOnceKeepEachOthersTables: two processes (pods
// starting together) migrating the same new models at once both succeed,
// and every table is then on every database it belongs on: the second waits
// for the first, and does not take, and drop again, tables the first made.
func TestTwoProcessesMigratingAtOnceKeepEachOthersTables(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		pods := make([]*gorm.DB, 2)
		plugins := make([]*shardid.Plugin, 2)
		for i := range pods {
			db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
			must(t, err)
			if i == 0 {
				firstStart(t, db)
			}
			plugins[i] = shardid.New(shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity()})
			must(t, db.Use(plugins[i]))
			t.Cleanup(func() { _ = plugins[i].Close() })
			pods[i] = db
		}
		physical := direct(t, b, dir)
		for round := range 4 {
			must(t, plugins[0].Migrator(pods[0]).DropTable(&mgRaceItem{}, &mgRaceNote{}))
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range pods {
				wg.Go(func() { errs[i] = plugins[i].AutoMigrate(pods[i], &mgRaceItem{}, &mgRaceNote{}) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("round %d: two AutoMigrates at once: %v", round, err)
			}
			for k, db := range physical {
				if !db.Migrator().HasTable("mg_race_items") {
					t.Errorf("round %d: physical database %d lacks mg_race_items", round, k)
				}
			}
			if !pods[1].Migrator().HasTable("mg_race_notes") {
				t.Errorf("round %d: the plugin's database lacks mg_race_notes", round)
			}
		}
	})
}

// schemaItem is a sharded model whose table is in a schema of its own.
type schemaItem struct {
	ID   int64 `shardid:""`
	Name string
}

func (schemaItem) TableName() string { return "item_schema.schema_items" }

// TestRenameKeepsASchemaQualifiedTableRecordedInItsSchema: PostgreSQL's
// RENAME TO keeps a table in its schema; the plugin records the renamed
// table there too, so a move finds it, and forgets it when it is dropped.
func TestRenameKeepsASchemaQualifiedTableRecordedInItsSchema(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "postgres" {
			t.Skip("a schema of its own is PostgreSQL's")
		}
		r := newRouting(t, b)
		for _, d := range append([]*gorm.DB{r.db}, r.direct...) {
			must(t, d.Exec("DROP SCHEMA IF EXISTS item_schema CASCADE").Error)
			must(t, d.Exec("CREATE SCHEMA item_schema").Error)
		}
		must(t, r.plugin.AutoMigrate(r.db, &schemaItem{}))
		must(t, r.plugin.Migrator(r.db).RenameTable(&schemaItem{}, "schema_items_renamed"))
		var recorded []string
		must(t, r.db.Table("shardid_tables").Pluck("name", &recorded).Error)
		if !slices.Contains(recorded, "item_schema.schema_items_renamed") {
			t.Fatalf("recorded tables %v, want item_schema.schema_items_renamed", recorded)
		}
		must(t, r.plugin.Migrator(r.db).DropTable("item_schema.schema_items_renamed"))
		recorded = nil
		must(t, r.db.Table("shardid_tables").Pluck("name", &recorded).Error)
		if slices.ContainsFunc(recorded, func(name string) bool { return strings.Contains(name, "schema_items") }) {
			t.Fatalf("recorded tables %v after the renamed table was dropped", recorded)
		}
	})
}

// TestAutoMigrateInDryRunRunsNothing: the plugin's AutoMigrate and
// CreateTable in DryRun (a session's or the config's) refuse with
// gorm.ErrDryRunModeUnsupported, making no table anywhere, where they
// panicked on MariaDB (GORM's DryRun gives its migrator no rows to read).
func TestAutoMigrateInDryRunRunsNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db := open(t, b, dir, shardid.Config{Shards: shards(t, b, dir)})
		must(t, migrator(db).DropTable(&author{}, &book{}, &tenant{}))
		ids := db.Config.Plugins[(&shardid.Plugin{}).Name()].(*shardid.Plugin)
		dry := db.Session(&gorm.Session{DryRun: true})
		configDB, err := gorm.Open(b.dialector(t, dir), &gorm.Config{DryRun: true, Logger: logger.Discard})
		must(t, err)
		configIDs := shardid.New(shardid.Config{Shards: shards(t, b, dir), Atomic: b.atomicity()})
		must(t, configDB.Use(configIDs))
		t.Cleanup(func() { _ = configIDs.Close() })
		for name, migrate := range map[string]func() error{
			"AutoMigrate":           func() error { return ids.AutoMigrate(dry, &author{}, &book{}, &tenant{}) },
			"CreateTable":           func() error { return ids.Migrator(dry).CreateTable(&author{}, &book{}, &tenant{}) },
			"AutoMigrate of Config": func() error { return configIDs.AutoMigrate(configDB, &author{}, &book{}, &tenant{}) },
		} {
			if err := migrate(); !errors.Is(err, gorm.ErrDryRunModeUnsupported) {
				t.Errorf("%s in DryRun: %v, want gorm.ErrDryRunModeUnsupported", name, err)
			}
		}
		for i, d := range direct(t, b, dir) {
			if d.Migrator().HasTable(&author{}) || d.Migrator().HasTable(&tenant{}) {
				t.Errorf("physical %d has a table the DryRun migration would make", i)
			}
		}
	})
}
