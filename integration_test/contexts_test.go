package integration

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/shardid/shardid"
)

// TestReadOverDatabasesEndsWithItsContext: a read over two databases whose
// context ends while one part is slow fails with the context's error at
// once, with no rows, and leaves no connection or goroutine behind. So it
// does with one part at a time (Config.PartsAtOnce 1), the slow part after
// the other, and then a read whose context ended before it began runs no
// part.
func TestReadOverDatabasesEndsWithItsContext(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		for _, atOnce := range []int{0, 1} {
			t.Run(fmt.Sprint("PartsAtOnce ", atOnce), func(t *testing.T) {
				readEndsWithItsContext(t, b, shardid.Config{PartsAtOnce: atOnce})
			})
		}
	})
}

func readEndsWithItsContext(t *testing.T, b backend, cfg shardid.Config) {
	r, pools, accounts := smallPools(t, b, 2, cfg)
	before := runtime.NumGoroutine()
	ids := []int64{accounts[0].ID, accounts[1].ID}
	cond, args := sleepWhere(b, accounts[1].ID, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	var got []account
	err := r.db.WithContext(ctx).Where("id IN ?", ids).Where(cond, args...).Find(&got).Error
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's deadline", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the read returned %v after it began, its deadline 300ms", took)
	}
	if len(got) != 0 {
		t.Errorf("a failed read gave %d rows", len(got))
	}
	<-ctx.Done()
	var n int64
	err = r.db.WithContext(ctx).Model(&account{}).Where("id IN ?", ids).Count(&n).Error
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a read with its context ended before it began: err = %v", err)
	}
	settled(t, pools, before)
	got = nil
	must(t, r.db.Where("id IN ?", ids).Find(&got).Error)
	if len(got) != 2 {
		t.Fatalf("after: %d rows, want 2", len(got))
	}
}
