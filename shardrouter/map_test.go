package shardrouter

import (
	"errors"
	"strings"
	"testing"
)

func TestNewMap(t *testing.T) {
	cases := []struct {
		name     string
		physical []Physical
		err      string
	}{
		{"two halves", []Physical{{"a", []Range{{0, 4095}}}, {"b", []Range{{4096, 8191}}}}, ""},
		{"interleaved", []Physical{{"a", []Range{{0, 99}, {200, 8191}}}, {"b", []Range{{100, 199}}}}, ""},
		{"gap", []Physical{{"a", []Range{{0, 99}}}, {"b", []Range{{200, 8191}}}}, "logical shards 100..199 are not mapped"},
		{"gap at the end", []Physical{{"a", []Range{{0, 8000}}}}, "logical shards 8001..8191 are not mapped"},
		{"overlap", []Physical{{"a", []Range{{0, 4096}}}, {"b", []Range{{4096, 8191}}}}, "logical shard 4096 is mapped to both a and b"},
		{"self overlap", []Physical{{"a", []Range{{0, 8191}, {5, 5}}}}, "logical shard 5 is mapped to both a and a"},
		{"duplicate name", []Physical{{"a", []Range{{0, 10}}}, {"a", []Range{{11, 8191}}}}, `two physical databases are named "a"`},
		{"names differing in case", []Physical{{"node", []Range{{0, 10}}}, {"NODE", []Range{{11, 8191}}}}, `two physical databases are named "node" and "NODE", which differ only in case`},
		{"empty name", []Physical{{" ", []Range{{0, 8191}}}}, "has no name"},
		{"longest name", []Physical{{strings.Repeat("é", 191), []Range{{0, 8191}}}}, ""},
		{"name too long", []Physical{{strings.Repeat("é", 192), []Range{{0, 8191}}}}, "name has 192 characters, at most 191"},
		{"reversed", []Physical{{"a", []Range{{10, 0}}}}, "a: range 10..0 runs backwards"},
		{"reversed, each end within", []Physical{{"a", []Range{{4095, 0}}}, {"b", []Range{{4096, 8191}}}}, "a: range 4095..0 runs backwards"},
		{"out of bounds", []Physical{{"a", []Range{{0, 8192}}}}, "not within 0..8191"},
		{"negative", []Physical{{"a", []Range{{-1, 8191}}}}, "not within 0..8191"},
		{"none", nil, "no physical databases"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := NewMap(8192, c.physical)
			if c.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range c.physical {
					for _, r := range p.Logical {
						if got := m.Name(m.Physical(r.From)); got != p.Name {
							t.Fatalf("shard %d is on %s, want %s", r.From, got, p.Name)
						}
					}
				}
				return
			}
			if !errors.Is(err, ErrInvalidMap) || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("got %v, want ErrInvalidMap mentioning %q", err, c.err)
			}
		})
	}
}

// FuzzNewMap: validation accepts exactly the maps in which every logical
// shard has one owner.
func FuzzNewMap(f *testing.F) {
	f.Add([]byte{0, 0, 63, 1, 64, 127})
	f.Add([]byte{0, 0, 70, 1, 64, 127})
	f.Add([]byte{0, 0, 10, 0, 20, 127, 1, 11, 19})
	f.Fuzz(func(t *testing.T, spec []byte) {
		const shards = 128
		var physical []Physical
		for i := 0; i+2 < len(spec) && len(physical) < 8; i += 3 {
			db := int(spec[i] % 4)
			for len(physical) <= db {
				physical = append(physical, Physical{Name: string(rune('a' + len(physical)))})
			}
			physical[db].Logical = append(physical[db].Logical, Range{int(spec[i+1]) % 140, int(spec[i+2]) % 140})
		}
		owners := make([]int, shards)
		valid := len(physical) > 0
		for _, p := range physical {
			for _, r := range p.Logical {
				if r.From > r.To || r.To >= shards {
					valid = false
					continue
				}
				for s := r.From; s <= r.To; s++ {
					owners[s]++
				}
			}
		}
		for _, n := range owners {
			valid = valid && n == 1
		}
		m, err := NewMap(shards, physical)
		if valid != (err == nil) {
			t.Fatalf("%+v: valid=%v but NewMap said %v", physical, valid, err)
		}
		if err == nil {
			for _, p := range physical {
				for _, r := range p.Logical {
					if m.Name(m.Physical(r.To)) != p.Name {
						t.Fatalf("shard %d not on %s", r.To, p.Name)
					}
				}
			}
		}
	})
}

func TestRouterSwap(t *testing.T) {
	before, _ := NewMap(4, []Physical{{"a", []Range{{0, 1}}}, {"b", []Range{{2, 3}}}})
	after, _ := NewMap(4, []Physical{{"a", []Range{{0, 2}}}, {"b", []Range{{3, 3}}}})
	r := NewRouter(before)
	if r.Map().Physical(2) != 1 {
		t.Fatal("shard 2 should start on b")
	}
	if err := r.Swap(after); err != nil || r.Map().Physical(2) != 0 {
		t.Fatalf("after the swap shard 2 is on %d (%v), want a", r.Map().Physical(2), err)
	}
	other, _ := NewMap(4, []Physical{{"a", []Range{{0, 3}}}})
	if err := r.Swap(other); !errors.Is(err, ErrInvalidMap) {
		t.Fatalf("a swap that drops a database: got %v", err)
	}
}

func TestPhysicalDoesNotAllocate(t *testing.T) {
	m, _ := NewMap(8192, []Physical{{"a", []Range{{0, 4095}}}, {"b", []Range{{4096, 8191}}}})
	r := NewRouter(m)
	s := 0
	if n := testing.AllocsPerRun(1000, func() { s = (s + 7) % 8192; _ = r.Map().Physical(s) }); n != 0 {
		t.Fatalf("%v allocations per lookup", n)
	}
}

func TestSwapRefusesNoMap(t *testing.T) {
	m, err := NewMap(4, []Physical{{Name: "a", Logical: []Range{{From: 0, To: 3}}}})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRouter(m)
	for _, bad := range []*Map{nil, {}} {
		if err := r.Swap(bad); !errors.Is(err, ErrInvalidMap) {
			t.Fatalf("Swap(%v) = %v, want ErrInvalidMap", bad, err)
		}
	}
	if r.Map() != m {
		t.Fatal("a refused swap changed the map")
	}
}
