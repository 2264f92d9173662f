package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
)

// The mover process of the crash tests: the test binary run again with this
// variable set to "backend,dir,phase,step", killing itself with SIGKILL at
// that point of the move.
const moverVar = "SHARDID_MOVE_MOVER"

// TestMoveMoverProcess is the mover of TestMoveCrashAndResume; run alone it
// does nothing.
func TestMoveMoverProcess(t *testing.T) {
	spec := os.Getenv(moverVar)
	if spec == "" {
		t.Skip("a child process of TestMoveCrashAndResume")
	}
	parts := strings.Split(spec, ",")
	i := slices.IndexFunc(backends, func(b backend) bool { return b.name == parts[0] })
	r := &moveRig{b: backends[i], dir: parts[1]}
	_, r.p = r.open(t, shardid.Config{})
	phase, step := parts[2], parts[3]
	chunks := 0
	r.move(t, shardid.Move{ChunkSize: 100, Progress: func(pr shardid.MoveProgress) {
		if pr.Phase == phase && pr.Step == step {
			if chunks++; pr.Step != "chunk" || chunks == 5 {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
	}})
	t.Fatal("the mover was to die before the move ended")
}

// crashPoints are where the mover dies: in each phase, and between writing
// the new map and recording that it did.
var crashPoints = []struct{ phase, step string }{
	{shardid.PhasePrepare, "triggers"},
	{shardid.PhaseCopy, "chunk"},
	{shardid.PhaseCatchUp, "round"},
	{shardid.PhaseCutover, "frozen"},
	{shardid.PhaseCutover, "verified"},
	{shardid.PhaseCutover, "map written"},
}

// killedMover runs the mover process until it kills itself at a crash point.
func killedMover(t *testing.T, r *moveRig, phase, step string) {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	cmd := exec.Command(exe, "-test.run=^TestMoveMoverProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,%s,%s", moverVar, r.b.name, r.dir, phase, step))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the mover was to be killed at %s/%s, it ended with %v:\n%s", phase, step, err, out)
	}
}

// rangeWriter keeps updating and creating users of the moving range from
// the test's own plugin, as an application would during the crash and the
// resumed move, and remembers each acknowledged write.
type rangeWriter struct {
	db    *gorm.DB
	stop  chan struct{}
	done  sync.WaitGroup
	mu    sync.Mutex
	last  map[int64]string
	fails []error
}

func startRangeWriter(db *gorm.DB, users []int64) *rangeWriter {
	w := &rangeWriter{db: db, stop: make(chan struct{}), last: map[int64]string{}}
	w.done.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-w.stop:
				return
			default:
			}
			value := "w" + strconv.Itoa(n)
			id := users[n%len(users)]
			var err error
			if n%3 == 1 { // an upsert, whose retry at the cutover must not add its assignments twice
				err = db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&MvUser{ID: id, Name: value}).Error
			} else {
				err = db.Model(&MvUser{ID: id}).Update("name", value).Error
			}
			if n%3 == 0 {
				u := MvUser{Name: value}
				w.note(id, value, err)
				err = db.Clauses(shardid.OnShard(movingRange.From + n%100)).Create(&u).Error
				id = u.ID
			}
			w.note(id, value, err)
			time.Sleep(2 * time.Millisecond)
		}
	})
	return w
}

// note remembers an acknowledged write, or the error of a refused one.
func (w *rangeWriter) note(id int64, value string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.fails = append(w.fails, fmt.Errorf("at %s: %w", time.Now().Format("15:04:05.000"), err))
	} else {
		w.last[id] = value
	}
}

func (w *rangeWriter) halt() { close(w.stop); w.done.Wait() }

// TestMoveCrashAndResume kills the mover with SIGKILL in each phase and runs
// the move again: it completes, with every acknowledged write on the target
// and none of the range readable on the source after the cleanup.
func TestMoveCrashAndResume(t *testing.T) {
	for _, b := range backends {
		if b.name == "sqlite" {
			continue // the mover is another process
		}
		for _, at := range crashPoints {
			t.Run(b.name+"/"+at.phase+"/"+strings.ReplaceAll(at.step, " ", "_"), func(t *testing.T) {
				dir := t.TempDir()
				r := newMoveRig(t, b, dir)
				db, p := r.open(t, shardid.Config{MoveWait: time.Minute})
				users := r.seedUsers(t, 3000)
				w := startRangeWriter(db, users[:50])
				killedMover(t, r, at.phase, at.step)
				if at.step == "map written" { // the record was written with the map: it tells what the map does
					st := moveStatusOf(t, p, movingRange)
					if st.Phase != shardid.PhaseServing || st.Frozen <= 0 || st.CutoverAt.IsZero() || st.MapVersion == 0 {
						t.Errorf("with the map written, the move's record reads %+v, want serving with its cutover's figures", st)
					}
				}
				report := r.move(t, shardid.Move{})
				if !report.Resumed {
					t.Errorf("the second run did not resume the move: %+v", report)
				}
				if report.Frozen <= 0 || report.MapVersion == 0 {
					t.Errorf("the resumed move reports frozen %s and map version %d: its cutover's figures are lost", report.Frozen, report.MapVersion)
				}
				time.Sleep(300 * time.Millisecond)
				w.halt()
				if len(w.fails) > 0 {
					t.Fatalf("%d writes failed, e.g. %v", len(w.fails), w.fails[0])
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				must(t, p.CleanupMove(ctx, movingRange, moveModels...))
				onSource, onTarget := readColumn(t, r.source, "mv_users", "name"), readColumn(t, r.target, "mv_users", "name")
				for id, want := range w.last {
					key := strconv.FormatInt(id, 10)
					if got, ok := onTarget[key]; !ok || got != want {
						t.Errorf("user %d: %q on the target, last written %q", id, got, want)
					}
				}
				for _, id := range users {
					if _, ok := onTarget[strconv.FormatInt(id, 10)]; !ok {
						t.Fatalf("seeded user %d is not on the target", id)
					}
				}
				if len(onSource) != 0 {
					t.Errorf("%d users left on the source after the cleanup", len(onSource))
				}
				t.Logf("resumed: %s", describeReport(report))
			})
		}
	}
}

// moveStatusOf returns the record of the move of r.
func moveStatusOf(t *testing.T, p *shardid.Plugin, r shardid.Range) shardid.MoveStatus {
	t.Helper()
	moves, err := p.Moves(context.Background())
	must(t, err)
	for _, st := range moves {
		if st.Logical == r {
			return st
		}
	}
	t.Fatalf("no move of %d-%d is recorded", r.From, r.To)
	return shardid.MoveStatus{}
}

// processWithShardViaProxy opens another process of the rig's databases
// whose shard i (0 the source, 1 the target) is reached through a proxy,
// with a connect timeout of a second.
func (r *moveRig) processWithShardViaProxy(t *testing.T, i int) (*shardid.Plugin, *tcpProxy) {
	t.Helper()
	dialector, proxy := physicalViaProxy(t, r.b, []int{moveSource, moveTarget}[i])
	cfg := shardid.Config{Shards: moveShards(t, r.b, r.dir), ConnectTimeout: time.Second}
	cfg.Shards[i].Dialector = dialector
	db, err := gorm.Open(r.b.dialector(t, r.dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	p := shardid.New(cfg)
	must(t, db.Use(p))
	t.Cleanup(func() { _ = p.Close() })
	return p, proxy
}

// TestCancelAMoveThatFailedInItsPrepare: a move whose target did not answer
// in its prepare, before the source was fenced, is cancelled once the target
// is back, and the range may then move.
func TestCancelAMoveThatFailedInItsPrepare(t *testing.T) {
	for _, b := range backends {
		if b.name == "sqlite" {
			continue // the target is reached over a network
		}
		t.Run(b.name, func(t *testing.T) {
			r := newMoveRig(t, b, t.TempDir())
			r.seedUsers(t, 10)
			p, proxy := r.processWithShardViaProxy(t, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := p.Ping(ctx) // the target's pool open: the move is recorded, and fails in its prepare
			must(t, err)
			proxy.setCut(true)
			if _, err := p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels}); !errors.Is(err, shardid.ErrShardUnavailable) {
				t.Fatalf("a move to a target that does not answer: %v, want ErrShardUnavailable", err)
			}
			proxy.setCut(false)
			must(t, p.CancelMove(ctx, movingRange, moveModels...))
			if st := moveStatusOf(t, p, movingRange); st.Phase != shardid.PhaseCancelled {
				t.Errorf("after the cancel the move reads %s, want cancelled", st.Phase)
			}
			r.move(t, shardid.Move{})
		})
	}
}

// TestMoveWhoseSourceGoesDownNamesIt: a move whose source stops answering
// during the copy fails with ErrShardUnavailable naming the source.
func TestMoveWhoseSourceGoesDownNamesIt(t *testing.T) {
	for _, b := range backends {
		if b.name == "sqlite" {
			continue // the source is reached over a network
		}
		t.Run(b.name, func(t *testing.T) {
			r := newMoveRig(t, b, t.TempDir())
			r.seedUsers(t, 300)
			p, proxy := r.processWithShardViaProxy(t, 0)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: moveModels, ChunkSize: 10, Progress: func(pr shardid.MoveProgress) {
				if pr.Step == "chunk" {
					proxy.setCut(true)
				}
			}})
			if !errors.Is(err, shardid.ErrShardUnavailable) || !strings.Contains(err.Error(), b.name+"-source") {
				t.Errorf("a move whose source went down: %v, want ErrShardUnavailable naming %s-source", err, b.name)
			}
			proxy.setCut(false)
			must(t, p.CancelMove(ctx, movingRange, moveModels...))
		})
	}
}

// TestMoveCancel cancels a move the mover died in, before its cutover: the
// source serves the range as before, without the fence, and the target
// holds none of it.
func TestMoveCancel(t *testing.T) {
	for _, b := range backends {
		if b.name == "sqlite" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			r := newMoveRig(t, b, t.TempDir())
			users := r.seedUsers(t, 3000)
			killedMover(t, r, shardid.PhaseCopy, "chunk")
			if n := countIn(t, r.target, "mv_users", true, r.p.Layout()); n == 0 {
				t.Fatal("the killed mover copied nothing: the cancel would have nothing to undo")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			must(t, r.p.CancelMove(ctx, movingRange, moveModels...))
			if n := countIn(t, r.target, "mv_users", true, r.p.Layout()); n != 0 {
				t.Errorf("the target holds %d users of the range after the cancel", n)
			}
			must(t, r.db.Model(&MvUser{ID: users[0]}).Update("name", "after cancel").Error)
			var got MvUser
			must(t, r.source.First(&got, users[0]).Error)
			if got.Name != "after cancel" {
				t.Errorf("the source did not take the write after the cancel: %q", got.Name)
			}
			var changes int64
			must(t, r.source.Table("shardid_move_changes").Count(&changes).Error)
			if changes != 0 {
				t.Errorf("the source still logs changes after the cancel: %d", changes)
			}
			moves, err := r.p.Moves(ctx)
			must(t, err)
			if len(moves) != 1 || moves[0].Phase != shardid.PhaseCancelled {
				t.Errorf("moves after the cancel: %+v", moves)
			}
		})
	}
}

// TestMoveRefusesModelsLeavingTablesBehind: a move given some sharded models
// and not others (users, not their colocated photos) is refused before it
// starts, naming the tables left out, whose rows of the range would stay on
// the source unread; nothing is recorded, copied or changed.
func TestMoveRefusesModelsLeavingTablesBehind(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		users := r.seedUsers(t, 50)
		must(t, r.db.Create(&MvPhoto{UserID: users[0], Caption: "beside its user"}).Error)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", Models: []any{&MvUser{}}})
		if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "mv_photos") {
			t.Fatalf("a move of the users alone: %v; want ErrMoveInvalid naming mv_photos", err)
		}
		moves, err := r.p.Moves(ctx)
		must(t, err)
		if len(moves) != 0 {
			t.Errorf("the refused move was recorded: %+v", moves)
		}
		if n := countIn(t, r.target, "mv_users", true, r.p.Layout()); n != 0 {
			t.Errorf("the refused move copied %d users", n)
		}
		var photo MvPhoto
		must(t, r.db.Where("user_id = ?", users[0]).First(&photo).Error)
	})
}

// MvScratch is a sharded model migrated, then dropped, beside the move tests'.
type MvScratch struct {
	ID   int64 `shardid:"strategy:snowflake"`
	Note string
}

// TestMoveAfterATableIsDropped: a sharded table dropped through the plugin's
// migrator leaves shardid_tables, so a move of every sharded table carries
// the others and does not look for it.
func TestMoveAfterATableIsDropped(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		r.seedUsers(t, 10)
		must(t, r.p.AutoMigrate(r.db, &MvScratch{}))
		must(t, r.p.Migrator(r.db).DropTable(&MvScratch{}))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		report, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", DryRun: true})
		must(t, err)
		if slices.Contains(report.Tables, "mv_scratches") || !slices.Contains(report.Tables, "mv_users") {
			t.Fatalf("the move would carry %v", report.Tables)
		}
	})
}

// TestTwoMovesOffOneSourceAtOnce: two moves of different ranges off one
// source, started at the same instant, are not both accepted: the check
// that no other move is under way and the move's record are one step.
func TestTwoMovesOffOneSourceAtOnce(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		r.seedUsers(t, 20)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		ranges := []shardid.Range{movingRange, {From: movingRange.From - 2048, To: movingRange.From - 1}}
		errs := make([]error, len(ranges))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, rg := range ranges {
			wg.Go(func() {
				<-start
				_, errs[i] = r.p.Move(ctx, shardid.Move{Logical: rg, To: b.name + "-target", Models: moveModels})
			})
		}
		close(start)
		wg.Wait()
		accepted := 0
		for i, err := range errs {
			switch {
			case err == nil:
				accepted++
			case !errors.Is(err, shardid.ErrMoveInvalid):
				t.Errorf("move %d: %v; want success or ErrMoveInvalid", i, err)
			}
		}
		if accepted != 1 {
			t.Fatalf("%d of two moves off one source accepted: %v", accepted, errs)
		}
	})
}

// TestMoveBackAfterTheCutover: once the target serves the range, CancelMove
// points at moving the range back, and that move is accepted: it cleans up
// the first move and brings every row back to the source.
func TestMoveBackAfterTheCutover(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		users := r.seedUsers(t, 40)
		r.move(t, shardid.Move{})
		must(t, r.db.Model(&MvUser{ID: users[0]}).Update("name", "written on the target").Error)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err := r.p.CancelMove(ctx, movingRange, moveModels...)
		if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "Move to "+b.name+"-source") {
			t.Fatalf("CancelMove after the cutover: %v; want ErrMoveInvalid pointing at a move back", err)
		}
		r.move(t, shardid.Move{To: b.name + "-source"})
		if n := countIn(t, r.source, "mv_users", true, r.p.Layout()); n != int64(len(users)) {
			t.Errorf("the source holds %d of the %d users after the move back", n, len(users))
		}
		must(t, r.p.CleanupMove(ctx, movingRange, moveModels...)) // the frozen copy the move back left on the target
		if n := countIn(t, r.target, "mv_users", true, r.p.Layout()); n != 0 {
			t.Errorf("the target still holds %d users of the range", n)
		}
		var got MvUser
		must(t, r.db.First(&got, users[0]).Error)
		if got.Name != "written on the target" {
			t.Errorf("the write the target took is lost: %q", got.Name)
		}
	})
}

// MvAccount is unique by its email on each physical database, as the limits
// allow: two accounts of two databases may share one.
type MvAccount struct {
	ID    int64  `shardid:"strategy:snowflake"`
	Email string `gorm:"uniqueIndex;size:64"`
	Name  string
}

// TestMoveCopyOverwritesNoRowOutsideItsRange: a row of the range whose
// unique email a row of the target already holds (outside the range) fails
// the move's copy, naming both keys on MariaDB, and the target's row is left
// as it was: MySQL's ON DUPLICATE KEY, which fires on any unique index,
// overwrites nothing.
func TestMoveCopyOverwritesNoRowOutsideItsRange(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		for _, k := range []int{moveSource, moveTarget} {
			must(t, direct(t, b, dir)[k].Migrator().DropTable(&MvAccount{}))
		}
		r := newMoveRig(t, b, dir)
		must(t, r.p.AutoMigrate(r.db, &MvAccount{}))
		moving := MvAccount{Email: "dup@x.io", Name: "moving"}
		must(t, r.db.Clauses(shardid.OnShard(movingRange.From)).Create(&moving).Error)
		theirs := MvAccount{ID: r.p.Layout().Compose(time.Now(), 5, 0), Email: "dup@x.io", Name: "the target's own"}
		must(t, r.target.Create(&theirs).Error)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target"})
		if err == nil {
			t.Fatal("the move copied a row whose unique email the target holds")
		}
		if b.name == "mariadb" && (!errors.Is(err, shardid.ErrMoveVerify) || !strings.Contains(err.Error(), fmt.Sprint(moving.ID)) || !strings.Contains(err.Error(), fmt.Sprint(theirs.ID))) {
			t.Errorf("the copy's failure: %v; want ErrMoveVerify naming %d and %d", err, moving.ID, theirs.ID)
		}
		var kept MvAccount
		must(t, r.target.First(&kept, theirs.ID).Error)
		if kept.Name != theirs.Name {
			t.Errorf("the copy overwrote the target's row outside the range: %+v", kept)
		}
		var still MvAccount
		must(t, r.db.First(&still, moving.ID).Error) // the source serves the range still
	})
}

// MvNote gains a column during a move: MvNoteV2 is the same table migrated
// with it.
type (
	MvNote struct {
		ID   int64 `shardid:"strategy:snowflake"`
		Body string
	}
	MvNoteV2 struct {
		ID   int64 `shardid:"strategy:snowflake"`
		Body string
		Tag  string `gorm:"size:32"`
	}
)

func (MvNoteV2) TableName() string { return "mv_notes" }

// TestMoveCarriesAColumnAddedDuringTheCopy: a column ids.AutoMigrate adds
// while the move copies is never served incomplete: the cutover finds the
// columns changed and fails the move's check (the source serves on), and
// the move run again copies the table anew, the new column's values with it.
func TestMoveCarriesAColumnAddedDuringTheCopy(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		for _, k := range []int{moveSource, moveTarget} {
			must(t, direct(t, b, dir)[k].Migrator().DropTable("mv_notes"))
		}
		r := newMoveRig(t, b, dir)
		must(t, r.p.AutoMigrate(r.db, &MvNote{}))
		notes := make([]int64, 300)
		for i := range notes {
			n := MvNote{Body: "n"}
			must(t, r.db.Clauses(shardid.OnShard(movingRange.From+i%50)).Create(&n).Error)
			notes[i] = n.ID
		}
		migrated := false
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: b.name + "-target", ChunkSize: 50, Progress: func(p shardid.MoveProgress) {
			if migrated || p.Table != "mv_notes" || p.Step != "chunk" {
				return
			}
			migrated = true
			must(t, r.p.AutoMigrate(r.db, &MvNoteV2{}))
			for _, id := range notes { // rows copied already and rows to come
				must(t, r.db.Model(&MvNoteV2{ID: id}).Update("tag", "t").Error)
			}
		}})
		if !migrated {
			t.Fatal("the move copied no chunk of mv_notes: nothing was migrated during it")
		}
		if !errors.Is(err, shardid.ErrMoveVerify) {
			t.Fatalf("a move during which a column was added: %v; want ErrMoveVerify", err)
		}
		r.move(t, shardid.Move{Models: []any{}}) // run again
		var tagged int64
		must(t, r.target.Model(&MvNoteV2{}).Where("tag = ?", "t").Count(&tagged).Error)
		if tagged != int64(len(notes)) {
			t.Errorf("the target serves %d of the %d notes with the column added during the move", tagged, len(notes))
		}
	})
}

// TestAMoveOverlappingOneNotEndedIsRefused: a part of a range whose move
// has not been cleaned up cannot move, back or on: the first move's source
// still fences the range. Once it is cleaned up, the part moves back.
func TestAMoveOverlappingOneNotEndedIsRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		r := newMoveRig(t, b, t.TempDir())
		users := r.seedUsers(t, 40)
		r.move(t, shardid.Move{})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		part := shardid.Range{From: movingRange.From + 100, To: movingRange.From + 200}
		_, err := r.p.Move(ctx, shardid.Move{Logical: part, To: b.name + "-source", Models: moveModels})
		if !errors.Is(err, shardid.ErrMoveInvalid) || !strings.Contains(err.Error(), "overlap the move") {
			t.Fatalf("a move of a part of a range not cleaned up: %v; want ErrMoveInvalid naming the move it overlaps", err)
		}
		moves, err := r.p.Moves(ctx)
		must(t, err)
		for _, m := range moves {
			if m.Logical == part {
				t.Fatalf("the refused move left a record: %+v", m)
			}
		}
		must(t, r.p.CleanupMove(ctx, movingRange, moveModels...))
		r.move(t, shardid.Move{Logical: part, To: b.name + "-source"})
		if n := countIn(t, r.source, "mv_users", true, r.p.Layout()) + countIn(t, r.target, "mv_users", true, r.p.Layout()); n != int64(len(users)) {
			t.Errorf("%d users on the two databases after the moves, want %d", n, len(users))
		}
	})
}
