package engine

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type rgUser struct {
	ID   int64 `shardid:""`
	Name string
}

type rgOrder struct {
	ID     int64 `shardid:"colocate:UserID"`
	UserID int64
	Note   string
	// Other is a user the hook renames (not a column).
	Other int64 `gorm:"-"`
}

// AfterCreate renames another user with raw SQL and no shard clause: it
// must be refused (ErrNoShard), as it is without the CTE.
func (o *rgOrder) AfterCreate(tx *gorm.DB) error {
	if o.Note == "cte" {
		return tx.Exec("WITH rg_users AS (SELECT 1) UPDATE rg_users SET name = 'hooked' WHERE id = ?", o.Other).Error
	}
	if o.Note == "plain" {
		return tx.Exec("UPDATE rg_users SET name = 'hooked' WHERE id = ?", o.Other).Error
	}
	return nil
}

type rgPlain struct {
	ID   int64
	Name string
}

func rgOpenFile(t *testing.T, e *Engine, name string) *gorm.DB {
	t.Helper()
	d, err := gorm.Open(sqlite.Open("file:"+filepath.Join(shardDir(t, e), name)+"?_pragma=busy_timeout(10000)"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if s, err := d.DB(); err == nil {
			s.Close()
		}
	})
	return d
}

func rgSetup(t *testing.T) (*gorm.DB, *Engine, rgUser, rgUser) {
	db, e := openEngine(t, Config{Atomic: BestEffort}, true)
	must(t, e.Migrator(db).AutoMigrate(&rgUser{}, &rgOrder{}, &rgPlain{}))
	half := Config{}.Layout.Normalized().ShardCount() / 2
	ua := rgUser{Name: "on a"}
	must(t, db.Clauses(hinted{OnShard(1)}).Create(&ua).Error)
	ub := rgUser{Name: "on b"}
	must(t, db.Clauses(hinted{OnShard(half + 1)}).Create(&ub).Error)
	return db, e, ua, ub
}

// Raw DML on a sharded table, without a shard clause, behind a CTE of the
// same name: SQLite's target of INSERT/UPDATE/DELETE is always the real
// table, never the CTE.
func TestRawDMLUnderACTENamedLikeItsTableIsRoutedAsTheTable(t *testing.T) {
	db, e, ua, _ := rgSetup(t)
	// control: without the CTE it is refused
	err := db.Exec("UPDATE rg_users SET name = 'x'").Error
	if !errors.Is(err, ErrNoShard) {
		t.Fatalf("a raw UPDATE of a sharded table without a clause: %v; want ErrNoShard", err)
	}

	err = db.Exec("WITH rg_users AS (SELECT 1) UPDATE rg_users SET name = 'cte'").Error
	if !errors.Is(err, ErrNoShard) {
		t.Errorf("the same UPDATE behind a CTE of its table's name: %v; want ErrNoShard", err)
	}

	// the plugin's database holds a table of that name (as it did before sharding)
	main := rgOpenFile(t, e, "main.db")
	must(t, main.Exec("CREATE TABLE rg_users (id integer primary key, name text)").Error)
	must(t, main.Exec("INSERT INTO rg_users VALUES (?, 'legacy')", ua.ID).Error)
	for _, q := range []string{
		"WITH rg_users AS (SELECT 1) UPDATE rg_users SET name = 'cte-updated'",
		"WITH rg_users AS (SELECT 1) INSERT INTO rg_users (id, name) VALUES (42, 'cte-inserted')",
		"WITH rg_users AS (SELECT 1) REPLACE INTO rg_users (id, name) VALUES (43, 'cte-replaced')",
	} {
		err := db.Exec(q).Error
		if !errors.Is(err, ErrNoShard) {
			t.Errorf("%s: err = %v; want ErrNoShard", q, err)
		}
	}
	var names []string
	must(t, main.Raw("SELECT name FROM rg_users ORDER BY id").Scan(&names).Error)
	if len(names) != 1 || names[0] != "legacy" {
		t.Errorf("rg_users on the plugin's database after the refused writes: %v; want [legacy]", names)
	}
	err = db.Exec("WITH rg_users AS (SELECT 1) DELETE FROM rg_users").Error
	if !errors.Is(err, ErrNoShard) {
		t.Errorf("CTE-shadowed DELETE: err = %v; want ErrNoShard", err)
	}
	var n int64
	must(t, main.Raw("SELECT count(*) FROM rg_users").Scan(&n).Error)
	if n != 1 {
		t.Errorf("rows left on the plugin's database after the refused DELETE: %d; want 1", n)
	}
}

// A hook's raw SQL without a clause runs on the hook's shard; naming a
// sharded table it must be refused (docs: "needs its own shard clause").
func TestRawDMLUnderACTENamedLikeItsTableInAHookNeedsItsOwnClause(t *testing.T) {
	db, e, ua, ub := rgSetup(t)
	err := db.Create(&rgOrder{UserID: ua.ID, Note: "plain", Other: ub.ID}).Error
	if !errors.Is(err, ErrNoShard) {
		t.Fatalf("a hook's raw UPDATE of a sharded table without a clause: %v; want ErrNoShard", err)
	}
	o := rgOrder{UserID: ua.ID, Note: "cte", Other: ua.ID}
	err = db.Create(&o).Error
	if !errors.Is(err, ErrNoShard) {
		t.Errorf("hook's CTE-shadowed UPDATE of a sharded table without a clause: err = %v; want ErrNoShard", err)
	}
	var name string
	must(t, rgOpenFile(t, e, "a.db").Raw("SELECT name FROM rg_users WHERE id = ?", ua.ID).Scan(&name).Error)
	if name != "on a" {
		t.Errorf("user %d on a.db is named %q after the refused UPDATE; want \"on a\"", ua.ID, name)
	}
	o2 := rgOrder{UserID: ua.ID, Note: "cte", Other: ub.ID}
	err = db.Create(&o2).Error
	if !errors.Is(err, ErrNoShard) {
		t.Errorf("a hook's UPDATE behind a CTE naming a user on b: %v; want ErrNoShard", err)
	}
	must(t, rgOpenFile(t, e, "b.db").Raw("SELECT name FROM rg_users WHERE id = ?", ub.ID).Scan(&name).Error)
	if name != "on b" {
		t.Errorf("user %d on b.db is named %q; want \"on b\"", ub.ID, name)
	}
}
