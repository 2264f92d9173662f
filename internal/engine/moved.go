package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/fence"
	"github.com/shardid/shardid/internal/sqlerr"
	"github.com/shardid/shardid/internal/sqlscan"
	"github.com/shardid/shardid/shardrouter"
)

// MovedError is an [ErrShardMoved]: the shard, the database it moved to, and
// the database's own refusal.
type MovedError struct {
	Shard int    // -1 where the database's message does not carry it (SQLite)
	To    string // the database the shard moved to
	Why   string // why the plugin did not retry the write itself
	Err   error
}

func (e *MovedError) Error() string {
	shard := "a logical shard"
	if e.Shard >= 0 {
		shard = fmt.Sprintf("logical shard %d", e.Shard)
	}
	return fmt.Sprintf("%v: %s moved to %s: %s", ErrShardMoved, shard, e.To, e.Why)
}

func (e *MovedError) Is(target error) bool { return target == ErrShardMoved }
func (e *MovedError) Unwrap() error        { return e.Err }

// defaultMoveWait bounds how long a refused write outside a transaction is
// held for the new map.
const defaultMoveWait = 5 * time.Second

// MovedStats counts the writes the plugin held because their shard was moving.
type MovedStats struct {
	Held    uint64        // writes refused by a moving shard's fence and held
	Retried uint64        // of them, written on the new database
	Failed  uint64        // refused with ErrShardMoved
	Longest time.Duration // the longest a write was held
}

type movedCounters struct {
	held, retried, failed atomic.Uint64
	longest               atomic.Int64
}

// MovedWrites returns the counts of writes held at a move's cutover.
func (e *Engine) MovedWrites() MovedStats {
	c := &e.movedStats
	return MovedStats{Held: c.held.Load(), Retried: c.retried.Load(), Failed: c.failed.Load(), Longest: time.Duration(c.longest.Load())}
}

// filledID is an ID the plugin made for a Create: its field and the value it
// went into.
type filledID struct {
	field *idField
	value reflect.Value
}

// unfill gives the rows of a Create that wrote nothing back the zero IDs
// they came with, as GORM leaves an auto-increment key unset when its INSERT
// fails: a row retried with another colocate or hash value gets a new ID, not
// the one made for its old shard. The parents created in the same call, and
// the keys naming them, and the rows the Creates it ran wrote in its
// transaction, too when that transaction rolled back; in the application's,
// they are written.
func (state *routeState) unfill(rolledBack bool) {
	made := state.filled
	if rolledBack {
		made = append(append(slices.Clip(made), state.parents...), state.nested...)
	}
	for _, m := range made {
		m.value.SetZero()
	}
	state.filled, state.parents, state.nested = nil, nil, nil
}

// handUp gives the IDs a Create made and kept to the Create whose
// transaction it ran in (an association's save, a part of a split Create), so
// that they are given back if that transaction rolls back.
func handUp(stmt *gorm.Statement, state *routeState) {
	enclosing, ok := stmt.Context.Value(routingKey{}).(*writeContext)
	if !ok || enclosing.stmt == stmt {
		return
	}
	if _, part := loadSetting(stmt, pinKey{}); !part && (!inTransaction(stmt.ConnPool) || enclosing.stmt.ConnPool != stmt.ConnPool) {
		return // committed on its own
	}
	enclosing.nested = append(append(append(enclosing.nested, state.filled...), state.parents...), state.nested...)
}

// retryMoved runs right after GORM executes a write. A write the source of a
// move refused is, outside a transaction of the application's, held until
// this process has the map that sends it elsewhere and run there, within
// Config.MoveWait; otherwise it fails with ErrShardMoved.
func (e *Engine) retryMoved(kind statementKind, executor string) func(*gorm.DB) {
	return func(db *gorm.DB) {
		if !e.routed() {
			return
		}
		if db.Error == nil {
			if kind != kindCreate && !db.DryRun {
				e.partOnStaleMap(db)
			}
			if kind != kindCreate && db.Error == nil && !db.DryRun && (db.RowsAffected == 0 || e.namesSeveralShards(db)) {
				e.missedOnStaleMap(db, kind, executorOf(db, kind, executor))
			}
			if kind != kindCreate && db.Error == nil && !db.DryRun {
				e.joinRowsOnStaleMap(db)
			}
			return
		}
		if fence.RacedInstall(db.Error) {
			e.runAgain(db, kind, executorOf(db, kind, executor), fence.RacedInstall)
			return
		}
		if state := routeStateOf(db.Statement); state != nil && state.lockedGaps && deadlocked(db.Error) {
			e.runAgain(db, kind, executorOf(db, kind, executor), deadlocked)
			return
		}
		shard, to, moved := fence.MovedShard(db.Error)
		if !moved {
			return
		}
		refused := &MovedError{Shard: shard, To: to, Err: db.Error}
		if why := e.whyNotRetried(db, kind); why != "" {
			refused.Why = why
			e.movedStats.failed.Add(1)
			db.Error = refused
			return
		}
		e.movedStats.held.Add(1)
		start := time.Now()
		err := e.holdAndRetry(db, kind, executorOf(db, kind, executor), start.Add(e.moveWait()))
		e.noteHeld(time.Since(start))
		switch {
		case err == nil && db.Error == nil:
			e.movedStats.retried.Add(1)
		case err != nil:
			refused.Why, refused.Err = errs.Text(err), errors.Join(refused.Err, db.Error)
			e.movedStats.failed.Add(1)
			db.Error = refused
		}
	}
}

// noteHeld keeps the longest a write was held.
func (e *Engine) noteHeld(waited time.Duration) {
	for {
		longest := e.movedStats.longest.Load()
		if int64(waited) <= longest || e.movedStats.longest.CompareAndSwap(longest, int64(waited)) {
			return
		}
	}
}

// joinRowsOnStaleMap refuses an update or delete of many2many join rows,
// routed to their owners' database, when that database has sealed the
// cutover of an owner's range since: the owner's join rows are on the new
// database, where this statement did not run. Its process reads the map, and
// the statement run again goes there.
func (e *Engine) joinRowsOnStaleMap(db *gorm.DB) {
	stmt := db.Statement
	if stmt.Schema == nil {
		return
	}
	if _, joins := e.joinTables.Load(strings.ToLower(stmt.Schema.Table)); !joins {
		return
	}
	owners, err := e.joinRowOwners(stmt, false)
	if err != nil || len(owners) == 0 {
		return
	}
	if db.RowsAffected > 0 && !slices.ContainsFunc(owners, func(s int) bool { return s != owners[0] }) {
		return // its one owner's rows were here
	}
	sealed, _, ok := e.sealedWhereRan(db)
	if !ok {
		return
	}
	for _, r := range sealed {
		if slices.ContainsFunc(owners, func(s int) bool { return s >= r.From && s <= r.To }) {
			db.AddError(&MovedError{Shard: r.From, To: "another database", Why: "join rows of an owner that moved, routed by a map before the move; run it again"})
			e.movedStats.failed.Add(1)
			return
		}
	}
}

// namesSeveralShards reports whether an update or delete on a sharded
// model names rows of two logical shards or more, which its map put on one
// database and a move may since have split.
func (e *Engine) namesSeveralShards(db *gorm.DB) bool {
	stmt := db.Statement
	if state := routeStateOf(stmt); state != nil && state.boundOn > 0 {
		return state.severalShards // as its routing found
	}
	if stmt.Schema == nil {
		return false
	}
	m, err := e.model(stmt.Schema)
	if err != nil || m == nil || !m.sharded() {
		return false
	}
	var rowsOnStack [1]int
	planned := shardrouter.Statement{Keys: m.keys, Where: readClauses(stmt).where, Rows: e.modelShards(stmt, m, kindUpdate, rowsOnStack[:0])}
	return shardrouter.PlanRoute(planned, e.mapOf(stmt)).Several
}

// missedOnStaleMap looks again at an update or delete that found no row, or
// that names rows of several logical shards: when the database it ran on
// sealed the cutover of a range the statement names, a row of it may have
// been created on the new database since, where no trigger of this one sees
// it. The database decides, not the map's age: its fence is read after the
// write, in the statement's transaction. The statement then runs where the
// new map sends it, or, in a transaction, as a part of a statement over
// several databases, or when its rows are now on several, fails with
// ErrShardMoved (GORM's transaction takes back what it wrote).
func (e *Engine) missedOnStaleMap(db *gorm.DB, kind statementKind, execute func(*gorm.DB)) {
	stmt := db.Statement
	if stmt.Schema == nil {
		e.clauseWriteOnStaleMap(db) // db.Table("t"): its shard clause names its shard
		return
	}
	pinned, part := loadSetting(stmt, pinKey{})
	part = part && pinned.(pin).schema == stmt.Schema
	if _, kept := loadSetting(stmt, partRangesKey{stmt}); part && kept {
		return // a part no key value pins: partOnStaleMap read its fence
	}
	m, err := e.model(stmt.Schema)
	if err != nil || m == nil || !m.sharded() {
		return
	}
	sealed, from, ok := e.sealedWhereRan(db)
	if !ok {
		return
	}
	if len(sealed) == 0 || !e.namesRanges(db, m, kind, sealed) {
		return
	}
	if part {
		db.AddError(&MovedError{Shard: sealed[0].From, To: "another database", Why: "a part of a statement over several databases, routed by a map before the move; run it again"})
		e.movedStats.failed.Add(1)
		return
	}
	k, err := e.awaitMapAway(db, m, kind, from)
	if err != nil {
		db.AddError(&MovedError{Shard: -1, To: "another database", Why: errs.Text(err)})
		e.movedStats.failed.Add(1)
		return
	}
	if why := e.whyNotRetried(db, kind); why != "" {
		db.AddError(&MovedError{Shard: -1, To: e.physical[k].name, Why: why})
		return
	}
	e.movedStats.held.Add(1)
	if err := e.holdAndRetry(db, kind, execute, time.Now().Add(e.moveWait())); err != nil {
		db.AddError(&MovedError{Shard: -1, To: e.physical[k].name, Why: errs.Text(err)})
		e.movedStats.failed.Add(1)
		return
	}
	e.movedStats.retried.Add(1)
}

// clauseWriteOnStaleMap refuses a write without a model (Exec, or
// db.Table("t")) that a shard clause sent to a database where it found no
// row, when that database has sealed the cutover of the clause's shard: its
// rows are on the new database, where the write did not run. Its process
// reads the map, and the write run again goes there.
func (e *Engine) clauseWriteOnStaleMap(db *gorm.DB) {
	if !e.routed() || db.Error != nil || db.DryRun || db.RowsAffected != 0 {
		return
	}
	h, ok := loadSetting(db.Statement, hintSettingKey{})
	if !ok || db.Statement.Schema == nil && db.Statement.Table == "" && !writesRows(e.db.Dialector.Name(), db.Statement.SQL.String()) {
		return // not an UPDATE or DELETE: a SET, a SAVEPOINT, DDL (and a read-only transaction's fence read would fail)
	}
	shard, err := e.hintShard(h.(Hint))
	if err != nil {
		return
	}
	sealed, _, ok := e.sealedWhereRan(db)
	if !ok || !slices.ContainsFunc(sealed, func(r Range) bool { return shard >= r.From && shard <= r.To }) {
		return
	}
	_, _ = e.refreshMap(db.Statement.Context) // best effort: the write run again finds the new map
	db.AddError(&MovedError{Shard: shard, To: "another database", Why: "a write by a shard clause, routed by a map before the move, found no row where it ran; run it again"})
	e.movedStats.failed.Add(1)
}

// writesRows reports whether raw SQL is an UPDATE or a DELETE (or a WITH
// before one), which a row's move can make find nothing.
func writesRows(dialect, sql string) bool {
	scan, _ := sqlscan.Read(dialect, sql)
	return slices.ContainsFunc(scan.Kinds, func(k string) bool { return k == "UPDATE" || k == "DELETE" || k == "WITH" })
}

// partRangesKey is the Statement.Settings key of the ranges a part of an
// update or delete over several databases kept to (nil: every shard), for a
// part no key value pins.
type partRangesKey struct{ stmt *gorm.Statement }

// partOnStaleMap refuses a part, kept to its database's ranges by a map
// older than a cutover the database sealed since: rows of the sealed range
// created on the new database are not in it. Its statement then fails
// whole, every part rolled back, and its process reads the map.
func (e *Engine) partOnStaleMap(db *gorm.DB) {
	stmt := db.Statement
	kept, ok := loadSetting(stmt, partRangesKey{stmt})
	if !ok {
		return
	}
	sealed, _, ok := e.sealedWhereRan(db)
	if !ok {
		return
	}
	keep := kept.([]Range)
	for _, r := range sealed {
		if keep == nil || slices.ContainsFunc(keep, func(own Range) bool { return own.From <= r.To && r.From <= own.To }) {
			db.AddError(&MovedError{Shard: r.From, To: "another database", Why: "a part of a statement over several databases, routed by a map before the move; run it again"})
			e.movedStats.failed.Add(1)
			return
		}
	}
}

// sealedWhereRan reads, in the write's transaction, the fence of the
// database it ran on: the ranges whose cutover that database sealed. It
// reports false when that database is not known, or the read failed (the
// write then fails with why).
func (e *Engine) sealedWhereRan(db *gorm.DB) ([]Range, int, bool) {
	stmt := db.Statement
	k, known := e.ranOn(stmt)
	if !known {
		return nil, 0, false
	}
	sealed, err := e.fence().Sealed(stmt.Context, stmt.ConnPool)
	if err != nil {
		what := stmt.Table
		if what == "" {
			what = "the statement"
		}
		db.AddError(errs.Wrap(err, "%s: whether a range of %s moved cannot be read", what, e.physical[k].name))
		return nil, k, false
	}
	return sealed, k, true
}

// namesRanges reports whether the statement may name a row of ranges: it is
// routed by a map that gives them to a database of their own.
func (e *Engine) namesRanges(db *gorm.DB, m *model, kind statementKind, ranges []Range) bool {
	current := e.router.Map()
	apart := current.Len() // the index of the ranges' own database
	physical := make([]shardrouter.Physical, apart+1)
	for k := range physical[:apart] {
		physical[k].Name = current.Name(k)
	}
	physical[apart].Name = "\x00ranges"
	for s := range current.ShardCount() {
		k := current.Physical(s)
		if slices.ContainsFunc(ranges, func(r Range) bool { return s >= r.From && s <= r.To }) {
			k = apart
		}
		if held := physical[k].Logical; len(held) > 0 && held[len(held)-1].To == s-1 {
			held[len(held)-1].To = s
		} else {
			physical[k].Logical = append(held, Range{From: s, To: s})
		}
	}
	probe, err := shardrouter.NewMap(current.ShardCount(), physical)
	if err != nil {
		return true // unsure: look again
	}
	set, err := e.statementPhysicals(db, m, kind, probe)
	return err != nil || set.Has(apart)
}

// awaitMapAway reads the map until it sends the statement to one database
// other than from, within Config.MoveWait: the seal on the source comes just
// before the mover writes the map.
func (e *Engine) awaitMapAway(db *gorm.DB, m *model, kind statementKind, from int) (int, error) {
	deadline := time.Now().Add(e.moveWait())
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		ctx, cancel := context.WithDeadline(db.Statement.Context, deadline)
		_, err := e.refreshMap(ctx)
		cancel()
		if err == nil {
			set, err := e.statementPhysicals(db, m, kind, e.router.Map())
			if k, one := set.Single(); err == nil && one && k != from {
				return k, nil
			}
			if err == nil && set.Len() > 1 { // a map newer than the statement's, which splits its rows
				return 0, fmt.Errorf("the rows it names are now on %d databases; run it again", set.Len())
			}
		}
		if time.Now().Add(pause).After(deadline) {
			return 0, fmt.Errorf("the range moved off %s, and no map sending it elsewhere came within Config.MoveWait %s; run it again", e.physical[from].name, e.moveWait())
		}
		time.Sleep(pause)
	}
}

// deadlocked says MySQL chose the statement's transaction as a deadlock's
// victim and rolled it back.
func deadlocked(err error) bool {
	number, _, ok := sqlerr.MySQL(err)
	return ok && number == 1213
}

// runAgain runs a statement again on its database, where it failed with an
// error again says nothing was written for (it raced the creation of a
// move's triggers, or lost a deadlock over the plugin's own locks), when
// GORM's transaction around it holds only it; otherwise its error stands.
func (e *Engine) runAgain(db *gorm.DB, kind statementKind, execute func(*gorm.DB), again func(error) bool) {
	stmt := db.Statement
	if e.whyNotRetried(db, kind) != "" {
		return
	}
	k, known := e.ranOn(stmt)
	if !known {
		return
	}
	for range 3 {
		released, err := e.release(stmt)
		if err == nil {
			err = e.moveStatement(db, k, released, e.mapOf(stmt))
		}
		if err != nil {
			db.Error = errors.Join(db.Error, err)
			return
		}
		db.Error = nil
		unbuild(stmt)
		execute(db)
		if !again(db.Error) {
			return
		}
	}
}

// executorOf returns GORM's callback that executes the statement, as it is
// registered now.
func executorOf(db *gorm.DB, kind statementKind, name string) func(*gorm.DB) {
	switch kind {
	case kindCreate:
		return db.Callback().Create().Get(name)
	case kindUpdate:
		return db.Callback().Update().Get(name)
	}
	return db.Callback().Delete().Get(name)
}

// whyNotRetried says why a refused write cannot be run again on the new
// database, or "" if it can: the transaction around it holds only it.
func (e *Engine) whyNotRetried(db *gorm.DB, kind statementKind) string {
	stmt := db.Statement
	if pinned, ok := loadSetting(stmt, pinKey{}); ok && pinned.(pin).schema == stmt.Schema {
		return "a part of a statement over several databases; run it again"
	}
	if _, gorms := db.InstanceGet("gorm:started_transaction"); inTransaction(stmt.ConnPool) && !gorms {
		return "inside a transaction; retry the transaction"
	}
	if stmt.Schema == nil {
		return "not a statement on a model"
	}
	return hooksRunFirst(stmt.Schema, kind)
}

// hooksRunFirst says what of a write's runs before it in GORM's transaction,
// which a refusal rolls back with it: "" for nothing.
func hooksRunFirst(s *schema.Schema, kind statementKind) string {
	before := s.BeforeSave
	switch kind {
	case kindCreate:
		before = before || s.BeforeCreate
	case kindUpdate:
		before = before || s.BeforeUpdate
	case kindDelete:
		before = s.BeforeDelete
	}
	switch {
	case before:
		return "the model's Before hooks ran in the transaction; run the statement again"
	case kind != kindDelete && len(s.Relationships.BelongsTo) > 0:
		return "the associations saved before it ran in the transaction; run the statement again"
	}
	return ""
}

// moveWait is Config.MoveWait with its default.
func (e *Engine) moveWait() time.Duration {
	if e.config.MoveWait > 0 {
		return e.config.MoveWait
	}
	return defaultMoveWait
}

// holdAndRetry runs a refused statement again, the map read each time,
// until it is refused no more: on the new database once the map sends it
// there, or on the same one, which a cutover that failed its check thaws
// with nothing moved; a refusal on the new database (the shard moved on)
// goes on the same way. It gives up at the deadline.
func (e *Engine) holdAndRetry(db *gorm.DB, kind statementKind, execute func(*gorm.DB), deadline time.Time) error {
	stmt := db.Statement
	m, err := e.model(stmt.Schema)
	if err != nil || m == nil || !m.sharded() {
		return fmt.Errorf("not a statement on a sharded model, which the plugin would run again; nothing was written, run it again")
	}
	from, known := e.ranOn(stmt)
	if !known {
		return fmt.Errorf("the plugin cannot run it again for you (its connection is not one of a physical database's); nothing was written, run it again")
	}
	// GORM's transaction holds only the refused statement: it ends now, so
	// that no lock of it is held while waiting (SQLite's one writer).
	released, err := e.release(stmt)
	if err != nil {
		return err
	}
	pause := 5 * time.Millisecond
	for {
		ctx, cancel := context.WithDeadline(stmt.Context, deadline)
		_, refreshErr := e.refreshMap(ctx)
		cancel()
		shardMap := e.router.Map()
		if refreshErr == nil {
			k, err := e.retryPhysical(db, m, kind, shardMap)
			if err != nil {
				return errors.Join(err, e.rebegin(db, from, released))
			}
			// Before a transaction there begins: the ID sources run on the
			// database's pool, whose one connection it may hold.
			if kind == kindCreate && k != from {
				if err := e.renumber(db, m, shardMap); err != nil {
					return errors.Join(err, e.rebegin(db, from, released))
				}
			}
			// On the new database, or on the same one again: a cutover that
			// failed its check thaws the range there, and nothing moved.
			if err := e.moveStatement(db, k, released, shardMap); err != nil {
				return errors.Join(err, e.rebegin(db, from, released))
			}
			db.Error = nil
			unbuild(stmt)
			execute(db)
			if _, _, again := fence.MovedShard(db.Error); !again {
				return nil // done, or failed on its own account
			}
			from = k
			if released, err = e.release(stmt); err != nil {
				return err
			}
		}
		if time.Now().Add(pause).After(deadline) {
			if refreshErr != nil {
				refreshErr = fmt.Errorf("the new map could not be read within Config.MoveWait %s: %w", e.moveWait(), refreshErr)
			} else {
				refreshErr = fmt.Errorf("no new map within Config.MoveWait %s; run the statement again", e.moveWait())
			}
			return errors.Join(refreshErr, e.rebegin(db, from, released))
		}
		time.Sleep(pause)
		pause = min(pause*2, 100*time.Millisecond)
	}
}

// release rolls back GORM's own transaction around a refused statement; it
// reports whether there was one.
func (e *Engine) release(stmt *gorm.Statement) (bool, error) {
	if !inTransaction(stmt.ConnPool) {
		return false, nil
	}
	if tx, ok := stmt.ConnPool.(gorm.TxCommitter); ok {
		if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
			return true, err
		}
	}
	return true, nil
}

// rebegin gives a statement that is given up a transaction again on the
// database it ran on, for GORM's own rollback to end.
func (e *Engine) rebegin(db *gorm.DB, k int, released bool) error {
	if !released {
		return nil
	}
	return e.moveStatement(db, k, true, e.mapOf(db.Statement))
}

// retryPhysical is the one database the statement goes to by shardMap. A
// Create's IDs are then made anew there, keeping their shards, for an ID is
// written only on the database whose ID source made it.
func (e *Engine) retryPhysical(db *gorm.DB, m *model, kind statementKind, shardMap *shardrouter.Map) (int, error) {
	stmt := db.Statement
	if kind != kindCreate {
		set, err := e.statementPhysicals(db, m, kind, shardMap)
		if err != nil {
			return 0, err
		}
		k, ok := set.Single()
		if !ok {
			return 0, fmt.Errorf("its rows are now on %d databases; run it again", set.Len())
		}
		return k, nil
	}
	rows, err := structRows(m, stmt.ReflectValue, nil)
	if err != nil {
		return 0, err
	}
	var set shardrouter.Set
	for _, row := range rows {
		shard, _, err := e.fieldShard(m.pk().field.ReflectValueOf(stmt.Context, row))
		if err != nil {
			return 0, err
		}
		set = set.With(shardMap.Physical(shard))
	}
	k, ok := set.Single()
	if !ok {
		return 0, fmt.Errorf("its rows are now on %d databases; run it again", set.Len())
	}
	return k, nil
}

// remake gives the IDs the plugin made for a Create new values in the same
// shards, from the sources of the databases the map now names.
func (e *Engine) remake(db *gorm.DB, m *model, filled []filledID) error {
	for _, f := range m.fields {
		if f.uuidVersion != 0 {
			continue // random: no source to keep apart
		}
		var values []reflect.Value
		var shards []int
		for _, made := range filled {
			if made.field != f {
				continue
			}
			shard, _, err := e.fieldShard(made.value)
			if err != nil {
				return err
			}
			values, shards = append(values, made.value), append(shards, shard)
		}
		if len(values) == 0 {
			continue
		}
		ids := make([]int64, len(shards))
		if err := e.generate(db.Statement.Context, db, m, f, shards, ids); err != nil {
			return err
		}
		for i, v := range values {
			writeID(v, ids[i])
		}
	}
	return nil
}

// renumber readies a Create's IDs for the database by the map sends it to,
// after the one it went to refused it: those it made anew there, the others
// passed by that database's clock-sequence.
func (e *Engine) renumber(db *gorm.DB, m *model, by *shardrouter.Map) error {
	state := routeStateOf(db.Statement)
	state.shardMap = by
	if err := e.remake(db, m, state.filled); err != nil {
		return err
	}
	return e.advancePastKept(db, m, state.filled)
}

// advancePastKept moves the clock-sequences of the databases the map now
// names past the IDs of a Create's rows that it did not make anew (preset
// ones, and those a split Create made for its parts): they were checked
// against the database the statement first went to, whose clock is not the
// new one's.
func (e *Engine) advancePastKept(db *gorm.DB, m *model, remade []filledID) error {
	ctx := db.Statement.Context
	rows, err := structRows(m, db.Statement.ReflectValue, nil)
	if err != nil {
		return err
	}
	fresh := make(map[uintptr]bool, len(remade))
	for _, made := range remade {
		fresh[made.value.UnsafeAddr()] = true
	}
	for _, f := range m.fields {
		var ahead map[int]int64
		for _, row := range rows {
			if v := f.field.ReflectValueOf(ctx, row); !v.IsZero() && !(v.CanAddr() && fresh[v.UnsafeAddr()]) { // a row given by value holds preset IDs only
				ahead = e.presetAhead(db, f, v, ahead)
			}
		}
		if err := e.advancePast(ctx, db, m, f, ahead); err != nil {
			return errs.Wrap(err, "%s.%s", m.schema.Name, f.field.Name)
		}
	}
	return nil
}

// moveStatement sends the statement to physical database k, where map by
// sends it, in a transaction of its own there if GORM's was released.
func (e *Engine) moveStatement(db *gorm.DB, k int, inTx bool, by *shardrouter.Map) error {
	stmt := db.Statement
	pool, err := e.poolOf(stmt.Context, k, db.ConnPool)
	if err != nil {
		return err
	}
	state := routeStateOf(stmt)
	if state == nil {
		state = keepWriteState(stmt, by)
	}
	state.shardMap = by // its checks from now on read the map that sent it there
	state.boundOn = k + 1
	e.boundTo(stmt, k)
	if !inTx {
		stmt.ConnPool = pool
		return nil
	}
	tx, err := beginOn(stmt.Context, pool)
	if err != nil {
		return err
	}
	stmt.ConnPool = tx
	state.gormTx = tx
	return nil
}

// ranOn returns the physical database a refused statement ran on, by its
// connection or its transaction's; found only on this rare path.
func (e *Engine) ranOn(stmt *gorm.Statement) (int, bool) {
	if !inTransaction(stmt.ConnPool) {
		return e.physicalOfPool(stmt.ConnPool)
	}
	return e.transactionPhysical(stmt)
}

// beginOn begins a transaction on pool, as GORM's Begin does.
func beginOn(ctx context.Context, pool gorm.ConnPool) (gorm.ConnPool, error) {
	switch beginner := pool.(type) {
	case gorm.TxBeginner:
		return beginner.BeginTx(ctx, nil)
	case gorm.ConnPoolBeginner:
		return beginner.BeginTx(ctx, nil)
	}
	return nil, gorm.ErrInvalidTransaction
}
