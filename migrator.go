package shardid

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/strategies"
)

// ErrShardsDisagree is returned by the shard-aware migrator when the physical
// databases answer a question about a sharded table differently; the error
// names them. The yes/no questions (HasTable, ...) cannot return it: they
// answer false and log it as a warning.
var ErrShardsDisagree = errors.New("shardid: physical databases disagree")

var _ gorm.Migrator = shardMigrator{}

// Migrator returns a gorm.Migrator for db (the plugin's database or a session
// of it) that runs every operation on a sharded model on every physical
// database and every other on db itself. db.Migrator() stays GORM's own.
func (p *Plugin) Migrator(db *gorm.DB) gorm.Migrator {
	return shardMigrator{plugin: p, db: db, own: db.Migrator()}
}

// AutoMigrate migrates the tables of sharded models, their many2many join
// tables and what their ID strategies keep, on every physical database, and
// the tables of unsharded models on db alone. It fails with [ErrInvalidTag]
// before changing anything when a model's tag cannot be used.
func (p *Plugin) AutoMigrate(db *gorm.DB, models ...any) error {
	return p.Migrator(db).AutoMigrate(models...)
}

// shardMigrator is the migrator Plugin.Migrator hands out. It is safe for
// concurrent use as far as the migrators it wraps are.
type shardMigrator struct {
	plugin *Plugin
	db     *gorm.DB
	own    gorm.Migrator // db's migrator: unsharded models, and the shards when the plugin does not route
}

// target is one database a migration step runs on.
type target struct {
	name     string
	migrator gorm.Migrator
}

// sharded reports whether value (a model or a table name) is the table of a
// sharded model, whose rows live on the physical databases. It parses the
// model's tags first, so that a bad one fails before anything changes.
func (m shardMigrator) sharded(value any) (bool, *model, error) {
	if table, isTable := value.(string); isTable {
		if m.plugin.shardedTable(table) {
			return true, nil, nil
		}
		where, err := m.locate(table)
		return where != onOwn, nil, err
	}
	stmt := &gorm.Statement{DB: m.db}
	if stmt.Parse(value) != nil {
		return false, nil, nil // GORM's migrator says what it makes of it
	}
	model, err := m.plugin.model(stmt.Schema)
	if err != nil {
		return false, nil, err
	}
	if model == nil || !model.sharded() {
		return m.plugin.shardedTable(stmt.Schema.Table), model, nil // a join table beside a sharded owner
	}
	return true, model, nil
}

// targets returns where value's table lives: every physical database for a
// sharded model of a plugin that routes, else db.
// A table name of no model the process has seen is placed by looking (see
// locate); one found on both sides is acted on, and asked about, on both.
func (m shardMigrator) targets(value any) ([]target, error) {
	own := []target{{name: m.ownName(), migrator: m.own}}
	if table, isTable := value.(string); isTable && !m.plugin.shardedTable(table) {
		where, err := m.locate(table)
		switch {
		case err != nil:
			return nil, err
		case where == onOwn:
			return own, nil
		case where == onBoth:
			list, err := m.physicalTargets()
			return append(own, list...), err
		}
		return m.physicalTargets()
	}
	sharded, _, err := m.sharded(value)
	if err != nil {
		return nil, err
	}
	if !sharded || !m.plugin.routed() {
		return own, nil
	}
	return m.physicalTargets()
}

func (m shardMigrator) physicalTargets() ([]target, error) {
	list := make([]target, len(m.plugin.physical))
	for k := range m.plugin.physical {
		mig, err := m.physicalMigrator(k)
		if err != nil {
			return nil, err
		}
		list[k] = target{name: m.plugin.physical[k].name, migrator: mig}
	}
	return list, nil
}

// placement is where locate found a table.
type placement int

const (
	onOwn      placement = iota // on the plugin's database, or nowhere
	onPhysical                  // on a physical database only: a sharded table
	onBoth                      // on both, as plain db.AutoMigrate leaves a copy
)

// locate finds where a table name the plugin knows of no model lives, as a
// new process that has not used the model yet must: the plugin's database
// holds unsharded tables only, the physical databases sharded ones.
func (m shardMigrator) locate(table string) (placement, error) {
	if !m.plugin.routed() {
		return onOwn, nil
	}
	physical, err := m.physicalTargets()
	if err != nil { // a shard it cannot reach might hold the table
		return onOwn, fmt.Errorf("shardid: looking for table %s: %w", table, err)
	}
	if !slices.ContainsFunc(physical, func(t target) bool { return t.migrator.HasTable(table) }) {
		return onOwn, nil
	}
	if m.own.HasTable(table) {
		return onBoth, nil
	}
	return onPhysical, nil
}

func (m shardMigrator) ownName() string {
	if m.plugin.routed() {
		return "the plugin's database"
	}
	return defaultPhysicalName
}

// physicalMigrator is GORM's migrator of physical database k, for sharded
// tables: no foreign keys (a sharded row's parent may be on another database)
// and no tables of related models (an unsharded model lives on the plugin's
// database only; join tables are migrated apart). The settings and table of
// the caller's session come along (gorm:table_options, Table("x")).
func (m shardMigrator) physicalMigrator(k int) (gorm.Migrator, error) {
	tx, err := m.physicalSession(k)
	if err != nil {
		return nil, err
	}
	return tx.Migrator(), nil
}

func (m shardMigrator) physicalSession(k int) (*gorm.DB, error) {
	opened, err := m.plugin.opened(m.db.Statement.Context, k)
	if err != nil {
		return nil, err
	}
	tx := opened.db.Session(&gorm.Session{Context: m.db.Statement.Context})
	config := *tx.Config
	config.DisableForeignKeyConstraintWhenMigrating = true
	config.IgnoreRelationshipsWhenMigrating = true
	tx.Config = &config
	tx.Statement.Table, tx.Statement.TableExpr = m.db.Statement.Table, m.db.Statement.TableExpr
	m.db.Statement.Settings.Range(func(key, value any) bool {
		tx.Statement.Settings.Store(key, value)
		return true
	})
	return tx, nil
}

// split parses every model, then groups them by where their tables live. It
// also collects the many2many join tables of sharded models, which live
// beside their owner, and the strategies the models use.
func (m shardMigrator) split(models []any) (here, everywhere []any, used map[strategies.Generator]bool, err error) {
	used = map[strategies.Generator]bool{}
	joinTables := map[string]bool{}
	for _, value := range models {
		sharded, model, err := m.sharded(value)
		if err != nil {
			return nil, nil, nil, err
		}
		if model != nil {
			for _, f := range model.fields {
				used[f.generator] = true
			}
		}
		if !sharded || !m.plugin.routed() {
			here = append(here, value)
			continue
		}
		everywhere = append(everywhere, value)
		if model == nil {
			continue
		}
		for _, rel := range model.schema.Relationships.Many2Many {
			if rel.JoinTable != nil && !rel.Field.IgnoreMigration && !joinTables[rel.JoinTable.Table] {
				joinTables[rel.JoinTable.Table] = true
				everywhere = append(everywhere, reflect.New(rel.JoinTable.ModelType).Interface())
			}
		}
	}
	return here, everywhere, used, nil
}

// AutoMigrate migrates unsharded models on the plugin's database and sharded
// ones on every physical database, with an index on each colocate and hash
// column, and creates what the strategies keep in each physical database.
func (m shardMigrator) AutoMigrate(models ...any) error {
	return m.create(models, gorm.Migrator.AutoMigrate)
}

// CreateTable is AutoMigrate's placement for CREATE TABLE.
func (m shardMigrator) CreateTable(models ...any) error {
	return m.create(models, gorm.Migrator.CreateTable)
}

func (m shardMigrator) create(models []any, do func(gorm.Migrator, ...any) error) (err error) {
	here, everywhere, used, err := m.split(models)
	if err != nil {
		return err
	}
	var made []target // each database reached, with the tables the migration created there
	var madeModels [][]any
	defer func() { // a refused or failed migration leaves none of the tables it created
		if err != nil {
			err = undoCreated(err, made, madeModels)
		}
	}()
	if len(here) > 0 {
		if err := m.plugin.exactHashColumns(m.db, here); err != nil {
			return err
		}
		plain, crossing := here, []any(nil)
		if m.plugin.routed() { // else every table lives on the plugin's database
			plain, crossing = m.crossingSharded(here)
		}
		made, madeModels = append(made, target{m.ownName(), m.own}), append(madeModels, missingTables(m.own, append(plain, crossing...)))
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
		if err := m.plugin.checkHashColumns(m.db, here, m.ownName()); err != nil {
			return err
		}
	}
	if len(used) > 0 {
		if err := m.plugin.prepareStrategies(m.db, used); err != nil {
			return err
		}
	}
	if len(everywhere) == 0 {
		return nil
	}
	for k, ph := range m.plugin.physical {
		tx, err := m.physicalSession(k)
		if err != nil {
			return err
		}
		if err := m.plugin.shapeOn(tx, everywhere); err != nil {
			return err
		}
		if err := m.plugin.exactHashColumns(tx, everywhere); err != nil {
			return fmt.Errorf("shardid: on %s: %w", ph.name, err)
		}
		made, madeModels = append(made, target{ph.name, tx.Migrator()}), append(madeModels, missingTables(tx.Migrator(), everywhere))
		if err := do(tx.Migrator(), everywhere...); err != nil {
			return fmt.Errorf("shardid: on %s: %w", ph.name, err)
		}
		if err := m.plugin.checkHashColumns(tx, everywhere, ph.name); err != nil {
			return err
		}
		if err := m.plugin.indexPlacingColumns(tx, everywhere); err != nil {
			return fmt.Errorf("shardid: on %s: %w", ph.name, err)
		}
	}
	return m.plugin.registerTables(m.db, everywhere)
}

// crossingSharded splits unsharded models into those GORM's migrator may
// migrate with their relations on the plugin's database, and those related,
// maybe through other models, to a sharded model: following their relations
// it would make the sharded table, or the join table beside it, there. The
// latter come with the join tables of their other many2many relations.
func (m shardMigrator) crossingSharded(models []any) (plain, crossing []any) {
	for _, value := range models {
		stmt := &gorm.Statement{DB: m.db}
		if stmt.Parse(value) != nil || !m.reachesSharded(stmt.Schema, map[*schema.Schema]bool{}) {
			plain = append(plain, value)
			continue
		}
		crossing = append(crossing, value)
		for _, rel := range stmt.Schema.Relationships.Many2Many {
			if rel.JoinTable != nil && !rel.Field.IgnoreMigration && !m.plugin.shardedTable(rel.JoinTable.Table) {
				crossing = append(crossing, reflect.New(rel.JoinTable.ModelType).Interface())
			}
		}
	}
	return plain, crossing
}

// reachesSharded reports whether a relation of s, or of a model it relates
// to, names a sharded model or a sharded table's join table. A related
// model whose tag is bad counts as sharded.
func (m shardMigrator) reachesSharded(s *schema.Schema, seen map[*schema.Schema]bool) bool {
	if seen[s] {
		return false
	}
	seen[s] = true
	for _, rel := range s.Relationships.Relations {
		if rel.Field.IgnoreMigration || rel.FieldSchema == nil {
			continue
		}
		related, err := m.plugin.model(rel.FieldSchema)
		if err != nil || related != nil && related.sharded() || rel.JoinTable != nil && m.plugin.shardedTable(rel.JoinTable.Table) {
			return true
		}
		if m.reachesSharded(rel.FieldSchema, seen) {
			return true
		}
	}
	return false
}

// ownWithoutRelations is the migrator of the plugin's database that neither
// follows relations nor makes foreign keys.
func (m shardMigrator) ownWithoutRelations() gorm.Migrator {
	tx := m.db.Session(&gorm.Session{})
	config := *tx.Config
	config.IgnoreRelationshipsWhenMigrating = true
	tx.Config = &config
	return tx.Migrator()
}

// missingTables returns the models whose tables mig's database does not have.
func missingTables(mig gorm.Migrator, models []any) []any {
	var missing []any
	for _, value := range models {
		if !mig.HasTable(value) {
			missing = append(missing, value)
		}
	}
	return missing
}

// undoCreated drops, after err, the tables a migration created on each
// database it reached; a table that was there before stays.
func undoCreated(err error, made []target, models [][]any) error {
	for i, t := range made {
		var created []any // those still missing the migration did not create
		for _, value := range models[i] {
			if t.migrator.HasTable(value) {
				created = append(created, value)
			}
		}
		if len(created) == 0 {
			continue
		}
		if dropErr := t.migrator.DropTable(created...); dropErr != nil { // in GORM's order: children first
			err = errors.Join(err, fmt.Errorf("shardid: on %s: dropping the tables the failed migration created: %w", t.name, dropErr))
		}
	}
	return err
}

// shapeOn gives the schemas a physical database's handle parsed (a database
// given as Shard.DB has a cache of its own) the plugin's view: a tagged
// primary key is a plain BIGINT.
func (p *Plugin) shapeOn(db *gorm.DB, models []any) error {
	for _, value := range models {
		stmt := &gorm.Statement{DB: db}
		if stmt.Parse(value) == nil {
			if _, err := p.model(stmt.Schema); err != nil {
				return err
			}
		}
	}
	return nil
}

// indexPlacingColumns creates an index on the colocate or hash column of each
// sharded model unless one starts with it: these columns route every read
// that does not name the ID, and with foreign keys off MySQL makes none.
func (p *Plugin) indexPlacingColumns(db *gorm.DB, models []any) error {
	mig := db.Migrator()
	for _, value := range models {
		stmt := &gorm.Statement{DB: db}
		if stmt.Parse(value) != nil {
			continue
		}
		model, err := p.model(stmt.Schema)
		if err != nil || model == nil || !model.sharded() {
			continue
		}
		column := model.pk().colocate
		if column == nil {
			column = model.pk().hash
		}
		if column == nil || leadsAnIndex(stmt.Schema, column) {
			continue
		}
		name := fmt.Sprintf("idx_shardid_%s_%s", stmt.Schema.Table, column.DBName)
		if mig.HasIndex(value, name) {
			continue
		}
		indexed := clause.Expr{SQL: "?", Vars: []any{clause.Column{Name: column.DBName}}}
		if db.Dialector.Name() == "mysql" && isTextType(mig.FullDataTypeOf(column).SQL) {
			indexed = clause.Expr{SQL: "?(191)", Vars: []any{clause.Column{Name: column.DBName}}} // a TEXT column takes a prefix index
		}
		if err := db.Exec("CREATE INDEX ? ON ? (?)", clause.Column{Name: name}, clause.Table{Name: stmt.Schema.Table}, indexed).Error; err != nil {
			return fmt.Errorf("indexing %s.%s: %w", stmt.Schema.Table, column.DBName, err)
		}
	}
	return nil
}

// isTextType reports whether a MySQL column type is a TEXT or BLOB, which an
// index can cover only by a prefix (a shorter column refuses one).
func isTextType(sqlType string) bool {
	first, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(sqlType)), " ")
	return strings.HasSuffix(first, "text") || strings.HasSuffix(first, "blob")
}

// leadsAnIndex reports whether an index declared on the model starts with f.
func leadsAnIndex(s *schema.Schema, f *schema.Field) bool {
	return slices.ContainsFunc(s.ParseIndexes(), func(idx *schema.Index) bool {
		return len(idx.Fields) > 0 && idx.Fields[0].Field == f
	})
}

// DropTable drops the tables of unsharded models on the plugin's database and
// of sharded ones on every physical database.
func (m shardMigrator) DropTable(models ...any) error {
	for _, value := range models {
		if err := m.each(value, func(mig gorm.Migrator) error { return mig.DropTable(value) }); err != nil {
			return err
		}
	}
	return nil
}

// each runs do on every database value's table lives on, naming the
// database that failed.
func (m shardMigrator) each(value any, do func(gorm.Migrator) error) error {
	targets, err := m.targets(value)
	if err != nil {
		return err
	}
	for _, t := range targets {
		if err := do(t.migrator); err != nil {
			if len(targets) == 1 {
				return err
			}
			return fmt.Errorf("shardid: on %s: %w", t.name, err)
		}
	}
	return nil
}

// all asks every database value's table lives on; the answer is true only if
// it is true on each. Where they disagree, the logger says which.
func (m shardMigrator) all(value any, question string, ask func(gorm.Migrator) bool) bool {
	targets, err := m.targets(value)
	if err != nil {
		m.db.Logger.Warn(m.db.Statement.Context, "shardid: %s: cannot ask: %v", question, err)
		return false
	}
	var yes, no []string
	for _, t := range targets {
		if ask(t.migrator) {
			yes = append(yes, t.name)
		} else {
			no = append(no, t.name)
		}
	}
	if len(yes) > 0 && len(no) > 0 {
		m.db.Logger.Warn(m.db.Statement.Context, "shardid: %v: %s on %s, not on %s", ErrShardsDisagree, question, strings.Join(yes, ", "), strings.Join(no, ", "))
	}
	return len(no) == 0
}

// agree returns the answer of the first database value's table lives on,
// once every other has given the same, as same judges it.
func agree[T any](m shardMigrator, value any, question string, ask func(gorm.Migrator, any) (T, error), same func(a, b T) bool) (T, error) {
	var first T
	targets, err := m.targets(value)
	if err != nil {
		return first, err
	}
	for i, t := range targets {
		answer, err := ask(t.migrator, value)
		if err != nil {
			if len(targets) == 1 {
				return first, err
			}
			return first, fmt.Errorf("shardid: on %s: %w", t.name, err)
		}
		if i == 0 {
			first = answer
		} else if !same(first, answer) {
			return first, fmt.Errorf("%w: %s differ between %s and %s", ErrShardsDisagree, question, targets[0].name, t.name)
		}
	}
	return first, nil
}

// HasTable reports whether the table exists on every database it belongs on.
func (m shardMigrator) HasTable(value any) bool {
	return m.all(value, fmt.Sprintf("table %v exists", tableOf(value)), func(mig gorm.Migrator) bool { return mig.HasTable(value) })
}

// RenameTable renames the table where it lives: on every physical database
// when either name is a sharded model's.
func (m shardMigrator) RenameTable(oldName, newName any) error {
	placed := oldName
	if sharded, _, err := m.sharded(newName); err == nil && sharded {
		placed = newName
	}
	return m.each(placed, func(mig gorm.Migrator) error { return mig.RenameTable(oldName, newName) })
}

// GetTables lists the tables of the plugin's database and of every physical
// database, each name once.
func (m shardMigrator) GetTables() ([]string, error) {
	tables, err := m.own.GetTables()
	if err != nil || !m.plugin.routed() {
		return tables, err
	}
	for k, ph := range m.plugin.physical {
		mig, err := m.physicalMigrator(k)
		if err != nil {
			return nil, err
		}
		more, err := mig.GetTables()
		if err != nil {
			return nil, fmt.Errorf("shardid: on %s: %w", ph.name, err)
		}
		tables = append(tables, more...)
	}
	slices.Sort(tables)
	return slices.Compact(tables), nil
}

// TableType returns the table's type, once every database agrees on it.
func (m shardMigrator) TableType(value any) (gorm.TableType, error) {
	return agree(m, value, "table types", gorm.Migrator.TableType, func(a, b gorm.TableType) bool {
		return a.Type() == b.Type() && a.Name() == b.Name()
	})
}

// AddColumn adds the column where the table lives.
func (m shardMigrator) AddColumn(value any, field string) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.AddColumn(value, field) })
}

// DropColumn drops the column where the table lives.
func (m shardMigrator) DropColumn(value any, name string) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.DropColumn(value, name) })
}

// AlterColumn alters the column where the table lives.
func (m shardMigrator) AlterColumn(value any, field string) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.AlterColumn(value, field) })
}

// MigrateColumn migrates the column where the table lives.
func (m shardMigrator) MigrateColumn(value any, field *schema.Field, columnType gorm.ColumnType) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.MigrateColumn(value, field, columnType) })
}

// MigrateColumnUnique migrates the column's UNIQUE constraint where the table lives.
func (m shardMigrator) MigrateColumnUnique(value any, field *schema.Field, columnType gorm.ColumnType) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.MigrateColumnUnique(value, field, columnType) })
}

// HasColumn reports whether the column exists on every database the table belongs on.
func (m shardMigrator) HasColumn(value any, field string) bool {
	return m.all(value, fmt.Sprintf("column %v.%s exists", tableOf(value), field), func(mig gorm.Migrator) bool { return mig.HasColumn(value, field) })
}

// RenameColumn renames the column where the table lives.
func (m shardMigrator) RenameColumn(value any, oldName, field string) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.RenameColumn(value, oldName, field) })
}

// ColumnTypes returns the table's columns, once every database has the same
// names and types.
func (m shardMigrator) ColumnTypes(value any) ([]gorm.ColumnType, error) {
	return agree(m, value, "column types", gorm.Migrator.ColumnTypes, func(a, b []gorm.ColumnType) bool {
		return slices.EqualFunc(a, b, func(x, y gorm.ColumnType) bool {
			return x.Name() == y.Name() && strings.EqualFold(x.DatabaseTypeName(), y.DatabaseTypeName())
		})
	})
}

// CreateView creates the view beside the tables its query reads: on every
// physical database for a query on a sharded model.
func (m shardMigrator) CreateView(name string, option gorm.ViewOption) error {
	if option.Query == nil || option.Query.Statement.Model == nil {
		return m.own.CreateView(name, option)
	}
	return m.each(option.Query.Statement.Model, func(mig gorm.Migrator) error { return mig.CreateView(name, option) })
}

// DropView drops the view wherever it is (DROP VIEW IF EXISTS).
func (m shardMigrator) DropView(name string) error {
	if err := m.own.DropView(name); err != nil || !m.plugin.routed() {
		return err
	}
	for k, ph := range m.plugin.physical {
		mig, err := m.physicalMigrator(k)
		if err != nil {
			return err
		}
		if err := mig.DropView(name); err != nil {
			return fmt.Errorf("shardid: on %s: %w", ph.name, err)
		}
	}
	return nil
}

// CreateConstraint creates the constraint where the table lives.
func (m shardMigrator) CreateConstraint(value any, name string) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.CreateConstraint(value, name) })
}

// DropConstraint drops the constraint where the table lives.
func (m shardMigrator) DropConstraint(value any, name string) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.DropConstraint(value, name) })
}

// HasConstraint reports whether the constraint exists on every database the table belongs on.
func (m shardMigrator) HasConstraint(value any, name string) bool {
	return m.all(value, fmt.Sprintf("constraint %s on %v exists", name, tableOf(value)), func(mig gorm.Migrator) bool { return mig.HasConstraint(value, name) })
}

// CreateIndex creates the index where the table lives.
func (m shardMigrator) CreateIndex(value any, name string) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.CreateIndex(value, name) })
}

// DropIndex drops the index where the table lives.
func (m shardMigrator) DropIndex(value any, name string) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.DropIndex(value, name) })
}

// HasIndex reports whether the index exists on every database the table belongs on.
func (m shardMigrator) HasIndex(value any, name string) bool {
	return m.all(value, fmt.Sprintf("index %s on %v exists", name, tableOf(value)), func(mig gorm.Migrator) bool { return mig.HasIndex(value, name) })
}

// RenameIndex renames the index where the table lives.
func (m shardMigrator) RenameIndex(value any, oldName, newName string) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.RenameIndex(value, oldName, newName) })
}

// GetIndexes returns the table's indexes, once every database has the same
// names and columns.
func (m shardMigrator) GetIndexes(value any) ([]gorm.Index, error) {
	return agree(m, value, "indexes", gorm.Migrator.GetIndexes, func(a, b []gorm.Index) bool {
		key := func(idx gorm.Index) string { return idx.Name() + "(" + strings.Join(idx.Columns(), ",") + ")" }
		ka, kb := make([]string, len(a)), make([]string, len(b))
		for i := range a {
			ka[i] = key(a[i])
		}
		for i := range b {
			kb[i] = key(b[i])
		}
		slices.Sort(ka)
		slices.Sort(kb)
		return slices.Equal(ka, kb)
	})
}

// CurrentDatabase names the plugin's database.
func (m shardMigrator) CurrentDatabase() string { return m.own.CurrentDatabase() }

// FullDataTypeOf is the dialect's: every physical database has the plugin's.
func (m shardMigrator) FullDataTypeOf(field *schema.Field) clause.Expr {
	return m.own.FullDataTypeOf(field)
}

// GetTypeAliases is the dialect's.
func (m shardMigrator) GetTypeAliases(databaseTypeName string) []string {
	return m.own.GetTypeAliases(databaseTypeName)
}

// shardedTable reports whether table holds rows of a sharded model or the
// join rows of its many2many, which live beside the owner.
func (p *Plugin) shardedTable(table string) bool {
	_, sharded := p.shardedTables.Load(strings.ToLower(table))
	_, joins := p.joinTables.Load(strings.ToLower(table))
	return sharded || joins
}

// tableOf names value's table for messages.
func tableOf(value any) any {
	if table, ok := value.(string); ok {
		return table
	}
	return reflect.Indirect(reflect.ValueOf(value)).Type()
}
