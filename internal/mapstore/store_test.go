package mapstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/glebarez/go-sqlite"
)

// openStore returns a store on a fresh SQLite file, its tables prepared.
func openStore(t *testing.T) *Store {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "main.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s := New(db, "sqlite", "shardid_shard_map", time.Second)
	ctx := context.Background()
	if err := s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.PrepareMoves(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}
