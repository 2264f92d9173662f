package shardrouter

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// ErrInvalidMap is returned by [NewMap] for ranges that do not map every
// logical shard exactly once, or for bad names.
var ErrInvalidMap = errors.New("shardrouter: invalid shard map")

// Range is an inclusive range of logical shards.
type Range struct{ From, To int }

// Physical is one physical database: its name and the logical shards it holds.
type Physical struct {
	Name    string
	Logical []Range
}

// Map says which physical database holds each logical shard. It is immutable
// and safe for concurrent use.
type Map struct {
	names   []string
	owner   []uint16  // logical shard → index into names
	logical [][]int   // physical database → the logical shards it holds
	ranges  [][]Range // the same, as ranges
	serving Set       // the databases that hold a logical shard
}

// maxNameLength is the most characters a physical database's name has: the
// plugin's tables keep names in VARCHAR(191), the longest key MySQL's older
// InnoDB row formats index in utf8mb4.
const maxNameLength = 191

// maxPhysical is how many physical databases a map can name.
const maxPhysical = 1 << 16

// NewMap validates that the ranges of physical map each of the shardCount
// logical shards exactly once and that the names are unique and non-empty.
// The error wraps [ErrInvalidMap] and names the first gap or overlap.
func NewMap(shardCount int, physical []Physical) (*Map, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidMap}, args...)...)
	}
	switch {
	case shardCount <= 0:
		return nil, bad("%d logical shards", shardCount)
	case len(physical) == 0:
		return nil, bad("no physical databases")
	case len(physical) > maxPhysical:
		return nil, bad("%d physical databases, at most %d", len(physical), maxPhysical)
	}
	m := &Map{names: make([]string, len(physical)), owner: make([]uint16, shardCount)}
	holder := make([]int, shardCount) // index+1 of the database mapping each shard; 0: none yet
	for i, p := range physical {
		if strings.TrimSpace(p.Name) == "" {
			return nil, bad("physical database %d has no name", i)
		}
		if n := utf8.RuneCountInString(p.Name); n > maxNameLength {
			return nil, bad("physical database %d's name has %d characters, at most %d (the plugin's tables keep it): %.40q…", i, n, maxNameLength, p.Name)
		}
		if j := slices.IndexFunc(physical[:i], func(q Physical) bool { return strings.EqualFold(q.Name, p.Name) }); j >= 0 && physical[j].Name == p.Name {
			return nil, bad("two physical databases are named %q", p.Name)
		} else if j >= 0 { // the shared map's tables compare names as MySQL does, without case
			return nil, bad("two physical databases are named %q and %q, which differ only in case", physical[j].Name, p.Name)
		}
		m.names[i] = p.Name
		for _, r := range p.Logical {
			if r.From > r.To {
				return nil, bad("%s: range %d..%d runs backwards: give From <= To", p.Name, r.From, r.To)
			}
			if r.From < 0 || r.To >= shardCount {
				return nil, bad("%s: range %d..%d is not within 0..%d", p.Name, r.From, r.To, shardCount-1)
			}
			for s := r.From; s <= r.To; s++ {
				if holder[s] != 0 {
					return nil, bad("logical shard %d is mapped to both %s and %s", s, physical[holder[s]-1].Name, p.Name)
				}
				holder[s] = i + 1
				m.owner[s] = uint16(i)
			}
		}
	}
	m.logical = make([][]int, len(physical))
	m.ranges = make([][]Range, len(physical))
	for s, h := range holder {
		if h == 0 {
			continue
		}
		m.logical[h-1] = append(m.logical[h-1], s)
		if rs := m.ranges[h-1]; len(rs) > 0 && rs[len(rs)-1].To == s-1 {
			rs[len(rs)-1].To = s
		} else {
			m.ranges[h-1] = append(rs, Range{From: s, To: s})
		}
	}
	m.serving = Every(len(physical))
	if slices.ContainsFunc(m.logical, func(shards []int) bool { return len(shards) == 0 }) {
		m.serving = Set{} // a database given no range, or emptied by moves, serves nothing
		for i, shards := range m.logical {
			if len(shards) > 0 {
				m.serving = m.serving.With(i)
			}
		}
	}
	for s, h := range holder {
		if h == 0 {
			end := s
			for end+1 < shardCount && holder[end+1] == 0 {
				end++
			}
			return nil, bad("logical shards %d..%d are not mapped to any physical database", s, end)
		}
	}
	return m, nil
}

// Physical returns the index of the physical database holding logical shard
// s, which must be within 0..ShardCount-1.
func (m *Map) Physical(s int) int { return int(m.owner[s]) }

// Logical returns the logical shards physical database i holds, in order.
// The slice is the map's own: do not change it.
func (m *Map) Logical(i int) []int { return m.logical[i] }

// Ranges returns the logical shards physical database i holds as ranges,
// in order. The slice is the map's own: do not change it.
func (m *Map) Ranges(i int) []Range { return m.ranges[i] }

// Name returns the name of physical database i.
func (m *Map) Name(i int) string { return m.names[i] }

// Serving returns the physical databases that hold at least one logical
// shard: every database but those the map gives no range, which no
// statement needs.
func (m *Map) Serving() Set { return m.serving }

// Len is the number of physical databases.
func (m *Map) Len() int { return len(m.names) }

// ShardCount is the number of logical shards.
func (m *Map) ShardCount() int { return len(m.owner) }

// Router holds the current [Map]. Its methods are safe for concurrent use.
type Router struct {
	current atomic.Pointer[Map]
}

// NewRouter returns a router that starts with m.
func NewRouter(m *Map) *Router {
	r := &Router{}
	r.current.Store(m)
	return r
}

// Map returns the current map.
func (r *Router) Map() *Map { return r.current.Load() }

// Swap replaces the map; statements routed after it returns use next. The
// new map must name the same physical databases in the same order and cover
// the same number of logical shards: a swap moves logical shards, it does not
// open or close databases.
func (r *Router) Swap(next *Map) error {
	cur := r.current.Load()
	if next == nil || next.owner == nil {
		return fmt.Errorf("%w: no map to swap in (build one with NewMap)", ErrInvalidMap)
	}
	if next.ShardCount() != cur.ShardCount() || !slices.Equal(next.names, cur.names) {
		return fmt.Errorf("%w: a swapped map must keep the %d logical shards and the physical databases %v", ErrInvalidMap, cur.ShardCount(), cur.names)
	}
	r.current.Store(next)
	return nil
}
