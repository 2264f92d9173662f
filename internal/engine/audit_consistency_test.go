package engine

import (
	"context"
	"database/sql"
	"sync"
	"testing"

	"github.com/shardid/shardid/internal/mover"
)

type auditedUser struct {
	ID   int64 `shardid:""`
	Name string
}

// openHook is a mover driver that runs hook once, before it first opens
// physical database k: what another process does while an audit reads.
type openHook struct {
	mover.Driver
	k    int
	once sync.Once
	hook func()
}

func (d *openHook) Open(ctx context.Context, k int) (*sql.DB, error) {
	if k == d.k {
		d.once.Do(d.hook)
	}
	return d.Driver.Open(ctx, k)
}

// TestAnAuditReportsNoStraysOfAMoveThatRanWhileItRead: a move that starts,
// or reaches its cutover, between the audit's reading of the map and the
// moves and its reading of a database is no stray: the copy on the target
// is the move's, served by the map the move wrote, and the source's frozen
// copy is the move's too. The audit reads again by the map and moves as
// they are after it.
func TestAnAuditReportsNoStraysOfAMoveThatRanWhileItRead(t *testing.T) {
	for _, step := range []struct {
		name string
		run  func(t *testing.T, e *Engine)
	}{
		{"cutover", func(t *testing.T, e *Engine) {
			if _, err := e.Move(context.Background(), mover.Request{Logical: Range{From: 0, To: 10}, To: "b"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"copy", func(t *testing.T, e *Engine) { // a move that starts, copies and stops before its cutover
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			progress := func(p mover.Progress) {
				if p.Phase == mover.PhaseCatchUp {
					stop()
				}
			}
			if _, err := e.Move(ctx, mover.Request{Logical: Range{From: 0, To: 10}, To: "b", Progress: progress}); err == nil {
				t.Fatal("the move stopped in its catch-up returned no error")
			}
		}},
		{"cleanup", func(t *testing.T, e *Engine) {
			if _, err := e.Move(context.Background(), mover.Request{Logical: Range{From: 0, To: 10}, To: "b"}); err != nil {
				t.Fatal(err)
			}
			must(t, e.CleanupMove(context.Background(), Range{From: 0, To: 10}, nil))
		}},
	} {
		t.Run(step.name, func(t *testing.T) {
			db, e := openEngine(t, Config{}, true)
			must(t, e.Migrator(db).AutoMigrate(&auditedUser{}))
			for range 3 {
				must(t, db.Clauses(hinted{OnShard(5)}).Create(&auditedUser{Name: "moved"}).Error)
			}
			d := &openHook{Driver: moverDriver{e}, k: 1, hook: func() { step.run(t, e) }} // before it reads b, the target
			found, err := e.moves.Audit(context.Background(), d)
			must(t, err)
			for _, m := range found {
				if !m.LeftByMove {
					t.Errorf("the audit reports %d rows of %s on %s as strays (keys %v): they are the move's", m.Rows, m.Table, m.Database, m.Keys)
				}
			}
		})
	}
}
