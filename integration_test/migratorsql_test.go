package integration

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid/internal/sqlscan"
)

// record keeps the SQL of every statement db runs, as GORM sends it.
func record(t *testing.T, db *gorm.DB) *[]string {
	var mu sync.Mutex
	var sql []string
	keep := func(db *gorm.DB) {
		mu.Lock()
		sql = append(sql, db.Statement.SQL.String())
		mu.Unlock()
	}
	cb := db.Callback()
	for _, err := range []error{
		cb.Query().After("gorm:query").Register("record", keep),
		cb.Row().After("gorm:row").Register("record", keep),
		cb.Raw().After("gorm:raw").Register("record", keep),
		cb.Create().After("gorm:create").Register("record", keep),
		cb.Update().After("gorm:update").Register("record", keep),
		cb.Delete().After("gorm:delete").Register("record", keep),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return &sql
}

// TestMigratorSQLIsRead: every statement GORM's migrator and nested
// transactions send for a model (here without the plugin, on the backend's
// own database) is read by the tokenizer, which finds the model's table and
// database catalogs only; the SET and PRAGMA it does not read name no table.
// So the plugin refuses none of GORM's own SQL on unsharded tables.
func TestMigratorSQLIsRead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		db, err := gorm.Open(b.dialector(t, t.TempDir()), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		rec := record(t, db)
		t.Cleanup(func() {
			if sqlDB, err := db.DB(); err == nil {
				_ = sqlDB.Close()
			}
		})
		m := db.Migrator()
		steps := []error{
			m.DropTable(&rawLookup{}), m.AutoMigrate(&rawLookup{}), m.AutoMigrate(&rawLookup{}),
			m.DropIndex(&rawLookup{}, "Code"), m.CreateIndex(&rawLookup{}, "Code"), m.RenameIndex(&rawLookup{}, "idx_raw_lookups_code", "idx_x"),
			m.AlterColumn(&rawLookup{}, "Note"), m.RenameColumn(&rawLookup{}, "note", "remark"), m.RenameColumn(&rawLookup{}, "remark", "note"),
			m.DropColumn(&rawLookup{}, "Note"), m.AddColumn(&rawLookup{}, "Note"),
			db.Transaction(func(tx *gorm.DB) error {
				return tx.Transaction(func(*gorm.DB) error { return errors.New("rolled back") })
			}),
			m.DropTable(&rawLookup{}),
		}
		for i, err := range steps {
			if err != nil && i != 11 {
				t.Errorf("step %d: %v", i, err)
			}
		}
		catalogs := map[string]bool{"information_schema": true, "pg_catalog": true}
		for _, sql := range *rec {
			scan, err := sqlscan.Read(db.Dialector.Name(), sql)
			if err != nil {
				if kind := scan.Kinds[0]; (kind != "SET" && kind != "PRAGMA") || slices.Contains(scan.Words, "raw_lookups") {
					t.Errorf("%q: %v", sql, err)
				}
				continue
			}
			for _, table := range scan.Tables {
				known := strings.TrimSuffix(table.Name, "__temp") == "raw_lookups" || table.Name == "sqlite_master" ||
					catalogs[strings.ToLower(table.Qualifier)] || strings.HasPrefix(table.Name, "pg_")
				if !known {
					t.Errorf("%q: table %v", sql, table)
				}
			}
		}
		if len(*rec) < 20 {
			t.Errorf("only %d statements recorded", len(*rec))
		}
	})
}
