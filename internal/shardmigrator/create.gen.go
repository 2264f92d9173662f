package shardmigrator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/strategies"
)

// AutoMigrate migrates unsharded models on the plugin's database and sharded
// ones on every physical database, with an index on each colocate and hash
// column, and creates what the strategies keep in each physical database.
func (m Migrator) AutoMigrate(models ...any) error {
	return m.create(models, gorm.Migrator.AutoMigrate, !m.db.IgnoreRelationshipsWhenMigrating)
}

// CreateTable is AutoMigrate's placement for CREATE TABLE, of the models
// given alone, as GORM's.
func (m Migrator) CreateTable(models ...any) error {
	return m.create(models, gorm.Migrator.CreateTable, false)
}

// onlyKey names the one physical database a session's migrations of sharded
// tables run on (OnlyOn).
type onlyKey struct{}

// OnlyOn is a session of db whose AutoMigrate and CreateTable make sharded
// tables on the physical database name alone, and change nothing on the
// others nor on the plugin's database: a move's prepare makes its target's
// missing tables so, whatever the version of the models it was given.
func OnlyOn(db *gorm.DB, name string) *gorm.DB {
	tx := db.Session(&gorm.Session{})
	tx.Statement.Settings.Store(onlyKey{}, name)
	return tx
}

// split parses every model, then groups them by where their tables live. It
// also collects the many2many join tables of sharded models, which live
// beside their owner, the models related to them when it follows relations,
// and the strategies the models use.
func (m Migrator) split(models []any, follow bool) (here, everywhere []any, used map[strategies.Generator]bool, err error) {
	used = map[strategies.Generator]bool{}
	joinTables := map[string]bool{}
	seen := map[reflect.Type]bool{}
	models = slices.Clone(models)
	for _, value := range models {
		if t := reflect.TypeOf(value); t != nil {
			seen[t] = true
		}
	}
	for i := 0; i < len(models); i++ { // models grows by the ones related to a sharded model
		value := models[i]
		sharded, model, s, err := m.sharded(value)
		if err != nil {
			return nil, nil, nil, err
		}
		if model != nil {
			for _, g := range model.Generators {
				used[g] = true
			}
		}
		if !sharded || !m.plugin.Routed() {
			here = append(here, value)
			continue
		}
		everywhere = append(everywhere, value)
		if model == nil {
			continue
		}
		for _, rel := range s.Relationships.Many2Many {
			if rel.JoinTable != nil && !rel.Field.IgnoreMigration && !joinTables[rel.JoinTable.Table] {
				joinTables[rel.JoinTable.Table] = true
				everywhere = append(everywhere, reflect.New(rel.JoinTable.ModelType).Interface())
			}
		}
		if follow {
			models = appendRelated(models, s, seen)
		}
	}
	return here, everywhere, used, nil
}

// appendRelated appends to models those a sharded model's belongs-to and
// many2many relations name, as GORM's AutoMigrate migrates them with it
// (the physical databases' migrators follow no relation); each goes where
// its own table lives.
func appendRelated(models []any, s *schema.Schema, seen map[reflect.Type]bool) []any {
	for _, rel := range s.Relationships.Relations {
		if rel.Field.IgnoreMigration || rel.FieldSchema == nil || rel.Type != schema.BelongsTo && rel.JoinTable == nil {
			continue
		}
		t := reflect.PointerTo(rel.FieldSchema.ModelType)
		if seen[t] || seen[rel.FieldSchema.ModelType] {
			continue
		}
		seen[t] = true
		models = append(models, reflect.New(rel.FieldSchema.ModelType).Interface())
	}
	return models
}

// create places models' tables with do; follow says that do makes the
// tables of their relations too, as AutoMigrate does.
func (m Migrator) create(models []any, do func(gorm.Migrator, ...any) error, follow bool) (err error) {
	if m.db.DryRun { // it reads each database's tables to place, undo and check what it makes: nothing to read, nothing run
		return fmt.Errorf("shardid: the plugin's migrator: %w", gorm.ErrDryRunModeUnsupported)
	}
	for _, value := range models {
		if table, isTable := value.(string); isTable { // GORM cannot make a table from its name alone, and fails on each database part way
			return fmt.Errorf("shardid: the migrator was given the table name %q: AutoMigrate and CreateTable make a table from its model (a pointer to a struct): %w", table, gorm.ErrInvalidValue)
		}
	}
	here, everywhere, used, err := m.split(models, follow)
	if err != nil {
		return err
	}
	if len(everywhere) > 0 {
		if err := m.plugin.Reachable(m.db.Statement.Context); err != nil {
			return errs.Wrap(err, "nothing was migrated")
		}
	}
	// Another process's migration made the tables this one would find
	// missing, and drop again should it fail: one at a time.
	unlock, err := m.plugin.LockMigrations(m.db.Statement.Context)
	if err != nil {
		return errs.Wrap(err, "nothing was migrated")
	}
	defer unlock()
	only, restricted := m.db.Statement.Settings.Load(onlyKey{})
	if len(everywhere) > 0 {
		if err := m.plugin.CheckNewTables(m.db, everywhere); err != nil {
			return err
		}
		if err := m.sameTables(everywhere, only, restricted); err != nil {
			return err
		}
	}
	// Each database reached, with the tables the migration created there.
	var made []reached
	defer func() { // a refused or failed migration leaves none of the tables it created
		if err != nil {
			err = undoCreated(err, made)
		}
	}()
	var done []string // the databases migrated, whose tables that were there before stay changed should a later one fail
	if len(here) > 0 && !restricted {
		if err := m.shapeHashColumns(m.db, here); err != nil {
			return err
		}
		plain, crossing := here, []any(nil)
		if m.plugin.Routed() { // else every table lives on the plugin's database
			plain, crossing = m.crossingSharded(here, follow)
		}
		candidates := slices.Concat(plain, crossing)
		if follow {
			candidates = append(candidates, relatedTables(m.db, plain)...) // GORM makes plain's relations' tables
		}
		missing, err := missingTables(m.db, candidates)
		if err != nil {
			return err
		}
		made = append(made, reached{name: m.ownName(), db: m.db, created: missing})
		if len(plain) > 0 {
			if err := do(m.own, plain...); err != nil {
				return err
			}
		}
		if len(crossing) > 0 {
			if err := do(m.ownWithoutRelations(), crossing...); err != nil {
				return err
			}
		}
		if err := m.checkHashColumns(m.db, here, m.ownName()); err != nil {
			return err
		}
		done = append(done, m.ownName())
	}
	if len(used) > 0 {
		if err := m.plugin.PrepareStrategies(m.db, used); err != nil {
			return err
		}
	}
	if len(everywhere) == 0 {
		return m.plugin.RegisterTables(m.db, nil) // makes again what the plugin keeps, should a teardown have dropped it
	}
	for k, name := range m.plugin.Physical() {
		if restricted && name != only {
			continue
		}
		tx, err := m.physicalSession(k)
		if err != nil {
			return err
		}
		if err := m.shapeOn(tx, everywhere); err != nil {
			return err
		}
		if err := m.shapeHashColumns(tx, everywhere); err != nil {
			return errs.Wrap(err, "on %s", name)
		}
		missing, err := missingTables(tx, everywhere)
		if err != nil {
			return fmt.Errorf("shardid: on %s: %w%s", name, err, undoneBefore(done, ""))
		}
		made = append(made, reached{name: name, db: tx, created: missing})
		keeping, end, err := m.plugin.KeepFences(tx)
		if err == nil {
			err = end(do(keeping.Migrator(), everywhere...))
		}
		if err != nil {
			return fmt.Errorf("shardid: on %s: %w%s", name, err, undoneBefore(done, name)) // GORM migrates a table with several statements: some may have run on name
		}
		done = append(done, name)
		if err := m.checkHashColumns(tx, everywhere, name); err != nil {
			return err
		}
		if err := m.indexPlacingColumns(tx, everywhere); err != nil {
			return errs.Wrap(err, "on %s", name)
		}
	}
	return m.plugin.RegisterTables(m.db, everywhere)
}

// crossingSharded splits unsharded models into those GORM's migrator may
// migrate with their relations on the plugin's database, and those related,
// maybe through other models, to a sharded model: following their relations
// it would make the sharded table, or the join table beside it, there. The
// latter come with the join tables of their other many2many relations and,
// when it follows relations, the unsharded models they relate to, on the one
// side or the other, as GORM would have made them too.
func (m Migrator) crossingSharded(models []any, follow bool) (plain, crossing []any) {
	seen := map[*schema.Schema]bool{}
	for len(models) > 0 {
		value := models[0]
		models = models[1:]
		stmt := &gorm.Statement{DB: m.db}
		if stmt.Parse(value) != nil {
			plain = append(plain, value) // GORM's migrator tells what is wrong with it
			continue
		}
		if seen[stmt.Schema] {
			continue
		}
		seen[stmt.Schema] = true
		if !m.reachesSharded(stmt.Schema, map[*schema.Schema]bool{}) {
			plain = append(plain, value)
			continue
		}
		crossing = append(crossing, value)
		for _, rel := range stmt.Schema.Relationships.Relations {
			if rel.Field.IgnoreMigration || rel.FieldSchema == nil {
				continue
			}
			if rel.JoinTable != nil && !m.plugin.ShardedTable(rel.JoinTable.Table) {
				crossing = append(crossing, reflect.New(rel.JoinTable.ModelType).Interface())
			}
			c := rel.ParseConstraint()
			madeByGORM := rel.JoinTable != nil || c != nil && c.Schema == stmt.Schema && c.Schema != c.ReferenceSchema // a many2many target, a parent
			made := rel.FieldSchema
			if rel.JoinTable == nil && c != nil {
				made = c.ReferenceSchema // a parent: also the owner of a has-one or has-many GORM records on its child
			}
			if related, err := m.plugin.Model(made); follow && madeByGORM && err == nil && (related == nil || !related.Sharded) {
				models = append(models, reflect.New(made.ModelType).Interface())
			}
		}
	}
	return plain, crossing
}

// reachesSharded reports whether a relation of s, or of a model it relates
// to, names a sharded model or a sharded table's join table. A related
// model whose tag is bad counts as sharded. The relations of s include those
// GORM records on a has-one or has-many child for its owner, whose Schema is
// the owner's: GORM's migrator of the child makes the owner's table first.
func (m Migrator) reachesSharded(s *schema.Schema, seen map[*schema.Schema]bool) bool {
	if seen[s] {
		return false
	}
	seen[s] = true
	for _, rel := range s.Relationships.Relations {
		if rel.Field.IgnoreMigration || rel.FieldSchema == nil {
			continue
		}
		if rel.JoinTable != nil && m.plugin.ShardedTable(rel.JoinTable.Table) {
			return true
		}
		for _, other := range []*schema.Schema{rel.FieldSchema, rel.Schema} {
			if other == nil || other == s {
				continue
			}
			related, err := m.plugin.Model(other)
			if err != nil || related != nil && related.Sharded || m.reachesSharded(other, seen) {
				return true
			}
		}
	}
	return false
}

// relatedTables returns what GORM's AutoMigrate of models makes beside them
// by following their relations: the related models, and join tables by name.
func relatedTables(db *gorm.DB, models []any) []any {
	var schemas []*schema.Schema
	for _, value := range models {
		stmt := &gorm.Statement{DB: db}
		if stmt.Parse(value) == nil {
			schemas = append(schemas, stmt.Schema)
		}
	}
	var related []any
	seen, joins := map[*schema.Schema]bool{}, map[string]bool{}
	for len(schemas) > 0 {
		s := schemas[0]
		schemas = schemas[1:]
		if seen[s] {
			continue
		}
		seen[s] = true
		for _, rel := range s.Relationships.Relations {
			if rel.Field.IgnoreMigration || rel.FieldSchema == nil {
				continue
			}
			if rel.JoinTable != nil && !joins[rel.JoinTable.Table] {
				joins[rel.JoinTable.Table] = true
				related = append(related, rel.JoinTable.Table)
			}
			if !seen[rel.FieldSchema] && !slices.Contains(schemas, rel.FieldSchema) {
				schemas = append(schemas, rel.FieldSchema)
				related = append(related, reflect.New(rel.FieldSchema.ModelType).Interface())
			}
		}
	}
	return related
}

// shapeOn gives the schemas a physical database's handle parsed (a database
// given as Shard.DB has a cache of its own) the plugin's view: a tagged
// primary key is a plain BIGINT.
func (m Migrator) shapeOn(db *gorm.DB, models []any) error {
	for _, value := range models {
		stmt := &gorm.Statement{DB: db}
		if stmt.Parse(value) == nil {
			if _, err := m.plugin.Model(stmt.Schema); err != nil {
				return err
			}
		}
	}
	return nil
}

// missingTables returns the models whose tables db does not have, or the
// error of asking: a table it could not see is not missing, and the undo
// of a failed migration drops only tables that were missing.
func missingTables(db *gorm.DB, models []any) ([]any, error) {
	mig := db.Migrator()
	tables, err := mig.GetTables()
	if err != nil {
		return nil, err
	}
	var missing []any
	for _, value := range models {
		stmt := &gorm.Statement{DB: db, Table: db.Statement.Table}
		if stmt.Parse(value) != nil || stmt.Table == "" || strings.Contains(stmt.Table, ".") || db.Statement.TableExpr != nil {
			if !mig.HasTable(value) { // a name the list does not spell: GORM's own look
				missing = append(missing, value)
			}
			continue
		}
		if !slices.ContainsFunc(tables, func(t string) bool { return strings.EqualFold(t, stmt.Table) }) {
			missing = append(missing, value)
		}
	}
	return missing, nil
}

// undoneBefore tells, in the error of a migration that undoes the tables it
// created, what it leaves on the databases it migrated before one failed,
// and on failed, the one that failed part way, if it changed anything there.
func undoneBefore(done []string, failed string) string {
	changed := strings.Join(done, ", ")
	switch {
	case failed == "" && changed == "":
		return ""
	case failed == "":
		changed = "stays changed on " + changed
	case changed == "":
		changed = "may stay changed on " + failed + ", where it failed part way"
	default:
		changed = "stays changed on " + changed + ", and may on " + failed + ", where it failed part way"
	}
	return fmt.Sprintf(" (the tables it created are dropped again; what it changed in tables that were there before %s: run it again to finish it)", changed)
}

// reached is a database a migration reached, on its session db, with the
// tables it did not have before.
type reached struct {
	name    string
	db      *gorm.DB
	created []any
}

// undoPatience bounds the undo of a migration whose context ended.
const undoPatience = 30 * time.Second

// undoCreated drops, after err, the tables a migration created on each
// database it reached; a table that was there before stays. It runs on a
// context of its own when the migration's ended (its deadline is often
// what failed it): on the ended one, it would find no table and drop none.
func undoCreated(err error, made []reached) error {
	for _, r := range made {
		db := r.db
		if ctx := db.Statement.Context; ctx != nil && ctx.Err() != nil {
			undo, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoPatience)
			defer cancel()
			db = db.WithContext(undo)
		}
		mig := db.Migrator()
		var joins, created []any // those still missing the migration did not create
		for _, value := range r.created {
			if !mig.HasTable(value) {
				continue
			}
			if _, named := value.(string); named {
				joins = append(joins, value)
			} else {
				created = append(created, value)
			}
		}
		for _, tables := range [][]any{joins, created} { // join tables first, then models in GORM's order: children first
			if len(tables) == 0 {
				continue
			}
			if dropErr := mig.DropTable(tables...); dropErr != nil {
				err = errors.Join(err, errs.Wrap(dropErr, "on %s: dropping the tables the failed migration created", r.name))
			}
		}
	}
	return err
}
