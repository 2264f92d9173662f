package fence_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shardid/shardid/internal/fence"
)

// lease is short for the tests, and long enough that a statement or two on
// a busy machine lands within it; waits past it are checked against the
// database's clock, so a busy machine only makes them longer.
const lease = 2 * time.Second

// writeUntilThawed writes a row of the range until the triggers let it
// through.
func writeUntilThawed(t *testing.T, fx *fixture, key int64) {
	t.Helper()
	start := time.Now()
	for {
		err := fx.insert("fence_ints", key)
		if err == nil {
			return
		}
		if _, _, moved := fence.MovedShard(err); !moved {
			t.Fatalf("a write of the range: %v", err)
		}
		if time.Since(start) > time.Minute {
			t.Fatal("the freeze never lapsed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFreezeForLapsesUnlessRenewedOrSealed(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			fx := openFixture(t, dialect)
			before := len(fx.changes(t))

			// Not renewed: the triggers take writes again once the lease passed, and log them.
			frozenBefore := time.Now() // the lease starts later, at the database's clock
			if err := fx.f.FreezeFor(ctx, fx.db, moveRange, lease); err != nil {
				t.Fatal(err)
			}
			refused(t, dialect, fx.insert("fence_ints", intID(5)), 5, "pg-c")
			writeUntilThawed(t, fx, intID(5))
			if waited := time.Since(frozenBefore); waited < lease/2 {
				t.Errorf("the freeze let a write through after %v, before its lease of %v", waited, lease)
			}
			if got := len(fx.changes(t)); got != before+1 {
				t.Fatalf("%d changes after a write past the lease, want %d", got, before+1)
			}
			if err := fx.f.Renew(ctx, fx.db, moveRange, lease); !errors.Is(err, fence.ErrLapsed) {
				t.Fatalf("Renew after the lease: %v, want ErrLapsed", err)
			}
			if err := fx.f.Seal(ctx, fx.db, moveRange); !errors.Is(err, fence.ErrLapsed) {
				t.Fatalf("Seal after the lease: %v, want ErrLapsed", err)
			}

			// Renewed, it holds past the first lease; sealed, past any.
			if err := fx.f.FreezeFor(ctx, fx.db, moveRange, lease); err != nil {
				t.Fatal(err)
			}
			for range 4 {
				time.Sleep(lease / 3)
				if err := fx.f.Renew(ctx, fx.db, moveRange, lease); err != nil {
					t.Fatalf("Renew within the lease: %v", err)
				}
				refused(t, dialect, fx.insert("fence_ints", intID(6)), 6, "pg-c")
			}
			if err := fx.f.Seal(ctx, fx.db, moveRange); err != nil {
				t.Fatalf("Seal within the lease: %v", err)
			}
			time.Sleep(2 * lease)
			refused(t, dialect, fx.insert("fence_ints", intID(6)), 6, "pg-c")
			if err := fx.f.Renew(ctx, fx.db, moveRange, lease); err != nil {
				t.Fatalf("Renew of a sealed freeze: %v", err) // a resumed cutover freezes again
			}
			if err := fx.f.Thaw(ctx, fx.db, moveRange); err != nil {
				t.Fatal(err)
			}
			if err := fx.f.Seal(ctx, fx.db, moveRange); !errors.Is(err, fence.ErrLapsed) {
				t.Fatalf("Seal of a thawed range: %v, want ErrLapsed", err)
			}
		})
	}
}

func TestSealedNamesTheRangesWhoseCutoverCommitted(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			db := openDB(t, dialect)
			f := newFence(dialect)
			if got, err := f.Sealed(ctx, db); err != nil || got != nil {
				t.Fatalf("Sealed on a database never fenced: %v, %v", got, err)
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := f.Sealed(ctx, tx); err != nil || got != nil {
				t.Fatalf("Sealed in a transaction on a database never fenced: %v, %v", got, err)
			}
			var one int
			if err := tx.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatalf("the transaction after Sealed: %v", err) // PostgreSQL aborts one whose statement failed
			}
			_ = tx.Rollback()

			fx := newFixture(t, dialect)
			other := fence.Range{From: 20, To: 29}
			for _, r := range []fence.Range{moveRange, other} {
				if err := fx.f.Open(ctx, fx.db, r, "pg-c"); err != nil {
					t.Fatal(err)
				}
			}
			if err := fx.f.FreezeFor(ctx, fx.db, moveRange, time.Minute); err != nil {
				t.Fatal(err)
			}
			if got, err := f.Sealed(ctx, fx.db); err != nil || got != nil {
				t.Fatalf("Sealed with a freeze under its lease: %v, %v; want none", got, err)
			}
			for _, r := range []fence.Range{moveRange, other} {
				if err := fx.f.FreezeFor(ctx, fx.db, r, time.Minute); err != nil {
					t.Fatal(err)
				}
				if err := fx.f.Seal(ctx, fx.db, r); err != nil {
					t.Fatal(err)
				}
			}
			got, err := f.Sealed(ctx, fx.db)
			slices.SortFunc(got, func(a, b fence.Range) int { return a.From - b.From })
			if err != nil || !slices.Equal(got, []fence.Range{moveRange, other}) {
				t.Fatalf("Sealed: %v, %v; want %v and %v", got, err, moveRange, other)
			}
		})
	}
}
