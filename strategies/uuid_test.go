package strategies

import (
	"bytes"
	"sync"
	"testing"

	"github.com/google/uuid"
)

func TestUUIDsCarryTheShardAndStayValid(t *testing.T) {
	u, err := NewUUIDs(Layout{})
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []int{7, 4} {
		seen := map[uuid.UUID]bool{}
		for i := range 20_000 {
			shard := i * 7919 % 8192
			id, err := u.New(version, shard)
			if err != nil {
				t.Fatal(err)
			}
			if got := u.Shard(id); got != shard {
				t.Fatalf("v%d: %s is in shard %d, want %d", version, id, got, shard)
			}
			if int(id.Version()) != version || id.Variant() != uuid.RFC4122 {
				t.Fatalf("%s: version %d variant %s", id, id.Version(), id.Variant())
			}
			if parsed, err := uuid.Parse(id.String()); err != nil || parsed != id {
				t.Fatalf("%s does not parse back: %v", id, err)
			}
			if seen[id] {
				t.Fatalf("v%d: %s made twice", version, id)
			}
			seen[id] = true
		}
	}
}

// RFC 9562 §6.2: v7 UUIDs of one generator sort in the order they were made,
// also within a millisecond; the shard bits must not break that.
func TestUUIDv7MonotonicAcrossShards(t *testing.T) {
	u, _ := NewUUIDs(Layout{})
	const goroutines, each = 8, 20_000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			prev := uuid.Nil
			for i := range each {
				id, err := u.New(7, (g*each+i)%8192)
				if err != nil {
					t.Error(err)
					return
				}
				if bytes.Compare(id[:], prev[:]) <= 0 {
					t.Errorf("%s made after %s", id, prev)
					return
				}
				prev = id
			}
		})
	}
	wg.Wait()
}

func BenchmarkUUIDv7(b *testing.B) {
	u, _ := NewUUIDs(Layout{})
	b.Run("shardid", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			_, _ = u.New(7, i)
		}
	})
	b.Run("google-uuid", func(b *testing.B) {
		for b.Loop() {
			_, _ = uuid.NewV7()
		}
	})
}
