package shardid

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/sqlscan"
)

// Misplaced is a count of rows of one table on one physical database whose
// logical shards the map sends elsewhere.
type Misplaced struct {
	Table    string
	Database string
	Rows     int64
	Keys     []any // up to ten of their keys
	// LeftByMove says that the rows are the frozen copy a move left on its
	// source, which CleanupMove deletes.
	LeftByMove bool
}

// Audit reads every physical database and reports the rows of the sharded
// tables the plugin has migrated that sit on a database their logical shard
// does not map to. Nothing is misplaced after a move is cleaned up.
func (p *Plugin) Audit(ctx context.Context) ([]Misplaced, error) {
	if p.maps == nil {
		return nil, fmt.Errorf("%w: no Config.Shards: every row is on the plugin's database", ErrInvalidConfig)
	}
	if _, err := p.refreshMap(ctx); err != nil {
		return nil, err
	}
	tables, err := p.registeredTables(ctx)
	if err != nil {
		return nil, err
	}
	moves, err := p.Moves(ctx)
	if err != nil {
		return nil, err
	}
	shardMap := p.router.Map()
	var found []Misplaced
	for k, ph := range p.physical {
		opened, err := p.opened(ctx, k)
		if err != nil {
			return nil, err
		}
		for _, t := range tables {
			if t.Strategy == joinRows {
				continue // its rows carry no key of their own
			}
			mt, err := p.movedTable(ctx, t, opened.sqlDB)
			if err != nil {
				return nil, fmt.Errorf("shardid: on %s: %w", ph.name, err)
			}
			where := "NOT (" + inRanges(mt.shard, mapstore.Ranges(shardMap.Logical(k))) + ")"
			var n int64
			table := sqlscan.Quote(mt.dialect, t.Name)
			if err := opened.sqlDB.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE "+where).Scan(&n); err != nil {
				return nil, fmt.Errorf("shardid: on %s: %w", ph.name, err)
			}
			if n == 0 {
				continue
			}
			keys, err := readRows(ctx, opened.sqlDB, 1, "SELECT "+sqlscan.Quote(mt.dialect, t.Key)+" FROM "+table+" WHERE "+where+" ORDER BY 1 LIMIT 10")
			if err != nil {
				return nil, err
			}
			m := Misplaced{Table: t.Name, Database: ph.name, Rows: n}
			for _, row := range keys {
				m.Keys = append(m.Keys, normalizeKey(row[0]))
			}
			m.LeftByMove = p.leftByMove(ctx, mt, opened, ph.name, moves, shardMap.Logical(k))
			found = append(found, m)
		}
	}
	return found, nil
}

// inRanges is an SQL condition: the shard expression is within one of ranges.
func inRanges(shard string, ranges []Range) string {
	if len(ranges) == 0 {
		return "1 = 0"
	}
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = shard + " BETWEEN " + strconv.Itoa(r.From) + " AND " + strconv.Itoa(r.To)
	}
	return strings.Join(parts, " OR ")
}

// leftByMove reports whether every misplaced row of a table on a database is
// in a range a move took off it and has not cleaned up yet.
func (p *Plugin) leftByMove(ctx context.Context, mt *movedTable, opened *openPhysical, name string, moves []MoveStatus, own []int) bool {
	allowed := mapstore.Ranges(own)
	for _, mv := range moves {
		if mv.From == name && mv.Phase == PhaseServing {
			allowed = append(allowed, mv.Logical)
		}
	}
	var n int64
	err := opened.sqlDB.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+sqlscan.Quote(mt.dialect, mt.name)+" WHERE NOT ("+inRanges(mt.shard, allowed)+")").Scan(&n)
	return err == nil && n == 0 && len(allowed) > len(mapstore.Ranges(own))
}
