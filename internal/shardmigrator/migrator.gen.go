package shardmigrator

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/errs"
)

// Migrator is the shard-aware migrator: every gorm.Migrator method, run on
// every physical database for a sharded model and on the plugin's database
// for any other. It is safe for concurrent use as far as the migrators it
// wraps are.
type Migrator struct {
	plugin Plugin
	db     *gorm.DB
	own    gorm.Migrator // db's migrator: unsharded models, and the shards when the plugin does not route
}

var _ gorm.Migrator = Migrator{}

// New returns the migrator of db, the plugin's database or a session of it,
// for plugin.
func New(plugin Plugin, db *gorm.DB) Migrator {
	return Migrator{plugin: plugin, db: db, own: db.Migrator()}
}

// DropTable drops the tables of unsharded models on the plugin's database and
// of sharded ones on every physical database.
func (m Migrator) DropTable(models ...any) error {
	if err := m.reachableFor(models...); err != nil {
		return err
	}
	for _, value := range models {
		if err := m.dropTable(value); err != nil {
			return err
		}
	}
	return nil
}

// dropTable drops one value's tables; a sharded one's under the migrations'
// lock, which a move takes to record its tables: none starts carrying it
// between the check and the drop.
func (m Migrator) dropTable(value any) error {
	sharded, _, s, err := m.sharded(value) // asked before the drop: a dropped table is found nowhere
	if err != nil {
		return err
	}
	table, named := value.(string)
	if !named && sharded {
		table = s.Table
		if m.db.Statement.Table != "" {
			table = strings.Join(TableParts(m.db.Statement), ".") // Migrator(db.Table(name)) drops that table, in its schema if named
		}
	}
	routed := sharded && m.plugin.Routed()
	if routed {
		unlock, err := m.plugin.LockMigrations(m.db.Statement.Context)
		if err != nil {
			return errs.Wrap(err, "%s was not dropped", table)
		}
		defer unlock()
		if err := m.plugin.CheckTableUnmoved(m.db, table); err != nil {
			return err
		}
	}
	if err := m.each(value, func(mig gorm.Migrator) error { return mig.DropTable(value) }); err != nil {
		return err
	}
	if routed {
		return m.plugin.UnregisterTable(m.db, table)
	}
	return nil
}

// reachableFor checks, before a change of several values, that every physical
// database answers when one of the values' tables lives on them: a change
// refused for a database that is down changes none of the values.
func (m Migrator) reachableFor(values ...any) error {
	several := false
	for _, value := range values {
		targets, err := m.targets(value) // every value: one that cannot be placed (nil, a bad tag) fails before any is changed
		if err != nil {
			return err
		}
		several = several || len(targets) > 1
	}
	if several {
		if err := m.plugin.Reachable(m.db.Statement.Context); err != nil {
			return errs.Wrap(err, "nothing was changed")
		}
	}
	return nil
}

// each runs do on every database value's table lives on, naming the
// database that failed.
func (m Migrator) each(value any, do func(gorm.Migrator) error) error {
	return m.eachUnfinished(value, nil, do)
}

// eachAdvising is each, for a change that running again does not finish:
// its error gives advice instead.
func (m Migrator) eachAdvising(value any, advice string, do func(gorm.Migrator) error) error {
	return m.eachDoing(value, nil, advice, do)
}

// eachUnfinished is each, but skips the databases where finished says the
// change is made already, unless it is made on all of them: it finishes a
// change that stopped part way (a database went down), and a change made
// everywhere fails as GORM's would on one database.
func (m Migrator) eachUnfinished(value any, finished func(gorm.Migrator) bool, do func(gorm.Migrator) error) error {
	return m.eachDoing(value, finished, "run it again to finish it", do)
}

func (m Migrator) eachDoing(value any, finished func(gorm.Migrator) bool, advice string, do func(gorm.Migrator) error) error {
	targets, err := m.targets(value)
	if err != nil {
		return err
	}
	several := len(targets) > 1 // its errors name the database, however many are left to change
	if several {
		if err := m.plugin.Reachable(m.db.Statement.Context); err != nil {
			return errs.Wrap(err, "nothing was changed")
		}
	}
	if finished != nil && several {
		var left []target
		for _, t := range targets {
			if !finished(t.migrator) {
				left = append(left, t)
			}
		}
		if len(left) > 0 {
			targets = left
		}
	}
	var done []string
	for _, t := range targets {
		mig, end, err := t.begin(m.plugin)
		if err == nil {
			err = end(do(mig))
		}
		if err != nil {
			if !several {
				return err
			}
			return fmt.Errorf("shardid: on %s: %w%s", t.name, err, doneBefore(done, advice))
		}
		done = append(done, t.name)
	}
	return nil
}

// begin begins a change of t's database, which end ends; a physical
// one's keeps the triggers of a move there (Plugin.KeepFences).
func (t target) begin(p Plugin) (gorm.Migrator, func(error) error, error) {
	if t.db == nil {
		return t.migrator, func(err error) error { return err }, nil
	}
	tx, end, err := p.KeepFences(t.db)
	if err != nil {
		return nil, nil, err
	}
	return tx.Migrator(), end, nil
}

// doneBefore tells, in an error, the databases a change was made on before
// one failed.
func doneBefore(done []string, advice string) string {
	if len(done) == 0 {
		return ""
	}
	return fmt.Sprintf(" (made on %s before it failed; %s)", strings.Join(done, ", "), advice)
}

// all asks every database value's table lives on; the answer is true only if
// it is true on each. Where they disagree, the logger says which.
func (m Migrator) all(value any, question string, ask func(gorm.Migrator) bool) bool {
	targets, err := m.targets(value)
	if err != nil {
		m.plugin.Events().Warn("shardid: the migrator cannot ask the physical databases", "question", question, "error", err)
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
		m.plugin.Events().Warn(ErrShardsDisagree.Error(), "question", question, "yes", strings.Join(yes, ", "), "no", strings.Join(no, ", "))
	}
	return len(no) == 0
}

// agree returns the answer of the first database value's table lives on,
// once every other has given the same, as same judges it; with an error, no
// answer, which would be one database's only.
func agree[T any](m Migrator, value any, question string, ask func(gorm.Migrator, any) (T, error), same func(a, b T) bool) (T, error) {
	var first, none T
	targets, err := m.targets(value)
	if err != nil {
		return none, err
	}
	for i, t := range targets {
		answer, err := ask(t.migrator, value)
		if err != nil {
			if len(targets) == 1 {
				return none, err
			}
			return none, errs.Wrap(err, "on %s", t.name)
		}
		if i == 0 {
			first = answer
		} else if !same(first, answer) {
			return none, fmt.Errorf("%w: %s differ between %s and %s", ErrShardsDisagree, question, targets[0].name, t.name)
		}
	}
	return first, nil
}

// HasTable reports whether the table exists on every database it belongs on.
func (m Migrator) HasTable(value any) bool {
	return m.all(value, fmt.Sprintf("table %v exists", tableOf(value)), func(mig gorm.Migrator) bool { return mig.HasTable(value) })
}

// RenameTable renames the table where it lives: on every physical database
// when either name is a sharded model's, whose record in the plugin's
// database then names the new table.
func (m Migrator) RenameTable(oldName, newName any) error {
	placed := oldName
	sharded, _, _, err := m.sharded(newName)
	if err == nil && sharded {
		placed = newName
	} else {
		sharded, _, _, err = m.sharded(oldName) // asked before the rename: a renamed table is found by its new name only
	}
	if err != nil {
		return err
	}
	if sharded && m.plugin.Routed() { // under the migrations' lock, as dropTable
		unlock, err := m.plugin.LockMigrations(m.db.Statement.Context)
		if err != nil {
			return errs.Wrap(err, "%s was not renamed", m.tableName(oldName))
		}
		defer unlock()
		if err := m.plugin.CheckTableUnmoved(m.db, m.tableName(oldName)); err != nil {
			return err
		}
	}
	if err := m.eachUnfinished(placed, func(mig gorm.Migrator) bool {
		tables, err := mig.GetTables()
		has := func(value any) bool {
			return slices.ContainsFunc(tables, func(t string) bool { return strings.EqualFold(t, m.tableName(value)) })
		}
		return err == nil && !has(oldName) && has(newName)
	}, func(mig gorm.Migrator) error { return mig.RenameTable(oldName, newName) }); err != nil {
		return err // the record keeps the old name, which a database still has, until a run finishes it
	}
	if !sharded || !m.plugin.Routed() {
		return nil
	}
	renamed := m.tableName(newName)
	if qualifier, _, qualified := strings.Cut(m.tableName(oldName), "."); qualified && !strings.Contains(renamed, ".") && m.db.Dialector.Name() == "postgres" {
		renamed = qualifier + "." + renamed // PostgreSQL's RENAME TO keeps the table in its schema
	}
	return m.plugin.RenameRegisteredTable(m.db, m.tableName(oldName), renamed)
}

// tableName is the table of value: a model's, or a name.
func (m Migrator) tableName(value any) string {
	if name, ok := value.(string); ok {
		return name
	}
	if s := m.schemaOf(value); s != nil {
		return s.Table
	}
	return ""
}

// GetTables lists the tables of the plugin's database and of every physical
// database, each name once; a sharded table that some physical databases
// lack is listed, with a warning naming them, as HasTable's.
func (m Migrator) GetTables() ([]string, error) {
	tables, err := m.own.GetTables()
	if err != nil || !m.plugin.Routed() {
		return tables, err
	}
	on := map[string][]string{} // the physical databases of each table
	physical := m.plugin.Physical()
	for k, name := range physical {
		mig, err := m.physicalMigrator(k)
		if err != nil {
			return nil, err
		}
		more, err := mig.GetTables()
		if err != nil {
			return nil, errs.Wrap(err, "on %s", name)
		}
		for _, table := range more {
			on[table] = append(on[table], name)
		}
		tables = append(tables, more...)
	}
	slices.Sort(tables)
	tables = slices.Compact(tables)
	for _, table := range tables {
		if have := on[table]; len(have) > 0 && len(have) < len(physical) && m.plugin.ShardedTable(table) {
			missing := slices.DeleteFunc(slices.Clone(physical), func(name string) bool { return slices.Contains(have, name) })
			m.plugin.Events().Warn(ErrShardsDisagree.Error(), "question", fmt.Sprintf("table %s exists", table), "yes", strings.Join(have, ", "), "no", strings.Join(missing, ", "))
		}
	}
	return tables, nil
}

// TableType returns the table's type, once every database agrees on it.
func (m Migrator) TableType(value any) (gorm.TableType, error) {
	return agree(m, value, "table types", gorm.Migrator.TableType, func(a, b gorm.TableType) bool {
		return a.Type() == b.Type() && a.Name() == b.Name()
	})
}

// AddColumn adds the column where the table lives.
func (m Migrator) AddColumn(value any, field string) error {
	return m.eachUnfinished(value, func(mig gorm.Migrator) bool {
		has, asked := m.columnIn(mig, value, field)
		return asked && has
	}, func(mig gorm.Migrator) error { return mig.AddColumn(value, field) })
}

// DropColumn drops the column where the table lives.
func (m Migrator) DropColumn(value any, name string) error {
	return m.eachUnfinished(value, func(mig gorm.Migrator) bool {
		has, asked := m.columnIn(mig, value, name)
		return asked && !has
	}, func(mig gorm.Migrator) error { return mig.DropColumn(value, name) })
}

// columnIn reports whether the table of value has the column name (a
// field's or a column's) on mig's database, and whether the database
// answered: GORM's HasColumn says false for a look that failed, which a
// change must not take for done.
func (m Migrator) columnIn(mig gorm.Migrator, value any, name string) (has, asked bool) {
	columns, err := mig.ColumnTypes(value)
	if s := m.schemaOf(value); s != nil {
		if field := s.LookUpField(name); field != nil {
			name = field.DBName
		}
	}
	return namedIn(columns, err, gorm.ColumnType.Name, name)
}

// schemaOf is value's schema, or nil for a table given by name.
func (m Migrator) schemaOf(value any) *schema.Schema {
	stmt := &gorm.Statement{DB: m.db}
	if stmt.Parse(value) != nil {
		return nil
	}
	return stmt.Schema
}

// namedIn reports whether list, as a database answered (err), holds name,
// and whether it answered.
func namedIn[T any](list []T, err error, nameOf func(T) string, name string) (has, asked bool) {
	if err != nil {
		return false, false
	}
	return slices.ContainsFunc(list, func(x T) bool { return strings.EqualFold(nameOf(x), name) }), true
}

// AlterColumn alters the column where the table lives.
func (m Migrator) AlterColumn(value any, field string) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.AlterColumn(value, field) })
}

// MigrateColumn migrates the column where the table lives.
func (m Migrator) MigrateColumn(value any, field *schema.Field, columnType gorm.ColumnType) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.MigrateColumn(value, field, columnType) })
}

// MigrateColumnUnique migrates the column's UNIQUE constraint where the table lives.
func (m Migrator) MigrateColumnUnique(value any, field *schema.Field, columnType gorm.ColumnType) error {
	return m.each(value, func(mig gorm.Migrator) error { return mig.MigrateColumnUnique(value, field, columnType) })
}

// HasColumn reports whether the column exists on every database the table belongs on.
func (m Migrator) HasColumn(value any, field string) bool {
	return m.all(value, fmt.Sprintf("column %v.%s exists", tableOf(value), field), func(mig gorm.Migrator) bool { return mig.HasColumn(value, field) })
}

// RenameColumn renames the column where the table lives.
func (m Migrator) RenameColumn(value any, oldName, field string) error {
	if err := m.eachUnfinished(value, func(mig gorm.Migrator) bool {
		hasOld, askedOld := m.columnIn(mig, value, oldName)
		hasNew, askedNew := m.columnIn(mig, value, field)
		return askedOld && askedNew && !hasOld && hasNew
	}, func(mig gorm.Migrator) error { return mig.RenameColumn(value, oldName, field) }); err != nil {
		return err // the record keeps the old name, which a database still has, until a run finishes it
	}
	sharded, _, s, err := m.sharded(value)
	if err != nil || !sharded || !m.plugin.Routed() {
		return err
	}
	if s != nil { // names as GORM's RenameColumn reads them: a field's, or a column's
		if f := s.LookUpField(oldName); f != nil {
			oldName = f.DBName
		}
		if f := s.LookUpField(field); f != nil {
			field = f.DBName
		}
	}
	table := m.tableName(value)
	if m.db.Statement.Table != "" {
		table = strings.Join(TableParts(m.db.Statement), ".")
	}
	return m.plugin.RenameRegisteredColumn(m.db, table, oldName, field)
}

// ColumnTypes returns the table's columns, once every database has the same
// names, types, sizes, nullability, keys and defaults: an AlterColumn that
// stopped part way is not hidden behind the first database's answer. The
// columns' order is not compared: a table made afresh on one database (one
// added to the map, one whose copy was dropped) has them in the model's order,
// where the others have those AutoMigrate added at the end.
func (m Migrator) ColumnTypes(value any) ([]gorm.ColumnType, error) {
	return agree(m, value, "column types", gorm.Migrator.ColumnTypes, func(a, b []gorm.ColumnType) bool {
		byName := func(x, y gorm.ColumnType) int { return strings.Compare(x.Name(), y.Name()) }
		a, b = slices.SortedFunc(slices.Values(a), byName), slices.SortedFunc(slices.Values(b), byName)
		return slices.EqualFunc(a, b, func(x, y gorm.ColumnType) bool {
			return x.Name() == y.Name() && strings.EqualFold(x.DatabaseTypeName(), y.DatabaseTypeName()) && columnTraits(x) == columnTraits(y)
		})
	})
}

// columnTraits is what a column type reports beside its name and type, each
// with whether the dialect reports it at all.
func columnTraits(c gorm.ColumnType) string {
	length, hasLength := c.Length()
	precision, scale, hasSize := c.DecimalSize()
	nullable, hasNullable := c.Nullable()
	primary, hasPrimary := c.PrimaryKey()
	unique, hasUnique := c.Unique()
	increments, hasIncrements := c.AutoIncrement()
	value, hasDefault := c.DefaultValue()
	return fmt.Sprint(length, hasLength, precision, scale, hasSize, nullable, hasNullable, primary, hasPrimary, unique, hasUnique, increments, hasIncrements, value, hasDefault)
}

// CreateView creates the view beside the tables its query reads: on every
// physical database for a query on a sharded model or table, where each
// reads its own rows. The query is built first, as GORM builds it into the
// view, whose errors GORM would drop: a sharded query naming no shard
// (without AllShards) fails here, not as a view with no query.
func (m Migrator) CreateView(name string, option gorm.ViewOption) error {
	if option.Query == nil {
		return m.own.CreateView(name, option) // GORM's error
	}
	built := option.Query.Session(&gorm.Session{DryRun: true, Logger: logger.Discard}).Clauses() // a statement of its own, as GORM builds it
	err := built.Callback().Query().Execute(built).Error
	placed := built.Statement.Model // the query's model, or the table it names, once its scopes have run: a scope may name them
	if placed == nil && option.Query.Statement.SQL.Len() == 0 && built.Statement.Table != "" {
		placed = built.Statement.Table // db.Table("name"): placed by its name, as DropTable("name") is
	}
	if placed == nil && err == nil { // raw SQL: GORM's migrator on the plugin's database
		return m.own.CreateView(name, option)
	}
	if err != nil {
		return errs.Wrap(err, "the query of view %s", name)
	}
	if built.Statement.SQL.Len() == 0 {
		return fmt.Errorf("shardid: the query of view %s builds no SQL", name)
	}
	return m.eachAdvising(placed, "drop it with DropView, then create it again", func(mig gorm.Migrator) error { return mig.CreateView(name, option) })
}

// DropView drops the view wherever it is (DROP VIEW IF EXISTS).
func (m Migrator) DropView(name string) error {
	if m.plugin.Routed() {
		if err := m.plugin.Reachable(m.db.Statement.Context); err != nil {
			return errs.Wrap(err, "nothing was changed")
		}
	}
	if err := m.own.DropView(name); err != nil || !m.plugin.Routed() {
		return err
	}
	for k, physical := range m.plugin.Physical() {
		mig, err := m.physicalMigrator(k)
		if err != nil {
			return err
		}
		if err := mig.DropView(name); err != nil {
			return errs.Wrap(err, "on %s", physical)
		}
	}
	return nil
}

// CreateConstraint creates the constraint where the table lives.
func (m Migrator) CreateConstraint(value any, name string) error {
	return m.eachUnfinished(value, func(mig gorm.Migrator) bool { return mig.HasConstraint(value, name) },
		func(mig gorm.Migrator) error { return mig.CreateConstraint(value, name) })
}

// DropConstraint drops the constraint where the table lives.
func (m Migrator) DropConstraint(value any, name string) error {
	return m.eachUnfinished(value, func(mig gorm.Migrator) bool {
		return mig.HasTable(value) && !mig.HasConstraint(value, name) // a table found: the database answered
	}, func(mig gorm.Migrator) error { return mig.DropConstraint(value, name) })
}

// HasConstraint reports whether the constraint exists on every database the table belongs on.
func (m Migrator) HasConstraint(value any, name string) bool {
	return m.all(value, fmt.Sprintf("constraint %s on %v exists", name, tableOf(value)), func(mig gorm.Migrator) bool { return mig.HasConstraint(value, name) })
}

// CreateIndex creates the index where the table lives.
func (m Migrator) CreateIndex(value any, name string) error {
	return m.eachUnfinished(value, func(mig gorm.Migrator) bool {
		has, asked := m.indexIn(mig, value, name)
		return asked && has
	}, func(mig gorm.Migrator) error { return mig.CreateIndex(value, name) })
}

// DropIndex drops the index where the table lives.
func (m Migrator) DropIndex(value any, name string) error {
	return m.eachUnfinished(value, func(mig gorm.Migrator) bool {
		has, asked := m.indexIn(mig, value, name)
		return asked && !has
	}, func(mig gorm.Migrator) error { return mig.DropIndex(value, name) })
}

// indexIn reports whether the table of value has the index name (a
// field's, or the index's own) on mig's database, and whether the database
// answered.
func (m Migrator) indexIn(mig gorm.Migrator, value any, name string) (has, asked bool) {
	indexes, err := mig.GetIndexes(value)
	if s := m.schemaOf(value); s != nil {
		if idx := s.LookIndex(name); idx != nil {
			name = idx.Name
		}
	}
	return namedIn(indexes, err, gorm.Index.Name, name)
}

// HasIndex reports whether the index exists on every database the table belongs on.
func (m Migrator) HasIndex(value any, name string) bool {
	return m.all(value, fmt.Sprintf("index %s on %v exists", name, tableOf(value)), func(mig gorm.Migrator) bool { return mig.HasIndex(value, name) })
}

// RenameIndex renames the index where the table lives.
func (m Migrator) RenameIndex(value any, oldName, newName string) error {
	return m.eachUnfinished(value, func(mig gorm.Migrator) bool {
		hasOld, askedOld := m.indexIn(mig, value, oldName)
		hasNew, askedNew := m.indexIn(mig, value, newName)
		return askedOld && askedNew && !hasOld && hasNew
	}, func(mig gorm.Migrator) error { return mig.RenameIndex(value, oldName, newName) })
}

// GetIndexes returns the table's indexes, once every database has the same
// names, columns, uniqueness and primary key.
func (m Migrator) GetIndexes(value any) ([]gorm.Index, error) {
	return agree(m, value, "indexes", gorm.Migrator.GetIndexes, func(a, b []gorm.Index) bool {
		key := func(idx gorm.Index) string {
			unique, hasUnique := idx.Unique()
			primary, hasPrimary := idx.PrimaryKey()
			return fmt.Sprint(idx.Name(), "(", strings.Join(idx.Columns(), ","), ")", unique, hasUnique, primary, hasPrimary)
		}
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
func (m Migrator) CurrentDatabase() string { return m.own.CurrentDatabase() }

// FullDataTypeOf is the dialect's: every physical database has the plugin's.
func (m Migrator) FullDataTypeOf(field *schema.Field) clause.Expr {
	return m.own.FullDataTypeOf(field)
}

// GetTypeAliases is the dialect's.
func (m Migrator) GetTypeAliases(databaseTypeName string) []string {
	return m.own.GetTypeAliases(databaseTypeName)
}

// tableOf names value's table for messages.
func tableOf(value any) any {
	if table, ok := value.(string); ok {
		return table
	}
	v := reflect.Indirect(reflect.ValueOf(value))
	if !v.IsValid() {
		return value // nil, or a nil pointer: named as it is, never a panic
	}
	return v.Type()
}
