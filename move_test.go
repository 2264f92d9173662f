package shardid

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"

	"github.com/shardid/shardid/internal/mover"
)

// TestPhasesAreTheMovers: the phases Moves and MoveStats report are the
// words the mover records, each under its documented name.
func TestPhasesAreTheMovers(t *testing.T) {
	for _, c := range []struct{ plugin, mover string }{
		{PhasePrepare, mover.PhasePrepare},
		{PhaseCopy, mover.PhaseCopy},
		{PhaseCatchUp, mover.PhaseCatchUp},
		{PhaseCutover, mover.PhaseCutover},
		{PhaseServing, mover.PhaseServing},
		{PhaseCancelled, mover.PhaseCancelled},
		{PhaseCleaned, mover.PhaseCleaned},
	} {
		if c.plugin != c.mover {
			t.Errorf("phase %q is %q in the mover", c.plugin, c.mover)
		}
	}
}

// TestAuditWithNoShardedTables: before any sharded model is migrated through
// the plugin Audit knows no table to read: it says so, not that a move is
// invalid, and reports no row.
func TestAuditWithNoShardedTables(t *testing.T) {
	dir := t.TempDir()
	count := Layout{}.ShardCount()
	db, _ := testDB(t, Config{Shards: []Shard{
		{Name: "a", Dialector: sqlite.Open(filepath.Join(dir, "a.db")), Logical: []Range{{From: 0, To: count/2 - 1}}},
		{Name: "b", Dialector: sqlite.Open(filepath.Join(dir, "b.db")), Logical: []Range{{From: count / 2, To: count - 1}}},
	}})
	p := db.Config.Plugins[pluginName].(*Plugin)
	misplaced, err := p.Audit(context.Background())
	if err == nil || !strings.Contains(err.Error(), "lists no sharded tables") || strings.Contains(err.Error(), "invalid move") || len(misplaced) != 0 {
		t.Fatalf("Audit with no sharded tables: %v, %v; want an error saying no table is recorded, not an invalid move", misplaced, err)
	}
}
