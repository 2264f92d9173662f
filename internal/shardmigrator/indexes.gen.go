package shardmigrator

import (
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/sqlscan"
)

// indexPlacingColumns creates an index on the colocate or hash column of each
// sharded model unless one starts with it: these columns route every read
// that does not name the ID, and with foreign keys off MySQL makes none.
func (m Migrator) indexPlacingColumns(db *gorm.DB, models []any) error {
	mig := db.Migrator()
	for _, value := range models {
		stmt := &gorm.Statement{DB: db, Table: db.Statement.Table, TableExpr: db.Statement.TableExpr} // Migrator(db.Table(name)) migrates that table
		if stmt.Parse(value) != nil {
			continue
		}
		model, err := m.plugin.Model(stmt.Schema)
		if err != nil || model == nil || !model.Sharded {
			continue
		}
		column := model.Colocate
		if column == nil {
			column = model.Hash
		}
		if column == nil || leadsAnIndex(stmt.Schema, column) {
			continue
		}
		migrated := strings.Join(TableParts(stmt), ".")
		name := fmt.Sprintf("idx_shardid_%s_%s", strings.ReplaceAll(migrated, ".", "_"), column.DBName) // as GORM names its indexes: no dot of a schema
		// A long table's is shortened with a hash, which MySQL takes and which
		// tells apart two tables of one start on PostgreSQL; there an earlier
		// version's was cut by the server.
		dialect := db.Dialector.Name()
		if mig.HasIndex(value, sqlscan.FitIdentifier(dialect, name)) || dialect == "postgres" && mig.HasIndex(value, sqlscan.CutIdentifier(dialect, name)) {
			continue
		}
		name = sqlscan.FitIdentifier(dialect, name)
		indexed := clause.Expr{SQL: "?", Vars: []any{clause.Column{Name: column.DBName}}}
		if db.Dialector.Name() == "mysql" && isTextType(mig.FullDataTypeOf(column).SQL) {
			indexed = clause.Expr{SQL: "?(191)", Vars: []any{clause.Column{Name: column.DBName}}} // a TEXT column takes a prefix index
		}
		index, table := clause.Table{Name: name}, clause.Table{Name: migrated}
		if schemaName, tableName, qualified := strings.Cut(migrated, "."); qualified && db.Dialector.Name() == "sqlite" {
			index, table = clause.Table{Name: schemaName + "." + name}, clause.Table{Name: tableName} // SQLite qualifies the index, not its table
		}
		if err := db.Exec("CREATE INDEX ? ON ? (?)", index, table, indexed).Error; err != nil {
			return fmt.Errorf("indexing %s.%s: %w", migrated, column.DBName, err)
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
