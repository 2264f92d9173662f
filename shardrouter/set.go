package shardrouter

import (
	"math/bits"
	"slices"
)

// Set is a set of physical databases, by index. "Every database" and a set
// of one are kept as such and allocate nothing, so that routing a statement
// on one shard costs the same with 4 databases or with thousands; a set of
// several holds a bit per database. The zero value is the empty set. A Set
// is a value: its methods never change it, and it is safe for concurrent use.
type Set struct {
	all   int      // every database below all (all > 1); 0: not every one
	one   int      // a set of one: its index + 1; 0: not a set of one
	words []uint64 // two or more databases, a bit each; never changed once made
}

// Every returns the set of the n databases 0..n-1.
func Every(n int) Set {
	switch {
	case n <= 0:
		return Set{}
	case n == 1:
		return Only(0)
	}
	return Set{all: n}
}

// Only returns the set of database k alone.
func Only(k int) Set { return Set{one: k + 1} }

// Empty reports whether the set holds no database.
func (s Set) Empty() bool { return s.all == 0 && s.one == 0 && s.words == nil }

// Has reports whether database k is in the set.
func (s Set) Has(k int) bool {
	switch {
	case k < 0:
		return false
	case s.all > 0:
		return k < s.all
	case s.one > 0:
		return k == s.one-1
	}
	return k/64 < len(s.words) && s.words[k/64]&(1<<(k%64)) != 0
}

// With returns the set with database k added.
func (s Set) With(k int) Set {
	switch {
	case s.Has(k):
		return s
	case s.Empty():
		return Only(k)
	}
	words := s.bitmap(k + 1)
	words[k/64] |= 1 << (k % 64)
	return Set{words: words}
}

// Intersect returns the databases in both s and t.
func (s Set) Intersect(t Set) Set {
	switch {
	case s.all > 0 && t.all > 0:
		return Every(min(s.all, t.all))
	case s.all > 0 && t.one > 0: // a one-shard statement's database among those serving
		return t.keptIf(t.one <= s.all)
	case s.all > 0:
		return t.below(s.all)
	case t.all > 0:
		return s.below(t.all)
	case s.one > 0:
		return s.keptIf(t.Has(s.one - 1))
	case t.one > 0:
		return t.keptIf(s.Has(t.one - 1))
	}
	words := make([]uint64, min(len(s.words), len(t.words)))
	for i := range words {
		words[i] = s.words[i] & t.words[i]
	}
	return fromBitmap(words)
}

// SubsetOf reports whether every database of s is in t.
func (s Set) SubsetOf(t Set) bool {
	switch {
	case t.all > 0:
		return s.Empty() || s.Last() < t.all
	case s.all > 0:
		for k := range s.all {
			if !t.Has(k) {
				return false
			}
		}
		return true
	case s.one > 0:
		return t.Has(s.one - 1)
	case t.one > 0:
		return s.Empty()
	}
	for i, w := range s.words {
		if i >= len(t.words) && w != 0 || i < len(t.words) && w&^t.words[i] != 0 {
			return false
		}
	}
	return true
}

// copied is the set with its bitmap copied, if it has one.
func (s Set) copied() Set {
	return Set{all: s.all, one: s.one, words: slices.Clone(s.words)}
}

// Single returns the database of a set of one.
func (s Set) Single() (int, bool) { return s.one - 1, s.one > 0 }

// Len is the number of databases in the set.
func (s Set) Len() int {
	switch {
	case s.all > 0:
		return s.all
	case s.one > 0:
		return 1
	}
	n := 0
	for _, w := range s.words {
		n += bits.OnesCount64(w)
	}
	return n
}

// First returns the lowest database of the set, or -1 when it is empty.
func (s Set) First() int {
	switch {
	case s.all > 0:
		return 0
	case s.one > 0:
		return s.one - 1
	}
	for i, w := range s.words {
		if w != 0 {
			return i*64 + bits.TrailingZeros64(w)
		}
	}
	return -1
}

// Last returns the highest database of the set, or -1 when it is empty.
func (s Set) Last() int {
	switch {
	case s.all > 0:
		return s.all - 1
	case s.one > 0:
		return s.one - 1
	}
	for i := len(s.words) - 1; i >= 0; i-- {
		if s.words[i] != 0 {
			return i*64 + 63 - bits.LeadingZeros64(s.words[i])
		}
	}
	return -1
}

// List returns the databases of the set in ascending order.
func (s Set) List() []int {
	switch {
	case s.all > 0:
		list := make([]int, s.all)
		for k := range list {
			list[k] = k
		}
		return list
	case s.one > 0:
		return []int{s.one - 1}
	}
	list := make([]int, 0, s.Len())
	for i, w := range s.words {
		for w != 0 {
			list = append(list, i*64+bits.TrailingZeros64(w))
			w &= w - 1
		}
	}
	return list
}

// bitmap returns a new bit per database of s, room for n databases at least.
func (s Set) bitmap(n int) []uint64 {
	size := max((n+63)/64, len(s.words))
	if s.one > 0 {
		size = max(size, s.one/64+1)
	}
	words := make([]uint64, size)
	copy(words, s.words)
	if s.one > 0 {
		words[(s.one-1)/64] |= 1 << ((s.one - 1) % 64)
	}
	return words
}

// below returns the databases of s under n.
func (s Set) below(n int) Set {
	if s.SubsetOf(Every(n)) {
		return s
	}
	if s.one > 0 {
		return Set{}
	}
	words := make([]uint64, min(len(s.words), (n+63)/64))
	copy(words, s.words)
	if n%64 != 0 && len(words) == (n+63)/64 {
		words[len(words)-1] &= 1<<(n%64) - 1
	}
	return fromBitmap(words)
}

// keptIf returns s when keep holds, else the empty set.
func (s Set) keptIf(keep bool) Set {
	if keep {
		return s
	}
	return Set{}
}

// fromBitmap returns the set of the bits of words, a set of one or none
// kept as such.
func fromBitmap(words []uint64) Set {
	n, last := 0, -1
	for i, w := range words {
		if w != 0 {
			n += bits.OnesCount64(w)
			last = i*64 + 63 - bits.LeadingZeros64(w)
		}
	}
	switch n {
	case 0:
		return Set{}
	case 1:
		return Only(last)
	}
	return Set{words: words}
}
