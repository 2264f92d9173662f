package mover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/sqlerr"
	"github.com/shardid/shardid/internal/sqlscan"
)

// movedTable is one sharded table of a move and the SQL that copies it.
type movedTable struct {
	name      string
	strategy  string       // the key's strategy
	idColumns []IDColumn   // its other columns a strategy fills
	modelType reflect.Type // the model, when the move was given it
	key       string       // the column carrying the shard: the primary key, or a join table's column of its owner's key
	pk        []string     // the primary key's columns, by which the copy orders and upserts; a join table's owner column first
	join      bool         // a many2many join table beside a sharded owner: its rows are replaced by owner
	columns   []string     // every column of the source's table
	colocate  string       // the column of its colocate rule, if any
	given     Table        // the table as the driver gave it: its hash rule, if any, in given.Hash
	// PostgreSQL's columns GENERATED ALWAYS AS IDENTITY, written only with
	// OVERRIDING SYSTEM VALUE and never set by an update.
	alwaysIdentity []string
	fenced         fence.Table
	dialect        string
	shard          string // SQL: the row's logical shard, from its key
	inRange        string // WHERE condition: the row's shard is within ? and ?
	// A foreign key of its own references it (a reply its parent): its rows
	// may go in before their parents, and out before their children.
	referencesItself bool
	selfKeys         []selfKey // those keys, of one column each, on the target
	cycleWith        []string  // moved tables it references that reference it, by way of others too
}

// movedTables resolves the models of a move, or else the sharded tables the
// plugin has migrated, to the tables and columns to copy; a resumed move
// must carry the tables it began with.
func movedTables(ctx context.Context, d Driver, models []any, st *mapstore.MoveState, source *sql.DB, ending bool) ([]*movedTable, error) {
	list, err := d.Tables(ctx, models)
	if err != nil {
		return nil, err
	}
	var tables []*movedTable
	for _, t := range list {
		if err := movableJoin(t); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(tables, func(m *movedTable) bool { return m.name == t.Name }) {
			continue
		}
		mt, err := newMovedTable(ctx, d.Fence(), t, source)
		if err != nil {
			return nil, err
		}
		if !ending { // a key the triggers cannot read is refused before the move changes anything
			if err := d.Fence().CheckKey(ctx, source, mt.fenced); errors.Is(err, fence.ErrUnsupportedKey) {
				return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
			} else if err != nil {
				return nil, err
			}
		}
		tables = append(tables, mt)
	}
	if st != nil {
		for _, name := range st.Tables {
			if !slices.ContainsFunc(tables, func(m *movedTable) bool { return m.name == name }) {
				return nil, fmt.Errorf("%w: the move began with table %s; give its model again", ErrInvalid, name)
			}
		}
		// A table the move did not begin with has no triggers and no copy.
		// Once it serves, one is left out: made once every process routed
		// by the move's map (checkNewTables), it holds no row of the range
		// on the source. A cancel or cleanup ends what the move began with
		// alone (one made during it, racing its start, fails its cutover).
		if st.Phase == PhaseServing || ending {
			tables = slices.DeleteFunc(tables, func(t *movedTable) bool { return !slices.Contains(st.Tables, t.name) })
		}
		for _, t := range tables {
			if !slices.Contains(st.Tables, t.name) {
				return nil, fmt.Errorf("%w: the move of %d-%d began with the tables %v; %s cannot join it midway: finish or cancel it, then move again",
					ErrInvalid, st.Logical.From, st.Logical.To, st.Tables, t.name)
			}
		}
	}
	if len(tables) == 0 {
		return nil, fmt.Errorf("%w: no sharded tables to move", ErrInvalid)
	}
	sort.Slice(tables, func(i, j int) bool { return tables[i].name < tables[j].name })
	return tables, nil
}

// newMovedTable describes one sharded table for the copy: its columns are
// the source's, every one of them.
func newMovedTable(ctx context.Context, f fence.Fence, t Table, source *sql.DB) (*movedTable, error) {
	if strings.Contains(t.Name, ".") {
		// The copy, the triggers and the checks name a table within each database's own schema.
		return nil, fmt.Errorf("%w: table %s is named with its schema: a move carries, and an audit reads, the tables of each database's own schema only (PostgreSQL's search_path, MySQL's database of the DSN); name the table without its schema (no TablePrefix \"schema.\") and give the schema in each DSN (PostgreSQL: search_path=schema,public)", ErrInvalid, t.Name)
	}
	mt := &movedTable{name: t.Name, key: t.Key, pk: []string{t.Key}, join: t.Join, strategy: t.Strategy, idColumns: t.IDColumns, modelType: t.Model, dialect: f.Dialect, colocate: t.Colocate, given: t,
		fenced: fence.Table{Name: t.Name, Key: t.Key, Kind: t.Kind}}
	columns, err := columnsOf(ctx, source, mt.dialect, t.Name)
	if err != nil {
		return nil, errs.Wrap(err, "reading the columns of %s", t.Name)
	}
	if !slices.Contains(columns, t.Key) {
		return nil, fmt.Errorf("%w: table %s has no column %s", ErrInvalid, t.Name, t.Key)
	}
	mt.columns = columns
	// An ID column the record lists and the table no longer has (dropped
	// since a migration by a model without its field kept its record) has
	// no ID source to advance.
	mt.idColumns = slices.DeleteFunc(slices.Clone(t.IDColumns), func(c IDColumn) bool {
		return !slices.ContainsFunc(columns, func(name string) bool { return strings.EqualFold(name, c.Column) })
	})
	if mt.dialect == "postgres" {
		if _, mt.alwaysIdentity, err = sequencedColumns(ctx, source, t.Name); err != nil {
			return nil, errs.Wrap(err, "reading the sequences of %s", t.Name)
		}
	}
	if t.Join {
		if mt.pk, err = joinPrimaryKey(ctx, source, mt.dialect, t.Name, t.Key); err != nil {
			return nil, err
		}
	}
	shard, err := f.ShardSQL(mt.fenced, "")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, t.Name, err)
	}
	mt.shard = shard
	mt.inRange = shard + " BETWEEN " + placeholders(mt.dialect, 0, 1) + " AND " + placeholders(mt.dialect, 1, 1)
	return mt, nil
}

// noTableError is columnsOf's answer for a table the database does not have.
type noTableError string

func (e noTableError) Error() string { return string(e) }

// tableMissing reports whether err says the table does not exist: columnsOf's
// own answer, or MySQL's and MariaDB's ER_NO_SUCH_TABLE.
func tableMissing(err error) bool {
	var missing noTableError
	if errors.As(err, &missing) {
		return true
	}
	number, _, ok := sqlerr.MySQL(err)
	return ok && number == 1146
}

// columnsOf returns a table's columns on db, in their order, but for its
// generated columns, which the databases compute and refuse a value for
// (each side computes its own from the columns copied). PostgreSQL's
// are read from its catalog: a driver's cached plan of SELECT * fails once
// a migration changed the table ("cached plan must not change result type").
func columnsOf(ctx context.Context, db *sql.DB, dialect, table string) ([]string, error) {
	if dialect == "postgres" {
		rows, err := readRows(ctx, db, 1, "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
			sqlscan.Quote(dialect, table))
		columns := make([]string, len(rows))
		for i, row := range rows {
			columns[i] = asText(row[0])
		}
		if err == nil && len(columns) == 0 {
			err = noTableError(fmt.Sprintf("relation %q does not exist", table))
		}
		return columns, err
	}
	if dialect == "sqlite" {
		// Read by a statement that runs: the column names of one that never
		// steps come from the connection's schema, which may predate a migration.
		rows, err := readRows(ctx, db, 1, "SELECT name FROM pragma_table_info(?) ORDER BY cid", table)
		columns := make([]string, len(rows))
		for i, row := range rows {
			columns[i] = asText(row[0])
		}
		if err == nil && len(columns) == 0 {
			err = noTableError("no such table: " + table)
		}
		return columns, err
	}
	// MySQL's too: SELECT * leaves out MariaDB's and MySQL's INVISIBLE
	// columns, whose values the copy would then lose, its checks unaware.
	rows, err := readRows(ctx, db, 1, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? "+
		"AND EXTRA NOT IN ('VIRTUAL GENERATED', 'STORED GENERATED', 'VIRTUAL', 'PERSISTENT', 'STORED') ORDER BY ORDINAL_POSITION", table)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		// Generated columns alone, or none: the table may not exist.
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", table).Scan(&n); err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, noTableError(fmt.Sprintf("Table '%s' doesn't exist", table))
		}
	}
	columns := make([]string, len(rows))
	for i, row := range rows {
		columns[i] = asText(row[0])
	}
	return columns, nil
}

// sequencedColumns reads a PostgreSQL table's columns that a sequence
// fills, each with its sequence (an identity's, a serial's or any other a
// default's nextval names), and those GENERATED ALWAYS AS IDENTITY.
func sequencedColumns(ctx context.Context, db *sql.DB, table string) (sequenced []columnSequence, always []string, err error) {
	rows, err := readRows(ctx, db, 3, `SELECT a.attname, s.seq, a.attidentity = 'a' FROM pg_attribute a, LATERAL (
	SELECT pg_get_serial_sequence($1, a.attname) AS seq WHERE a.attidentity <> ''
	UNION
	SELECT d.refobjid::regclass::text FROM pg_attrdef ad
		JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid AND d.refclassid = 'pg_class'::regclass
		JOIN pg_class c ON c.oid = d.refobjid AND c.relkind = 'S'
	WHERE ad.adrelid = a.attrelid AND ad.adnum = a.attnum) s
WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped AND s.seq IS NOT NULL
	AND a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) ORDER BY a.attnum`, sqlscan.Quote("postgres", table))
	for _, row := range rows {
		sequenced = append(sequenced, columnSequence{column: asText(row[0]), sequence: asText(row[1])})
		if b, _ := row[2].(bool); b && !slices.Contains(always, asText(row[0])) {
			always = append(always, asText(row[0]))
		}
	}
	return sequenced, always, err
}

// columnSequence is a column and a sequence that fills it.
type columnSequence struct{ column, sequence string }

// keyIndex is where the key is among the columns.
func (t *movedTable) keyIndex() int {
	for i, c := range t.columns {
		if c == t.key {
			return i
		}
	}
	return 0
}
