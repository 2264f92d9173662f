package engine

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// TestRawSQLOnAShardInAPreparedSessionIsRefusedWhileTheMapIsDistrusted: raw
// SQL given a shard clause in a prepared session is bound to the shard's
// prepared store, and is refused as on the shard's own pool: nothing written.
func TestRawSQLOnAShardInAPreparedSessionIsRefusedWhileTheMapIsDistrusted(t *testing.T) {
	db, e, id := trustSetup(t)
	distrustMap(t, e)
	prepared := db.Session(&gorm.Session{PrepareStmt: true})
	err := prepared.Clauses(hinted{OnShard(1)}).Exec("UPDATE trust_users SET name = 'written while distrusted' WHERE id = ?", id).Error
	if !errors.Is(err, ErrShardUnavailable) {
		t.Errorf("prepared Exec with a shard clause, map distrusted: err = %v; want ErrShardUnavailable", err)
	}
	// Read the shard's file directly: did the write land?
	direct, derr := gorm.Open(sqlite.Open("file:"+filepath.Join(shardDir(t, e), "a.db")), &gorm.Config{Logger: logger.Discard})
	must(t, derr)
	var name string
	must(t, direct.Raw("SELECT name FROM trust_users WHERE id = ?", id).Scan(&name).Error)
	if name == "written while distrusted" {
		t.Errorf("the row on shard a was written while the map was distrusted")
	}
	if sqlDB, err := direct.DB(); err == nil {
		sqlDB.Close()
	}
}

// TestAPreparedSessionsShardTransactionIsRefusedWhileTheMapIsDistrusted: the same with gorm.Config's PrepareStmt.
func TestAPreparedSessionsShardTransactionIsRefusedWhileTheMapIsDistrusted(t *testing.T) {
	db, e, id := trustSetup(t)
	distrustMap(t, e)
	err := db.Session(&gorm.Session{PrepareStmt: true}).Clauses(hinted{OnShard(1)}).Transaction(func(tx *gorm.DB) error {
		return tx.Exec("UPDATE trust_users SET name = 'tx' WHERE id = ?", id).Error
	})
	if !errors.Is(err, ErrShardUnavailable) {
		t.Errorf("prepared transaction's Exec, map distrusted: err = %v; want ErrShardUnavailable", err)
	}
}

// shardDir is the directory of the test's SQLite files.
func shardDir(t *testing.T, e *Engine) string {
	sqlDB, err := e.db.DB()
	must(t, err)
	var file string
	must(t, sqlDB.QueryRow("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file))
	return filepath.Dir(file)
}

// openEngineGorm is openEngine (two shards) with the given gorm.Config.
func openEngineGorm(t *testing.T, cfg Config, gcfg *gorm.Config) (*gorm.DB, *Engine) {
	t.Helper()
	dir := t.TempDir()
	open := func(name string) gorm.Dialector {
		return sqlite.Open("file:" + filepath.Join(dir, name) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	}
	half := cfg.Layout.Normalized().ShardCount() / 2
	cfg.Shards = []Shard{
		{Name: "a", Dialector: open("a.db"), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "b", Dialector: open("b.db"), Logical: []Range{{From: half, To: 2*half - 1}}},
	}
	gcfg.Logger = logger.Discard
	db, err := gorm.Open(open("main.db"), gcfg)
	must(t, err)
	p := &testPlugin{}
	p.e = New(p, cfg)
	must(t, db.Use(p))
	t.Cleanup(func() {
		_ = p.e.Close()
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db, p.e
}

// TestRawSQLOnAShardUnderConfigPrepareStmtIsRefusedWhileTheMapIsDistrusted: gorm.Config{PrepareStmt: true}.
func TestRawSQLOnAShardUnderConfigPrepareStmtIsRefusedWhileTheMapIsDistrusted(t *testing.T) {
	db, e := openEngineGorm(t, Config{}, &gorm.Config{PrepareStmt: true})
	must(t, e.Migrator(db).AutoMigrate(&trustUser{}))
	u := trustUser{Name: "seed"}
	must(t, db.Clauses(hinted{OnShard(1)}).Create(&u).Error)
	distrustMap(t, e)
	err := db.Clauses(hinted{OnShard(1)}).Exec("UPDATE trust_users SET name = 'written while distrusted' WHERE id = ?", u.ID).Error
	if !errors.Is(err, ErrShardUnavailable) {
		t.Errorf("Exec with a shard clause under gorm.Config{PrepareStmt: true}, map distrusted: err = %v; want ErrShardUnavailable", err)
	}
}

// TestPreparedStatementsOnAShardAreRefusedWhileTheMapIsDistrusted: every
// kind of statement of a prepared session bound to a shard.
func TestPreparedStatementsOnAShardAreRefusedWhileTheMapIsDistrusted(t *testing.T) {
	db, e, id := trustSetup(t)
	distrustMap(t, e)
	p := db.Session(&gorm.Session{PrepareStmt: true})
	var users []trustUser
	for name, err := range map[string]error{
		"raw scan": p.Clauses(hinted{OnShard(1)}).Raw("SELECT * FROM trust_users").Scan(&users).Error,
		"find":     p.Clauses(hinted{OnShard(1)}).Find(&users).Error,
		"update":   p.Model(&trustUser{ID: id}).Update("name", "p").Error,
		"create":   p.Create(&trustUser{Name: "p"}).Error,
		"table":    p.Clauses(hinted{OnShard(1)}).Table("trust_users").Where("id = ?", id).Update("name", "t").Error,
	} {
		if !errors.Is(err, ErrShardUnavailable) {
			t.Errorf("prepared %s: %v; want ErrShardUnavailable", name, err)
		}
	}
}

// TestRawSQLOnAnUnshardedTableInAPreparedSessionOnAShardIsRefused: raw SQL
// naming an unsharded model's table, on a shard in a prepared session, is
// refused as it is unprepared.
func TestRawSQLOnAnUnshardedTableInAPreparedSessionOnAShardIsRefused(t *testing.T) {
	db, _, _ := trustSetup(t)
	plain := db.Clauses(hinted{OnShard(1)}).Exec("UPDATE trust_plains SET name = 'q'").Error
	prepared := db.Session(&gorm.Session{PrepareStmt: true}).Clauses(hinted{OnShard(1)}).Exec("UPDATE trust_plains SET name = 'q'").Error
	if !errors.Is(plain, ErrCrossShard) {
		t.Errorf("unprepared Exec naming an unsharded table on a shard: %v", plain)
	}
	if !errors.Is(prepared, ErrCrossShard) {
		t.Errorf("prepared Exec naming an unsharded table on a shard: %v; unprepared: %v", prepared, plain)
	}
}
