package mover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/sqlscan"
)

// colocatedKind is how the colocate column of t carries its shard, read
// from the column's type on db: an integer column an int64 ID, a text or
// uuid one a text UUID; ok is false for any other (bytes), whose shard SQL
// cannot read.
func colocatedKind(ctx context.Context, db *sql.DB, t *movedTable) (kind fence.KeyKind, ok bool, err error) {
	columns, err := describeColumns(ctx, db, t.dialect, t.name)
	if err != nil {
		return 0, false, err
	}
	i := slices.IndexFunc(columns, func(c column) bool { return strings.EqualFold(c.name, t.colocate) })
	if i < 0 {
		return 0, false, nil
	}
	declared := strings.ToLower(columns[i].declared)
	switch {
	case strings.Contains(declared, "int"):
		return fence.KeyInt64, true, nil
	case strings.Contains(declared, "char"), strings.Contains(declared, "text"), strings.Contains(declared, "uuid"):
		return fence.KeyUUIDText, true, nil
	}
	return 0, false, nil
}

// refusedByColocatedRowsAcrossTheEdge refuses a move whose tables of a
// colocate rule hold rows on the source whose key and colocate column name
// logical shards on the two sides of the range's edge. The plugin never
// writes such a row (a colocated row takes its shard from the column), but
// a table that held rows before it was sharded does: an auto-increment key
// 3001 is of logical shard 2 whatever its parent's. A move carries each row
// by its key, so the row would leave the database its parent's shard reads
// (Preload, a condition on the column would not find it there), or stay
// when its parent leaves. Keeping both sides of every such row together
// keeps every read finding it.
func (mv *run) refusedByColocatedRowsAcrossTheEdge(ctx context.Context) error {
	for _, t := range mv.tables {
		if t.colocate == "" || t.join {
			continue
		}
		kind, ok, err := colocatedKind(ctx, mv.source, t)
		if err != nil {
			return errs.Wrap(err, "reading the columns of %s on %s", t.name, mv.st.From)
		}
		if !ok {
			continue
		}
		other, err := mv.fence.ShardSQL(fence.Table{Name: t.name, Key: t.colocate, Kind: kind}, "")
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalid, t.name, err)
		}
		within := func(shard string) string {
			return fmt.Sprintf("(%s BETWEEN %d AND %d)", shard, mv.st.Logical.From, mv.st.Logical.To)
		}
		q := func(s string) string { return sqlscan.Quote(t.dialect, s) }
		// CASE reads the column's shard only of a value that names one:
		// PostgreSQL does not evaluate AND's operands in their order.
		rows, err := readRows(ctx, mv.source, 1, "SELECT "+q(t.key)+" FROM "+q(t.name)+" WHERE "+q(t.colocate)+" IS NOT NULL AND "+
			"CASE WHEN "+namesNoShardSQL(t.dialect, q(t.colocate), kind)+" THEN 0 WHEN "+within(t.shard)+" <> "+within(other)+" THEN 1 ELSE 0 END = 1 ORDER BY "+q(t.key)+" LIMIT 5")
		if err != nil {
			return errs.Wrap(err, "reading the rows of %s whose key and %s name logical shards across %d-%d on %s", t.name, t.colocate, mv.st.Logical.From, mv.st.Logical.To, mv.st.From)
		}
		if len(rows) == 0 {
			continue
		}
		keys := make([]any, len(rows))
		for i, row := range rows {
			keys[i] = normalizeKey(row[0])
		}
		return fmt.Errorf("%w: rows of table %s on %s (keys %v) are of logical shards on one side of %d-%d's edge and their colocate column %s names a shard on the other: "+
			"rows the plugin did not key (written before the table was sharded); a move carries each row by its key, so reads by %s (a Preload, a condition on it) would look for them on the other database; "+
			"move a range that holds the shards of both (the low logical shards that small auto-increment keys decode to, together), or leave them on %s",
			ErrInvalid, t.name, mv.st.From, keys, mv.st.Logical.From, mv.st.Logical.To, t.colocate, t.colocate, mv.st.From)
	}
	return nil
}

// hashChunk is how many rows of a hash-placed table one read of
// refusedByHashRowsAcrossTheEdge takes.
const hashChunk = 5000

// refusedByHashRowsAcrossTheEdge refuses a move whose tables of a hash rule
// hold rows on the source whose key and the hash of their hash column name
// logical shards on the two sides of the range's edge: rows written before
// the table was sharded, whose auto-increment key is of a logical shard
// unrelated to their column's hash. A move carries each row by its key, so
// the row would leave the database that reads by the column (which route by
// its hash) look on, or stay when that database's shards leave. SQL cannot
// hash as the plugin does, so each row's (key, column) is read, in chunks
// of the key's order, and hashed by the driver; a table without a hash
// rule reads nothing.
func (mv *run) refusedByHashRowsAcrossTheEdge(ctx context.Context) error {
	within := func(shard int64) bool { return shard >= int64(mv.st.Logical.From) && shard <= int64(mv.st.Logical.To) }
	for _, t := range mv.tables {
		if t.given.Hash == "" || t.join {
			continue
		}
		shardOf, err := mv.d.HashShard(t.given)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalid, t.name, err)
		}
		if shardOf == nil {
			continue
		}
		q := func(s string) string { return sqlscan.Quote(t.dialect, s) }
		query := "SELECT " + q(t.key) + ", " + t.shard + ", " + q(t.given.Hash) + " FROM " + q(t.name) + " WHERE " + q(t.given.Hash) + " IS NOT NULL"
		var keys []any
		var after any
		for started := false; ; started = true {
			read := query
			var args []any
			if started {
				read += " AND " + q(t.key) + " > " + placeholders(t.dialect, 0, 1)
				args = append(args, after)
			}
			rows, err := readRows(ctx, mv.source, 3, read+" ORDER BY "+q(t.key)+" LIMIT "+strconv.Itoa(hashChunk), args...)
			if err != nil {
				return errs.Wrap(err, "reading the keys and %s of %s on %s", t.given.Hash, t.name, mv.st.From)
			}
			for _, row := range rows {
				keyShard, ok := asInt64(row[1])
				if !ok {
					return fmt.Errorf("%w: %s: the logical shard of key %v reads as %T", ErrInvalid, t.name, normalizeKey(row[0]), row[1])
				}
				hashShard, err := shardOf(row[2])
				if errors.Is(err, ErrInvalid) {
					return err
				} else if err != nil {
					continue // a value of no shard (empty): reads by it route nowhere
				}
				if within(keyShard) != within(int64(hashShard)) && len(keys) < 5 {
					keys = append(keys, normalizeKey(row[0]))
				}
			}
			if len(keys) >= 5 || len(rows) < hashChunk {
				break
			}
			after = normalizeKey(rows[len(rows)-1][0])
		}
		if len(keys) == 0 {
			continue
		}
		return fmt.Errorf("%w: rows of table %s on %s (keys %v) are of logical shards on one side of %d-%d's edge and the hash of their column %s names a shard on the other: "+
			"rows the plugin did not key (written before the table was sharded); a move carries each row by its key, so reads by %s would look for them on the other database; "+
			"move a range that holds the shards of both, or leave them on %s",
			ErrInvalid, t.name, mv.st.From, keys, mv.st.Logical.From, mv.st.Logical.To, t.given.Hash, t.given.Hash, mv.st.From)
	}
	return nil
}

// asInt64 reads an integer as a driver gives it: an int64, or its text.
func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case uint64:
		return int64(x), true
	case []byte:
		n, err := strconv.ParseInt(string(x), 10, 64)
		return n, err == nil
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// namesNoShardSQL is SQL true of a colocate column's value that names no
// shard: an integer that is not positive, an empty or nil UUID. The plugin
// writes one in a row whose owner it let go (GORM's orphans hold the zero
// value, and an update may write it), and reads by it look on every
// database, so the row is found wherever its key's shard takes it.
func namesNoShardSQL(dialect, column string, kind fence.KeyKind) string {
	if kind == fence.KeyInt64 {
		return column + " <= 0"
	}
	switch dialect {
	case "postgres":
		column = "CAST(" + column + " AS text)"
	case "mysql":
		column = "CAST(" + column + " AS CHAR)"
	}
	return "(" + column + " = '' OR " + column + " = '00000000-0000-0000-0000-000000000000')"
}
