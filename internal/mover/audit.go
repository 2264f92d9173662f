package mover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/sqlscan"
	"github.com/shardid/shardid/shardrouter"
)

// Misplaced is a count of rows of one table on one physical database whose
// logical shards the map sends elsewhere. It is plain data, safe for
// concurrent reads.
type Misplaced struct {
	Table    string
	Database string
	Rows     int64
	Keys     []any // up to ten of their keys (of a join table, their owners')
	// LeftByMove says that the rows are a move's copy: the target's while
	// the move runs, or the frozen copy on the source after its cutover,
	// which Cleanup deletes.
	LeftByMove bool
}

// UnreadDatabaseError is a physical database Audit could not read. Audit
// joins one for each, beside what it found on the others.
type UnreadDatabaseError struct {
	Database string
	Err      error
}

func (e *UnreadDatabaseError) Error() string {
	if e.Err == nil {
		return "shardid: on " + e.Database + ": not read"
	}
	return "shardid: on " + e.Database + ": " + strings.TrimPrefix(e.Err.Error(), "shardid: ")
}

func (e *UnreadDatabaseError) Unwrap() error { return e.Err }

// Audit reads every physical database and reports the rows of the sharded
// tables the plugin has migrated that sit on a database their logical shard
// does not map to. A database it cannot read does not hide the others: what
// it found on those is returned with an error naming each it could not read.
// A move that starts, cuts over or ends while it reads changes which rows
// are a move's copy: it then reads again, by the map and moves of then.
func (m *Mover) Audit(ctx context.Context, d Driver) ([]Misplaced, error) {
	tables, err := d.Tables(ctx, nil)
	if err != nil {
		return nil, err
	}
	before, err := m.auditedState(ctx, d)
	for attempt := 1; ; attempt++ {
		if err != nil {
			return nil, err
		}
		var found []Misplaced
		var unread []error
		for k, name := range d.Databases() {
			on, err := auditDatabase(ctx, d, k, tables, mapstore.Ranges(before.shardMap.Logical(k)), moveCopiesOn(name, before.moves))
			if err != nil {
				unread = append(unread, &UnreadDatabaseError{Database: name, Err: err})
				continue
			}
			found = append(found, on...)
		}
		after, err := m.auditedState(ctx, d)
		if err == nil && after.same(before) {
			return found, errors.Join(unread...)
		}
		if err == nil && attempt == 3 {
			return nil, fmt.Errorf("shardid: audit: the shared map or its moves changed while it read the databases, %d times: run it again", attempt)
		}
		before = after
	}
}

// auditedState is the map and the moves an audit reads the databases by.
type auditedState struct {
	shardMap *shardrouter.Map
	moves    []Status
}

// auditedState reads the map, then the moves: a cutover between the two
// readings changes the moves read after it, so that same tells.
func (m *Mover) auditedState(ctx context.Context, d Driver) (auditedState, error) {
	if _, err := d.RefreshMap(ctx); err != nil {
		return auditedState{}, err
	}
	shardMap := d.ShardMap()
	moves, err := m.Moves(ctx, d)
	return auditedState{shardMap: shardMap, moves: moves}, err
}

// same reports whether s and o hold one map and the same moves' copies:
// the phases of a copy under way (copy, catch-up, cutover) are one to it.
func (s auditedState) same(o auditedState) bool {
	return s.shardMap == o.shardMap && slices.EqualFunc(s.moves, o.moves, func(a, b Status) bool {
		return a.Logical == b.Logical && a.From == b.From && a.To == b.To && copyOf(a.Phase) == copyOf(b.Phase) && a.Started.Equal(b.Started)
	})
}

// copyOf is which copy a move in phase keeps (as moveCopiesOn reads it):
// none yet, the target's, the source's, or none any more.
func copyOf(phase string) int {
	switch i := phaseIndex(phase); {
	case i == phaseIndex(PhasePrepare):
		return 0
	case i > phaseIndex(PhasePrepare) && i < phaseIndex(PhaseServing):
		return 1
	case phase == PhaseServing:
		return 2
	}
	return 3 // cleaned, cancelled (or being cancelled)
}

// auditDatabase counts the rows of tables on physical database k outside its
// own ranges: strays, and those of the moves' copies on it.
func auditDatabase(ctx context.Context, d Driver, k int, tables []Table, own, copies []Range) ([]Misplaced, error) {
	db, err := d.Open(ctx, k)
	if err != nil {
		return nil, err
	}
	var found []Misplaced
	for _, t := range tables {
		if t.Join && t.Key == "" {
			continue // no column of its owner's key recorded: migrated by an older version
		}
		mt, err := newMovedTable(ctx, d.Fence(), t, db)
		if err != nil && tableMissing(err) && len(own) == 0 && len(copies) == 0 {
			continue // a database given no logical shards and not migrated yet (a new target) holds no rows of the table
		}
		if err != nil {
			return nil, err
		}
		strays := "NOT (" + fence.InRanges(mt.shard, append(slices.Clone(own), copies...)) + ")"
		inCopies := "(" + fence.InRanges(mt.shard, copies) + ") AND NOT (" + fence.InRanges(mt.shard, own) + ")"
		for _, part := range []struct {
			where  string
			byMove bool
		}{{strays, false}, {inCopies, true}} {
			if part.byMove && len(copies) == 0 {
				continue
			}
			m, err := misplacedRows(ctx, db, mt, part.where)
			if err != nil {
				return nil, err
			}
			if m.Rows > 0 {
				m.Database, m.LeftByMove = d.Databases()[k], part.byMove
				found = append(found, m)
			}
		}
	}
	return found, nil
}

// moveCopiesOn returns the ranges of which a move keeps a copy on database
// name, which the map does not give it: a target's copy from the copy phase
// to the cutover, a source's frozen copy after it until the cleanup.
func moveCopiesOn(name string, moves []Status) []Range {
	var copies []Range
	for _, mv := range moves {
		// The copy begins after the prepare, which refuses a target holding rows of the range.
		copying := mv.To == name && phaseIndex(mv.Phase) > phaseIndex(PhasePrepare) && phaseIndex(mv.Phase) < phaseIndex(PhaseServing)
		if copying || mv.From == name && mv.Phase == PhaseServing {
			copies = append(copies, mv.Logical)
		}
	}
	return copies
}

// misplacedRows counts the rows of a table that match where, with up to ten
// of their keys.
func misplacedRows(ctx context.Context, db *sql.DB, mt *movedTable, where string) (Misplaced, error) {
	m := Misplaced{Table: mt.name}
	table := sqlscan.Quote(mt.dialect, mt.name)
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE "+where).Scan(&m.Rows); err != nil || m.Rows == 0 {
		return m, err
	}
	// DISTINCT: a join table's key is its owner's, which several rows share.
	keys, err := readRows(ctx, db, 1, "SELECT DISTINCT "+sqlscan.Quote(mt.dialect, mt.key)+" FROM "+table+" WHERE "+where+" ORDER BY 1 LIMIT 10")
	for _, row := range keys {
		m.Keys = append(m.Keys, normalizeKey(row[0]))
	}
	return m, err
}
