package integration

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// TestANewShardedTableWaitsForTheMoveToEnd: a move carries the sharded
// tables recorded when it began, so ids.AutoMigrate of a new sharded model
// during it is refused with nothing made (its rows of the range would stay
// on the source, unfenced, and be lost at the cutover), and after the
// cutover as long as a process routes by the map before it; a table the
// move carries may still change, but not be dropped or renamed. Once every
// process has the move's map, the new model migrates, and its rows of the
// range are written where the range now lives.
func TestANewShardedTableWaitsForTheMoveToEnd(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		for _, k := range []int{moveSource, moveTarget} {
			must(t, direct(t, b, dir)[k].Migrator().DropTable("mv_notes"))
		}
		r := newMoveRig(t, b, dir)
		r.seedUsers(t, 120)
		_, stale := r.open(t, shardid.Config{MapRefresh: time.Hour}) // a process that keeps the map before the move
		refuseNewTable := func(when string) {
			t.Helper()
			if err := r.p.AutoMigrate(r.db, &MvNote{}); !errors.Is(err, shardid.ErrMoveInvalid) {
				t.Fatalf("a new sharded table %s: %v, want ErrMoveInvalid", when, err)
			}
			for name, db := range map[string]interface{ HasTable(any) bool }{"source": r.source.Migrator(), "target": r.target.Migrator()} {
				if db.HasTable("mv_notes") {
					t.Fatalf("a new sharded table refused %s is on the %s", when, name)
				}
			}
		}
		tried := false
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		rep, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 50, Progress: func(p shardid.MoveProgress) {
			if tried || p.Step != "chunk" {
				return
			}
			tried = true
			refuseNewTable("during the copy")
			must(t, r.p.AutoMigrate(r.db, &MvUser{})) // a table the move carries migrates on
		}})
		must(t, err)
		if !tried {
			t.Fatal("the move copied no chunk: nothing was migrated during it")
		}
		refuseNewTable("while a process routes by the map before the move")
		migrator := r.p.Migrator(r.db)
		for what, change := range map[string]func() error{
			"a drop":   func() error { return migrator.DropTable(&MvDoc{}) },
			"a rename": func() error { return migrator.RenameTable(&MvPhoto{}, "mv_photos_before") },
		} {
			if err := change(); !errors.Is(err, shardid.ErrMoveInvalid) {
				t.Errorf("%s of a table the unfinished move carries: %v, want ErrMoveInvalid", what, err)
			}
		}
		for name, db := range map[string]*gorm.DB{"source": r.source, "target": r.target} {
			if !db.Migrator().HasTable(&MvDoc{}) || !db.Migrator().HasTable(&MvPhoto{}) {
				t.Errorf("the refused drop or rename changed the %s's tables", name)
			}
		}
		must(t, stale.Close()) // every live process now routes by the move's map: the new table's rows go to the target
		must(t, r.p.AutoMigrate(r.db, &MvNote{}))
		must(t, r.p.CleanupMove(ctx, movingRange))
		note := MvNote{Body: "after the move"}
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&note).Error)
		var onTarget int64
		must(t, r.target.Model(&MvNote{}).Where("id = ?", note.ID).Count(&onTarget).Error)
		if onTarget != 1 {
			t.Errorf("a note of the moved range, after the move (tables %v): %d on the target", rep.Tables, onTarget)
		}
	})
}

// TestAMoveStartsOnASmallPoolItSharesWithTheApplication: the plugin's
// database given as an open pool of three connections, which the plugin's
// own work shares (the Dialector was given a connection): a move's start
// holds its locks on one of them and records itself on the others.
func TestAMoveStartsOnASmallPoolItSharesWithTheApplication(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		r := newMoveRig(t, b, dir)
		r.seedUsers(t, 20)
		driver, open := "pgx", func(pool *sql.DB) gorm.Dialector { return postgres.New(postgres.Config{Conn: pool}) }
		dsn := requireDSN(t, postgresDSNVar)
		if b.name == "mariadb" {
			driver, open = "mysql", func(pool *sql.DB) gorm.Dialector { return mysql.New(mysql.Config{Conn: pool}) }
			dsn = requireDSN(t, mysqlDSNVar)
		}
		pool, err := sql.Open(driver, dsn)
		must(t, err)
		pool.SetMaxOpenConns(3)
		t.Cleanup(func() { _ = pool.Close() })
		db, err := gorm.Open(open(pool), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		p := shardid.New(shardid.Config{Shards: moveShards(t, b, dir), Atomic: b.atomicity()})
		must(t, db.Use(p))
		t.Cleanup(func() { _ = p.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", DryRun: true}); err != nil {
			t.Errorf("a move's dry run on a pool of three connections shared with the application: %v", err)
		}
	})
}

// statementHook is a Logger that calls onSQL with each statement's SQL once
// it ran, on the goroutine that ran it.
type statementHook struct {
	logger.Interface
	mu    sync.Mutex
	onSQL func(sql string)
}

func (l *statementHook) LogMode(logger.LogLevel) logger.Interface { return l }

func (l *statementHook) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	l.mu.Lock()
	f := l.onSQL
	l.mu.Unlock()
	if f != nil {
		sql, _ := fc()
		f(sql)
	}
}

// A rename of a sharded table checks that no move carries it and renames it
// under the migrations' lock: a move that would start between the check
// and the rename (here, while the migrator reads each database's tables)
// waits for the lock, so no move is recorded carrying a table renamed away.
func TestAMoveDoesNotStartBetweenARenamesCheckAndTheRename(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		for _, k := range []int{moveSource, moveTarget} {
			must(t, direct(t, b, dir)[k].Migrator().DropTable("mv_photos_renamed"))
		}
		t.Cleanup(func() {
			for _, k := range []int{moveSource, moveTarget} {
				_ = direct(t, b, dir)[k].Migrator().DropTable("mv_photos_renamed")
			}
		})
		r := newMoveRig(t, b, dir)
		r.seedUsers(t, 20)
		must(t, r.p.Close())
		hook := &statementHook{Interface: logger.Discard}
		db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: hook})
		must(t, err)
		count := shardid.Layout{}.ShardCount()
		p := shardid.New(shardid.Config{Atomic: b.atomicity(), Shards: []shardid.Shard{
			{Name: b.name + "-target", Dialector: b.physical(t, dir, moveTarget)},
			{Name: b.name + "-source", Dialector: b.physical(t, dir, moveSource), Logical: []shardid.Range{{From: 0, To: count - 1}}},
		}})
		must(t, db.Use(p))
		t.Cleanup(func() { _ = p.Close() })

		var moveErr error
		var once sync.Once
		hook.mu.Lock()
		hook.onSQL = func(sql string) {
			if strings.Contains(strings.ToLower(sql), "select table_name from information_schema.tables") {
				once.Do(func() { // the rename's check has passed: it reads each database's tables
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					defer cancel()
					_, moveErr = p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target"})
				})
			}
		}
		hook.mu.Unlock()
		renameErr := p.Migrator(db).RenameTable(&MvPhoto{}, "mv_photos_renamed")
		hook.mu.Lock()
		hook.onSQL = nil
		hook.mu.Unlock()
		var moves int64 // none without the table, which the first move makes
		if err := db.Raw("SELECT COUNT(*) FROM shardid_moves").Scan(&moves).Error; err != nil {
			moves = 0
		}
		if renameErr == nil && moves > 0 {
			t.Errorf("the rename succeeded, and a move begun after its check was recorded carrying the table (move: %v)", moveErr)
		}
		if renameErr != nil && moveErr != nil {
			t.Errorf("neither the rename (%v) nor the move (%v) went through", renameErr, moveErr)
		}
	})
}
