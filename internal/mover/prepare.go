package mover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/sqlscan"
)

// prepare makes the target's tables, the source's triggers and fence, and
// advances the target's ID sources.
func (mv *run) prepare(ctx context.Context) error {
	if err := mv.prepareTarget(ctx); err != nil {
		if errors.Is(err, ErrInvalid) && !mv.resumed {
			// Nothing changed on the source: a refused move leaves no record blocking the next.
			err = errors.Join(err, mv.d.Store().DeleteMove(context.WithoutCancel(ctx), mv.st.Logical))
		}
		return err
	}
	if err := mv.fence.Prepare(ctx, mv.source); err != nil {
		return err
	}
	// The fence row first: creating a trigger waits for every transaction
	// that wrote the table before (MySQL's metadata lock, PostgreSQL's SHARE
	// ROW EXCLUSIVE), and each write after it reads the row, so none of the
	// range goes unlogged once the copy starts.
	if err := mv.fence.Open(ctx, mv.source, mv.fr, mv.st.To); err != nil {
		return err
	}
	// A write racing a trigger's creation is refused (MySQL), and one whose
	// Before hooks ran cannot be run again alone: such writes are held.
	if err := mv.announceFreeze(ctx, time.Minute); err != nil {
		return errors.Join(err, mv.endAnnouncement(context.WithoutCancel(ctx)))
	}
	for _, t := range mv.tables {
		if err := mv.fence.Install(ctx, mv.source, t.fenced); err != nil {
			return errors.Join(fmt.Errorf("triggers on %s.%s: %w", mv.st.From, t.name, err), mv.endAnnouncement(context.WithoutCancel(ctx)))
		}
		mv.progress(Progress{Phase: PhasePrepare, Step: "triggers", Table: t.name})
	}
	if err := mv.endAnnouncement(ctx); err != nil {
		return err
	}
	return mv.advance(ctx)
}

// prepareTarget makes the target's missing tables and checks them all: each
// has the source's columns, and no row of the range. A table there is not
// changed: models older than the application's would take back its
// migrations.
func (mv *run) prepareTarget(ctx context.Context) error {
	if err := mv.refusedByForeignKeys(ctx); err != nil {
		return err
	}
	if err := mv.refusedByColocatedRowsAcrossTheEdge(ctx); err != nil {
		return err
	}
	if err := mv.refusedByHashRowsAcrossTheEdge(ctx); err != nil {
		return err
	}
	var models []any
	for _, t := range mv.tables {
		if t.modelType == nil {
			continue
		}
		_, err := columnsOf(ctx, mv.target, t.dialect, t.name)
		if err != nil && !tableMissing(err) { // not read: unreachable, or the context ended
			return fmt.Errorf("table %s on %s: %w", t.name, mv.st.To, err)
		}
		if err != nil {
			models = append(models, reflect.New(t.modelType).Interface())
		}
	}
	if len(models) > 0 {
		if err := mv.d.Migrate(ctx, mv.st.To, models); err != nil {
			return err
		}
	}
	for _, t := range mv.tables {
		if err := mv.checkTarget(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// checkTarget checks t on the target: it has the source's columns, each
// able to take the source's values, and no row of the range.
func (mv *run) checkTarget(ctx context.Context, t *movedTable) error {
	columns, err := columnsOf(ctx, mv.target, t.dialect, t.name)
	if err != nil && !tableMissing(err) { // not read: unreachable, or the context ended; no refusal
		return fmt.Errorf("table %s on %s: %w", t.name, mv.st.To, err)
	}
	if err != nil {
		return fmt.Errorf("%w: table %s on %s: %w: migrate the models with %s in Config.Shards (ids.AutoMigrate), then move again", ErrInvalid, t.name, mv.st.To, err, mv.st.To)
	}
	if err := mv.checkColumnsFit(ctx, t); err != nil {
		return err
	}
	if err := mv.checkUniqueKey(ctx, t); err != nil {
		return err
	}
	for _, c := range t.columns {
		if !slices.Contains(columns, c) {
			return fmt.Errorf("%w: table %s on %s has no column %s, which the source has: migrate it first", ErrInvalid, t.name, mv.st.To, c)
		}
	}
	return mv.checkNoRowsOfRange(ctx, t)
}

// checkColumnsFit refuses t on the target when its columns cannot take
// every row of the source's as it is: the copy would fail with the
// driver's error after the source was fenced, or change values unseen.
func (mv *run) checkColumnsFit(ctx context.Context, t *movedTable) error {
	why, err := mv.columnsMisfit(ctx, t)
	if err != nil || why == "" {
		return err
	}
	return fmt.Errorf("%w: table %s on %s: %s; then move again", ErrInvalid, t.name, mv.st.To, why)
}

// columnsMisfit is why t's columns on the target cannot take every row of
// the source's as it is, or "".
func (mv *run) columnsMisfit(ctx context.Context, t *movedTable) (string, error) {
	source, err := describeColumns(ctx, mv.source, t.dialect, t.name)
	if err != nil {
		return "", fmt.Errorf("reading the columns of %s on %s: %w", t.name, mv.st.From, err)
	}
	target, err := describeColumns(ctx, mv.target, t.dialect, t.name)
	if err != nil {
		return "", fmt.Errorf("reading the columns of %s on %s: %w", t.name, mv.st.To, err)
	}
	return misfit(source, target, mv.st.From, mv.st.To), nil
}

// checkNoRowsOfRange refuses t on the target holding rows of the range: the
// copy begins after the prepare, and every row of the range there is then
// the move's.
func (mv *run) checkNoRowsOfRange(ctx context.Context, t *movedTable) error {
	found, err := misplacedRows(ctx, mv.target, t, fence.InRanges(t.shard, []Range{mv.st.Logical}))
	if err != nil {
		return fmt.Errorf("table %s on %s: %w", t.name, mv.st.To, err)
	}
	if found.Rows > 0 {
		return fmt.Errorf("%w: table %s on %s already holds rows of logical shards %d-%d (%d; keys %v), which no move copied there: delete them, or move them where they belong, first",
			ErrInvalid, t.name, mv.st.To, mv.st.Logical.From, mv.st.Logical.To, found.Rows, found.Keys)
	}
	return nil
}

// wouldRefuse is what the prepare would refuse of t on the target, read
// without changing anything: a table there, or one it cannot make (no
// model given), is checked whole.
func (mv *run) wouldRefuse(ctx context.Context, t *movedTable) error {
	if t.modelType == nil {
		return mv.checkTarget(ctx, t)
	}
	if _, err := columnsOf(ctx, mv.target, t.dialect, t.name); err != nil {
		if !tableMissing(err) { // not read: unreachable, or the context ended
			return fmt.Errorf("table %s on %s: %w", t.name, mv.st.To, err)
		}
		return nil // the prepare makes it
	}
	return mv.checkTarget(ctx, t)
}

// advance makes the target's ID sources issue, for the moved shards, only IDs
// above those the source issued: the instagram clock-sequence and the
// segment counters of each table move past the source's and past the
// highest key seen.
func (mv *run) advance(ctx context.Context) error {
	for _, t := range mv.tables {
		if err := mv.highestKey(ctx, t); err != nil {
			return err
		}
		if err := mv.d.AdvanceIDs(ctx, t.name, t.strategy, mv.from, mv.to, mv.st.MaxKeys[t.name]); err != nil {
			return err
		}
		for _, c := range t.idColumns {
			highest, err := mv.highestOf(ctx, t, c.Column)
			if err != nil {
				return err
			}
			if err := mv.d.AdvanceIDs(ctx, t.name, c.Strategy, mv.from, mv.to, highest); err != nil {
				return err
			}
		}
		if err := mv.advanceSequences(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// advanceSequences makes the target's sequences that fill t's columns
// (serial, identity, a default's nextval) issue only values above the
// range's highest of each on the source: the copy writes the source's
// values, which do not advance them, and the target's next rows would take
// them again.
func (mv *run) advanceSequences(ctx context.Context, t *movedTable) error {
	var sequences []columnSequence
	var err error
	switch t.dialect {
	case "postgres":
		sequences, _, err = sequencedColumns(ctx, mv.target, t.name)
	case "mysql": // AUTO_INCREMENT moves past a value written into it; a MariaDB SEQUENCE does not
		sequences, err = mariadbSequencedColumns(ctx, mv.target, t.name)
	}
	if err != nil {
		return fmt.Errorf("reading the sequences of %s on %s: %w", t.name, mv.st.To, err)
	}
	for _, s := range sequences {
		highest, err := mv.highestOf(ctx, t, s.column)
		if err != nil {
			return err
		}
		if err := advanceSequence(ctx, mv.target, t.dialect, s.sequence, highest); err != nil {
			return fmt.Errorf("advancing the sequence %s of %s.%s on %s: %w", s.sequence, t.name, s.column, mv.st.To, err)
		}
	}
	return nil
}

// advanceSequence makes sequence on db issue only values above highest.
// MariaDB's SETVAL never moves a sequence back.
func advanceSequence(ctx context.Context, db *sql.DB, dialect, sequence string, highest int64) error {
	if dialect == "mysql" {
		if highest < 1 {
			return nil // below a sequence's first value: nothing to pass
		}
		_, err := db.ExecContext(ctx, "SELECT SETVAL("+sequence+", "+strconv.FormatInt(highest, 10)+")") // a literal: SETVAL takes no parameter
		return err
	}
	// Read and set in one statement: a nextval of another session between
	// the two could still be issued again, as with any setval.
	_, err := db.ExecContext(ctx, `SELECT setval($1::regclass, $2) FROM pg_sequences p
	WHERE format('%I.%I', p.schemaname, p.sequencename)::regclass = $1::regclass AND p.increment_by > 0
		AND $2 > COALESCE(p.last_value, p.start_value - 1) AND $2 <= p.max_value`, sequence, highest)
	return err
}

// mariadbSequencedColumns reads a MariaDB table's integer columns whose
// default takes a SEQUENCE's next value, each with its sequence's name as
// the server quotes it.
func mariadbSequencedColumns(ctx context.Context, db *sql.DB, table string) ([]columnSequence, error) {
	rows, err := readRows(ctx, db, 2, "SELECT COLUMN_NAME, COLUMN_DEFAULT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? "+
		"AND DATA_TYPE IN ('tinyint', 'smallint', 'mediumint', 'int', 'bigint') AND COLUMN_DEFAULT LIKE 'nextval(%)'", table)
	var sequences []columnSequence
	for _, row := range rows {
		def := asText(row[1])
		sequences = append(sequences, columnSequence{column: asText(row[0]), sequence: def[len("nextval(") : len(def)-1]})
	}
	return sequences, err
}

// highestOf notes, and returns, the highest value of an ID column of the
// range on the source, under the key "table.column" of the move's maxima.
func (mv *run) highestOf(ctx context.Context, t *movedTable, column string) (int64, error) {
	var highest sql.NullInt64
	q := "SELECT MAX(" + sqlscan.Quote(t.dialect, column) + ") FROM " + sqlscan.Quote(t.dialect, t.name) + " WHERE " + t.inRange
	if err := mv.source.QueryRowContext(ctx, q, mv.st.Logical.From, mv.st.Logical.To).Scan(&highest); err != nil {
		return 0, err
	}
	key := t.name + "." + column
	mv.st.MaxKeys[key] = max(mv.st.MaxKeys[key], highest.Int64)
	return mv.st.MaxKeys[key], nil
}

// highestKey notes the highest int64 key of the range on the source.
func (mv *run) highestKey(ctx context.Context, t *movedTable) error {
	if t.fenced.Kind != fence.KeyInt64 {
		return nil
	}
	var highest sql.NullInt64
	q := "SELECT MAX(" + sqlscan.Quote(t.dialect, t.key) + ") FROM " + sqlscan.Quote(t.dialect, t.name) + " WHERE " + t.inRange
	if err := mv.source.QueryRowContext(ctx, q, mv.st.Logical.From, mv.st.Logical.To).Scan(&highest); err != nil {
		return err
	}
	if highest.Valid {
		mv.noteKey(t, highest.Int64)
	}
	return nil
}

// checkUniqueKey refuses t on the target without a primary key or unique
// index on exactly the columns the copy upserts by (its key, a join
// table's primary key), which a table made behind the plugin's migrator
// may lack: PostgreSQL's and SQLite's ON CONFLICT would fail the copy
// after the source was fenced, and MySQL's ON DUPLICATE KEY, firing on no
// index, would write a row again beside its copy.
func (mv *run) checkUniqueKey(ctx context.Context, t *movedTable) error {
	sets, err := uniqueColumnSets(ctx, mv.target, t.dialect, t.name)
	if err != nil {
		return fmt.Errorf("reading the unique indexes of %s on %s: %w", t.name, mv.st.To, err)
	}
	for _, set := range sets {
		if len(set) == len(t.pk) && !slices.ContainsFunc(t.pk, func(c string) bool { return !slices.Contains(set, c) }) {
			return nil
		}
	}
	return fmt.Errorf("%w: table %s on %s has no primary key or unique index on exactly (%s), by which the copy writes each row: without one the copy would fail, or write rows twice; make it the primary key there (as the plugin's migrator does), then move again",
		ErrInvalid, t.name, mv.st.To, strings.Join(t.pk, ", "))
}

// uniqueColumnSets reads the column sets of a table's primary key and of
// its unique indexes that an upsert can conflict on: of columns alone,
// neither partial nor deferred.
func uniqueColumnSets(ctx context.Context, db *sql.DB, dialect, table string) ([][]string, error) {
	var q string
	name := table
	switch dialect {
	case "mysql":
		q = "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND NON_UNIQUE = 0 ORDER BY INDEX_NAME, SEQ_IN_INDEX"
	case "postgres":
		q = `SELECT i.indexrelid::text, a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
	WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indimmediate AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL ORDER BY 1`
		name = sqlscan.Quote(dialect, table)
	default: // the primary key (a rowid alias has no index), then unique indexes
		q = `SELECT '', name FROM pragma_table_info(?1) WHERE pk > 0
	UNION ALL SELECT l.name, i.name FROM pragma_index_list(?1) l, pragma_index_info(l.name) i WHERE l."unique" AND NOT l.partial ORDER BY 1`
	}
	rows, err := readRows(ctx, db, 2, q, name)
	if err != nil {
		return nil, err
	}
	var sets [][]string
	var last string
	for i, row := range rows {
		index := asText(row[0])
		if i == 0 || index != last {
			sets = append(sets, nil)
			last = index
		}
		if row[1] == nil { // an expression
			sets[len(sets)-1] = append(sets[len(sets)-1], "")
			continue
		}
		sets[len(sets)-1] = append(sets[len(sets)-1], asText(row[1]))
	}
	return sets, nil
}
