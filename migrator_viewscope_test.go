package shardid

import (
	"errors"
	"testing"

	"gorm.io/gorm"
)

// TestAViewWhoseQueryNamesItsModelInAScope: a view's query that names its
// sharded model, and AllShards, in a scope is placed by them as a query
// that names them itself: on every physical database, not refused as raw
// SQL on the plugin's database; without AllShards it is refused with
// ErrNoShard, nothing made.
func TestAViewWhoseQueryNamesItsModelInAScope(t *testing.T) {
	db, p, direct := twoSQLiteShards(t)
	must(t, p.AutoMigrate(db, &revUser{}))
	mig := p.Migrator(db)
	everyShard := func(d *gorm.DB) *gorm.DB { return d.Model(&revUser{}).Clauses(AllShards()) }
	if err := mig.CreateView("scoped_users", gorm.ViewOption{Query: db.Scopes(everyShard).Select("id", "name")}); err != nil {
		t.Fatalf("CreateView of a scoped query: %v", err)
	}
	hasView := func(d *gorm.DB, name string) bool {
		var n int64
		must(t, d.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name = ?", name).Scan(&n).Error)
		return n == 1
	}
	for i, d := range direct {
		if !hasView(d, "scoped_users") {
			t.Errorf("s%d lacks the view", i)
		}
	}
	noShard := func(d *gorm.DB) *gorm.DB { return d.Model(&revUser{}) }
	if err := mig.CreateView("unscoped_users", gorm.ViewOption{Query: db.Scopes(noShard).Select("id")}); !errors.Is(err, ErrNoShard) {
		t.Errorf("CreateView of a scoped query naming no shard: %v, want ErrNoShard", err)
	}
	if hasView(db, "scoped_users") {
		t.Error("the plugin's database has the view of a sharded model")
	}
	for i, d := range append(direct, db) {
		if hasView(d, "unscoped_users") {
			t.Errorf("database %d has the view refused", i)
		}
	}
}
