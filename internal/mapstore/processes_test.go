package mapstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBehind: a live process that follows an older version is behind until
// it notes the newer one, and is forgotten when it stops.
func TestBehind(t *testing.T) {
	s, ctx := openStore(t), context.Background()
	if err := s.Seen(ctx, 1); err != nil {
		t.Fatal(err)
	}
	behind, err := s.Behind(ctx, 2)
	if err != nil || len(behind) != 1 || !strings.HasSuffix(behind[0], "(version 1)") {
		t.Fatalf("Behind(2): %v, %v; want this process at version 1", behind, err)
	}
	if err := s.Seen(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if behind, err := s.Behind(ctx, 2); err != nil || len(behind) != 0 {
		t.Fatalf("Behind(2) after Seen(2): %v, %v", behind, err)
	}
	if err := s.Seen(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx); err != nil {
		t.Fatal(err)
	}
	if behind, err := s.Behind(ctx, 2); err != nil || len(behind) != 0 {
		t.Fatalf("Behind(2) after Forget: %v, %v", behind, err)
	}
}

// TestBehindCountsTheProcessesOfItsMap: a process of another map table on
// the same database is not behind this map's versions; one noted by a
// version that kept no map table (the column added to its table) is.
func TestBehindCountsTheProcessesOfItsMap(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "main.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE " + processesTable + " (owner VARCHAR(191) NOT NULL PRIMARY KEY, map_version BIGINT NOT NULL, seen_ms BIGINT NOT NULL, refresh_ms BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO "+processesTable+" VALUES ('old:1:00000001', 1, ?, 1000)", time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	mine, other := New(db, "sqlite", DefaultTable, time.Second), New(db, "sqlite", "other_map", time.Second)
	for _, s := range []*Store{mine, other} {
		if err := s.Prepare(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Seen(ctx, 1); err != nil {
		t.Fatal(err)
	}
	behind, err := mine.Behind(ctx, 5)
	if err != nil || len(behind) != 1 || !strings.HasPrefix(behind[0], "old:1:") {
		t.Fatalf("Behind(5) of %s: %v, %v; want only the process that named no map", DefaultTable, behind, err)
	}
	if got := KeptTable("other_map", "shardid_moves", "_moves"); got != "other_map_moves" {
		t.Fatalf("KeptTable: %s", got)
	}
}

// A process that starts forgets the processes silent for more than a day
// (crashed, never to say they stopped), and keeps those silent lately,
// which Processes lists as not live.
func TestAStartingProcessForgetsTheLongSilent(t *testing.T) {
	s, ctx := openStore(t), context.Background()
	now := time.Now()
	for owner, seen := range map[string]time.Time{"crashed:1:00000001": now.Add(-49 * time.Hour), "crashed:2:00000002": now.Add(-time.Hour)} {
		if _, err := s.Exec(ctx, "INSERT INTO "+processesTable+" (owner, map_version, seen_ms, refresh_ms, map_table) VALUES (?, 1, ?, 1000, ?)", owner, seen.UnixMilli(), s.Table()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Seen(ctx, 1); err != nil {
		t.Fatal(err)
	}
	list, err := s.Processes(ctx)
	if err != nil || len(list) != 2 || !list[0].Live || !list[0].Self || list[1].Owner != "crashed:2:00000002" || list[1].Live {
		t.Fatalf("Processes: %+v, %v; want this one, live, then the one silent for an hour, not live", list, err)
	}
}
