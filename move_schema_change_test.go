package shardid

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// schNote is a sharded model a new version migrates during a move:
// schNoteV2 gives its column note a default, which SQLite's migrator alters
// by making the table anew.
type (
	schNote struct {
		ID   int64 `shardid:""`
		Body string
		Note string `gorm:"size:32"`
	}
	schNoteV2 struct {
		ID   int64 `shardid:""`
		Body string
		Note string `gorm:"size:32;default:none"`
	}
)

func (schNote) TableName() string   { return "sch_notes" }
func (schNoteV2) TableName() string { return "sch_notes" }

// schMoving is the range the tests move, off a onto b.
var schMoving = Range{From: 0, To: 4095}

// schRig opens a process over the SQLite files a (every shard) and b (none),
// with notes of the moving range on a; it returns the process, its plugin,
// the notes' keys and a and b opened directly.
func schRig(t *testing.T, ps processes, cfg Config) (*gorm.DB, *Plugin, []int64, *gorm.DB, *gorm.DB) {
	t.Helper()
	cfg.Shards = []Shard{
		{Name: "a", Dialector: ps.file("a.db"), Logical: []Range{{From: 0, To: Layout{}.ShardCount() - 1}}},
		{Name: "b", Dialector: ps.file("b.db")},
	}
	db, p, err := ps.open(cfg)
	must(t, err)
	must(t, p.AutoMigrate(db, &schNote{}))
	var ids []int64
	for i := range 30 {
		n := schNote{Body: "before"}
		must(t, db.Clauses(OnShard(i)).Create(&n).Error)
		ids = append(ids, n.ID)
	}
	a, err := gorm.Open(ps.file("a.db"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	b, err := gorm.Open(ps.file("b.db"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	return db, p, ids, a, b
}

// bodies counts the notes of db by body.
func bodies(t *testing.T, db *gorm.DB) map[string]int {
	t.Helper()
	var got []schNote
	must(t, db.Find(&got).Error)
	n := map[string]int{}
	for _, g := range got {
		n[g.Body]++
	}
	return n
}

// TestAColumnAlteredOnSQLiteDuringAMoveKeepsItsWrites: a new version's
// AutoMigrate that alters a column while a move copies (SQLite's migrator
// makes the table anew, which drops its triggers) keeps the move's
// triggers: the writes of the range after it are logged and replayed, and
// the move completes with every note's last write on the target.
func TestAColumnAlteredOnSQLiteDuringAMoveKeepsItsWrites(t *testing.T) {
	db, p, ids, _, b := schRig(t, processes{t, t.TempDir()}, Config{})
	migrated := false
	_, err := p.Move(context.Background(), Move{Logical: schMoving, To: "b", ChunkSize: 10, Progress: func(pr MoveProgress) {
		if migrated || pr.Phase != PhaseCopy {
			return
		}
		migrated = true
		must(t, p.AutoMigrate(db, &schNoteV2{}))
		must(t, db.Model(&schNote{}).Where("id IN ?", ids).Update("body", "after").Error)
	}})
	if err != nil {
		t.Fatalf("a move during which a column was altered: %v; want it done", err)
	}
	if got := bodies(t, b); got["after"] != len(ids) {
		t.Errorf("the target holds the notes %v; want all %d with the write made after the migration", got, len(ids))
	}
}

// TestAColumnAlteredOnSQLiteAfterACutoverKeepsTheSourceSealed: once a
// move served its range, the source's sealed triggers refuse a write of it
// from a process still on the old map; a migration that makes the table
// anew (AutoMigrate altering a column, DropColumn) keeps them, so such a
// write is held and made on the target, not left on the source's frozen
// copy, which the cleanup deletes.
func TestAColumnAlteredOnSQLiteAfterACutoverKeepsTheSourceSealed(t *testing.T) {
	for name, change := range map[string]func(*Plugin, *gorm.DB) error{
		"AutoMigrate": func(p *Plugin, db *gorm.DB) error { return p.AutoMigrate(db, &schNoteV2{}) },
		"DropColumn":  func(p *Plugin, db *gorm.DB) error { return p.Migrator(db).DropColumn(&schNote{}, "Note") },
	} {
		t.Run(name, func(t *testing.T) {
			ps := processes{t, t.TempDir()}
			db, p, ids, a, b := schRig(t, ps, Config{})
			stale, _, err := ps.open(Config{MapRefresh: time.Hour, Shards: []Shard{ // routes by the old map until a write is refused
				{Name: "a", Dialector: ps.file("a.db"), Logical: []Range{{From: 0, To: Layout{}.ShardCount() - 1}}},
				{Name: "b", Dialector: ps.file("b.db")},
			}})
			must(t, err)
			_, err = p.Move(context.Background(), Move{Logical: schMoving, To: "b"})
			must(t, err)
			must(t, change(p, db))
			must(t, stale.Model(&schNoteV2{ID: ids[0]}).Update("body", "late").Error)
			if got := bodies(t, a); got["late"] != 0 {
				t.Errorf("the source's frozen copy took a write of the moved range: %v", got)
			}
			if got := bodies(t, b); got["late"] != 1 {
				t.Errorf("the target holds %v; want the late write", got)
			}
		})
	}
}

// schNoteV3 is schNote with a column a migration adds.
type schNoteV3 struct {
	ID    int64 `shardid:""`
	Body  string
	Note  string `gorm:"size:32"`
	Extra string
}

func (schNoteV3) TableName() string { return "sch_notes" }

// TestAMoveWhoseSourceGainedAColumnTheTargetLacksSaysToFinishTheMigration:
// a column added during a move by a migration that stopped part way (on
// the source, not on the target) fails the move's check, run after run,
// saying that the target lacks the column and to finish the migration, not
// only to run the move again, which cannot carry it; once the migration is
// finished, the move run again carries the column's values.
func TestAMoveWhoseSourceGainedAColumnTheTargetLacksSaysToFinishTheMigration(t *testing.T) {
	db, p, ids, a, b := schRig(t, processes{t, t.TempDir()}, Config{})
	added := false
	_, err := p.Move(context.Background(), Move{Logical: schMoving, To: "b", ChunkSize: 10, Progress: func(pr MoveProgress) {
		if added || pr.Phase != PhaseCopy {
			return
		}
		added = true
		must(t, a.Migrator().AddColumn(&schNoteV3{}, "Extra")) // the plugin's AddColumn, stopped after a
		must(t, db.Model(&schNoteV3{}).Where("id IN ?", ids).Update("extra", "x").Error)
	}})
	for run := 1; run <= 2; run++ {
		if !errors.Is(err, ErrMoveVerify) || !strings.Contains(err.Error(), "sch_notes on b has no column extra") || !strings.Contains(err.Error(), "finish the migration") {
			t.Fatalf("run %d of a move whose source gained a column the target lacks: %v; want ErrMoveVerify saying b lacks extra and to finish the migration", run, err)
		}
		_, err = p.Move(context.Background(), Move{Logical: schMoving, To: "b"})
	}
	must(t, p.Migrator(db).AddColumn(&schNoteV3{}, "Extra")) // finishes it on b
	_, err = p.Move(context.Background(), Move{Logical: schMoving, To: "b"})
	must(t, err)
	var carried int64
	must(t, b.Table("sch_notes").Where("extra = ?", "x").Count(&carried).Error)
	if carried != int64(len(ids)) {
		t.Errorf("the target holds %d notes with the added column's value; want %d", carried, len(ids))
	}
}

// TestAMigrationOnSQLiteUnderWritesIsNotRefusedBusy: a migration that
// makes a table anew, run again and again while writers write it, is not
// refused with SQLITE_BUSY: its transaction takes the database's write lock
// before it reads anything, on a database never fenced too.
func TestAMigrationOnSQLiteUnderWritesIsNotRefusedBusy(t *testing.T) {
	db, p, _, _, _ := schRig(t, processes{t, t.TempDir()}, Config{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := db.Clauses(OnShard(g*100 + i%50)).Create(&schNote{Body: "w"}).Error; err != nil {
					t.Errorf("a write during the migrations: %v", err)
					return
				}
			}
		})
	}
	for i := range 20 {
		model := any(&schNote{})
		if i%2 == 0 {
			model = &schNoteV2{}
		}
		if err := p.AutoMigrate(db, model); err != nil {
			t.Errorf("migration %d under writes: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
}

// schPage is a sharded model whose table another process makes during a
// move.
type schPage struct {
	ID    int64 `shardid:""`
	Title string
}

func (schPage) TableName() string { return "sch_pages" }

// TestAMoveFailsItsCheckOnAShardedTableMadeDuringIt: a sharded table
// recorded while a move runs, by a migration that raced its start (here
// another process's, whose migrations' lock SQLite does not share, made as
// it would: the table on every database, then its record), fails the
// move's cutover naming it, the range served by the source with the new
// table's rows; cancelled and run again, the move carries them.
func TestAMoveFailsItsCheckOnAShardedTableMadeDuringIt(t *testing.T) {
	ps := processes{t, t.TempDir()}
	db, p, _, a, b := schRig(t, ps, Config{})
	main, err := gorm.Open(ps.file("main.db"), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	var page schPage
	made := false
	_, err = p.Move(context.Background(), Move{Logical: schMoving, To: "b", ChunkSize: 10, Progress: func(pr MoveProgress) {
		if made || pr.Phase != PhaseCopy {
			return
		}
		made = true
		for _, physical := range []*gorm.DB{a, b} {
			must(t, physical.Exec("CREATE TABLE sch_pages (id INTEGER NOT NULL PRIMARY KEY, title TEXT)").Error)
		}
		must(t, main.Exec("INSERT INTO shardid_tables (name, key_column, key_kind, strategy, id_columns) SELECT 'sch_pages', key_column, key_kind, strategy, id_columns FROM shardid_tables WHERE name = 'sch_notes'").Error)
		page = schPage{Title: "new"}
		must(t, db.Clauses(OnShard(3)).Create(&page).Error)
	}})
	if !errors.Is(err, ErrMoveVerify) || !strings.Contains(err.Error(), "sch_pages") {
		t.Fatalf("a move during which a sharded table was made: %v; want ErrMoveVerify naming sch_pages", err)
	}
	if got := db.First(&schPage{}, page.ID).Error; got != nil {
		t.Fatalf("the page written during the move after it failed: %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(t, p.CancelMove(ctx, schMoving))
	_, err = p.Move(ctx, Move{Logical: schMoving, To: "b"})
	must(t, err)
	var onTarget int64
	must(t, b.Table("sch_pages").Where("id = ?", page.ID).Count(&onTarget).Error)
	if onTarget != 1 {
		t.Errorf("the target holds the page %d times after the move run again; want once", onTarget)
	}
}

// TestAMoveToATargetLackingAColumnIsRefusedDryRunOrNot: a target whose
// table lacks a column the source has (a migration that stopped part way,
// by another connection than the move's, whose SQLite schema it must not
// read stale) is not migrated by the move's prepare, which changes no table
// there: the move is refused with ErrMoveInvalid saying to migrate it, and
// its dry run says so too, before anything changes.
func TestAMoveToATargetLackingAColumnIsRefusedDryRunOrNot(t *testing.T) {
	_, p, _, a, _ := schRig(t, processes{t, t.TempDir()}, Config{})
	must(t, a.Migrator().AddColumn(&schNoteV3{}, "Extra")) // the plugin's AddColumn, stopped after a
	for _, dry := range []bool{true, false} {
		_, err := p.Move(context.Background(), Move{Logical: schMoving, To: "b", Models: []any{&schNoteV3{}}, DryRun: dry})
		if !errors.Is(err, ErrMoveInvalid) || !strings.Contains(err.Error(), "has no column extra") {
			t.Errorf("a move (dry run %v) to a target lacking the column extra: %v; want ErrMoveInvalid naming it", dry, err)
		}
	}
}
