package integration

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// benchRows is how many rows of the moving range the move benchmarks carry.
const benchRows = 100_000

// benchBackend is the server the move benchmarks run on: MariaDB.
func benchBackend(b *testing.B) backend {
	i := slices.IndexFunc(backends, func(x backend) bool { return x.name == "mariadb" })
	return backends[i]
}

// shuttle moves the range to where it is not, after cleaning up the last
// move; each run copies the same rows.
type shuttle struct {
	r      *moveRig
	here   string // where the range is
	models []any  // the models moved; nil: moveModels
}

func (s *shuttle) next(tb testing.TB, mv shardid.Move) *shardid.MoveReport {
	report, err := s.try(mv, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return report
}

// timed is next with the benchmark's timer stopped during the cleanup.
func (s *shuttle) timed(b *testing.B, mv shardid.Move) *shardid.MoveReport {
	report, err := s.try(mv, b)
	if err != nil {
		b.Fatal(err)
	}
	return report
}

func (s *shuttle) try(mv shardid.Move, timer *testing.B) (*shardid.MoveReport, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	to := s.r.b.name + "-target"
	if s.here == to {
		to = s.r.b.name + "-source"
	}
	models := s.models
	if models == nil {
		models = moveModels
	}
	mv.Logical, mv.To, mv.Models = movingRange, to, models
	report, err := s.r.p.Move(ctx, mv)
	if err != nil {
		return nil, fmt.Errorf("move: %w", err)
	}
	if timer != nil {
		timer.StopTimer()
		defer timer.StartTimer()
	}
	if err := s.r.p.CleanupMove(ctx, movingRange, models...); err != nil {
		return nil, fmt.Errorf("cleanup: %w", err)
	}
	s.here = to
	return report, nil
}

// BenchmarkMoveCopy compares the copy of a move (the whole move: prepare,
// copy, catch-up, cutover) of 100,000 small rows between two databases on
// one server with a plain copy loop written with the driver: the same key
// order and chunk size, one SELECT and one multi-row INSERT per chunk (the
// cleanup of each move and the emptying of the loop's table are not timed).
// Compare the two ns/op, and the copy phase's own share of the move's
// (copy-phase-ns/op) with the loop's; rows/s is for context. For interleaved figures run
// it with -count=1 several times.
func BenchmarkMoveCopy(b *testing.B) {
	bb := benchBackend(b)
	r := newMoveRig(b, bb, b.TempDir())
	r.seedUsers(b, benchRows)
	s := &shuttle{r: r, here: bb.name + "-source"}
	source, err := r.source.DB()
	must(b, err)
	target, err := r.target.DB()
	must(b, err)
	must(b, r.target.Exec("CREATE TABLE IF NOT EXISTS mv_users_copy LIKE mv_users").Error)
	var copying time.Duration // the copy phase's own share: from the last step of prepare to the first of the catch-up
	b.Run("shardid-move", func(b *testing.B) {
		copying = 0
		for range b.N {
			var prepared, caughtUp time.Time
			s.timed(b, shardid.Move{ChunkSize: 1000, Progress: func(p shardid.MoveProgress) {
				switch {
				case p.Phase == shardid.PhasePrepare:
					prepared = time.Now()
				case p.Phase == shardid.PhaseCatchUp && caughtUp.IsZero():
					caughtUp = time.Now()
				}
			}})
			copying += caughtUp.Sub(prepared)
		}
		b.ReportMetric(float64(benchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(copying.Nanoseconds())/float64(b.N), "copy-phase-ns/op")
	})
	b.Run("driver-loop", func(b *testing.B) {
		from, to := source, target
		if s.here != bb.name+"-source" {
			from = target
		}
		for range b.N {
			b.StopTimer()
			_, err := to.Exec("DELETE FROM mv_users_copy")
			must(b, err)
			b.StartTimer()
			must(b, driverCopy(from, to, 1000))
		}
		b.ReportMetric(float64(benchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}

// driverCopy copies mv_users to mv_users_copy in key order, a chunk at a time.
func driverCopy(from, to *sql.DB, chunk int) error {
	var after int64
	for {
		rows, err := from.Query("SELECT id, name, created_at, updated_at FROM mv_users WHERE id > ? ORDER BY id LIMIT ?", after, chunk)
		if err != nil {
			return err
		}
		var args []any
		n := 0
		for rows.Next() {
			var id int64
			var name string
			var created, updated sql.NullTime
			if err := rows.Scan(&id, &name, &created, &updated); err != nil {
				rows.Close()
				return err
			}
			args = append(args, id, name, created, updated)
			after = id
			n++
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		q := "INSERT INTO mv_users_copy (id, name, created_at, updated_at) VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", n), ", ")
		if _, err := to.Exec(q, args...); err != nil {
			return err
		}
		if n < chunk {
			return nil
		}
	}
}

// BenchmarkMoveCutoverHold moves 100,000 rows while eight goroutines keep
// updating rows of the range, and reports how long the writes that met the
// freeze took: p50, p99 and max, in milliseconds.
func BenchmarkMoveCutoverHold(b *testing.B) {
	for _, hooks := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "before-hooks"}[hooks], func(b *testing.B) { benchCutoverHold(b, hooks) })
	}
}

// benchCutoverHold is BenchmarkMoveCutoverHold for a model without hooks, or
// with Before hooks (held before they begin, at the cutover's announcement).
func benchCutoverHold(b *testing.B, hooks bool) {
	bb := benchBackend(b)
	r := newMoveRig(b, bb, b.TempDir())
	users := r.seedUsers(b, benchRows)
	must(b, r.source.Migrator().DropTable(&MvHooked{}))
	must(b, r.target.Migrator().DropTable(&MvHooked{}))
	must(b, r.p.AutoMigrate(r.db, &MvHooked{}))
	hooked := make([]MvHooked, 1000)
	for i := range hooked {
		hooked[i] = MvHooked{ID: r.p.Layout().Compose(time.Now().Add(-time.Hour), movingRange.From+i, 0), Text: "seed"}
	}
	must(b, r.db.CreateInBatches(&hooked, 500).Error)
	update := func(n int) error {
		if hooks {
			return r.db.Model(&MvHooked{ID: hooked[n%len(hooked)].ID}).Update("text", fmt.Sprint(n)).Error
		}
		return r.db.Model(&MvUser{ID: users[n%len(users)]}).Update("name", fmt.Sprint(n)).Error
	}
	s := &shuttle{r: r, here: bb.name + "-source", models: append(append([]any{}, moveModels...), &MvHooked{})}
	var held []time.Duration
	for b.Loop() {
		var frozen, served atomic.Int64
		type write struct{ start, end time.Time }
		var mu sync.Mutex
		var writes []write
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for n := g; ; n += 8 {
					select {
					case <-stop:
						return
					default:
					}
					start := time.Now()
					if err := update(n); err != nil {
						b.Errorf("a write during the move: %v", err)
						return
					}
					mu.Lock()
					writes = append(writes, write{start, time.Now()})
					mu.Unlock()
				}
			})
		}
		s.next(b, shardid.Move{ChunkSize: 1000, Progress: func(pr shardid.MoveProgress) {
			switch pr.Step {
			case "frozen":
				frozen.Store(time.Now().UnixNano())
			case "map written":
				served.Store(time.Now().UnixNano())
			}
		}})
		close(stop)
		wg.Wait()
		for _, w := range writes {
			if w.end.UnixNano() >= frozen.Load() && w.start.UnixNano() <= served.Load() {
				held = append(held, w.end.Sub(w.start))
			}
		}
	}
	slices.Sort(held)
	if len(held) == 0 {
		b.Fatal("no write met the freeze")
	}
	at := func(q float64) float64 { return float64(held[int(q*float64(len(held)-1))]) / 1e6 }
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(at(1), "max-ms")
	b.ReportMetric(float64(len(held))/float64(b.N), "held/move")
}

// BenchmarkMoveOutsideRange measures a write outside the moving range with
// no move; while moves of the range run back and forth (triggers on the
// source, the copy reading and writing both databases), at full speed and
// throttled; while the plain driver loop copies the same rows over and over
// (the floor: what any copy of them costs the server); and with the fence's
// triggers alone.
func BenchmarkMoveOutsideRange(b *testing.B) {
	bb := benchBackend(b)
	r := newMoveRig(b, bb, b.TempDir())
	r.seedUsers(b, benchRows)
	var outside []MvUser
	for i := range 100 {
		u := MvUser{Name: "outside"}
		must(b, r.db.Clauses(shardid.OnShard(i)).Create(&u).Error)
		outside = append(outside, u)
	}
	s := &shuttle{r: r, here: bb.name + "-source"}
	write := func(b *testing.B, db *gorm.DB) {
		n := 0
		for b.Loop() {
			n++
			must(b, db.Model(&outside[n%len(outside)]).Update("name", fmt.Sprint(n)).Error)
		}
	}
	b.Run("no-move", func(b *testing.B) { write(b, r.db) })
	b.Run("during-move", func(b *testing.B) { writeDuringMoves(b, s, shardid.Move{ChunkSize: 1000}, write) })
	b.Run("during-move-throttled", func(b *testing.B) {
		writeDuringMoves(b, s, shardid.Move{ChunkSize: 1000, Throttle: 20 * time.Millisecond}, write)
	})
	b.Run("during-driver-copy", func(b *testing.B) {
		// The floor: the same rows copied by the plain loop, over and over.
		source, err := r.source.DB()
		must(b, err)
		target, err := r.target.DB()
		must(b, err)
		from, to := source, target
		if s.here != bb.name+"-source" {
			from, to = target, source
		}
		_, err = to.Exec("CREATE TABLE IF NOT EXISTS mv_users_copy LIKE mv_users")
		must(b, err)
		stop := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			for {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				if _, err := to.Exec("DELETE FROM mv_users_copy"); err != nil {
					done <- err
					return
				}
				if err := driverCopy(from, to, 1000); err != nil {
					done <- err
					return
				}
			}
		}()
		time.Sleep(200 * time.Millisecond)
		write(b, r.db)
		close(stop)
		must(b, <-done)
	})
	b.Run("fenced-only", func(b *testing.B) {
		// The triggers and the fence in place, the copy paused after a chunk.
		ctx, cancel := context.WithCancel(context.Background())
		copying := make(chan struct{})
		var once sync.Once
		done := make(chan error, 1)
		go func() {
			_, err := r.p.Move(ctx, shardid.Move{Logical: movingRange, To: otherThan(s), Models: moveModels, ChunkSize: 10, Throttle: time.Hour,
				Progress: func(pr shardid.MoveProgress) {
					if pr.Phase == shardid.PhaseCopy {
						once.Do(func() { close(copying) })
					}
				}})
			done <- err
		}()
		<-copying
		write(b, r.db)
		cancel()
		<-done
		must(b, r.p.CancelMove(context.Background(), movingRange, moveModels...))
	})
}

// otherThan names the database the range is not on.
func otherThan(s *shuttle) string {
	if s.here == s.r.b.name+"-target" {
		return s.r.b.name + "-source"
	}
	return s.r.b.name + "-target"
}

// writeDuringMoves times writes while moves of the range run back and forth.
func writeDuringMoves(b *testing.B, s *shuttle, mv shardid.Move, write func(*testing.B, *gorm.DB)) {
	stop := make(chan struct{})
	done := make(chan struct{})
	var moves atomic.Int64
	var failed error
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, failed = s.try(mv, nil); failed != nil {
				return
			}
			moves.Add(1)
		}
	}()
	time.Sleep(200 * time.Millisecond) // the first move's copy under way
	write(b, s.r.db)
	close(stop)
	<-done
	must(b, failed)
	b.ReportMetric(float64(moves.Load()), "moves")
}
