package shardrouter

import (
	"errors"
	"slices"

	"gorm.io/gorm/clause"
)

// Parts is the plan of a statement over several databases: what each of
// them is asked.
type Parts struct {
	// Singles tells, for each key column and each of its conditions that
	// [ValueLists] reads, whether the condition compares one value (col = ?)
	// rather than a list.
	Singles [][]bool
	// Parts are the databases that can hold rows the conditions allow, in
	// the order they were given.
	Parts []Part
}

// Part is what one database of a statement over several is asked: its own
// rows of a batch, or its own values of the conditions' lists.
type Part struct {
	Database int
	// Rows are indexes into the statement's rows, in their order ([PlanRows]).
	Rows []int
	// Values holds, for each key column and each of its conditions, the
	// values of that condition whose rows the database holds, in their order.
	Values [][][]any
	// Keep, when not nil, are the ranges the map gives the database: a part
	// no key value pins must read and write only their rows, since a
	// database may hold a move's copy of a range it does not serve.
	Keep []Range
	// Pinned says a key value pins the part's rows to the shards it names.
	Pinned bool
}

// PlanParts plans a statement on databases whose conditions are where: each
// database that holds a value of every condition on a key column gets a part
// with those values only (a database without a value of some condition
// holds none of its rows). Without such a condition, each part keeps to the
// ranges the map gives its database.
func PlanParts(where []clause.Expression, keys []KeyColumn, databases []int, m *Map) Parts {
	type list struct {
		values   []any
		database []int // of each value; -1 for NULL, or a value no database holds
		anywhere bool  // a value rows may hold on any database: every part gets the whole list
	}
	plan := Parts{Singles: make([][]bool, len(keys))}
	lists := make([][]list, len(keys))
	for i, key := range keys {
		values, singles := ValueLists(where, key.Matches)
		plan.Singles[i] = singles
		for _, vs := range values {
			l := list{values: vs, database: make([]int, len(vs))}
			for n, v := range vs {
				l.database[n] = -1
				s, err := key.ShardOf(v)
				if err == nil {
					l.database[n] = m.Physical(s)
				}
				l.anywhere = l.anywhere || errors.Is(err, ErrAnyShard)
			}
			lists[i] = append(lists[i], l)
		}
	}
	pinned := slices.ContainsFunc(lists, func(ls []list) bool {
		return slices.ContainsFunc(ls, func(l list) bool { return !l.anywhere })
	})
	// Each list split once by database (not read once per database: a long
	// list over many databases would cost their product).
	at := make([]int, slices.Max(append([]int{0}, databases...))+1) // a database's place in databases, plus one
	for n, k := range databases {
		if at[k] == 0 {
			at[k] = n + 1
		}
	}
	split := make([][][][]any, len(keys)) // by key, list and place: the values
	for i := range keys {
		split[i] = make([][][]any, len(lists[i]))
		for j, l := range lists[i] {
			own := make([][]any, len(databases))
			split[i][j] = own
			if l.anywhere {
				for n := range own {
					own[n] = slices.Clip(l.values) // shared: an append copies
				}
				continue
			}
			counts := make([]int, len(databases))
			for _, k := range l.database {
				if k >= 0 && k < len(at) && at[k] > 0 {
					counts[at[k]-1]++
				}
			}
			for n, c := range counts {
				own[n] = make([]any, 0, c)
			}
			for n, k := range l.database {
				if k >= 0 && k < len(at) && at[k] > 0 {
					own[at[k]-1] = append(own[at[k]-1], l.values[n])
				}
			}
		}
	}
	for _, k := range databases {
		part := Part{Database: k, Values: make([][][]any, len(keys)), Pinned: pinned}
		if !pinned {
			part.Keep = m.Keep(k)
		}
		empty := false
		for i := range keys {
			part.Values[i] = make([][]any, 0, len(lists[i]))
			for j := range lists[i] {
				own := split[i][j][at[k]-1]
				part.Values[i] = append(part.Values[i], own)
				empty = empty || len(own) == 0
			}
		}
		if !empty {
			plan.Parts = append(plan.Parts, part)
		}
	}
	return plan
}

// Keep is the ranges database k holds (empty, not nil, for none), or nil
// when it holds every shard: what a statement there that no key pins
// keeps to.
func (m *Map) Keep(k int) []Range {
	rs := m.ranges[k]
	if len(rs) == 1 && rs[0] == (Range{From: 0, To: len(m.owner) - 1}) {
		return nil
	}
	return append([]Range{}, rs...)
}
