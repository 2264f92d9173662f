package mover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/sqlerr"
	"github.com/shardid/shardid/internal/sqlscan"
)

// byForeignKeys orders tables so that a table another references by a
// foreign key (on the source or on the target) comes before it: the copy
// and the catch-up write a parent's rows before its children's, and
// deletes (the catch-up's, a cancel's, a cleanup's) go in the reverse
// order, children first, so that neither a RESTRICT nor a missing parent
// fails them. Tables no key relates keep their order, and a cycle is
// broken by it. A table referencing itself is marked so: its rows are
// written and deleted in any order (inAnyOrder).
//
// The target's keys are read as it answers: one that does not fails the
// move's own first statement there, while a cancel of a move that never
// wrote it (its target down in the prepare) needs nothing of it.
func byForeignKeys(ctx context.Context, dialect string, tables []*movedTable, source, target *sql.DB) ([]*movedTable, error) {
	for _, t := range tables { // read anew: a key may have been made or dropped since
		t.referencesItself, t.selfKeys, t.cycleWith = false, nil, nil
	}
	parents := map[string][]string{} // child: its parents among tables
	for _, db := range []*sql.DB{source, target} {
		for _, t := range tables {
			refs, err := referencedTables(ctx, db, dialect, t.name)
			if err != nil && db == target {
				break
			} else if err != nil {
				return nil, errs.Wrap(err, "reading the foreign keys of %s", t.name)
			}
			for _, p := range refs {
				t.referencesItself = t.referencesItself || strings.EqualFold(p, t.name) && !t.join
				i := slices.IndexFunc(tables, func(m *movedTable) bool { return strings.EqualFold(m.name, p) })
				if i >= 0 && tables[i].name != t.name && !slices.Contains(parents[t.name], tables[i].name) {
					parents[t.name] = append(parents[t.name], tables[i].name)
				}
			}
		}
	}
	for _, t := range tables {
		if t.referencesItself { // a target that does not answer has its rows written in any order
			t.selfKeys, _ = readSelfKeys(ctx, target, t)
		}
	}
	if len(parents) == 0 {
		return tables, nil
	}
	ordered := make([]*movedTable, 0, len(tables))
	placed := map[string]bool{}
	for len(ordered) < len(tables) {
		next := -1
		for i, t := range tables {
			if placed[t.name] {
				continue
			}
			if next < 0 {
				next = i // a cycle: the first left
			}
			if !slices.ContainsFunc(parents[t.name], func(p string) bool { return !placed[p] }) {
				next = i
				break
			}
		}
		for _, p := range parents[tables[next].name] {
			if !placed[p] { // a cycle, which refusedByForeignKeys refuses
				tables[next].cycleWith = append(tables[next].cycleWith, p)
			}
		}
		placed[tables[next].name] = true
		ordered = append(ordered, tables[next])
	}
	return ordered, nil
}

// referencedTables names the tables a table's foreign keys reference on
// db (none for a table db lacks).
func referencedTables(ctx context.Context, db *sql.DB, dialect, table string) ([]string, error) {
	return tablesOfKeys(ctx, db, dialect, table, map[string]string{
		"mysql":    "SELECT REFERENCED_TABLE_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME = ? AND UNIQUE_CONSTRAINT_SCHEMA = DATABASE()",
		"postgres": "SELECT p.relname FROM pg_constraint k JOIN pg_class p ON p.oid = k.confrelid WHERE k.contype = 'f' AND k.conrelid = to_regclass($1) AND p.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass($1))",
		"sqlite":   `SELECT "table" FROM pragma_foreign_key_list(?)`,
	})
}

// referencingTables names the tables whose foreign keys reference table on
// db, those of another schema (MySQL's: another database of the server)
// with it: a table of the same name there is no moved table.
func referencingTables(ctx context.Context, db *sql.DB, dialect, table string) ([]string, error) {
	return tablesOfKeys(ctx, db, dialect, table, map[string]string{
		"mysql": "SELECT IF(CONSTRAINT_SCHEMA = DATABASE(), TABLE_NAME, CONCAT(CONSTRAINT_SCHEMA, '.', TABLE_NAME)) FROM information_schema.REFERENTIAL_CONSTRAINTS " +
			"WHERE UNIQUE_CONSTRAINT_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME = ?",
		"postgres": "SELECT CASE WHEN c.relnamespace = p.relnamespace THEN c.relname ELSE c.relnamespace::regnamespace::text || '.' || c.relname END " +
			"FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid WHERE k.contype = 'f' AND k.confrelid = to_regclass($1)",
		"sqlite": `SELECT m.name FROM sqlite_master m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table' AND f."table" = ? COLLATE NOCASE`,
	})
}

// tablesOfKeys runs the dialect's query of queries (SQLite's for any other)
// for table and returns the table names it reads.
func tablesOfKeys(ctx context.Context, db *sql.DB, dialect, table string, queries map[string]string) ([]string, error) {
	q, ok := queries[dialect]
	if !ok {
		q = queries["sqlite"]
	}
	if dialect == "postgres" {
		table = sqlscan.Quote(dialect, table) // to_regclass reads a name as SQL does
	}
	rows, err := readRows(ctx, db, 1, q, table)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(rows))
	for i, row := range rows {
		names[i] = asText(row[0])
	}
	return names, nil
}

// missingParent reports whether err is a foreign key's refusal of a row
// whose parent the database lacks: on the target, a parent written on the
// source after its table's copy read it, which the change log carries.
func missingParent(err error) bool {
	if number, _, ok := sqlerr.MySQL(err); ok {
		return number == 1452 // ER_NO_REFERENCED_ROW_2
	}
	if code, _, ok := sqlerr.Postgres(err); ok {
		return code == "23503" // foreign_key_violation
	}
	return err != nil && strings.Contains(err.Error(), "FOREIGN KEY constraint failed")
}

// errUniqueValueHeld marks the refusal of a copied row whose value of a
// unique index other than the key a row of the target with another key
// holds: on MySQL/MariaDB, whose upsert leaves such a row as it is, found
// by mustBeWritten.
var errUniqueValueHeld = errors.New("a unique value held by another row")

// uniqueConflict reports whether err is the refusal of a write on a unique
// index (the key's upsert never is one: it updates the row instead).
func uniqueConflict(err error) bool {
	if errors.Is(err, errUniqueValueHeld) {
		return true
	}
	if number, _, ok := sqlerr.MySQL(err); ok {
		return number == 1062 // ER_DUP_ENTRY
	}
	if code, _, ok := sqlerr.Postgres(err); ok {
		return code == "23505" // unique_violation
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// referencedRow reports whether err is a foreign key's refusal of a write
// or delete: a row whose parent is missing, or a row still referenced.
func referencedRow(err error) bool {
	if number, _, ok := sqlerr.MySQL(err); ok {
		return number == 1451 || number == 1452 // ER_ROW_IS_REFERENCED_2, ER_NO_REFERENCED_ROW_2
	}
	return missingParent(err)
}

// inAnyOrder applies do to items of a table referencing itself: when a
// foreign key refuses them together (a row before its parent, a parent
// before its child), to one item at a time, again while some go through.
// It returns the items no pass could apply, with the last refusal; any
// other error at once, with the items not yet applied.
func inAnyOrder[T any](items []T, do func([]T) error) ([]T, error) {
	return inAnyOrderWhile(items, do, referencedRow)
}

// inAnyOrderWhile is inAnyOrder for the refusals retry reports.
func inAnyOrderWhile[T any](items []T, do func([]T) error, retry func(error) bool) ([]T, error) {
	err := do(items)
	if err == nil || !retry(err) {
		return nil, err
	}
	left := items
	for {
		var next []T
		var refusal error
		for i, item := range left {
			if err := do([]T{item}); err != nil && !retry(err) {
				return append(next, left[i:]...), err
			} else if err != nil {
				next, refusal = append(next, item), err
			}
		}
		if len(next) == 0 {
			return nil, nil
		}
		if len(next) == len(left) {
			return next, fmt.Errorf("%d rows of the table could be written or deleted in no order: they reference each other or a row the database lacks, or rows of another table reference them: %w", len(next), refusal)
		}
		left = next
	}
}

// refusedByForeignKeys refuses a move of tables that a table it does not
// carry references by a foreign key, on the source: that table's rows
// would reference rows moved off the database, and a cleanup's deletes
// would be refused (RESTRICT) or take them with them (ON DELETE CASCADE),
// rows the target never received. It refuses tables whose keys reference
// each other, of which the copy can write neither first, and rows that
// reference rows across the range's edge (refusedByReferencesAcrossTheEdge).
func (mv *run) refusedByForeignKeys(ctx context.Context) error {
	for _, t := range mv.tables {
		if len(t.cycleWith) > 0 {
			return fmt.Errorf("%w: table %s and %s reference each other by foreign keys: the copy can write neither before the other; drop one of the keys while the move runs", ErrInvalid, t.name, strings.Join(t.cycleWith, ", "))
		}
		children, err := referencingTables(ctx, mv.source, t.dialect, t.name)
		if err != nil {
			return errs.Wrap(err, "reading the foreign keys referencing %s on %s", t.name, mv.st.From)
		}
		for _, child := range children {
			if !slices.ContainsFunc(mv.tables, func(m *movedTable) bool { return strings.EqualFold(m.name, child) }) {
				return fmt.Errorf("%w: table %s on %s references %s by a foreign key and does not move with it: its rows would reference rows moved off %s, and the cleanup's deletes would fail or cascade to rows the target never received; give its model in Move.Models, or drop the key", ErrInvalid, child, mv.st.From, t.name, mv.st.From)
			}
		}
	}
	return mv.refusedByReferencesAcrossTheEdge(ctx, mv.st.Phase == PhaseServing)
}

// foreignKey is a foreign key of a moved table referencing a moved table
// (itself among them), column by column.
type foreignKey struct {
	name          string // the constraint's name (SQLite's: its columns)
	child, parent *movedTable
	columns, refs []string // the child's columns, and the parent's they reference
}

// foreignKeysAmong reads, on db, the foreign keys of t that reference
// moved tables.
func foreignKeysAmong(ctx context.Context, db *sql.DB, t *movedTable, tables []*movedTable) ([]foreignKey, error) {
	queries := map[string]string{
		"mysql": "SELECT CONSTRAINT_NAME, REFERENCED_TABLE_NAME, COLUMN_NAME, REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE " +
			"WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND REFERENCED_TABLE_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME IS NOT NULL " +
			"ORDER BY CONSTRAINT_NAME, ORDINAL_POSITION",
		"postgres": `SELECT k.conname, p.relname, a.attname, pa.attname FROM pg_constraint k
	JOIN pg_class p ON p.oid = k.confrelid
	CROSS JOIN LATERAL unnest(k.conkey, k.confkey) WITH ORDINALITY AS u(col, ref, pos)
	JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.col
	JOIN pg_attribute pa ON pa.attrelid = k.confrelid AND pa.attnum = u.ref
WHERE k.contype = 'f' AND k.conrelid = to_regclass($1) AND p.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass($1))
ORDER BY k.conname, u.pos`,
		"sqlite": `SELECT id, "table", "from", "to" FROM pragma_foreign_key_list(?) ORDER BY id, seq`,
	}
	q, ok := queries[t.dialect]
	if !ok {
		q = queries["sqlite"]
	}
	table := t.name
	if t.dialect == "postgres" {
		table = sqlscan.Quote(t.dialect, table)
	}
	rows, err := readRows(ctx, db, 4, q, table)
	if err != nil {
		return nil, err
	}
	var keys []foreignKey
	for _, row := range rows {
		name, parentName, column, ref := asText(row[0]), asText(row[1]), asText(row[2]), asText(row[3])
		i := slices.IndexFunc(tables, func(m *movedTable) bool { return strings.EqualFold(m.name, parentName) })
		if i < 0 {
			continue
		}
		if ref == "" || row[3] == nil { // SQLite's key of the parent's primary key
			ref = tables[i].key
		}
		if n := len(keys); n > 0 && keys[n-1].name == name {
			keys[n-1].columns = append(keys[n-1].columns, column)
			keys[n-1].refs = append(keys[n-1].refs, ref)
			continue
		}
		keys = append(keys, foreignKey{name: name, child: t, parent: tables[i], columns: []string{column}, refs: []string{ref}})
	}
	if t.dialect != "mysql" && t.dialect != "postgres" {
		for i := range keys { // SQLite's keys have numbers for names
			keys[i].name = "(" + strings.Join(keys[i].columns, ", ") + ")"
		}
	}
	return keys, nil
}

// crossingRows returns the keys of up to limit rows of k's child that
// reference a row of its parent across the edge of r: one outside r that
// references one inside it, and, unless inward, one inside it that
// references one outside; with parents, a parent of those keys alone.
func (mv *run) crossingRows(ctx context.Context, db *sql.DB, k foreignKey, r Range, inward bool, limit int, parents ...any) ([]any, error) {
	return mv.referencingRows(ctx, db, k, func(child, parent string) string {
		if !inward {
			return within(child, r) + " <> " + within(parent, r)
		}
		return "NOT " + within(child, r) + " AND " + within(parent, r)
	}, limit, parents)
}

// referencingRows returns the keys of up to limit rows (0: all) of k's
// child that reference a row of its parent where cond holds of the child's
// and the parent's shard expressions; with parents, a parent of those keys
// alone.
func (mv *run) referencingRows(ctx context.Context, db *sql.DB, k foreignKey, cond func(child, parent string) string, limit int, parents []any) ([]any, error) {
	childShard, err := mv.fence.ShardSQL(k.child.fenced, "c")
	if err != nil {
		return nil, err
	}
	parentShard, err := mv.fence.ShardSQL(k.parent.fenced, "p")
	if err != nil {
		return nil, err
	}
	q := func(s string) string { return sqlscan.Quote(k.child.dialect, s) }
	on := make([]string, len(k.columns))
	for i := range k.columns {
		on[i] = "c." + q(k.columns[i]) + " = p." + q(k.refs[i])
	}
	where := cond(childShard, parentShard)
	if len(parents) > 0 {
		where += " AND p." + q(k.parent.key) + " IN (" + placeholders(k.child.dialect, 0, len(parents)) + ")"
	}
	query := "SELECT c." + q(k.child.key) + " FROM " + q(k.child.name) + " c JOIN " + q(k.parent.name) + " p ON " +
		strings.Join(on, " AND ") + " WHERE " + where
	if limit > 0 {
		query += " LIMIT " + fmt.Sprint(limit)
	}
	rows, err := readRows(ctx, db, 1, query, parents...)
	keys := make([]any, len(rows))
	for i, row := range rows {
		keys[i] = normalizeKey(row[0])
	}
	return keys, err
}

// within is an SQL condition: the shard expression shard is within r.
func within(shard string, r Range) string {
	return fmt.Sprintf("(%s BETWEEN %d AND %d)", shard, r.From, r.To)
}

// withCopiesGoneWithThem adds to gone (by table, the keys of copies whose
// rows the source no longer has, which the catch-up deletes on the target)
// the copies that reference them by a foreign key among the moved tables,
// read again on the source: those it no longer has either join gone, and
// so on, those it has are written again as they are. MySQL/MariaDB run no
// trigger for the rows a key's ON DELETE CASCADE or SET NULL deletes or
// changes, so the log names only the row deleted, while the target's
// delete of its copy would cascade to theirs, and on to rows of the
// target's own ranges that reference those, which no refusal would see
// (or, without the key on the target, leave their copies behind). The
// keys are the source's and the target's.
func (mv *run) withCopiesGoneWithThem(ctx context.Context, gone map[string][]any) error {
	seen := map[string]bool{} // table and key, of every copy looked at
	mark := func(table string, key any) bool {
		id := table + "\x00" + fmt.Sprint(key)
		if seen[id] {
			return false
		}
		seen[id] = true
		return true
	}
	for table, keys := range gone {
		for _, key := range keys {
			mark(table, key)
		}
	}
	inside := func(child, _ string) string { return within(child, mv.st.Logical) }
	for from := gone; len(from) > 0; {
		referencing := map[string][]any{}
		for _, t := range mv.tables {
			if t.join { // rows of an owner's, which the log names by the owner's key
				continue
			}
			var keys []foreignKey // the source's, whose cascades the log missed, and the target's, whose deletes cascade
			for _, db := range []struct {
				db   *sql.DB
				name string
			}{{mv.source, mv.st.From}, {mv.target, mv.st.To}} {
				more, err := foreignKeysAmong(ctx, db.db, t, mv.tables)
				if err != nil {
					return errs.Wrap(err, "reading the foreign keys of %s on %s", t.name, db.name)
				}
				for _, k := range more {
					if !slices.ContainsFunc(keys, func(o foreignKey) bool {
						return o.parent == k.parent && slices.Equal(o.columns, k.columns) && slices.Equal(o.refs, k.refs)
					}) {
						keys = append(keys, k)
					}
				}
			}
			for _, k := range keys {
				for parents := range slices.Chunk(from[k.parent.name], replayKeys) {
					rows, err := mv.referencingRows(ctx, mv.target, k, inside, 0, parents)
					if err != nil {
						return errs.Wrap(err, "reading the copies of %s that reference deleted copies by foreign key %s on %s", t.name, k.name, mv.st.To)
					}
					for _, key := range rows {
						if mark(t.name, key) {
							referencing[t.name] = append(referencing[t.name], key)
						}
					}
				}
			}
		}
		next := map[string][]any{}
		for _, t := range mv.tables {
			for keys := range slices.Chunk(referencing[t.name], replayKeys) {
				left, err := mv.replayKeys(ctx, t, keys)
				if err != nil {
					return err
				}
				if len(left) > 0 {
					next[t.name] = append(next[t.name], left...)
					gone[t.name] = append(gone[t.name], left...)
				}
			}
		}
		from = next
	}
	return nil
}

// refusedByReferencesAcrossTheEdge refuses a move whose moved tables have
// rows on the source that reference, by a foreign key, a row on the other
// side of the range's edge: a move carries a row by its own key, so the
// copy would miss the parent of a row inside the range, and the cleanup's
// delete of a row inside it would fail, or (ON DELETE CASCADE, SET NULL)
// change a row outside it, of a range the source still serves. A cleanup
// (inward) looks for rows outside the range referencing rows inside alone:
// a row inside it referencing one outside goes with the rest.
func (mv *run) refusedByReferencesAcrossTheEdge(ctx context.Context, inward bool) error {
	why := "the copy would miss their parents, and the cleanup's deletes would fail, or cascade to rows the source still serves"
	if inward {
		why = "the cleanup's deletes would fail, or cascade to rows the source serves"
	}
	return mv.refusedByRowsAcrossTheEdge(ctx, mv.source, mv.st.From, inward, why, nil)
}

// refusedByRowsReferencingDeletedCopies refuses a round of the catch-up
// whose deletes of copies (by table, their keys), rows the source no longer
// has, rows of the target's own ranges reference: made so while the move
// runs, which the deletes would fail on, or delete or change with them.
func (mv *run) refusedByRowsReferencingDeletedCopies(ctx context.Context, copies map[string][]any) error {
	if len(copies) == 0 {
		return nil
	}
	return mv.refusedByRowsAcrossTheEdge(ctx, mv.target, mv.st.To, true,
		"the catch-up's deletes of the copies of rows deleted on the source would fail, or cascade to rows the target serves", copies)
}

// refusedByRowsAcrossTheEdge refuses, saying why, when rows of moved tables
// on db (named name) reference rows across the range's edge by a foreign
// key between them; inward, rows outside the range referencing rows inside
// it alone; with only, rows referencing those of only's keys (by table).
func (mv *run) refusedByRowsAcrossTheEdge(ctx context.Context, db *sql.DB, name string, inward bool, why string, only map[string][]any) error {
	for _, t := range mv.tables {
		keys, err := foreignKeysAmong(ctx, db, t, mv.tables)
		if err != nil {
			return errs.Wrap(err, "reading the foreign keys of %s on %s", t.name, name)
		}
		for _, k := range keys {
			var rows []any
			if only == nil {
				rows, err = mv.crossingRows(ctx, db, k, mv.st.Logical, inward, 5)
			}
			for parents := range slices.Chunk(only[k.parent.name], replayKeys) {
				if rows, err = mv.crossingRows(ctx, db, k, mv.st.Logical, inward, 5, parents...); err != nil || len(rows) > 0 {
					break
				}
			}
			if err != nil {
				return errs.Wrap(err, "reading the rows of %s its foreign key %s links across logical shards %d-%d on %s", t.name, k.name, mv.st.Logical.From, mv.st.Logical.To, name)
			}
			if len(rows) == 0 {
				continue
			}
			ends := "of logical shards %d-%d reference rows of %s outside them, or rows outside them rows inside"
			if inward {
				ends = "outside logical shards %d-%d reference rows of %s inside them"
			}
			return fmt.Errorf("%w: rows of table %s on %s (keys %v) "+ends+" by foreign key %s: a move carries each row by its own key, and the key would link two databases; %s; point them at rows of their own logical shard, or drop the key",
				ErrInvalid, t.name, name, rows, mv.st.Logical.From, mv.st.Logical.To, k.parent.name, k.name, why)
		}
	}
	return nil
}

// referencesAcrossTheEdgeUnder makes a phase's failure on a foreign key
// that a row lacks its parent for the move's refusal when, on the source,
// rows of moved tables reference rows across the range's edge (made so
// during the move): the target never receives their parents. Once they
// reference rows of their own logical shards, the move run again goes on.
// Otherwise it names the target's keys of moved tables to tables the move
// does not carry, whose rows there the copy relies on.
func (mv *run) referencesAcrossTheEdgeUnder(ctx context.Context, failure error) error {
	if !missingParent(failure) || errors.Is(failure, ErrInvalid) || ctx.Err() != nil {
		return failure
	}
	if err := mv.refusedByReferencesAcrossTheEdge(ctx, false); errors.Is(err, ErrInvalid) {
		return fmt.Errorf("%w; then run the move again (it failed with: %v)", err, failure)
	}
	// A key on the target to a table the move does not carry: the rows
	// that table holds there are the target's own.
	var outside []string
	for _, t := range mv.tables {
		parents, err := referencedTables(ctx, mv.target, t.dialect, t.name)
		if err != nil {
			return failure
		}
		for _, p := range parents {
			if !slices.ContainsFunc(mv.tables, func(m *movedTable) bool { return strings.EqualFold(m.name, p) }) {
				outside = append(outside, fmt.Sprintf("%s references %s", t.name, p))
			}
		}
	}
	if len(outside) > 0 {
		return fmt.Errorf("%w (on %s, by foreign keys, %s, which the move does not carry: the target's own rows of such a table must hold every row the copied rows reference; add those missing there, then run the move again)",
			failure, mv.st.To, strings.Join(outside, ", "))
	}
	return failure
}

// reordered reads the foreign keys again after a row was refused for a
// parent the target lacks, which a key made since the move read them (on
// the target, as it began) may ask for in another order, and orders the
// tables by them. It reports whether the order changed, or a table came to
// reference itself, and refuses keys that now reference each other.
func (mv *run) reordered(ctx context.Context) (bool, error) {
	before := slices.Clone(mv.tables)
	itself := func(ts []*movedTable) (names []string) {
		for _, t := range ts {
			if t.referencesItself {
				names = append(names, t.name)
			}
		}
		return names
	}
	selfBefore := itself(mv.tables)
	tables, err := byForeignKeys(ctx, mv.fence.Dialect, mv.tables, mv.source, mv.target)
	if err != nil {
		return false, err
	}
	changed := !slices.Equal(before, tables) || !slices.Equal(selfBefore, itself(tables))
	mv.tables = tables
	for _, t := range tables {
		if len(t.cycleWith) > 0 {
			return false, fmt.Errorf("%w: table %s and %s reference each other by foreign keys: the copy can write neither before the other; drop one of the keys while the move runs", ErrInvalid, t.name, strings.Join(t.cycleWith, ", "))
		}
	}
	return changed, nil
}
