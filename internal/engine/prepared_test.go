package engine

import (
	"errors"
	"testing"

	"gorm.io/gorm"
)

type preparedUser struct {
	ID   int64 `shardid:""`
	Name string
}

// TestPreparedSessionsUseEachDatabasesStore: a prepared session's statements
// routed to a physical database are prepared in that database's own store
// (GORM keys prepared statements by their SQL alone).
func TestPreparedSessionsUseEachDatabasesStore(t *testing.T) {
	db, e := openEngine(t, Config{}, true)
	must(t, e.Migrator(db).AutoMigrate(&preparedUser{}))
	half := e.Layout().ShardCount() / 2
	prepared := db.Session(&gorm.Session{PrepareStmt: true})
	for _, shard := range []int{0, half} {
		u := preparedUser{Name: "prepared"}
		if err := prepared.Clauses(hinted{OnShard(shard)}).Create(&u).Error; err != nil {
			t.Fatal(err)
		}
		var got preparedUser
		if err := prepared.First(&got, u.ID).Error; err != nil || got.ID != u.ID {
			t.Fatalf("First(%d) on shard %d: %v", u.ID, shard, err)
		}
	}
	for k := range e.physical {
		store, ok := e.prepared.Load(k)
		if !ok {
			t.Fatalf("no prepared store for %s", e.physical[k].name)
		}
		if keys := store.(*gorm.PreparedStmtDB).Stmts.Keys(); len(keys) == 0 {
			t.Fatalf("nothing prepared on %s", e.physical[k].name)
		}
	}
}

// TestConfigPrepareStmtPreparesInAShardTransaction: with gorm.Config's
// PrepareStmt, a statement in a transaction begun on a shard runs prepared,
// by that database's own store.
func TestConfigPrepareStmtPreparesInAShardTransaction(t *testing.T) {
	db, e := openEngine(t, Config{}, true)
	db.Config.PrepareStmt = true
	db.ConnPool = gorm.NewPreparedStmtDB(db.ConnPool, 0, 0)
	must(t, e.Migrator(db).AutoMigrate(&preparedUser{}))
	var ran gorm.ConnPool
	must(t, db.Callback().Query().After("gorm:query").Register("test:pool", func(tx *gorm.DB) { ran = tx.Statement.ConnPool }))
	half := e.Layout().ShardCount() / 2
	must(t, db.Clauses(hinted{OnShard(half)}).Transaction(func(tx *gorm.DB) error {
		return tx.Find(&[]preparedUser{}).Error
	}))
	prepared, ok := ran.(*gorm.PreparedStmtTX)
	if !ok {
		t.Fatalf("the statement in the shard's transaction ran on %T, want prepared", ran)
	}
	if k, own := e.physicalOfPool(prepared.PreparedStmtDB.ConnPool); !own || k != 1 {
		t.Errorf("it was prepared by the store of %d (%v), want the shard's", k, own)
	}
}

// TestPreparedSessionSavepointInAShardTransactionRollsBackItsPart: a nested
// transaction of a prepared session made in a shard's transaction rolls back
// to its savepoint, and the outer part commits.
func TestPreparedSessionSavepointInAShardTransactionRollsBackItsPart(t *testing.T) {
	db, e := openEngine(t, Config{}, true)
	must(t, e.Migrator(db).AutoMigrate(&preparedUser{}))
	half := e.Layout().ShardCount() / 2
	must(t, db.Clauses(hinted{OnShard(half)}).Transaction(func(tx *gorm.DB) error {
		prepared := tx.Session(&gorm.Session{PrepareStmt: true})
		must(t, prepared.Create(&preparedUser{Name: "kept"}).Error)
		inner := prepared.Transaction(func(nested *gorm.DB) error {
			must(t, nested.Create(&preparedUser{Name: "undone"}).Error)
			return errors.New("undo the nested part")
		})
		if inner == nil || inner.Error() != "undo the nested part" {
			t.Errorf("the nested transaction: %v", inner)
		}
		return nil
	}))
	var names []string
	must(t, db.Clauses(hinted{OnShard(half)}).Model(&preparedUser{}).Order("name").Pluck("name", &names).Error)
	if len(names) != 1 || names[0] != "kept" {
		t.Errorf("the shard holds %v, want [kept]", names)
	}
}

type preparedSetting struct {
	ID    int64
	Value string
}

// TestPreparedSessionStatementsOnAShardAreSeenOnIt: in a prepared session,
// the plugin knows a statement bound to a shard's prepared store is on that
// shard: a sharded subquery in an unsharded statement, and raw SQL naming an
// unsharded table under a shard clause, are refused as without PrepareStmt.
func TestPreparedSessionStatementsOnAShardAreSeenOnIt(t *testing.T) {
	db, e := openEngine(t, Config{}, true)
	must(t, e.Migrator(db).AutoMigrate(&preparedUser{}, &preparedSetting{}))
	u := preparedUser{Name: "v"}
	must(t, db.Create(&u).Error)
	must(t, db.Create(&preparedSetting{Value: "v"}).Error)
	for _, session := range []struct {
		name string
		db   *gorm.DB
	}{{"plain", db}, {"prepared", db.Session(&gorm.Session{PrepareStmt: true})}} {
		var settings []preparedSetting
		sub := session.db.Model(&preparedUser{}).Select("name").Where("id = ?", u.ID)
		if err := session.db.Where("value IN (?)", sub).Find(&settings).Error; !errors.Is(err, ErrCrossShard) {
			t.Errorf("%s session: a sharded subquery in an unsharded statement: %v, %d rows; want ErrCrossShard", session.name, err, len(settings))
		}
		err := session.db.Clauses(hinted{ByID(u.ID)}).Exec("UPDATE prepared_settings SET value = 'w'").Error
		if !errors.Is(err, ErrCrossShard) {
			t.Errorf("%s session: raw SQL on an unsharded table under a shard clause: %v; want ErrCrossShard", session.name, err)
		}
	}
}
