package strategies

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestInstagramBatchBorrowsTicksInsteadOfWrapping(t *testing.T) {
	g, err := NewInstagram(Layout{})
	if err != nil {
		t.Fatal(err)
	}
	target := sqliteTarget(t)
	shards := make([]int, 5000)
	for i := range shards {
		shards[i] = i % 3
	}
	ids := make([]int64, len(shards))
	if err := g.Generate(context.Background(), target, shards, ids); err != nil {
		t.Fatal(err)
	}
	layout := Layout{}
	perTick := map[int64]int{}
	for i, id := range ids {
		p := layout.Decode(id)
		if p.Shard != shards[i] {
			t.Fatalf("ID %d is in shard %d, want %d", i, p.Shard, shards[i])
		}
		if i > 0 && layout.Decode(ids[i-1]).Ticks*1024+int64(layout.Decode(ids[i-1]).Sequence)+1 != p.Ticks*1024+int64(p.Sequence) {
			t.Fatalf("ID %d does not follow ID %d in the clock-sequence", i, i-1)
		}
		perTick[p.Ticks]++
	}
	if len(perTick) < 5 {
		t.Fatalf("5000 IDs took %d ticks; more than 1024 in one tick would have wrapped", len(perTick))
	}
	more := make([]int64, 1)
	if err := g.Generate(context.Background(), target, []int{0}, more); err != nil {
		t.Fatal(err)
	}
	if layout.Decode(more[0]).Ticks < layout.Decode(ids[len(ids)-1]).Ticks {
		t.Fatal("the next call went back in time")
	}
}

func TestInstagramConcurrentCallsNeverRepeat(t *testing.T) {
	g, _ := NewInstagram(Layout{})
	target := sqliteTarget(t)
	const goroutines, calls, batch = 8, 50, 40
	results := make([][]int64, goroutines)
	var wg sync.WaitGroup
	for w := range goroutines {
		wg.Go(func() {
			for range calls {
				ids := make([]int64, batch)
				if err := g.Generate(context.Background(), target, make([]int, batch), ids); err != nil {
					t.Error(err)
					return
				}
				results[w] = append(results[w], ids...)
			}
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, ids := range results {
		for i, id := range ids {
			if seen[id] {
				t.Fatalf("duplicate %d", id)
			}
			seen[id] = true
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("%d after %d in one goroutine", id, ids[i-1])
			}
		}
	}
	if len(seen) != goroutines*calls*batch {
		t.Fatalf("%d IDs, want %d", len(seen), goroutines*calls*batch)
	}
}

func TestInstagramUnsupportedDialect(t *testing.T) {
	g, _ := NewInstagram(Layout{})
	err := g.Generate(context.Background(), Target{Name: "x", Dialect: "sqlserver"}, []int{1}, make([]int64, 1))
	if !errors.Is(err, ErrUnsupportedDialect) {
		t.Fatalf("got %v, want ErrUnsupportedDialect", err)
	}
}

func TestInstagramWithoutAConnectionFails(t *testing.T) {
	g, _ := NewInstagram(Layout{})
	err := g.Generate(context.Background(), Target{Name: "x", Dialect: "sqlite"}, []int{1}, make([]int64, 1))
	if err == nil || !strings.Contains(err.Error(), `"x" has no connection`) {
		t.Fatalf("got %v, want an error naming the target without a connection", err)
	}
}
