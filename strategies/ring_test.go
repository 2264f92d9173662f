package strategies

import (
	"fmt"
	"math"
	"testing"
)

func ringNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("ticket-%d", i+1)
	}
	return names
}

func TestRingLookupIsStable(t *testing.T) {
	a, b := newRing(ringNames(3), 160), newRing(ringNames(3), 160)
	for key := range uint64(10000) {
		x, ok1 := a.lookup(key, nil)
		y, ok2 := b.lookup(key, nil)
		if !ok1 || !ok2 || x != y {
			t.Fatalf("key %d: %d/%t and %d/%t on two rings of the same names", key, x, ok1, y, ok2)
		}
		if z, _ := a.lookup(key, nil); z != x {
			t.Fatalf("key %d: %d then %d", key, x, z)
		}
	}
}

func TestRingSkipsUnusableServersClockwise(t *testing.T) {
	r := newRing(ringNames(3), 160)
	for key := range uint64(5000) {
		first, _ := r.lookup(key, nil)
		// Without the first server, the key goes to the next point clockwise
		// whose owner differs, and all other keys stay put.
		second, ok := r.lookup(key, func(i int) bool { return i != first })
		if !ok || second == first {
			t.Fatalf("key %d: skipping %d gave %d, %t", key, first, second, ok)
		}
		h := mix64(key + 0x9e3779b97f4a7c15)
		want := -1
		for k := range r.points {
			p := (searchPoint(r.points, h) + k) % len(r.points)
			if int(r.owners[p]) != first {
				want = int(r.owners[p])
				break
			}
		}
		if second != want {
			t.Fatalf("key %d: skipping %d gave %d, want the next clockwise %d", key, first, second, want)
		}
		if _, ok := r.lookup(key, func(int) bool { return false }); ok {
			t.Fatalf("key %d: found a server when none is usable", key)
		}
	}
	if _, ok := newRing(nil, 160).lookup(1, nil); ok {
		t.Fatal("an empty ring found a server")
	}
}

// searchPoint is the first index whose point is >= h, wrapping to 0.
func searchPoint(points []uint64, h uint64) int {
	for i, p := range points {
		if p >= h {
			return i
		}
	}
	return 0
}

func TestRingAddingAServerMovesAboutOneShare(t *testing.T) {
	const keys = 100000
	for _, n := range []int{1, 2, 3, 4, 8} {
		before, after := newRing(ringNames(n), 160), newRing(ringNames(n+1), 160)
		moved := 0
		for key := range uint64(keys) {
			x, _ := before.lookup(key, nil)
			y, _ := after.lookup(key, nil)
			if x != y {
				if y != n {
					t.Fatalf("n=%d: key %d moved from %d to %d, not to the new server", n, key, x, y)
				}
				moved++
			}
		}
		share, want := float64(moved)/keys, 1/float64(n+1)
		t.Logf("%d -> %d servers: %.2f%% of keys moved (1/(N+1) = %.2f%%)", n, n+1, 100*share, 100*want)
		if math.Abs(share-want) > 0.25*want {
			t.Errorf("%d -> %d servers: %.3f of keys moved, want %.3f within 25%%", n, n+1, share, want)
		}
	}
}

func TestRingDistributionWithVirtualNodes(t *testing.T) {
	const keys = 200000
	for _, n := range []int{2, 3, 4, 8} {
		r := newRing(ringNames(n), DefaultTicketVirtualNodes)
		counts := make([]int, n)
		for key := range uint64(keys) {
			i, _ := r.lookup(key*0x9e3779b97f4a7c15, nil)
			counts[i]++
		}
		worst := 0.0
		for _, c := range counts {
			worst = max(worst, math.Abs(float64(c)*float64(n)/keys-1))
		}
		t.Logf("%d servers, %d virtual nodes: counts %v, worst %.1f%% from even", n, DefaultTicketVirtualNodes, counts, 100*worst)
		if worst > 0.08 {
			t.Errorf("%d servers: a server is %.1f%% from an even share", n, 100*worst)
		}
	}
}
