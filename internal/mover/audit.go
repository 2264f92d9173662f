package mover

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/sqlscan"
)

// Misplaced is a count of rows of one table on one physical database whose
// logical shards the map sends elsewhere. It is plain data, safe for
// concurrent reads.
type Misplaced struct {
	Table    string
	Database string
	Rows     int64
	Keys     []any // up to ten of their keys
	// LeftByMove says that the rows are the frozen copy a move left on its
	// source, which Cleanup deletes.
	LeftByMove bool
}

// Audit reads every physical database and reports the rows of the sharded
// tables the plugin has migrated that sit on a database their logical shard
// does not map to.
func (m *Mover) Audit(ctx context.Context, d Driver) ([]Misplaced, error) {
	if _, err := d.RefreshMap(ctx); err != nil {
		return nil, err
	}
	tables, err := d.Tables(ctx, nil)
	if err != nil {
		return nil, err
	}
	moves, err := m.Moves(ctx, d)
	if err != nil {
		return nil, err
	}
	shardMap := d.ShardMap()
	var found []Misplaced
	for k, name := range d.Databases() {
		db, err := d.Open(ctx, k)
		if err != nil {
			return nil, err
		}
		for _, t := range tables {
			if t.Join {
				continue // its rows carry no key of their own
			}
			mt, err := newMovedTable(ctx, d.Fence(), t, db)
			if err != nil {
				return nil, fmt.Errorf("shardid: on %s: %w", name, err)
			}
			where := "NOT (" + fence.InRanges(mt.shard, mapstore.Ranges(shardMap.Logical(k))) + ")"
			var n int64
			table := sqlscan.Quote(mt.dialect, t.Name)
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE "+where).Scan(&n); err != nil {
				return nil, fmt.Errorf("shardid: on %s: %w", name, err)
			}
			if n == 0 {
				continue
			}
			keys, err := readRows(ctx, db, 1, "SELECT "+sqlscan.Quote(mt.dialect, t.Key)+" FROM "+table+" WHERE "+where+" ORDER BY 1 LIMIT 10")
			if err != nil {
				return nil, err
			}
			misplaced := Misplaced{Table: t.Name, Database: name, Rows: n}
			for _, row := range keys {
				misplaced.Keys = append(misplaced.Keys, normalizeKey(row[0]))
			}
			misplaced.LeftByMove = leftByMove(ctx, mt, db, name, moves, shardMap.Logical(k))
			found = append(found, misplaced)
		}
	}
	return found, nil
}

// leftByMove reports whether every misplaced row of a table on a database is
// in a range a move took off it and has not cleaned up yet.
func leftByMove(ctx context.Context, mt *movedTable, db *sql.DB, name string, moves []Status, own []int) bool {
	allowed := mapstore.Ranges(own)
	for _, mv := range moves {
		if mv.From == name && mv.Phase == PhaseServing {
			allowed = append(allowed, mv.Logical)
		}
	}
	var n int64
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+sqlscan.Quote(mt.dialect, mt.name)+" WHERE NOT ("+fence.InRanges(mt.shard, allowed)+")").Scan(&n)
	return err == nil && n == 0 && len(allowed) > len(mapstore.Ranges(own))
}
