package shardid

import (
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// TestPreparedSessionsUseEachDatabasesStore: a prepared session's statements
// routed to a physical database are prepared in that database's own store
// (GORM keys prepared statements by their SQL alone).
func TestPreparedSessionsUseEachDatabasesStore(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) gorm.Dialector { return sqlite.Open("file:" + filepath.Join(dir, name)) }
	db, err := gorm.Open(open("main.db"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	half := Layout{}.ShardCount() / 2
	p := New(Config{Shards: []Shard{
		{Name: "a", Dialector: open("a.db"), Logical: []Range{{From: 0, To: half - 1}}},
		{Name: "b", Dialector: open("b.db"), Logical: []Range{{From: half, To: 2*half - 1}}},
	}})
	if err := db.Use(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	migrate(t, db, &user{})
	prepared := db.Session(&gorm.Session{PrepareStmt: true})
	for _, shard := range []int{0, half} {
		u := user{Name: "prepared"}
		if err := prepared.Clauses(OnShard(shard)).Create(&u).Error; err != nil {
			t.Fatal(err)
		}
		var got user
		if err := prepared.First(&got, u.ID).Error; err != nil || got.ID != u.ID {
			t.Fatalf("First(%d) on shard %d: %v", u.ID, shard, err)
		}
	}
	for k := range p.physical {
		store, ok := p.prepared.Load(k)
		if !ok {
			t.Fatalf("no prepared store for %s", p.physical[k].name)
		}
		if keys := store.(*gorm.PreparedStmtDB).Stmts.Keys(); len(keys) == 0 {
			t.Fatalf("nothing prepared on %s", p.physical[k].name)
		}
	}
}
