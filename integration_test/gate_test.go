package integration

import (
	"errors"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shardid/shardid"
)

// Models of the last gate's tests: users and their colocated photos, an
// unsharded country, and a struct without the tag over the users' table.
type (
	GtUser struct {
		ID     int64 `shardid:""`
		Name   string
		Photos []GtPhoto `gorm:"foreignKey:UserID"`
	}
	GtPhoto struct {
		ID     int64 `shardid:"colocate:UserID"`
		UserID int64
		URL    string
	}
	GtCountry struct { // unsharded
		ID   uint
		Name string
	}
	GtUserView struct { // no tag, a sharded model's table
		ID   int64
		Name string
	}
)

func (GtUserView) TableName() string { return "gt_users" }

// TestLastGateRefusesTablesItsRoutingDoesNotCover: SQL hidden in a select
// list, a HAVING, an update's value, a condition's expression or a join
// clause, which names a sharded table on a statement routed to one shard,
// is refused before it runs, and writes nothing; so is SQL naming a sharded
// table in a statement on the plugin's database. The forms routing covers
// (its own table, a colocated join, a subquery on its shard, a one-shard
// clause) run.
func TestLastGateRefusesTablesItsRoutingDoesNotCover(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		r := newRouting(t, b)
		fresh(t, r.db, &GtUser{}, &GtPhoto{})
		must(t, r.db.Migrator().DropTable(&GtCountry{}))
		must(t, r.db.AutoMigrate(&GtCountry{}))
		must(t, r.db.Create(&GtCountry{Name: "c"}).Error) // the plugin knows a model once a statement used it
		users := make([]GtUser, physicalShards)
		for k := range users {
			users[k] = GtUser{Name: "u", Photos: []GtPhoto{{URL: "a"}}}
			must(t, r.db.Clauses(shardid.OnShard(k*r.plugin.Layout().ShardCount()/physicalShards)).Create(&users[k]).Error)
		}
		u := users[0]
		var n []map[string]any
		refused := map[string]error{
			"a select list's subquery": r.db.Model(&GtUser{}).Select("id, (SELECT count(*) FROM gt_photos) AS n").Where("id = ?", u.ID).Find(&n).Error,
			"a HAVING's subquery": r.db.Model(&GtUser{}).Select("name, count(*) AS n").Where("id = ?", u.ID).Group("name").
				Having("count(*) < (SELECT count(*) FROM gt_photos)").Find(&n).Error,
			"an update's value":             r.db.Model(&u).Update("name", gorm.Expr("(SELECT max(url) FROM gt_photos)")).Error,
			"an update column's value":      r.db.Model(&u).UpdateColumn("name", gorm.Expr("(SELECT max(url) FROM gt_photos)")).Error,
			"a condition's expression":      r.db.Where("id = ?", u.ID).Where("?", gorm.Expr("EXISTS (SELECT 1 FROM gt_photos)")).Find(&[]GtUser{}).Error,
			"a join in a FROM clause":       r.db.Where("gt_users.id = ?", u.ID).Clauses(clause.From{Tables: []clause.Table{{Name: "gt_users"}}, Joins: []clause.Join{{Table: clause.Table{Name: "gt_photos"}, ON: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "1 = 1"}}}}}}).Find(&[]GtUser{}).Error,
			"an unsharded table on a shard": r.db.Model(&GtUser{}).Select("id, (SELECT count(*) FROM gt_countries) AS n").Where("id = ?", u.ID).Find(&n).Error,
			"its own table in a subquery on its shard and again in a select list": r.db.Model(&GtUser{}).Select("id, (SELECT count(*) FROM gt_users) AS n").Where("id = ?", u.ID).
				Where("id IN (?)", r.db.Model(&GtUser{}).Select("id").Where("id = ?", u.ID)).Find(&n).Error,
		}
		if b.name == "mariadb" { // a versioned executable comment: SQL not read for certain
			refused["its own table again, in SQL not read"] = r.db.Model(&GtUser{}).Select("id, (SELECT count(*) FROM gt_users) /*!50000 AS n */").Where("id = ?", u.ID).Find(&n).Error
		}
		if b.name == "sqlite" { // x IN t: SQLite reads the table's rows
			refused["a table after IN"] = r.db.Model(&GtPhoto{}).Where("user_id = ?", u.ID).Where("(?, ?) NOT IN gt_users", u.ID, u.Name).Find(&n).Error
			refused["a qualified table after IN"] = r.db.Model(&GtPhoto{}).Where("user_id = ?", u.ID).Where("user_id IN main.gt_users").Find(&n).Error
		}
		for what, err := range refused {
			if !errors.Is(err, shardid.ErrCrossShard) {
				t.Errorf("%s: %v; want ErrCrossShard", what, err)
			}
		}
		var back GtUser
		must(t, r.direct[r.physicalOf(u.ID)].First(&back, u.ID).Error)
		if back.Name != "u" {
			t.Fatalf("a refused update wrote its row: %+v", back)
		}

		offShard := map[string]error{
			"Table(?, clause.Table)":        r.db.Table("?", clause.Table{Name: "gt_users"}).Find(&n).Error,
			"Table(?, gorm.Expr)":           r.db.Table("?", gorm.Expr("gt_users")).Find(&n).Error,
			"an unsharded model's subquery": r.db.Where("id IN (SELECT id FROM gt_users)").Find(&[]GtCountry{}).Error,
			"an unsharded Table(...).Joins": r.db.Table("gt_countries").Joins("JOIN gt_users ON gt_users.id = gt_countries.id").Find(&n).Error,
			"a struct without the tag":      r.db.Find(&[]GtUserView{}).Error,
			"a name qualified by a schema":  r.db.Where("id IN (SELECT id FROM " + qualifier(t, r.db, b) + ".gt_users)").Find(&[]GtCountry{}).Error,
		}
		if b.name == "sqlite" {
			offShard["a table after IN"] = r.db.Where("id IN gt_users").Find(&[]GtCountry{}).Error
		}
		if b.name == "postgres" {
			offShard["a U&\"...\" identifier"] = r.db.Where(`id IN (SELECT id FROM U&"gt_\0075sers")`).Find(&[]GtCountry{}).Error
		}
		for what, err := range offShard {
			if !errors.Is(err, shardid.ErrNoShard) {
				t.Errorf("%s: %v; want ErrNoShard", what, err)
			}
		}

		var photos []GtPhoto
		must(t, r.db.Joins("JOIN gt_users ON gt_users.id = gt_photos.user_id").Where("gt_photos.user_id = ?", u.ID).Find(&photos).Error)
		var within []GtUser
		must(t, r.db.Where("id = ?", u.ID).Where("id IN (?)", r.db.Model(&GtPhoto{}).Select("user_id").Where("user_id = ?", u.ID)).Find(&within).Error)
		if len(photos) != 1 || len(within) != 1 {
			t.Fatalf("covered forms: %d photos by a colocated join, %d users by a subquery on their shard; want 1 and 1", len(photos), len(within))
		}
		if b.name == "mariadb" { // SQL not read for certain, its own table named once, then as columns' qualifier
			var first GtUser
			must(t, r.db.Model(&GtUser{}).Select("/*!40001 SQL_NO_CACHE */ *").Where("id = ?", u.ID).First(&first).Error)
		}
		must(t, r.db.Clauses(shardid.ByID(u.ID)).Model(&GtUser{}).Select("id, (SELECT count(*) FROM gt_photos) AS n").Where("id = ?", u.ID).Find(&n).Error)
		if len(n) != 1 {
			t.Fatalf("a one-shard clause's read of that shard's photos: %v", n)
		}
	})
}

// qualifier is the schema or database a backend's tables are in on main.
func qualifier(t *testing.T, main *gorm.DB, b backend) string {
	switch b.name {
	case "postgres":
		return "public"
	case "sqlite":
		return "main"
	}
	var database string // MariaDB's: the package's, or its part's
	must(t, main.Raw("SELECT DATABASE()").Scan(&database).Error)
	return database
}

// TestToSQLShowsAWriteThatNamesNoShard: db.ToSQL of an update or delete
// whose conditions name no shard shows the SQL plain GORM builds, as it
// does for such a query, and the statement in DryRun is refused all the
// same (ErrNoShard), running nowhere.
func TestToSQLShowsAWriteThatNamesNoShard(t *testing.T) {
	b := backends[0]
	r := newRouting(t, b)
	plain, err := gorm.Open(b.dialector(t, t.TempDir()), &gorm.Config{Logger: r.db.Logger})
	must(t, err)
	for name, write := range map[string]func(tx *gorm.DB) *gorm.DB{
		"Update": func(tx *gorm.DB) *gorm.DB { return tx.Model(&author{}).Where("name = ?", "x").Update("name", "y") },
		"Updates": func(tx *gorm.DB) *gorm.DB {
			return tx.Model(&author{}).Where("name = ?", "x").Updates(map[string]any{"name": "y"})
		},
		"Delete": func(tx *gorm.DB) *gorm.DB { return tx.Where("name = ?", "x").Delete(&author{}) },
	} {
		if got, want := r.db.ToSQL(write), plain.ToSQL(write); got != want {
			t.Errorf("ToSQL of %s: %q, want GORM's %q", name, got, want)
		}
		if err := write(r.db.Session(&gorm.Session{DryRun: true})).Error; !errors.Is(err, shardid.ErrNoShard) {
			t.Errorf("%s in DryRun: %v, want ErrNoShard", name, err)
		}
	}
}
