package strategies_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shardid/shardid/integration_test/internal/testdb"
	. "github.com/shardid/shardid/strategies"
)

// forEachMovePair runs test on a source and a target database of each kind:
// two SQLite files, and where their variables are set (in CI, always) two
// MariaDB databases (<database> and <database>_0) and two PostgreSQL ones
// (<database>_0 and _1). The strategies keep fixed table names per database,
// hence two databases rather than two tables.
func forEachMovePair(t *testing.T, test func(t *testing.T, source, target Target)) {
	t.Helper()
	dir := t.TempDir()
	source, target := sqliteTargetAt(t, filepath.Join(dir, "source.db")), sqliteTargetAt(t, filepath.Join(dir, "target.db"))
	source.Name, target.Name = "sqlite-source", "sqlite-target"
	pairs := [][2]Target{{source, target}}
	if testdb.Set(t, mysqlDSNVar) {
		pairs = append(pairs, [2]Target{mysqlTarget(t, -1), mysqlTarget(t, 0)})
	}
	if testdb.Set(t, postgresDSNVar) {
		pairs = append(pairs, [2]Target{postgresTarget(t, 0), postgresTarget(t, 1)})
	}
	for _, pair := range pairs {
		t.Run(pair[0].Dialect, func(t *testing.T) {
			t.Parallel()
			for _, db := range pair {
				// A new SQLite file is switched to WAL by its first connection alone.
				if _, err := db.DB.Exec("SELECT 1"); err != nil {
					t.Fatal(err)
				}
			}
			test(t, pair[0], pair[1])
		})
	}
}

func clockRow(t *testing.T, target Target) int64 {
	t.Helper()
	var v int64
	if err := target.DB.QueryRow("SELECT v FROM shardid_clock WHERE id = 1").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func instagramIDs(t *testing.T, g *Instagram, target Target, shards ...int) []int64 {
	t.Helper()
	ids := make([]int64, len(shards))
	if err := g.Generate(context.Background(), target, shards, ids); err != nil {
		t.Fatal(err)
	}
	return ids
}

// requireAbove fails unless every ID of ids is above bound.
func requireAbove(t *testing.T, what string, ids []int64, bound int64) {
	t.Helper()
	for _, id := range ids {
		if id <= bound {
			t.Fatalf("%s: ID %d is not above %d", what, id, bound)
		}
	}
}

// requireEachAbove fails unless each ID of ids is above the one of the same
// shard (the same index) in before: IDs of one shard only ever ascend.
func requireEachAbove(t *testing.T, what string, ids, before []int64) {
	t.Helper()
	for i, id := range ids {
		if id <= before[i] {
			t.Fatalf("%s: ID %d is not above %d of the same shard", what, id, before[i])
		}
	}
}

func TestInstagramAdvanceIssuesAboveTheSource(t *testing.T) {
	forEachMovePair(t, func(t *testing.T, source, target Target) {
		ctx := context.Background()
		layout := Layout{}.Normalized()
		onSource, onTarget, mover := testInstagram(t), testInstagram(t), testInstagram(t)
		instagramIDs(t, onSource, source, 7)
		instagramIDs(t, onTarget, target, 7)
		// The source's clock runs ten seconds ahead of the target's.
		ahead := max(clockRow(t, source), clockRow(t, target)) + int64(10*time.Second/time.Millisecond)<<layout.SequenceBits
		if _, err := source.DB.Exec(segmentRebind(source, "UPDATE shardid_clock SET v = ? WHERE id = 1"), ahead); err != nil {
			t.Fatal(err)
		}
		var fromSource []int64
		for range 20 {
			fromSource = append(fromSource, instagramIDs(t, onSource, source, 7, 7, 8, 9, 3)...)
		}
		highest := slices.Max(fromSource)
		if before := instagramIDs(t, onTarget, target, 7)[0]; before > highest {
			t.Fatalf("the target issued %d above the source's %d before Advance: the test shows nothing", before, highest)
		}

		if err := mover.Advance(ctx, source, target, 0); err != nil {
			t.Fatal(err)
		}
		shards := []int{0, 1, 2, 3, 7, 8, 9, 100}
		after := instagramIDs(t, onTarget, target, shards...)
		requireAbove(t, "after Advance", after, highest)
		if err := mover.Advance(ctx, source, target, 0); err != nil { // again: nothing goes back
			t.Fatal(err)
		}
		requireEachAbove(t, "after a second Advance", instagramIDs(t, onTarget, target, shards...), after)

		// atLeast: an ID of shard 9 five seconds further on; shard 0 of its tick would be below it.
		far := layout.ComposeTicks(layout.Decode(slices.Max(after)).Ticks+5000, 9, 3)
		if err := mover.Advance(ctx, source, target, far); err != nil {
			t.Fatal(err)
		}
		afterFar := instagramIDs(t, onTarget, target, shards...)
		requireAbove(t, "after Advance past an ID", afterFar, far)

		// A smaller atLeast does not take the clock back.
		row := clockRow(t, target)
		if err := mover.Advance(ctx, source, target, fromSource[0]); err != nil {
			t.Fatal(err)
		}
		if now := clockRow(t, target); now < row {
			t.Fatalf("Advance with a smaller ID took the clock from %d back to %d", row, now)
		}
		latest := instagramIDs(t, onTarget, target, shards...)
		requireEachAbove(t, "after Advance with a smaller ID", latest, afterFar)

		if target.Dialect == "sqlite" {
			// A target without the clock's table gets it.
			fresh := sqliteTargetAt(t, filepath.Join(t.TempDir(), "fresh.db"))
			fresh.Name = "sqlite-fresh"
			if err := mover.Advance(ctx, source, fresh, 0); err != nil {
				t.Fatal(err)
			}
			requireAbove(t, "on a fresh target", instagramIDs(t, testInstagram(t), fresh, shards...), highest)
			return
		}
		// The durable mark moved too: a restart that loses the clock row resumes above.
		var mark int64
		if err := target.DB.QueryRow("SELECT v FROM shardid_clock_mark WHERE id = 1").Scan(&mark); err != nil {
			t.Fatal(err)
		}
		if mark <= clockRow(t, target) {
			t.Fatalf("the durable mark %d is not above the clock %d", mark, clockRow(t, target))
		}
		if _, err := target.DB.Exec("DELETE FROM shardid_clock"); err != nil {
			t.Fatal(err)
		}
		requireEachAbove(t, "after the clock row was lost", instagramIDs(t, testInstagram(t), target, shards...), latest)
	})
}

func TestAdvanceRejectsANegativeID(t *testing.T) {
	target := sqliteTarget(t)
	g, _ := NewInstagram(Layout{})
	if err := g.Advance(context.Background(), target, target, -1); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("instagram: got %v, want ErrInvalidID", err)
	}
	s := newTestSegment(t, SegmentOptions{})
	target.Table = "items"
	if err := s.Advance(context.Background(), target, target, -1); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("segment: got %v, want ErrInvalidID", err)
	}
}

// withMoveSequence gives source and target one fresh sequence name, and
// removes its counter rows after the test.
func withMoveSequence(t *testing.T, source, target Target) (Target, Target) {
	name := fmt.Sprintf("seg_move_%016x", rand.Uint64())
	for _, db := range []Target{source, target} {
		t.Cleanup(func() {
			_, _ = db.DB.Exec(segmentRebind(db, "DELETE FROM shardid_segments WHERE name = ?"), name)
		})
	}
	source.Table, target.Table = name, name
	return source, target
}

// segmentIDs takes one ID for each of shards, in one call.
func segmentIDs(t *testing.T, s *Segment, target Target, shards ...int) []int64 {
	t.Helper()
	ids := make([]int64, len(shards))
	if err := s.Generate(context.Background(), target, shards, ids); err != nil {
		t.Fatal(err)
	}
	return ids
}

// segmentID is the ID a segment generator of the default layout makes of
// counter value c for shard.
func segmentID(c int64, shard int) int64 {
	l := Layout{}.Normalized()
	return l.ComposeTicks(c>>l.SequenceBits, shard, int(c&(1<<l.SequenceBits-1)))
}

func TestSegmentAdvanceAndForget(t *testing.T) {
	t.Parallel()
	forEachMovePair(t, func(t *testing.T, source, target Target) {
		ctx := context.Background()
		source, target = withMoveSequence(t, source, target)
		// Two processes hold blocks of the target's counter from before the move.
		told, untold := newTestSegment(t, fixedStep(100)), newTestSegment(t, fixedStep(100))
		generateN(t, told, target, 1)
		generateN(t, untold, target, 1)
		// The source's counter is far ahead.
		generateN(t, newTestSegment(t, fixedStep(100)), source, 1)
		setCounterRow(t, source, 50_000)
		fromSource := generateN(t, newTestSegment(t, fixedStep(100)), source, 150)
		highest := slices.Max(fromSource)

		mover := newTestSegment(t, fixedStep(100))
		generateN(t, mover, target, 1) // the mover holds a block of the target too
		if err := mover.Advance(ctx, source, target, 0); err != nil {
			t.Fatal(err)
		}
		requireAbove(t, "the mover, which Advance made forget", generateN(t, mover, target, 150), highest)
		if got, want := counterRow(t, target), counterRow(t, source); got < want {
			t.Fatalf("the target's counter is %d, below the source's %d", got, want)
		}
		// Without Forget a process still issues from its block below the counter.
		if id := generateN(t, untold, target, 1)[0]; id > highest {
			t.Fatalf("a process not told of the move issued %d, above the source's %d: the test shows nothing", id, highest)
		}
		told.Forget(target.Name) // the block it held is retired: TestSegmentForgetRetiresTheBlockCallersHold
		requireAbove(t, "after Forget", generateN(t, told, target, 300), highest)
		requireAbove(t, "after Forget, other shards", segmentIDs(t, told, target, 0, 1, 4, 6, 8191), highest)

		// atLeast: an ID of shard 9; shard 5 in the same block of counter values would be below it.
		far := segmentID(10_000_000, 9)
		if err := mover.Advance(ctx, source, target, far); err != nil {
			t.Fatal(err)
		}
		told.Forget(target.Name)
		afterFar := generateN(t, told, target, 5)
		requireAbove(t, "after Advance past an ID", afterFar, far)

		// A smaller atLeast does not take the counter back.
		row := counterRow(t, target)
		if err := mover.Advance(ctx, source, target, fromSource[0]); err != nil {
			t.Fatal(err)
		}
		if now := counterRow(t, target); now < row {
			t.Fatalf("Advance with a smaller ID took the counter from %d back to %d", row, now)
		}
		told.Forget(target.Name)
		requireAbove(t, "after Advance with a smaller ID", generateN(t, told, target, 5), slices.Max(afterFar))
	})
}

func TestSegmentForgetDropsTheRefillUnderWay(t *testing.T) {
	t.Parallel()
	forEachMovePair(t, func(t *testing.T, source, target Target) {
		ctx := context.Background()
		source, target = withMoveSequence(t, source, target)
		holder := newTestSegment(t, fixedStep(100))
		generateN(t, holder, target, 1)
		release := lockCounterRow(t, target)
		generateN(t, holder, target, 20) // passes 10 %: the refill starts and waits on the lock
		if !sequenceState(t, holder).Refilling {
			t.Fatal("no refill under way")
		}
		holder.Forget(target.Name)
		release()
		// The refill reserves its block before the move, and must not install it.
		eventually(t, "the refill ends", func() bool { return !sequenceState(t, holder).Refilling })

		generateN(t, newTestSegment(t, fixedStep(100)), source, 1)
		setCounterRow(t, source, 50_000)
		highest := slices.Max(generateN(t, newTestSegment(t, fixedStep(100)), source, 10))
		if err := newTestSegment(t, fixedStep(100)).Advance(ctx, source, target, 0); err != nil {
			t.Fatal(err)
		}
		requireAbove(t, "after Forget during a refill", generateN(t, holder, target, 150), highest)
	})
}

func TestSegmentAdvanceCreatesTheCounter(t *testing.T) {
	t.Parallel()
	forEachMovePair(t, func(t *testing.T, source, target Target) {
		source, target = withMoveSequence(t, source, target)
		mover := newTestSegment(t, fixedStep(100))
		atLeast := segmentID(5000, 3)
		if err := mover.Advance(context.Background(), source, target, atLeast); err != nil {
			t.Fatal(err)
		}
		if row := counterRow(t, target); row < 5000 {
			t.Fatalf("the new counter is %d, below the ID's 5000", row)
		}
		requireAbove(t, "a new process", segmentIDs(t, newTestSegment(t, fixedStep(100)), target, 0, 3, 7), atLeast)
	})
}

func TestSegmentAdvanceCountsWhatThisProcessReservedOnTheSource(t *testing.T) {
	t.Parallel()
	forEachMovePair(t, func(t *testing.T, source, target Target) {
		source, target = withMoveSequence(t, source, target)
		// Past the first 2^SequenceBits values, which Advance skips anyway.
		mover := newTestSegment(t, fixedStep(1000))
		issued := generateN(t, mover, source, 1500)
		eventually(t, "the third block is reserved", func() bool { return sequenceState(t, mover).Refills == 3 })
		setCounterRow(t, source, 0) // the source's counter went back, in a failover say
		if err := mover.Advance(context.Background(), source, target, 0); err != nil {
			t.Fatal(err)
		}
		requireAbove(t, "above the mover's own source blocks", generateN(t, newTestSegment(t, fixedStep(100)), target, 5), slices.Max(issued))
	})
}

func TestInstagramAdvanceWhenTheSourceClockWentBack(t *testing.T) {
	forEachMovePair(t, func(t *testing.T, source, target Target) {
		layout := Layout{}.Normalized()
		onSource, mover := testInstagram(t), testInstagram(t)
		issuer := onSource
		if source.Dialect == "sqlite" {
			issuer = mover // SQLite's clock row can go back with a rolled-back transaction: the mover's own IDs still count
		}
		instagramIDs(t, issuer, source, 1)
		instagramIDs(t, mover, target, 1)
		row := clockRow(t, source)
		ahead := max(row, clockRow(t, target)) + int64(10*time.Second/time.Millisecond)<<layout.SequenceBits
		if _, err := source.DB.Exec(segmentRebind(source, "UPDATE shardid_clock SET v = ? WHERE id = 1"), ahead); err != nil {
			t.Fatal(err)
		}
		issued := instagramIDs(t, issuer, source, 1, 2, 3)
		if source.Dialect == "sqlite" {
			if _, err := source.DB.Exec("UPDATE shardid_clock SET v = ? WHERE id = 1", row); err != nil {
				t.Fatal(err)
			}
		} else if _, err := source.DB.Exec("DELETE FROM shardid_clock"); err != nil { // a restart lost the row: the mark remains
			t.Fatal(err)
		}
		if err := mover.Advance(context.Background(), source, target, 0); err != nil {
			t.Fatal(err)
		}
		requireAbove(t, "after the source's clock went back", instagramIDs(t, testInstagram(t), target, 0, 1, 2, 3), slices.Max(issued))
	})
}

func testInstagram(t *testing.T) *Instagram {
	t.Helper()
	g, err := NewInstagram(Layout{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}
