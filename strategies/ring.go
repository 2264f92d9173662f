package strategies

import (
	"slices"
	"strconv"
)

// ring is a consistent-hash ring with virtual nodes: every server owns
// virtualNodes points, and a key belongs to the first point clockwise from
// its hash. Adding a server takes over only the arcs in front of its own
// points, about 1/(N+1) of the keys; the rest stay where they were. A ring is
// immutable once built, so readers need no lock.
type ring struct {
	points []uint64 // sorted hashes of the virtual nodes
	owners []int32  // owners[k] is the server index of points[k]
	n      int      // number of servers
}

// newRing builds the ring of names (distinct) with virtualNodes points each.
func newRing(names []string, virtualNodes int) *ring {
	virtualNodes = max(virtualNodes, 1)
	type node struct {
		point uint64
		owner int32
	}
	nodes := make([]node, 0, len(names)*virtualNodes)
	for i, name := range names {
		for k := range virtualNodes {
			nodes = append(nodes, node{hashString(name + "#" + strconv.Itoa(k)), int32(i)})
		}
	}
	// Ties (vanishingly rare) go to the lower index, so every process builds the same ring.
	slices.SortFunc(nodes, func(a, b node) int {
		if a.point != b.point {
			if a.point < b.point {
				return -1
			}
			return 1
		}
		return int(a.owner - b.owner)
	})
	r := &ring{points: make([]uint64, len(nodes)), owners: make([]int32, len(nodes)), n: len(names)}
	for k, nd := range nodes {
		r.points[k], r.owners[k] = nd.point, nd.owner
	}
	return r
}

// lookup returns the server for key: the owner of the first point clockwise
// from the key's hash for which usable holds (nil usable: every server). It
// reports false when no server is usable.
func (r *ring) lookup(key uint64, usable func(i int) bool) (int, bool) {
	if len(r.points) == 0 {
		return 0, false
	}
	// Adding splitmix64's increment first keeps key 0 off the ring's origin.
	h := mix64(key + 0x9e3779b97f4a7c15)
	start, _ := slices.BinarySearch(r.points, h)
	// Each server is asked once: a walk past 160 points of one dead server
	// should not call usable 160 times.
	var refused []bool
	for step := range r.points {
		owner := int(r.owners[(start+step)%len(r.points)])
		if usable == nil {
			return owner, true
		}
		if refused != nil && refused[owner] {
			continue
		}
		if usable(owner) {
			return owner, true
		}
		if refused == nil {
			refused = make([]bool, r.n)
		}
		refused[owner] = true
	}
	return 0, false
}

// hashString is 64-bit FNV-1a finished with mix64: FNV alone leaves
// similar names ("a#1", "a#2") on nearby points.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix64(h)
}

// mix64 is the splitmix64 finalizer: every input bit changes about half of
// the output bits, so consecutive shard numbers land all over the ring.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
