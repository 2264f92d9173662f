package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/mapstore"
	"github.com/shardid/shardid/internal/mover"
	"github.com/shardid/shardid/internal/shardmigrator"
	"github.com/shardid/shardid/internal/sqlscan"
	"github.com/shardid/shardid/strategies"
)

// tablesTable lists, in the plugin's own database, the sharded tables the
// plugin has migrated, so that a move or an audit run by the command, which
// has no Go models, knows them: the default map's; another map's is named
// after it (tablesTable of Engine).
const tablesTable = "shardid_tables"

// tablesTable is the table listing the sharded tables of this plugin's map.
func (e *Engine) tablesTable() string {
	return mapstore.KeptTable(e.mapTable(), tablesTable, "_tables")
}

// tables is the table listing the sharded tables of the store's map.
func (s *mapStore) tables() string { return mapstore.KeptTable(s.Table(), tablesTable, "_tables") }

// quotedTables is tables in SQL.
func (s *mapStore) quotedTables() string { return sqlscan.QuoteFolded(s.Dialect(), s.tables()) }

// shardedTable is a sharded table as the tables table records it.
type shardedTable struct {
	Name      string
	Key       string        // the column carrying the shard: the primary key, or a join table's column of its owner's key
	Kind      fence.KeyKind // how the key carries it
	Strategy  string        // the key's strategy, whose ID source a move advances
	IDColumns []mover.IDColumn
	Placement *string // the rule that places a new row (placementOf); nil: a join table's, or not recorded
	HashKey   *string // how a hash rule's key is hashed (hashKeyOf); nil: not recorded
	// declared are the columns of the model the table was read from (nil:
	// read from the record): a recorded ID column it has no field of is a
	// later version's, which its migration keeps (keepUndeclared).
	declared []string
}

// placed is a recorded table's placement: its rule, how the rule's key is
// hashed ("": no hash rule, or recorded by a version that did not say), the
// strategy of its key, which made the IDs of its rows, and its other ID
// columns with theirs (idColumnsText).
type placed struct{ rule, key, strategy, idColumns string }

// fits reports whether m places rows as the record says they were placed.
func (r placed) fits(m *model) bool {
	return r.rule == placementOf(m) && (r.key == "" || r.key == hashKeyOf(m))
}

// hashKeyOf says how a hash rule's key is hashed, the bytes its Go type
// gives (hashValue): the same column's key under another type places the
// same value on another shard. "" without a hash rule.
func hashKeyOf(m *model) string {
	if m.pk().hash == nil {
		return ""
	}
	t := m.pk().hash.FieldType
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String, reflect.Slice:
		return hashKeyText
	case reflect.Array:
		return hashKeyBytes16
	}
	return hashKeyInt
}

// The ways a hash key is hashed, as shardid_tables records them.
const (
	hashKeyText    = "text"    // a string's or []byte's bytes
	hashKeyInt     = "int"     // an integer's 8 big-endian bytes
	hashKeyBytes16 = "bytes16" // a [16]byte's (a uuid.UUID's) 16 bytes, not its text
)

// describeHashKey says how a hash key is hashed, in words.
func describeHashKey(key string) string {
	switch key {
	case hashKeyText:
		return "a key hashed as its text (string or []byte)"
	case hashKeyInt:
		return "a key hashed as an integer"
	case hashKeyBytes16:
		return "a key hashed as 16 bytes (a [16]byte such as uuid.UUID, not its text)"
	}
	return "a key hashed as " + key
}

func (s *mapStore) prepareTables(ctx context.Context) error {
	_, err := s.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+s.quotedTables()+" (name VARCHAR(191) NOT NULL PRIMARY KEY, key_column VARCHAR(191) NOT NULL, key_kind INT NOT NULL, strategy VARCHAR(32) NOT NULL, id_columns VARCHAR(1000) NOT NULL DEFAULT '', placement VARCHAR(400), hash_key VARCHAR(16), stamp BIGINT)")
	if err != nil && !mapstore.AlreadyExists(err) {
		return err
	}
	return s.addRecordColumns(ctx)
}

// placementOf writes the rule by which a sharded model places a new row:
// conditions on its column find the rows by that rule alone.
func placementOf(m *model) string {
	switch key := m.pk(); {
	case key.hash != nil && key.looseHash:
		return "hash:" + key.hash.DBName + ";collation:loose"
	case key.hash != nil:
		return "hash:" + key.hash.DBName
	case key.colocate != nil:
		return "colocate:" + key.colocate.DBName
	}
	return ""
}

// colocateColumn is the column of a placement's colocate rule, "" for
// another rule.
func colocateColumn(placement string) string {
	column, ok := strings.CutPrefix(placement, "colocate:")
	if !ok {
		return ""
	}
	return column
}

// placed is the placement t records.
func (t shardedTable) placed() placed {
	r := placed{rule: *t.Placement, strategy: t.Strategy, idColumns: idColumnsText(t.IDColumns)}
	if t.HashKey != nil {
		r.key = *t.HashKey
	}
	return r
}

// describePlacement says a placement rule in words.
func describePlacement(rule string) string {
	if rule == "" {
		return "no colocate or hash rule (spread over every logical shard)"
	}
	return rule
}

// samePlacement refuses a sharded model of table whose placement rule is
// not the one its recorded rows were placed by: a read by the new rule's
// column would look for them on other shards, and miss them.
func (e *Engine) samePlacement(m *model, table string) error {
	if !m.sharded() {
		return nil
	}
	v, ok := e.recordedPlacements.Load(strings.ToLower(table))
	if !ok || v.(placed).fits(m) {
		return nil
	}
	recorded := v.(placed)
	if recorded.rule == placementOf(m) {
		return &FieldError{Model: m.schema.Name, Field: m.pk().hash.Name, Err: ErrInvalidTag,
			Detail: fmt.Sprintf("table %s holds rows placed by %s with %s (%s records it), and this tag's key is a %s, %s: the same values hash to other shards, where its conditions would miss the rows; keep the key's type as it was, or copy the rows into a new table (a table dropped through the plugin's migrator is forgotten)",
				table, recorded.rule, describeHashKey(recorded.key), e.tablesTable(), m.pk().hash.FieldType, describeHashKey(hashKeyOf(m)))}
	}
	if placementOf(m) == "" {
		return &FieldError{Model: m.schema.Name, Field: m.pk().field.Name, Err: ErrInvalidTag,
			Detail: fmt.Sprintf("table %s holds rows placed by %s (%s records it), and this tag has no colocate or hash rule: it reads and changes the rows by their IDs, or on every shard, but a row it created would not be where the rule's conditions look; create the rows through a model with the rule",
				table, recorded.rule, e.tablesTable())}
	}
	return &FieldError{Model: m.schema.Name, Field: m.pk().field.Name, Err: ErrInvalidTag,
		Detail: fmt.Sprintf("table %s holds rows placed by %s (%s records it), and this tag places them by %s: a condition on the rule's column would look for those rows on other shards and miss them; keep the tag as it was, or copy the rows into a new table (a table dropped through the plugin's migrator is forgotten)",
			table, describePlacement(recorded.rule), e.tablesTable(), describePlacement(placementOf(m)))}
}

// sameStrategy returns the tagged fields of a sharded model of table whose
// strategy is not the one recorded for it, each with the error refusing
// the Creates that fill it: the last migration of the table's model
// declared another, whose IDs this one's may equal (as two strategies in
// one process, oneStrategyPerColumn). A migration of this model records
// its own, and refuses the other processes' Creates then. A UUID's column,
// a ticket's, or one the record does not list is not compared.
func (e *Engine) sameStrategy(m *model, table string) []fieldRefusal {
	if !m.sharded() {
		return nil
	}
	v, ok := e.recordedPlacements.Load(strings.ToLower(table))
	if !ok {
		return nil
	}
	recorded := v.(placed)
	var refused []fieldRefusal
	if recorded.strategy != "" && recorded.strategy != m.pk().strategy {
		refused = append(refused, fieldRefusal{m.pk(), &FieldError{Model: m.schema.Name, Field: m.pk().field.Name, Err: ErrInvalidTag,
			Detail: fmt.Sprintf("table %s's IDs are made by strategy %s (%s records it, as the last migration of its model declared), and this tag makes them by %s: two strategies make the same IDs within a tick, so its Creates that make an ID are refused; keep the strategy as it was, or stop every process writing by %s, then migrate this model, which records its strategy",
				table, recorded.strategy, e.tablesTable(), m.pk().strategy, recorded.strategy)}})
	}
	if recorded.idColumns == "" {
		return refused
	}
	for _, f := range m.fields {
		if f == m.pk() || f.uuidVersion != 0 || f.strategy == strategies.NameTicket {
			continue
		}
		for _, c := range parseIDColumns(recorded.idColumns) {
			if c.Column == f.field.DBName && c.Strategy != f.strategy {
				refused = append(refused, fieldRefusal{f, &FieldError{Model: m.schema.Name, Field: f.field.Name, Err: ErrInvalidTag,
					Detail: fmt.Sprintf("table %s's column %s is filled by strategy %s (%s records it, as the last migration of its model declared), and this tag fills it by %s: two strategies make the same IDs within a tick, so its Creates that fill it are refused; keep the strategy as it was, or stop every process writing by %s, then migrate this model, which records its strategy",
						table, c.Column, c.Strategy, e.tablesTable(), f.strategy, c.Strategy)}})
			}
		}
	}
	return refused
}

// fieldRefusal is the error refusing a Create that fills field.
type fieldRefusal struct {
	field *idField
	err   error
}

// addRecordColumns adds to a shardid_tables made before they were the
// columns later versions record: id_columns; placement, hash_key and stamp,
// whose rows, not recorded then, stay NULL.
func (s *mapStore) addRecordColumns(ctx context.Context) error {
	if err := s.addColumn(ctx, &s.idColumns, "id_columns", "VARCHAR(1000) NOT NULL DEFAULT ''"); err != nil {
		return err
	}
	if err := s.addColumn(ctx, &s.placement, "placement", "VARCHAR(400)"); err != nil {
		return err
	}
	if err := s.addColumn(ctx, &s.hashKey, "hash_key", "VARCHAR(16)"); err != nil {
		return err
	}
	return s.addColumn(ctx, &s.stamp, "stamp", "BIGINT")
}

// newStamp is a row's stamp, which each write of a row of shardid_tables
// sets anew: the sum of the stamps (recordsProbe) changes with any row
// written, added or deleted, so that the other processes, reading it with
// the map, reload the record then only. Random, not a counter: two
// processes writing at once need no agreement, and the sum of up to 2^23
// rows fits 63 bits.
func newStamp() int64 { return 1 + rand.Int64N(1<<40-1) }

// recordsProbe is the SQL that sums the record's stamps (a row written by
// a version without them counts 1), read with the map at each refresh.
func (s *mapStore) recordsProbe() string {
	return "(SELECT SUM(COALESCE(stamp, 1)) FROM " + s.quotedTables() + ")"
}

// addColumn adds column to shardid_tables unless it has it; added notes it has.
func (s *mapStore) addColumn(ctx context.Context, added *atomic.Bool, column, definition string) error {
	if added.Load() {
		return nil
	}
	probe := func() error {
		rows, err := s.DB().QueryContext(ctx, "SELECT "+column+" FROM "+s.quotedTables()+" WHERE 1 = 0")
		if err == nil {
			rows.Close()
		}
		return err
	}
	if probe() != nil {
		_, err := s.Exec(ctx, "ALTER TABLE "+s.quotedTables()+" ADD COLUMN "+column+" "+definition)
		if err != nil && probe() != nil { // not another process's column
			return err
		}
	}
	added.Store(true)
	return nil
}

// idColumnsText is how shardid_tables keeps a table's other ID columns:
// "column:strategy", comma-separated.
func idColumnsText(columns []mover.IDColumn) string {
	parts := make([]string, len(columns))
	for i, c := range columns {
		parts[i] = c.Column + ":" + c.Strategy
	}
	return strings.Join(parts, ",")
}

// parseIDColumns reads idColumnsText.
func parseIDColumns(text string) []mover.IDColumn {
	var columns []mover.IDColumn
	for part := range strings.SplitSeq(text, ",") {
		if column, strategy, ok := strings.Cut(part, ":"); ok {
			columns = append(columns, mover.IDColumn{Column: column, Strategy: strategy})
		}
	}
	return columns
}

// prepareOwnTables creates again the tables the plugin keeps on its own
// database (the shared map, seeded with the map in force, the processes'
// maps, the sharded tables, the decisions of two-phase commits), should they
// have been dropped since the plugin made them: AutoMigrate after a test's
// teardown dropped every table leaves the plugin working.
func (e *Engine) prepareOwnTables(ctx context.Context) error {
	if err := e.maps.Prepare(ctx); err != nil {
		return err
	}
	if err := e.seedMap(ctx); err != nil {
		return err
	}
	if e.twoPhaseHere() {
		if err := e.decisions().Prepare(ctx); err != nil && !mapstore.AlreadyExists(err) {
			return err
		}
	}
	return e.maps.prepareTables(ctx)
}

// registerTables records the sharded models among those migrated.
func (e *Engine) registerTables(db *gorm.DB, models []any) error {
	if e.maps == nil {
		return nil
	}
	ctx := db.Statement.Context
	if err := e.prepareOwnTables(ctx); err != nil {
		return err
	}
	e.recordsMu.Lock()
	defer e.recordsMu.Unlock()
	changed := map[string]bool{}
	for _, t := range e.shardedTablesOf(db, models) {
		if err := e.keepUndeclared(ctx, &t); err != nil {
			return err
		}
		// Updated in place, not deleted and inserted: a process starting
		// meanwhile (every pod of a rolling restart migrates) would not
		// know the table sharded, nor check its models' rules against it.
		res, err := e.maps.Exec(ctx, "UPDATE "+e.maps.quotedTables()+" SET name = ?, key_column = ?, key_kind = ?, strategy = ?, id_columns = ?, placement = ?, hash_key = ?, stamp = ? WHERE name = ?", t.Name, t.Key, int(t.Kind), t.Strategy, idColumnsText(t.IDColumns), t.Placement, t.HashKey, newStamp(), t.Name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 { // none, or MySQL's count of rows changed: an unchanged row is a duplicate key
			if _, err := e.maps.Exec(ctx, "INSERT INTO "+e.maps.quotedTables()+" (name, key_column, key_kind, strategy, id_columns, placement, hash_key, stamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", t.Name, t.Key, int(t.Kind), t.Strategy, idColumnsText(t.IDColumns), t.Placement, t.HashKey, newStamp()); err != nil && !mapstore.DuplicateKey(err) {
				return err
			}
		}
		e.recordTable(t.Name) // a table migrated by another name (Migrator(db.Table(name))) has no model this process parsed
		if t.Placement != nil {
			if was, ok := e.recordedPlacements.Swap(strings.ToLower(t.Name), t.placed()); !ok || was.(placed) != t.placed() {
				changed[strings.ToLower(t.Name)] = true
			}
		}
	}
	e.recheckModels(changed) // this process's other models of the tables: a strategy recorded anew refuses their Creates
	e.warnKeysToUnsharded(ctx, e.shardedTablesOf(db, models))
	return nil
}

// foreignKeysQueries list, by dialect, the foreign keys of the tables of a
// database's own schema that reference a table of that schema: the table,
// the key's name and the table it references.
var foreignKeysQueries = map[string]string{
	"mysql": "SELECT TABLE_NAME, CONSTRAINT_NAME, REFERENCED_TABLE_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() AND UNIQUE_CONSTRAINT_SCHEMA = DATABASE()",
	"postgres": "SELECT c.relname::text, k.conname::text, p.relname::text FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid " +
		"WHERE k.contype = 'f' AND c.relnamespace = current_schema()::regnamespace AND p.relnamespace = c.relnamespace",
	"sqlite": `SELECT m.name, 'foreign key ' || f.id, f."table" FROM sqlite_master m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table' GROUP BY m.name, f.id`,
}

// warnKeysToUnsharded warns, once the sharded tables of a migration are
// recorded, of a foreign key one of them holds on a physical database to a
// table that is not sharded there: an unsharded model's rows are the
// plugin's database's, so such a key checks the rows written on the shard
// against a copy the plugin neither reads nor writes (the application's
// table from before it adopted the plugin), and refuses those that refer
// to rows made since (a many2many link to a new tag). The migration goes
// on: a key the application made is its own to drop.
func (e *Engine) warnKeysToUnsharded(ctx context.Context, tables []shardedTable) {
	if len(tables) == 0 {
		return
	}
	recorded, err := e.registeredTables(ctx)
	if err != nil {
		return
	}
	sharded := func(name string) bool {
		return slices.ContainsFunc(recorded, func(r shardedTable) bool { return bareTable(r.Name) == strings.ToLower(name) })
	}
	migrated := func(name string) bool {
		return slices.ContainsFunc(tables, func(t shardedTable) bool { return strings.EqualFold(t.Name, name) })
	}
	for _, ph := range e.physical {
		o := ph.loaded() // the migration opened each
		if o == nil || o.sqlDB == nil || o.db == nil {
			continue
		}
		q, ok := foreignKeysQueries[o.db.Dialector.Name()]
		if !ok {
			continue
		}
		rows, err := o.sqlDB.QueryContext(ctx, q)
		if err != nil {
			continue
		}
		for rows.Next() {
			var table, key, referenced string
			if rows.Scan(&table, &key, &referenced) != nil || !migrated(table) || sharded(referenced) {
				continue
			}
			e.config.Log.Warn("shardid: a sharded table has a foreign key to a table that is not sharded: an untagged model's rows are written on the plugin's database, not beside the sharded rows, so if the table is one's (a copy from before the plugin), the key refuses the rows that refer to rows made there since",
				"database", o.name, "table", table, "foreign_key", key, "references", referenced,
				"hint", "drop the foreign key, and the table's old copy on the shard, which no statement reads (docs/adopting.md)")
		}
		_ = rows.Close()
	}
}

// keepUndeclared adds to t's ID columns those the record lists of columns
// its model has no field of: a later version of the application tagged
// them, and a process of an earlier one (a rolling restart's) migrating its
// model after it does not take their record back, which moves read to
// advance their ID sources on the target. A column the model declares
// untagged is taken out of the record, as the model says.
func (e *Engine) keepUndeclared(ctx context.Context, t *shardedTable) error {
	if t.declared == nil {
		return nil
	}
	var text string
	err := e.maps.QueryRow(ctx, "SELECT id_columns FROM "+e.maps.quotedTables()+" WHERE name = ?", t.Name).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	for _, c := range parseIDColumns(text) {
		if c.Column != t.Key && !slices.Contains(t.declared, c.Column) && !slices.ContainsFunc(t.IDColumns, func(d mover.IDColumn) bool { return d.Column == c.Column }) {
			t.IDColumns = append(t.IDColumns, c)
		}
	}
	return nil
}

// shardedTablesOf returns the sharded tables of models: each sharded
// model's, and the join tables of its many2many relations.
func (e *Engine) shardedTablesOf(db *gorm.DB, models []any) []shardedTable {
	var list []shardedTable
	for _, value := range models {
		stmt := &gorm.Statement{DB: db}
		if err := stmt.Parse(value); err != nil {
			continue // a join table given by name
		}
		m, err := e.model(stmt.Schema)
		if err != nil || m == nil || !m.sharded() {
			continue
		}
		own := shardedTableOf(m)
		if db.Statement.Table != "" {
			own.Name = strings.Join(fromTableParts(db.Statement), ".") // Migrator(db.Table(name)): the model's rows are in that table, in its schema if named (GORM's Table keeps it in TableExpr only)
		}
		list = append(append(list, own), e.joinTablesOf(m)...)
	}
	return list
}

// checkNewTables refuses, before anything is made, a sharded table the
// plugin has not recorded while a move is under way: from its start until it
// serves and every live process routes by its map. The move fences and
// copies the tables recorded when it began, so the new table's rows of the
// moving range would stay on the source, unfenced. The migrations' lock,
// which a move takes as it records itself, makes the check and the creation
// one step.
func (e *Engine) checkNewTables(db *gorm.DB, models []any) error {
	if e.maps == nil {
		return nil // no Shards: nothing moves
	}
	ctx := db.Statement.Context
	recorded, err := e.registeredTables(ctx)
	if err != nil && !errors.Is(err, errNoShardedTables) {
		return err
	}
	var fresh []string
	for _, t := range e.shardedTablesOf(db, models) {
		k := slices.IndexFunc(recorded, func(r shardedTable) bool { return strings.EqualFold(r.Name, t.Name) })
		if k < 0 {
			fresh = append(fresh, t.Name)
			continue
		}
		if was, now := recorded[k].HashKey, t.HashKey; was != nil && now != nil && *was != "" && *now != "" && *was != *now && *recorded[k].Placement == *t.Placement {
			return fmt.Errorf("%w: table %s holds rows placed by %s with %s (%s records it), and its model's key is now %s: the same values hash to other shards, where its conditions would miss the rows; nothing was migrated: keep the key's type as it was, or copy the rows into a new table (a table dropped through the plugin's migrator is forgotten)",
				ErrInvalidTag, t.Name, *t.Placement, describeHashKey(*was), e.maps.tables(), describeHashKey(*now))
		}
		if was := recorded[k].Placement; was != nil && t.Placement != nil && *was != *t.Placement {
			return fmt.Errorf("%w: table %s holds rows placed by %s (%s records it), and its model now places them by %s: a condition on the rule's column would look for those rows on other shards and miss them; nothing was migrated: keep the tag as it was, or copy the rows into a new table (a table dropped through the plugin's migrator is forgotten)",
				ErrInvalidTag, t.Name, describePlacement(*was), e.maps.tables(), describePlacement(*t.Placement))
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	e.warnRowsOnOwn(db, fresh)
	moves, err := e.unfinishedMoves(ctx)
	if err != nil {
		return err
	}
	for _, st := range moves {
		var behind []string
		if st.Phase == mover.PhaseServing { // the new tables' rows go to the target, unless a process routes by the map before
			if behind, err = e.maps.Behind(ctx, st.MapVersion); err != nil {
				return err
			}
			if len(behind) == 0 {
				continue
			}
		}
		return fmt.Errorf("%w: the move of logical shards %d-%d to %s (%s%s) carries the sharded tables recorded when it began, and would neither fence nor copy the new %v: nothing was migrated; finish the move (CleanupMove) or cancel it, then migrate",
			mover.ErrInvalid, st.Logical.From, st.Logical.To, st.To, st.Phase, behindNote(behind), fresh)
	}
	return nil
}

// warnRowsOnOwn warns of tables about to be sharded that hold rows on the
// plugin's database: none is read by the sharded model. A copy kept from
// before the rows were sharded, or an untagged model's rows (the last
// deploy's, whose processes go on writing there in a rolling restart).
func (e *Engine) warnRowsOnOwn(db *gorm.DB, tables []string) {
	own := ownCopyOf(db) // its SQL names the tables about to be sharded
	for _, table := range tables {
		if !own.Migrator().HasTable(table) {
			continue
		}
		var rows []int
		if err := own.Raw("SELECT 1 FROM " + own.Statement.Quote(table) + " LIMIT 1").Scan(&rows).Error; err != nil || len(rows) == 0 {
			continue
		}
		e.config.Log.Warn("shardid: a table made sharded holds rows on the plugin's database, which no statement of its sharded model reads; processes with a model of it without shardid tags (the last deploy's, in a rolling restart) go on writing there",
			"table", table, "hint", "copy the rows into the sharded table through the model, stop the processes of the untagged model, then drop or rename the plugin's copy")
	}
}

// behindNote names the processes that route by a map before a move's.
func behindNote(behind []string) string {
	if len(behind) == 0 {
		return ""
	}
	return "; processes still on the map before it: " + strings.Join(behind, ", ")
}

// checkTableUnmoved refuses to drop or rename a sharded table while an
// unfinished move carries it: its triggers, copy and cleanup name it.
func (e *Engine) checkTableUnmoved(db *gorm.DB, table string) error {
	if e.maps == nil {
		return nil
	}
	moves, err := e.unfinishedMoves(db.Statement.Context)
	if err != nil {
		return err
	}
	for _, st := range moves {
		if slices.ContainsFunc(st.Tables, func(t string) bool { return strings.EqualFold(t, table) || bareTable(t) == bareTable(table) }) {
			return fmt.Errorf("%w: the move of logical shards %d-%d to %s (%s) carries table %s: nothing was changed; finish the move (CleanupMove) or cancel it first",
				mover.ErrInvalid, st.Logical.From, st.Logical.To, st.To, st.Phase, table)
		}
	}
	return nil
}

// unfinishedMoves returns the moves neither cancelled nor cleaned up: their
// sources still fence their ranges, or hold their copies.
func (e *Engine) unfinishedMoves(ctx context.Context) ([]*mapstore.MoveState, error) {
	if err := e.maps.PrepareMoves(ctx); err != nil {
		return nil, err
	}
	moves, err := e.maps.Moves(ctx)
	return slices.DeleteFunc(moves, func(st *mapstore.MoveState) bool {
		return st.Phase == mover.PhaseCancelled || st.Phase == mover.PhaseCleaned
	}), err
}

// loadRecordedTables reads which tables are sharded from the record the
// plugin keeps of its migrations, so that SQL naming one is routed as such
// before this process has used its model (a join table GORM names in
// Association's query, say), not run on the plugin's database: at the
// start, and again whenever a refresh of the map finds the record changed
// (recordsProbe), as another process's migration changes it. Tables the
// record no longer lists are forgotten, and the models of tables whose
// placement it records anew are checked against it again (samePlacement).
func (e *Engine) loadRecordedTables(ctx context.Context) error {
	if err := e.maps.prepareTables(ctx); err != nil {
		return err
	}
	e.recordsMu.Lock()
	defer e.recordsMu.Unlock()
	return e.reloadRecordedTables(ctx)
}

// reloadRecordedTables is loadRecordedTables, recordsMu held and the
// record prepared.
func (e *Engine) reloadRecordedTables(ctx context.Context) error {
	rows, err := e.maps.DB().QueryContext(ctx, "SELECT name, strategy, id_columns, placement, hash_key, stamp FROM "+e.maps.quotedTables())
	if err != nil {
		return err
	}
	defer rows.Close()
	listed := map[string]string{}     // lower case → as recorded
	placements := map[string]placed{} // lower case → placement, where recorded
	var sum int64
	for rows.Next() {
		var name, strategy, idColumns string
		var placement, hashKey sql.NullString
		var stamp sql.NullInt64
		if err := rows.Scan(&name, &strategy, &idColumns, &placement, &hashKey, &stamp); err != nil {
			return err
		}
		sum += max(stamp.Int64, 1) // as recordsProbe sums them
		listed[strings.ToLower(name)] = name
		if placement.Valid {
			placements[strings.ToLower(name)] = placed{rule: placement.String, key: hashKey.String, strategy: strategy, idColumns: idColumns}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	changed := map[string]bool{}
	e.recordedFull.Range(func(k, _ any) bool {
		if _, ok := listed[k.(string)]; !ok {
			changed[k.(string)] = true
		}
		return true
	})
	gone := make([]string, 0, len(changed))
	for name := range changed { // dropped or renamed by another process
		gone = append(gone, name)
		e.recordedPlacements.Delete(name)
	}
	e.forgetRecordedTables(gone)
	for lower, name := range listed {
		if _, ok := e.recordedFull.Load(lower); !ok {
			e.recordTable(name)
		}
		was, had := e.recordedPlacements.Load(lower)
		now, has := placements[lower]
		switch {
		case has && (!had || was.(placed) != now):
			e.recordedPlacements.Store(lower, now)
			changed[lower] = true
		case !has && had:
			e.recordedPlacements.Delete(lower)
			changed[lower] = true
		}
	}
	e.recheckModels(changed)
	e.maps.recordsSum.Store(sum)
	return nil
}

// followRecordedTables reloads the record of sharded tables when probed,
// recordsProbe's value read with the map, says it changed since it was
// last read. A record that cannot be read is tried again at the next
// refresh; the map is followed all the same. So is one this process is
// writing (a migration, whose write may wait on the database's locks for
// long): the refresh, which follows the map and renews the trust in it,
// does not wait for it, and the next refresh reads the record, its sum not
// having been taken. The probe read the record, which needs no preparing.
func (e *Engine) followRecordedTables(ctx context.Context, probed string) {
	if sum, err := strconv.ParseInt(probed, 10, 64); err == nil && sum == e.maps.recordsSum.Load() || probed == "" && e.maps.recordsSum.Load() == 0 {
		return
	}
	if !e.recordsMu.TryLock() {
		return
	}
	defer e.recordsMu.Unlock()
	if err := e.reloadRecordedTables(ctx); err != nil {
		e.config.Log.Warn("shardid: the record of sharded tables changed and cannot be read again; statements go on by the record read before", "table", e.maps.tables(), "error", err)
	}
}

// recordTable notes a table recorded as sharded under each name SQL may
// give it; a key two recorded tables share names neither for certain.
func (e *Engine) recordTable(name string) {
	full := strings.ToLower(name)
	e.recordedFull.Store(full, struct{}{})
	for _, key := range e.tableKeys(name) {
		if was, loaded := e.recordedTables.LoadOrStore(key, full); loaded && was.(string) != full {
			e.recordedTables.Store(key, "")
		}
	}
}

// forgetRecordedTable undoes recordTable: each of its keys names the
// recorded tables left that share it, if any.
func (e *Engine) forgetRecordedTable(name string) { e.forgetRecordedTables([]string{name}) }

// forgetRecordedTables is forgetRecordedTable of each of names, reading the
// tables left once for all of them: a reload finding many tables gone (a
// teardown by another process) costs the number of tables recorded, not
// its product with the number gone.
func (e *Engine) forgetRecordedTables(names []string) {
	holders := map[string][]string{} // each key of a table forgotten → the tables left it names
	for _, name := range names {
		e.recordedFull.Delete(strings.ToLower(name))
		for _, key := range e.tableKeys(name) {
			holders[key] = nil
		}
	}
	if len(holders) == 0 {
		return
	}
	e.recordedFull.Range(func(other, _ any) bool {
		for _, key := range e.tableKeys(other.(string)) {
			if list, ok := holders[key]; ok && (len(list) == 0 || list[len(list)-1] != other.(string)) { // a key listed twice (a name without schema is its own bare name) counts once
				holders[key] = append(list, other.(string))
			}
		}
		return true
	})
	for key, list := range holders {
		switch len(list) {
		case 0:
			e.recordedTables.Delete(key)
		case 1:
			e.recordedTables.Store(key, list[0])
		default:
			e.recordedTables.Store(key, "")
		}
	}
}

// unregisterTable forgets a sharded table dropped through the migrator.
func (e *Engine) unregisterTable(db *gorm.DB, table string) error {
	if e.maps == nil {
		return nil
	}
	ctx := db.Statement.Context
	if err := e.maps.prepareTables(ctx); err != nil {
		return err
	}
	e.recordsMu.Lock()
	defer e.recordsMu.Unlock()
	match := "name = ?"
	if e.foldsTableNames(ctx) {
		match = "lower(name) = lower(?)" // the table dropped under another spelling of its name
	}
	_, err := e.maps.Exec(ctx, "DELETE FROM "+e.maps.quotedTables()+" WHERE "+match, table)
	e.forgetRecordedTable(table)
	e.recordedPlacements.Delete(strings.ToLower(table)) // a table made again under that name places its rows anew
	return err
}

// foldsTableNames reports whether the physical databases find a table by
// its name in any case (SQLite's).
func (e *Engine) foldsTableNames(ctx context.Context) bool {
	for k := range e.physical {
		if ph, err := e.physical[k].open(ctx); err == nil && ph.db.Dialector.Name() == "sqlite" {
			return true
		}
	}
	return false
}

// renameRegisteredTable records a sharded table renamed through the migrator
// by its new name.
func (e *Engine) renameRegisteredTable(db *gorm.DB, oldName, newName string) error {
	if e.maps == nil {
		return nil
	}
	ctx := db.Statement.Context
	if err := e.maps.prepareTables(ctx); err != nil {
		return err
	}
	e.recordsMu.Lock()
	defer e.recordsMu.Unlock()
	if _, err := e.maps.Exec(ctx, "DELETE FROM "+e.maps.quotedTables()+" WHERE name = ?", newName); err != nil { // a stale record of a table gone by then: the old one stays until the rename is recorded
		return err
	}
	_, err := e.maps.Exec(ctx, "UPDATE "+e.maps.quotedTables()+" SET name = ?, stamp = ? WHERE name = ?", newName, newStamp(), oldName)
	if _, recorded := e.recordedTables.Load(strings.ToLower(oldName)); recorded {
		e.forgetRecordedTable(oldName)
		e.recordTable(newName)
	}
	e.recordedPlacements.Delete(strings.ToLower(newName))
	if rule, ok := e.recordedPlacements.LoadAndDelete(strings.ToLower(oldName)); ok {
		e.recordedPlacements.Store(strings.ToLower(newName), rule)
	}
	return err
}

// renameRegisteredColumn records a column of a sharded table renamed
// through the migrator by its new name where the record names it: the
// placement rule's column, the key's, another ID column's. The rows stay
// placed by the same values.
func (e *Engine) renameRegisteredColumn(db *gorm.DB, table, oldName, newName string) error {
	if e.maps == nil {
		return nil
	}
	ctx := db.Statement.Context
	recorded, err := e.registeredTables(ctx)
	if errors.Is(err, errNoShardedTables) {
		return nil
	}
	if err != nil {
		return err
	}
	k := slices.IndexFunc(recorded, func(t shardedTable) bool { return t.Name == table })
	if k < 0 {
		return nil
	}
	t := recorded[k]
	e.recordsMu.Lock()
	defer e.recordsMu.Unlock()
	if t.Key == oldName {
		t.Key = newName
	}
	for i := range t.IDColumns {
		if t.IDColumns[i].Column == oldName {
			t.IDColumns[i].Column = newName
		}
	}
	if t.Placement != nil {
		rule := renamedInRule(*t.Placement, oldName, newName)
		t.Placement = &rule
	}
	if _, err := e.maps.Exec(ctx, "UPDATE "+e.maps.quotedTables()+" SET key_column = ?, id_columns = ?, placement = ?, stamp = ? WHERE name = ?", t.Key, idColumnsText(t.IDColumns), t.Placement, newStamp(), t.Name); err != nil {
		return err
	}
	if t.Placement != nil {
		e.recordedPlacements.Store(strings.ToLower(t.Name), t.placed())
	}
	return nil
}

// renamedInRule is a placement rule (placementOf) with its column renamed
// from oldName to newName, if it names that one.
func renamedInRule(rule, oldName, newName string) string {
	kind, rest, ok := strings.Cut(rule, ":")
	column, tail, more := strings.Cut(rest, ";")
	if !ok || column != oldName {
		return rule
	}
	if more {
		return kind + ":" + newName + ";" + tail
	}
	return kind + ":" + newName
}

// The strategies recorded for a many2many join table beside a sharded
// owner: joinRows when its other side is unsharded (a move carries its rows
// by the owner's key), joinShardedRows when the other side is sharded too (a
// move refuses it).
const (
	joinRows        = mover.JoinRows
	joinShardedRows = mover.JoinShardedRows
)

// joinTablesOf describes the join tables of a sharded model's many2many:
// their rows live beside their owner, whose key their column referencing it
// carries. A column referencing another field than the owner's key is left
// out of Key, which a move refuses.
func (e *Engine) joinTablesOf(m *model) []shardedTable {
	var list []shardedTable
	for _, rel := range m.schema.Relationships.Many2Many {
		if rel.JoinTable == nil {
			continue
		}
		t := shardedTable{Name: rel.JoinTable.Table, Kind: shardedTableOf(m).Kind, Strategy: joinRows}
		for _, ref := range rel.References {
			if ref.OwnPrimaryKey && ref.PrimaryKey.DBName == m.pk().field.DBName {
				t.Key = ref.ForeignKey.DBName
			}
		}
		if other, err := e.model(rel.FieldSchema); err != nil || other != nil && other.sharded() {
			t.Strategy = joinShardedRows
		}
		list = append(list, t)
	}
	return list
}

// shardedTableOf describes a sharded model's table.
func shardedTableOf(m *model) shardedTable {
	key := m.pk()
	placement, hashKey := placementOf(m), hashKeyOf(m)
	t := shardedTable{Name: m.schema.Table, Key: key.field.DBName, Kind: fence.KeyInt64, Strategy: key.strategy, Placement: &placement, HashKey: &hashKey, declared: m.schema.DBNames}
	if key.uuidVersion != 0 {
		t.Kind = fence.KeyUUIDText
	}
	for _, f := range m.fields {
		if f != key && f.uuidVersion == 0 && f.strategy != strategies.NameTicket { // a ticket server is one for every database
			t.IDColumns = append(t.IDColumns, mover.IDColumn{Column: f.field.DBName, Strategy: f.strategy})
		}
	}
	return t
}

// errNoShardedTables says that the plugin has migrated no sharded table.
var errNoShardedTables = errors.New("lists no sharded tables")

// registeredTables returns the sharded tables the plugin has migrated.
func (e *Engine) registeredTables(ctx context.Context) ([]shardedTable, error) {
	if err := e.maps.prepareTables(ctx); err != nil {
		return nil, err
	}
	rows, err := e.maps.DB().QueryContext(ctx, "SELECT name, key_column, key_kind, strategy, id_columns, placement, hash_key FROM "+e.maps.quotedTables()+" ORDER BY name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []shardedTable
	for rows.Next() {
		var t shardedTable
		var kind int
		var idColumns string
		var placement, hashKey sql.NullString
		if err := rows.Scan(&t.Name, &t.Key, &kind, &t.Strategy, &idColumns, &placement, &hashKey); err != nil {
			return nil, err
		}
		if placement.Valid {
			t.Placement = &placement.String
		}
		if hashKey.Valid {
			t.HashKey = &hashKey.String
		}
		t.Kind = fence.KeyKind(kind)
		t.IDColumns = parseIDColumns(idColumns)
		list = append(list, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%w: %s %w: migrate the models with the plugin (Plugin.AutoMigrate) first", mover.ErrInvalid, e.maps.tables(), errNoShardedTables)
	}
	return slices.Clip(list), nil
}

// fromTable is the table a statement reads its rows from, by name: its
// Table's, or for Table("authors AS a"), whose Table is the alias, the
// expression's first word.
func fromTable(stmt *gorm.Statement) string {
	parts := fromTableParts(stmt)
	return parts[len(parts)-1]
}

// fromTableParts is fromTable with its schema, if named (TablePrefix
// "app."): each part of the name, unquoted.
func fromTableParts(stmt *gorm.Statement) []string { return shardmigrator.TableParts(stmt) }
