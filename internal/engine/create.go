package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/sqlerr"
	"github.com/shardid/shardid/internal/twophase"
	"github.com/shardid/shardid/shardrouter"
	"github.com/shardid/shardid/strategies"
)

// A Create: its IDs made before the INSERT, its rows sent to the databases
// of their shards (split per database when they are on several).

// assignIDs fills every zero shardid field of the rows being created and
// validates the preset ones.
func (e *Engine) assignIDs(db *gorm.DB) {
	stmt := db.Statement
	settings, _ := ownSettings(stmt)
	if db.Error != nil {
		return
	}
	e.unprepareTransaction(stmt)
	if stmt.Schema == nil { // db.Table("t").Create(map)
		if e.routed() && (stmt.Table != "" || stmt.TableExpr != nil) {
			e.onPluginDatabase(stmt)
			db.AddError(e.routeTable(db))
		}
		return
	}
	m, err := e.model(stmt.Schema)
	if err != nil {
		db.AddError(err)
		return
	}
	if !e.routed() && (m == nil || !m.sharded()) && db.AddError(e.createIntoShardedTable(stmt)) != nil {
		return // with Config.Shards, keepUnsharded refuses any statement of it on a sharded table
	}
	if e.routed() && (m == nil || !m.sharded()) && db.AddError(e.keepUnsharded(db, kindCreate)) != nil || m == nil {
		return
	}
	if db.AddError(m.createsRefused) != nil {
		return
	}
	if m.sharded() && e.closed.Load() { // before an ID is asked of a strategy Close stopped
		db.AddError(e.closedError(""))
		return
	}
	var counted *routedBy
	if e.routed() && m.sharded() {
		counted = e.countCreate(stmt)
		e.awaitEndedAnchorsOf(stmt)
		e.holdIfAnnounced(db, kindCreate)
		if err := e.mapUsable(); err != nil { // after the hold, which may outlast the map's trust
			e.uncount(counted)
			db.AddError(err)
			return
		}
	}
	var rowsOnStack [1]reflect.Value
	rows, err := structRows(m, stmt.ReflectValue, rowsOnStack[:0])
	if err != nil {
		e.uncount(counted)
		db.AddError(err)
		return
	}
	if err := refusedFill(stmt.Context, m.strategyRefused, rows); err != nil {
		e.uncount(counted)
		db.AddError(err)
		return
	}
	var state *routeState
	var filledInto []filledID
	var scratch *idScratch
	if m.sharded() {
		state = keepWriteState(stmt, e.router.Map()) // the IDs come from, and go to, the databases of one map
		state.counted = counted
		filledInto, scratch = state.filledOnStruct[:0], &state.scratch
	}
	filled, err := e.fill(stmt.Context, db, m, &settings, rows, filledInto, scratch)
	if db.AddError(err) != nil || !m.sharded() || len(rows) == 0 {
		return
	}
	state.filled = filled
	returnStoredKey(stmt, m, len(rows), filled)
	if e.routed() && db.AddError(e.createWithinClause(stmt, m, &settings, rows)) == nil {
		e.routeCreate(db, m, rows)
	}
}

// refusedFill is the error of the first of refused that a Create of rows
// fills (its value zero in one of them), if any.
func refusedFill(ctx context.Context, refused []fieldRefusal, rows []reflect.Value) error {
	for _, r := range refused {
		for _, row := range rows {
			if r.field.field.ReflectValueOf(ctx, row).IsZero() {
				return r.err
			}
		}
	}
	return nil
}

// createIntoShardedTable refuses a Create through a model without the
// shardid tag into a sharded model's table of a row with no key: the
// database would fill it from its own counter, which gives IDs the table's
// strategy issues too.
func (e *Engine) createIntoShardedTable(stmt *gorm.Statement) error {
	owner, sharded := e.shardedModel(stmt.Table)
	key := stmt.Schema.PrioritizedPrimaryField
	if !sharded || key == nil {
		return nil
	}
	keyless := false
	switch rows := reflect.Indirect(stmt.ReflectValue); rows.Kind() {
	case reflect.Slice, reflect.Array:
		for i := 0; i < rows.Len() && !keyless; i++ {
			_, keyless = key.ValueOf(stmt.Context, reflect.Indirect(rows.Index(i)))
		}
	case reflect.Struct:
		_, keyless = key.ValueOf(stmt.Context, rows)
	}
	if !keyless {
		return nil
	}
	return &FieldError{Model: stmt.Schema.Name, Field: key.Name, Err: ErrInvalidTag,
		Detail: fmt.Sprintf("table %s is sharded (model %s), and this model has no shardid tag: a row created without its ID would take one from the database's counter, which the table's strategy issues too; create it through %s, or set its ID", stmt.Table, owner, owner)}
}

// createWithinClause refuses a Create under a one-shard clause whose rows,
// placed by their colocate or hash rule or a preset ID, belong on another
// database than the clause names, as a condition outside the clause is.
func (e *Engine) createWithinClause(stmt *gorm.Statement, m *model, settings *settingsReading, rows []reflect.Value) error {
	if !settings.hinted || settings.hint.kind == hintAll {
		return nil
	}
	named, err := e.hintShard(settings.hint)
	if err != nil {
		return err
	}
	shardMap := e.mapOf(stmt)
	for _, row := range rows {
		shard, zero, err := e.fieldShard(m.pk().field.ReflectValueOf(stmt.Context, row))
		if err != nil || zero || shardMap.Physical(shard) == shardMap.Physical(named) {
			continue
		}
		return fmt.Errorf("%w: %s: a row belongs on %s (logical shard %d), and the statement's shard clause names %s (logical shard %d)",
			ErrCrossShard, m.schema.Name, e.physical[shardMap.Physical(shard)].name, shard, e.physical[shardMap.Physical(named)].name, named)
	}
	return nil
}

// returnStoredKey makes an upsert that may update read back the key of the
// row it wrote, where the dialect can (RETURNING), as GORM does for a key the
// database fills (auto-increment): over a conflict on another unique column
// the stored row keeps its own ID, not the one the plugin made. GORM then
// counts the rows read back as affected, not MySQL's 2 for an update; for a
// key declared the application's (autoIncrement:false, a string) it reads
// nothing back and counts as the server does, and so does this, unless the
// plugin made the key. The columns are those GORM's own RETURNING would
// hold. Not for an upsert of several rows whose WHERE may skip rows: GORM
// matches the rows read back to the rows given by position, which a skipped
// row would shift onto another's key, and the keys the plugin made are
// those stored.
func returnStoredKey(stmt *gorm.Statement, m *model, rows int, filled []filledID) {
	c, upsert := stmt.Clauses["ON CONFLICT"]
	onConflict, _ := c.Expression.(clause.OnConflict)
	_, returning := stmt.Clauses["RETURNING"]
	if !upsert || onConflict.DoNothing || len(onConflict.Where.Exprs) > 0 && rows > 1 || returning || !slices.Contains(stmt.BuildClauses, "RETURNING") {
		return
	}
	if !m.keyFromDatabase && !slices.ContainsFunc(filled, func(f filledID) bool { return f.field == m.pk() }) {
		return
	}
	columns := []clause.Column{{Name: m.pk().field.DBName}}
	for _, f := range stmt.Schema.FieldsWithDefaultDBValue {
		if f.Readable {
			columns = append(columns, clause.Column{Name: f.DBName})
		}
	}
	stmt.AddClause(clause.Returning{Columns: columns})
}

// routeCreate sends the rows to the physical databases of their shards: the
// whole statement when they share one, else one INSERT per database, run as
// one write (execute.go).
func (e *Engine) routeCreate(db *gorm.DB, m *model, rows []reflect.Value) {
	stmt := db.Statement
	var shardsOnStack [8]int
	shards := shardsOnStack[:0]
	for _, row := range rows {
		shard, _, _ := e.fieldShard(m.pk().field.ReflectValueOf(stmt.Context, row))
		shards = append(shards, shard)
	}
	// GORM's CreateInBatches wraps its batches in a transaction on the
	// plugin's own database, which holds no shard, as an application may.
	// Where two phases are used it commits with that transaction; else
	// (BestEffort) its batches are written as if outside it.
	g, err := e.anchoredCreate(db) // its connection pool is now the anchored write's
	if db.AddError(err) != nil {
		return
	}
	anchored := g != nil
	detached := !anchored && inTransaction(stmt.ConnPool) && e.config.Atomic == BestEffort && e.inBatchWrapper(stmt)
	// Only where two phases were asked for and the dialect has none: a look at the transaction costs more.
	if !anchored && e.config.Atomic == TwoPhase && !twophase.Supported(e.db.Dialector.Name()) && e.routed() {
		if _, own := e.ownTransaction(stmt); own {
			db.AddError(fmt.Errorf("%w: %s has no two-phase commit, so rows created in a transaction on the plugin's own database (CreateInBatches's among them) cannot commit with it: set Config.Atomic to shardid.BestEffort, or begin the transaction with a shard clause (shardid.ByID, OnShard, ByKey)",
				ErrNotAtomic, e.db.Dialector.Name()))
			return
		}
	}
	shardMap := e.mapOf(stmt)
	if first, one := shardrouter.OneDatabase(shards, shardMap); one {
		if detached {
			pool, err := e.poolOf(stmt.Context, first, stmt.ConnPool)
			if db.AddError(err) != nil {
				return
			}
			stmt.ConnPool = pool
		}
		outside := !inTransaction(stmt.ConnPool)
		if db.AddError(e.bind(db, first)) == nil && outside {
			if state := routeStateOf(stmt); state != nil {
				state.boundOn = first + 1 // GORM begins a transaction there for it
			}
		}
		return
	}
	parts := shardrouter.PlanRows(shards, shardMap)
	if db.DryRun { // built, never run: GORM's one INSERT of every row, as a fan-out's SQL stays as written
		physicals := make([]int, len(parts))
		for i, part := range parts {
			physicals[i] = part.Database
		}
		stmt.Settings.Store(fanOutKey{}, physicals)
		return
	}
	order := make([]int, len(parts))
	groups := make(map[int][]reflect.Value, len(parts))
	for i, part := range parts {
		order[i] = part.Database
		for _, r := range part.Rows {
			groups[part.Database] = append(groups[part.Database], rows[r])
		}
	}
	if inTransaction(stmt.ConnPool) && !detached && globalOf(stmt.ConnPool) == nil {
		db.AddError(fmt.Errorf("%w: %s: the rows belong on %d physical databases, a transaction is on one (begin it with shardid.AcrossShards() to span several)", ErrCrossShard, m.schema.Name, len(order)))
		return
	}
	if db.AddError(e.checkAllRows(stmt, m, rows)) != nil {
		return
	}
	_, replaced := returningOf(stmt) // RETURNING every column: GORM scans the rows anew into each part's slice
	if onConflict, ok := stmt.Clauses["ON CONFLICT"].Expression.(clause.OnConflict); replaced && ok && onConflict.DoNothing {
		db.AddError(fmt.Errorf("%w: %s: RETURNING every column with ON CONFLICT DO NOTHING over %d physical databases: the rows that come back could not be matched with the caller's; return the columns by name", ErrCrossShard, m.schema.Name, len(order)))
		return
	}
	e.fannedOut(db, order)
	writes := make([]writePart, len(order))
	dests := make([]reflect.Value, len(order))
	now := db.NowFunc() // one statement, one time, on every database
	// Each part holds its rows as the caller's slice does, so that callbacks
	// and hooks reading the statement's Dest find its type: pointers to the
	// caller's rows, or copies of them, copied back once the parts ran.
	elem := reflect.Indirect(stmt.ReflectValue).Type().Elem()
	byValue := elem.Kind() != reflect.Pointer
	for i, k := range order {
		subset := reflect.MakeSlice(reflect.SliceOf(elem), 0, len(groups[k]))
		for _, row := range groups[k] {
			if byValue {
				subset = reflect.Append(subset, row)
			} else {
				subset = reflect.Append(subset, row.Addr())
			}
		}
		dests[i] = reflect.New(subset.Type()) // addressable, as GORM's scan of RETURNING needs
		dests[i].Elem().Set(subset)
		part := db.Session(&gorm.Session{Context: stmt.Context, Initialized: true}) // a statement of its own, run as it is
		keepInstanceSettings(stmt, part.Statement)
		part.Config.NowFunc = func() time.Time { return now }
		pool, err := e.poolOf(stmt.Context, k, stmt.ConnPool)
		if part.AddError(err) == nil {
			part.Statement.ConnPool = pool
		}
		part.Statement.Settings.Store(pinKey{}, pin{schema: m.schema, physical: k}) // its errors are named by runParts
		e.logPartTo(stmt, part)
		part.Statement.Model, part.Statement.Dest = nil, dests[i].Interface()
		writes[i] = writePart{k: k, db: part}
	}
	undone := e.runParts(db, kindCreate, writes, nil)
	if undone {
		if state := routeStateOf(stmt); state != nil {
			state.undone = true // its IDs, and those of the Creates its parts ran, are given back
		}
	}
	for i, k := range order { // copies back into the caller's rows, and the rows RETURNING gave, in the order they were inserted
		back := dests[i].Elem()
		for j, row := range groups[k] {
			switch {
			case j >= back.Len():
			case byValue:
				if !undone { // undone, the rows keep what they came with: the IDs its parts made are given back in the copies
					row.Set(back.Index(j))
				}
			case replaced && (db.Error == nil || db.Error == errRouted) && back.Index(j).Pointer() != row.Addr().Pointer():
				row.Set(back.Index(j).Elem())
			}
		}
	}
}

// structRows appends to rows the addressable structs behind a Create's
// value: one struct, or the elements of a slice or array of structs or
// pointers.
func structRows(m *model, rv reflect.Value, rows []reflect.Value) ([]reflect.Value, error) {
	rv = reflect.Indirect(rv)
	switch rv.Kind() {
	case reflect.Struct:
		if err := m.ofModel(rv.Type()); err != nil {
			return nil, err
		}
		return append(rows, rv), nil
	case reflect.Slice, reflect.Array:
		rows = slices.Grow(rows, rv.Len())
		var seen map[uintptr]int // the rows given by pointer: one row twice would get one ID, inserted twice
		for i := range rv.Len() {
			switch row := reflect.Indirect(rv.Index(i)); row.Kind() {
			case reflect.Struct:
				if err := m.ofModel(row.Type()); err != nil {
					return nil, err
				}
				if rv.Index(i).Kind() == reflect.Pointer {
					if seen == nil {
						seen = make(map[uintptr]int, rv.Len())
					}
					if j, twice := seen[row.Addr().Pointer()]; twice {
						return nil, &FieldError{Model: m.schema.Name, Field: m.fields[0].field.Name, Err: ErrInvalidID,
							Detail: fmt.Sprintf("rows #%d and #%d are one row (one pointer twice): it gets one ID, which the insert would repeat; give each row a struct of its own", j, i)}
					}
					seen[row.Addr().Pointer()] = i
				}
				rows = append(rows, row)
			case reflect.Invalid: // a nil pointer, which GORM refuses as it builds the INSERT
				return nil, fmt.Errorf("slice data #%d is invalid: %w", i, gorm.ErrInvalidData)
			case reflect.Map, reflect.Interface:
				return nil, &FieldError{Model: m.schema.Name, Field: m.fields[0].field.Name, Err: ErrNoShard,
					Detail: fmt.Sprintf("cannot assign IDs when creating from a slice of %s; create from the struct or a slice of it", row.Kind())}
			}
		}
		return rows, nil
	}
	return nil, &FieldError{Model: m.schema.Name, Field: m.fields[0].field.Name, Err: ErrNoShard,
		Detail: fmt.Sprintf("cannot assign IDs when creating from a %s; create from the struct or a slice of it", rv.Kind())}
}

// ofModel refuses rows of a type other than the model's (db.Model(&a{}).Create(&b{})):
// the model's fields, and the IDs written into them, would not be theirs.
func (m *model) ofModel(row reflect.Type) error {
	if row == m.schema.ModelType || row.ConvertibleTo(m.schema.ModelType) {
		return nil
	}
	return &FieldError{Model: m.schema.Name, Field: m.fields[0].field.Name, Err: ErrNoShard,
		Detail: fmt.Sprintf("the rows created are %s, not the statement's model: create them without Model, or as the model", row)}
}

// fill validates the preset IDs of rows and gives the zero ones a new ID:
// one Generate call (for instagram, one round trip) per field. The IDs go
// into the rows once every field's are made, so a failure leaves them zero
// (a field colocated on another tagged field needs that one in place first).
func (e *Engine) fill(ctx context.Context, db *gorm.DB, m *model, settings *settingsReading, rows []reflect.Value, filled []filledID, scratch *idScratch) ([]filledID, error) {
	type fieldIDs struct {
		field *idField
		ids   []int64 // for the rows whose field is zero, in their order
		uuids []uuid.UUID
	}
	var madeOnStack [2]fieldIDs
	made := madeOnStack[:0]
	write := func() {
		for _, done := range made {
			i := 0
			for _, row := range rows {
				// The rows still zero are those the IDs were made for: nothing else writes the field meanwhile.
				if v := done.field.field.ReflectValueOf(ctx, row); v.IsZero() {
					if done.uuids != nil {
						writeUUID(v, done.uuids[i])
					} else {
						writeID(v, done.ids[i])
					}
					filled = append(filled, filledID{field: done.field, value: v})
					i++
				}
			}
		}
		made = made[:0]
	}
	var ahead map[int]int64 // by database, the highest preset ID of the field timed now or later
	for i, f := range m.fields {
		if f.colocate != nil && m.tagged(f.colocate) || f.hash != nil && m.tagged(f.hash) {
			write() // this field follows another ID of the same row: that one must be in place
		}
		shards, ids := scratch.forRow(i, len(rows))
		for _, row := range rows {
			value := f.field.ReflectValueOf(ctx, row)
			zero, err := e.checkPreset(f, value)
			if err != nil {
				return nil, &FieldError{Model: m.schema.Name, Field: f.field.Name, Err: ErrInvalidID, Detail: fmt.Sprintf("preset value: %v", err)}
			}
			if !zero {
				ahead = e.presetAhead(db, f, value, ahead)
				if err := e.placeParentBy(ctx, db, f, row, value); err != nil {
					return nil, err
				}
				continue
			}
			if !value.CanSet() { // Create(T{}): the new ID could not reach the caller's row
				return nil, &FieldError{Model: m.schema.Name, Field: f.field.Name, Err: gorm.ErrInvalidValue,
					Detail: "create from a pointer (Create(&row)): the plugin writes the new ID into the row"}
			}
			shard, err := e.shardOf(ctx, db, m, settings, f, row)
			if err != nil {
				return nil, err
			}
			shards = append(shards, shard)
		}
		if err := e.advancePast(ctx, db, m, f, ahead); err != nil {
			return nil, errs.Wrap(err, "%s.%s", m.schema.Name, f.field.Name)
		}
		clear(ahead)
		if len(shards) == 0 {
			continue
		}
		if f.colocate == nil && f.hash == nil {
			// Uniform shards in ascending order are still uniform, and they make
			// the batch's IDs ascend, which B-tree indexes append cheaply.
			slices.Sort(shards)
		}
		if f.uuidVersion != 0 {
			uuids := make([]uuid.UUID, len(shards))
			for i, shard := range shards {
				var err error
				if uuids[i], err = e.uuids.New(f.uuidVersion, shard); err != nil {
					return nil, errs.Wrap(err, "%s.%s", m.schema.Name, f.field.Name)
				}
			}
			made = append(made, fieldIDs{field: f, uuids: uuids})
			continue
		}
		ids = ids[:len(shards)]
		err := e.generate(ctx, db, m, f, shards, ids)
		if err != nil {
			return nil, errs.Wrap(err, "%s.%s", m.schema.Name, f.field.Name)
		}
		made = append(made, fieldIDs{field: f, ids: ids})
	}
	write()
	return filled, nil
}

// presetAhead notes in ahead a preset ID of an instagram field, by its
// database: its clock-sequence could issue it again, unless it has issued
// past its tick (advancePast asks).
func (e *Engine) presetAhead(db *gorm.DB, f *idField, value reflect.Value, ahead map[int]int64) map[int]int64 {
	if _, ok := f.generator.(*strategies.Instagram); !ok {
		return ahead
	}
	id, err := readID(value)
	if err != nil {
		return ahead
	}
	if ahead == nil {
		ahead = map[int]int64{}
	}
	k := e.mapOf(db.Statement).Physical(e.layout.Shard(id))
	ahead[k] = max(ahead[k], id)
	return ahead
}

// advancePast moves the clock-sequence of each database in ahead past its
// preset ID, as an auto-increment moves past a key inserted by hand.
func (e *Engine) advancePast(ctx context.Context, db *gorm.DB, m *model, f *idField, ahead map[int]int64) error {
	for k, id := range ahead {
		target, err := e.target(db, m, k)
		if err != nil {
			e.boundTo(db.Statement, k) // the statement's database, counted there
			return err
		}
		clock := f.generator.(*strategies.Instagram)
		if clock.IssuedPast(target, id) {
			continue // by the database's clock, not this process's, which may be ahead of it
		}
		if pool, ok := target.Conn.(*sql.DB); !ok || pool != target.DB {
			target.DB = nil // SQLite, in the statement's transaction: on its connection, which holds the file's lock
		}
		if err := clock.Advance(ctx, target, target, id); err != nil {
			return err
		}
	}
	return nil
}

// checkPreset reports whether an ID field is unset, and refuses a set value
// the plugin cannot have made: an int64 that is not positive or, of a
// strategy that keeps time there, is timed too far ahead; text that is not a
// UUID.
func (e *Engine) checkPreset(f *idField, v reflect.Value) (zero bool, err error) {
	if isUUIDType(v.Type()) {
		if v.IsZero() {
			return true, nil
		}
		u, err := uuidOf(v.Interface())
		if err == nil && u == uuid.Nil {
			err = fmt.Errorf("%w: the nil UUID (all zeros) is no ID: leave the field empty for a new one", strategies.ErrInvalidID)
		}
		return false, err
	}
	id, err := readID(v)
	switch {
	case err != nil || id == 0:
	case f.strategy == strategies.NameSegment || f.strategy == strategies.NameTicket:
		if id < 0 { // a counter where the time field is: no time to check
			err = fmt.Errorf("%w: %d is not positive", strategies.ErrInvalidID, id)
		}
	default:
		err = e.layout.Check(id, time.Now()) // read only for a preset ID: most rows have none
	}
	return id == 0 && err == nil, err
}

// placedBefore says when a Create places its rows, for the field a callback
// or hook of the application fills in too late.
const placedBefore = `, before the Create places the row: a callback that fills it in runs before shardid:assign_ids (Callback().Create().Before("shardid:assign_ids")), a BeforeCreate hook runs too late`

// shardOf picks the logical shard of a new row by the field's tag: the shard
// of the colocate ID, the hash of the hash field, or else the shard of the
// statement's shard clause, or one of the shards of its transaction's
// database, or any, uniformly at random.
func (e *Engine) shardOf(ctx context.Context, db *gorm.DB, m *model, settings *settingsReading, f *idField, row reflect.Value) (int, error) {
	noShard := func(format string, args ...any) error {
		return &FieldError{Model: m.schema.Name, Field: f.field.Name, Err: ErrNoShard, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case f.colocate != nil:
		source := f.colocate.ReflectValueOf(ctx, row)
		shard, zero, err := e.fieldShard(source)
		if f.parent != nil {
			// A parent GORM creates in this call gives the key its ID, whatever the key held.
			parentShard, none, parentErr := e.fillParent(ctx, db, f.parent, row, source, -1)
			if parentErr != nil {
				return 0, parentErr
			}
			if !none {
				shard, zero, err = parentShard, false, nil
			}
		}
		if err != nil {
			return 0, noShard("colocate:%s: %v", f.colocate.Name, err)
		}
		if zero {
			return 0, noShard("colocate:%s is not set; set %s (or the %s it belongs to) to the ID this row lives beside%s", f.colocate.Name, f.colocate.Name, parentName(f), placedBefore)
		}
		return shard, nil
	case f.hash != nil:
		shard, err := e.rowHashShard(ctx, f, row)
		if errors.Is(err, errEmptyKey) {
			return 0, noShard("hash:%s is empty; the row's shard is the hash of its value%s", f.hash.Name, placedBefore)
		}
		if err != nil {
			return 0, noShard("hash:%s: %v", f.hash.Name, err)
		}
		return shard, nil
	}
	// A shard clause places the row; inside a transaction on one database,
	// the row goes to one of that database's logical shards.
	if settings.hinted && settings.hint.kind != hintAll {
		return e.hintShard(settings.hint)
	}
	if !inTransaction(db.Statement.ConnPool) || !e.routed() {
		return rand.IntN(e.layout.ShardCount()), nil
	}
	if k, ok := e.transactionPhysical(db.Statement); ok {
		held := e.mapOf(db.Statement).Logical(k)
		if len(held) == 0 {
			return 0, noShard("the transaction is on %s, which holds no logical shards now (a move's target before it, or its source after it); begin it with a shard clause", e.physical[k].name)
		}
		return held[rand.IntN(len(held))], nil
	}
	return rand.IntN(e.layout.ShardCount()), nil
}

// placeParentBy gives the belongs-to parent created in the same call as a
// row whose colocated ID is preset an ID on that ID's shard, so that the row
// stays beside it.
func (e *Engine) placeParentBy(ctx context.Context, db *gorm.DB, f *idField, row, preset reflect.Value) error {
	if f.colocate == nil || f.parent == nil {
		return nil
	}
	shard, zero, err := e.fieldShard(preset)
	if err != nil || zero {
		return nil // checkPreset has judged the value
	}
	_, _, err = e.fillParent(ctx, db, f.parent, row, f.colocate.ReflectValueOf(ctx, row), shard)
	return err
}

// fillParent gives the belongs-to parent about to be created in the same call
// its ID first (on logical shard place, unless it is -1), so that its child
// can be colocated with it, and copies that ID into the child's foreign key.
// It reports zero when there is no such parent, or its ID is not a shardid
// field.
func (e *Engine) fillParent(ctx context.Context, db *gorm.DB, rel *schema.Relationship, row, foreignKey reflect.Value, place int) (shard int, zero bool, err error) {
	parent := reflect.Indirect(rel.Field.ReflectValueOf(ctx, row))
	if _, unset := rel.Field.ValueOf(ctx, row); unset || parent.Kind() != reflect.Struct {
		return 0, true, nil // GORM saves no parent that is nil, or a zero struct
	}
	// Only a parent that GORM will create in this call (not one left out with Omit or Select).
	columns, restricted := db.Statement.SelectAndOmitColumns(true, false)
	if saved, named := columns[rel.Name]; named && !saved || !named && restricted {
		return 0, true, nil
	}
	pm, err := e.model(rel.FieldSchema)
	if err != nil || pm == nil {
		return 0, true, err
	}
	settings := readSettings(db.Statement)
	if place >= 0 {
		settings.hinted, settings.hint = true, OnShard(place)
	}
	made, err := e.fill(ctx, db, pm, &settings, []reflect.Value{parent}, nil, nil)
	if err != nil {
		return 0, false, err
	}
	key := rel.References[0].PrimaryKey.ReflectValueOf(ctx, parent)
	if shard, zero, err = e.fieldShard(key); err != nil || zero {
		return shard, zero, err
	}
	if key.Type().ConvertibleTo(foreignKey.Type()) {
		foreignKey.Set(key.Convert(foreignKey.Type()))
		if len(made) > 0 { // the key names an ID made now
			made = append(made, filledID{value: foreignKey})
		}
	}
	if state := routeStateOf(db.Statement); state != nil {
		state.parents = append(state.parents, made...) // a Create that wrote nothing gives them back
	}
	return shard, false, nil
}

func parentName(f *idField) string {
	if f.parent != nil {
		return f.parent.FieldSchema.Name
	}
	return "row"
}

// inBatchWrapper reports whether the statement's transaction is the one GORM's
// CreateInBatches opened on the plugin's own database, not a transaction of
// the application's: one the plugin knows no shard of, no nested Transaction
// has set a savepoint in, and whose batch loop CreateInBatches runs.
func (e *Engine) inBatchWrapper(stmt *gorm.Statement) bool {
	if sqlTx(stmt.ConnPool) == nil || stmt.DB.DisableNestedTransaction {
		return false // a transaction the registries cannot note, or nesting without savepoints: fail closed
	}
	if _, known := e.transactionPhysical(stmt); known {
		return false
	}
	if _, nested := e.savepoints.lookup(stmt.ConnPool); nested {
		return false
	}
	return inCreateInBatchesWrapper()
}

// writeID stores a positive id in an int64 or uint64 field.
func writeID(v reflect.Value, id int64) {
	if v.Kind() == reflect.Uint64 {
		v.SetUint(uint64(id))
	} else {
		v.SetInt(id)
	}
}

// generate makes the IDs of shards with f's strategy. An ID of logical shard
// s comes from the physical database holding s (that is where the instagram
// clock-sequence of s is kept), so the shards are grouped by database: one
// Generate call, and for instagram one round trip, per database.
func (e *Engine) generate(ctx context.Context, db *gorm.DB, m *model, f *idField, shards []int, ids []int64) error {
	shardMap := e.mapOf(db.Statement) // the statement's map, by which its rows are routed too
	if first, one := shardrouter.OneDatabase(shards, shardMap); one {
		target, err := e.target(db, m, first)
		if err != nil {
			e.boundTo(db.Statement, first) // the statement's database, counted there
			return err
		}
		return e.closedUnder(target.Name, e.generateOn(ctx, db.Statement, f.generator, target, shards, ids))
	}
	for _, part := range shardrouter.PlanRows(shards, shardMap) {
		group := make([]int, len(part.Rows))
		for j, i := range part.Rows {
			group[j] = shards[i]
		}
		made := make([]int64, len(group))
		target, err := e.target(db, m, part.Database)
		if err != nil {
			return err
		}
		if err := e.generateOn(ctx, db.Statement, f.generator, target, group, made); err != nil {
			return e.closedUnder(target.Name, err)
		}
		for j, i := range part.Rows {
			ids[i] = made[j]
		}
	}
	return nil
}

// generateOn runs generator for target. Its work on the database's pool,
// outside the statement's transaction (an instagram fetch, a snowflake
// lease, a segment block), needs a connection besides the transaction's: of
// a pool capped by SetMaxOpenConns, whose last one the transaction may hold
// itself, it waits ConnectTimeout, then fails saying why, rather than until
// the statement's context ends. A generator that works elsewhere (ticket, on
// its servers) waits on nothing of the pool and is not bounded so.
func (e *Engine) generateOn(ctx context.Context, stmt *gorm.Statement, generator strategies.Generator, target strategies.Target, shards []int, ids []int64) error {
	err := e.generateOnPool(ctx, stmt, generator, target, shards, ids)
	if err == nil || !usesTargetPool(generator) || errors.Is(err, ErrShardUnavailable) {
		return err
	}
	if sqlerr.Ended(ctx) != nil {
		return sqlerr.OfEndedContext(ctx, err) // the caller's end, which the driver met as a closed connection
	}
	return &idSourceError{name: target.Name, err: err}
}

// idSourceError is the error of a strategy's work on a physical database's
// pool (an instagram reservation, a snowflake lease, a segment block): one
// of a database that could not be reached, or whose connection was lost (a
// read timeout on a server that stopped answering), is an
// ErrShardUnavailable, as the statement's own would be, wherever the
// statement's transaction is.
type idSourceError struct {
	name string
	err  error
}

func (e *idSourceError) Error() string {
	if !sqlerr.Unreachable(e.err) {
		return errs.Text(e.err)
	}
	return fmt.Sprintf("%v: %s: %s", ErrShardUnavailable, e.name, errs.Text(e.err))
}
func (e *idSourceError) Unwrap() error { return e.err }
func (e *idSourceError) Is(target error) bool {
	return target == ErrShardUnavailable && sqlerr.Unreachable(e.err)
}

// generateOnPool runs generator for target, bounded as generateOn says.
func (e *Engine) generateOnPool(ctx context.Context, stmt *gorm.Statement, generator strategies.Generator, target strategies.Target, shards []int, ids []int64) error {
	if target.DB == nil || target.Conn != strategies.Conn(target.DB) || !usesTargetPool(generator) || !inTransaction(stmt.ConnPool) && globalOf(stmt.ConnPool) == nil {
		return generator.Generate(ctx, target, shards, ids)
	}
	capped := target.DB.Stats().MaxOpenConnections
	if capped == 0 {
		return generator.Generate(ctx, target, shards, ids)
	}
	timeout := e.config.connectTimeout()
	bounded, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := generator.Generate(bounded, target, shards, ids)
	if err != nil && bounded.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("%w: %s: making IDs needs a connection of its pool outside the statement's transaction, and the pool's %d (SetMaxOpenConns), one held by that transaction, stayed in use for %s (Config.ConnectTimeout): %w",
			ErrShardUnavailable, target.Name, capped, timeout, err)
	}
	return err
}

// usesTargetPool reports whether generator makes its IDs on the target
// database's pool: every strategy but ticket, whose tickets come from its own
// servers, each statement bounded by TicketOptions.Timeout.
func usesTargetPool(generator strategies.Generator) bool {
	_, ticket := generator.(*strategies.Ticket)
	return !ticket
}

// idScratch is room, in a Create's routing state, for the shards and IDs of
// one row's fields (two at most), which would otherwise cost each Create
// two allocations.
type idScratch struct {
	shards [2][1]int
	ids    [2][1]int64
}

// forRow returns empty shards and ids slices for field i of n rows: room in
// the scratch for one row, made anew for more.
func (s *idScratch) forRow(i, n int) ([]int, []int64) {
	if s != nil && n == 1 && i < len(s.shards) {
		return s.shards[i][:0], s.ids[i][:]
	}
	return make([]int, 0, n), make([]int64, n)
}

// target is physical database k, for a strategy. Strategies run their SQL on
// the database's pool, outside the statement's transaction, so no lock they
// take is held until that transaction ends; on SQLite, whose one writer may be
// that very transaction, they run on the transaction when it is on k.
func (e *Engine) target(db *gorm.DB, m *model, k int) (strategies.Target, error) {
	ph, err := e.opened(db.Statement.Context, k)
	if err != nil {
		return strategies.Target{}, err
	}
	t := strategies.Target{Name: e.physical[k].name, Dialect: e.db.Dialector.Name(), DB: ph.sqlDB}
	if ph.sqlDB != nil { // else no Conn at all, not a nil *sql.DB that a strategy would call
		t.Conn = ph.sqlDB
	}
	if m != nil {
		t.Table = m.schema.Table
		if db.Statement.Schema == m.schema && db.Statement.Table != "" {
			t.Table = db.Statement.Table // db.Table("ledger"): segment's counter is the table's the rows go into
		}
	}
	if t.Dialect == "sqlite" && inTransaction(db.Statement.ConnPool) {
		if on, ok := e.transactionPhysical(db.Statement); !e.routed() || ok && on == k {
			t.Conn = db.Statement.ConnPool
		}
	}
	return t, nil
}
