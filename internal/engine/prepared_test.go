package engine

import (
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
