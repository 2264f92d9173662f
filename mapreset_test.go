package shardid

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/mover"
)

type resetUser struct {
	ID   int64 `shardid:""`
	Name string
}

// TestAMapTableMadeAnewIsFollowedByEveryProcess: a teardown that drops the
// plugin's tables, and the AutoMigrate that makes them again, start the
// shared map's versions again from 1, below the version the running
// processes follow. A move then writes versions they had passed: each
// process, the mover's own and another, follows the table all the same
// (the table wins), and the move's cleanup waits for a process that still
// routes by the map the table no longer holds, so that no process reads
// the range's rows where the cleanup deleted them.
func TestAMapTableMadeAnewIsFollowedByEveryProcess(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db, p := openIn(t, dir)
	must(t, p.AutoMigrate(db, &resetUser{}))
	r := Range{From: 0, To: 10}
	for _, to := range []string{"s1", "s0"} { // the map's version climbs
		_, err := p.Move(ctx, Move{Logical: r, To: to})
		must(t, err)
		must(t, p.CleanupMove(ctx, r))
	}
	other, q := openWith(t, dir, Config{MapRefresh: -1}) // another process, at that version
	tables, err := p.Migrator(db).GetTables()
	must(t, err)
	for _, table := range tables {
		if !strings.HasPrefix(table, "sqlite_") { // SQLite's own
			must(t, p.Migrator(db).DropTable(table))
		}
	}
	must(t, p.AutoMigrate(db, &resetUser{}))
	user := resetUser{Name: "moved"}
	must(t, db.Clauses(OnShard(5)).Create(&user).Error)
	report, err := p.Move(ctx, Move{Logical: r, To: "s1"})
	must(t, err)
	if p.MapVersion() != report.MapVersion {
		t.Errorf("the mover's process routes by map version %d after its move wrote version %d", p.MapVersion(), report.MapVersion)
	}
	for deadline := time.Now().Add(5 * time.Second); ; { // the other process notes itself again, in the table made anew
		processes, err := p.Processes(ctx)
		must(t, err)
		if slices.ContainsFunc(processes, func(pr Process) bool { return !pr.Self && pr.Live }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other process did not note itself again")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The other process reads the map only when a write is refused: the
	// cleanup waits for it, and fails naming it.
	if err := p.CleanupMove(mover.WithProcessWait(ctx, 2*time.Second), r); !errors.Is(err, ErrMoveInvalid) {
		t.Fatalf("the cleanup with a process still on the map the table no longer holds: %v; want ErrMoveInvalid naming it", err)
	}
	_, err = q.RefreshMap(ctx)
	must(t, err)
	must(t, p.CleanupMove(mover.WithProcessWait(ctx, 5*time.Second), r))
	for name, d := range map[string]*gorm.DB{"the mover's process": db, "another process": other} {
		var found resetUser
		if err := d.First(&found, user.ID).Error; err != nil {
			t.Errorf("%s reads the moved row after the cleanup: %v", name, err)
		}
	}
}
