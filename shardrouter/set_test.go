package shardrouter

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// reference is the set a Set stands for, kept the obvious way.
type reference map[int]bool

func (r reference) list() []int {
	list := []int{}
	for k := range r {
		list = append(list, k)
	}
	slices.Sort(list)
	return list
}

// randomSet builds a Set and its reference from random additions to one of
// the Set's forms: empty, every database, one, several.
func randomSet(rng *rand.Rand, n int) (Set, reference) {
	ref := reference{}
	switch rng.IntN(4) {
	case 0:
		return Set{}, ref
	case 1:
		for k := range n {
			ref[k] = true
		}
		return Every(n), ref
	}
	s := Set{}
	for range rng.IntN(6) + 1 {
		k := rng.IntN(n)
		s, ref[k] = s.With(k), true
	}
	return s, ref
}

func checkSet(t *testing.T, what string, s Set, ref reference, n int) {
	t.Helper()
	want := ref.list()
	if got := s.List(); !slices.Equal(got, want) {
		t.Fatalf("%s: List %v, want %v", what, got, want)
	}
	if s.Len() != len(want) || s.Empty() != (len(want) == 0) {
		t.Fatalf("%s: Len %d Empty %v, want %d members", what, s.Len(), s.Empty(), len(want))
	}
	for k := -1; k <= n; k++ {
		if s.Has(k) != ref[k] {
			t.Fatalf("%s: Has(%d) = %v", what, k, s.Has(k))
		}
	}
	if k, one := s.Single(); one != (len(want) == 1) || one && k != want[0] {
		t.Fatalf("%s: Single = %d, %v; members %v", what, k, one, want)
	}
	last := -1
	if len(want) > 0 {
		last = want[len(want)-1]
	}
	if s.Last() != last {
		t.Fatalf("%s: Last %d, want %d", what, s.Last(), last)
	}
}

func TestSetAgreesWithItsMembers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 63, 64, 65, 130, 1024} {
		for range 300 {
			a, refA := randomSet(rng, n)
			b, refB := randomSet(rng, n)
			checkSet(t, "a", a, refA, n)
			both := reference{}
			subset := true
			for k := range refA {
				if refB[k] {
					both[k] = true
				} else {
					subset = false
				}
			}
			checkSet(t, "a ∩ b", a.Intersect(b), both, n)
			checkSet(t, "b ∩ a", b.Intersect(a), both, n)
			if a.SubsetOf(b) != subset {
				t.Fatalf("n=%d: %v SubsetOf %v = %v", n, a.List(), b.List(), a.SubsetOf(b))
			}
			before := a.List()
			k := rng.IntN(n)
			grown := a.With(k)
			if !slices.Equal(a.List(), before) {
				t.Fatalf("With changed the set it was called on: %v, was %v", a.List(), before)
			}
			refA[k] = true
			checkSet(t, "a with k", grown, refA, n)
		}
	}
}

func TestEveryAndOnlyKeepTheirForm(t *testing.T) {
	if s := Every(1); !slices.Equal(s.List(), []int{0}) {
		t.Fatalf("Every(1) = %v", s.List())
	}
	if k, one := Every(1).Single(); !one || k != 0 {
		t.Fatalf("Every(1) is not a set of one")
	}
	if !Every(0).Empty() {
		t.Fatalf("Every(0) is not empty")
	}
	if got := Only(700).With(700); !slices.Equal(got.List(), []int{700}) {
		t.Fatalf("Only(700).With(700) = %v", got.List())
	}
	if got := Every(1024).Intersect(Only(1000)); got.Len() != 1 || !got.Has(1000) {
		t.Fatalf("every ∩ {1000} = %v", got.List())
	}
	for _, got := range []Set{Every(4).Intersect(Only(4)), Only(4).Intersect(Every(4))} {
		if !got.Empty() {
			t.Fatalf("every of 4 ∩ {4} = %v", got.List())
		}
	}
}

// BenchmarkSetOneShard is what routing a one-shard statement does with the
// set: every database, narrowed to one. It does not grow with the databases.
func BenchmarkSetOneShard(b *testing.B) {
	for _, n := range []int{4, 1024} {
		b.Run(map[int]string{4: "4", 1024: "1024"}[n], func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				s := Every(n).Intersect(Only(i % n))
				if _, one := s.Single(); !one {
					b.Fatal("not one")
				}
			}
		})
	}
}
