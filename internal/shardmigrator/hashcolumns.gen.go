package shardmigrator

import (
	"fmt"
	"reflect"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/shardrouter"
)

// A hash:Field key is hashed byte for byte, so its column must compare byte
// for byte too: under a case-insensitive collation the database finds
// "dan@x.io" for "Dan@x.io", whose hash names another shard. The migrator
// makes string hash columns exact where it chooses their type, and refuses
// a column that is not.

// exactCollations are MySQL/MariaDB collations that compare bytes and do not
// ignore trailing spaces (a _bin collation with PAD SPACE does), best first.
var exactCollations = []string{"utf8mb4_nopad_bin", "utf8mb4_0900_bin"}

// hashTextField returns the string hash field of a sharded model that must
// compare exactly (not tagged collation:loose), if any.
func hashTextField(model *Model) *schema.Field {
	if model == nil || !model.Sharded || model.Hash == nil || model.LooseHash || model.Hash.FieldType.Kind() != reflect.String {
		return nil
	}
	return model.Hash
}

// exactHashColumns gives, on MySQL/MariaDB, each string hash column whose
// type the model leaves to GORM an exact collation, in db's schemas.
func (m Migrator) exactHashColumns(db *gorm.DB, models []any) error {
	if db.Dialector.Name() != "mysql" {
		return nil // PostgreSQL's default collation and SQLite's BINARY are exact
	}
	collation := ""
	return m.eachHashTextField(db, models, func(_ *gorm.Statement, _ *Model, f *schema.Field) error {
		if f.TagSettings["TYPE"] != "" {
			return nil
		}
		var err error
		if collation == "" {
			if collation, err = exactCollation(db); err != nil {
				return err
			}
		}
		size := f.Size
		if size == 0 {
			size = 191 // what GORM gives an indexed string
		}
		if collation == "varbinary" {
			f.DataType = schema.DataType(fmt.Sprintf("varbinary(%d)", size*4))
		} else {
			f.DataType = schema.DataType(fmt.Sprintf("varchar(%d) CHARACTER SET utf8mb4 COLLATE %s", size, collation))
		}
		return nil
	})
}

// eachHashTextField calls do for the string hash field of each sharded model
// among models, parsed on db.
func (m Migrator) eachHashTextField(db *gorm.DB, models []any, do func(stmt *gorm.Statement, model *Model, f *schema.Field) error) error {
	for _, value := range models {
		stmt := &gorm.Statement{DB: db}
		if stmt.Parse(value) != nil {
			continue
		}
		model, err := m.plugin.Model(stmt.Schema)
		if err != nil {
			return err
		}
		if f := hashTextField(model); f != nil {
			if err := do(stmt, model, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// exactCollation returns the first of exactCollations the server has, or
// "varbinary" when it has none.
func exactCollation(db *gorm.DB) (string, error) {
	var have []string
	if err := db.Raw("SELECT COLLATION_NAME FROM information_schema.COLLATIONS WHERE COLLATION_NAME IN ?", exactCollations).Scan(&have).Error; err != nil {
		return "", err
	}
	for _, c := range exactCollations {
		for _, h := range have {
			if strings.EqualFold(c, h) {
				return c, nil
			}
		}
	}
	return "varbinary", nil
}

// checkHashColumns refuses, after a migration on db (named where), a string
// hash column that compares otherwise than byte for byte.
func (m Migrator) checkHashColumns(db *gorm.DB, models []any, where string) error {
	return m.eachHashTextField(db, models, func(stmt *gorm.Statement, model *Model, f *schema.Field) error {
		inexact, err := inexactComparison(db, stmt.Schema.Table, f.DBName)
		if err != nil {
			return fmt.Errorf("shardid: on %s: reading the collation of %s.%s: %w", where, stmt.Schema.Table, f.DBName, err)
		}
		if inexact != "" {
			return m.plugin.TagError(stmt.Schema.Name, model.Key, fmt.Sprintf(
				"hash:%s hashes the key byte for byte, but on %s column %s.%s %s, so a lookup by a key the database finds equal would go to another shard; "+
					"give the column an exact collation (MariaDB utf8mb4_nopad_bin, MySQL utf8mb4_0900_bin, PostgreSQL the default or C, SQLite BINARY), leave its type to the plugin, "+
					"or tag the key collation:loose to hash it as the column compares",
				f.Name, where, stmt.Schema.Table, f.DBName, inexact))
		}
		return nil
	})
}

// inexactComparison says how the column compares otherwise than byte for
// byte, or "" when it does not.
func inexactComparison(db *gorm.DB, table, column string) (string, error) {
	switch db.Dialector.Name() {
	case "mysql":
		var collation *string
		var dataType string
		err := db.Raw("SELECT COLLATION_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?", table, column).Row().Scan(&collation, &dataType)
		if err != nil || collation == nil { // a binary type has no collation
			return "", err
		}
		if strings.EqualFold(dataType, "char") { // stored padded, read back stripped, whatever the collation
			return "is char(n), which drops trailing spaces", nil
		}
		name := strings.ToLower(*collation)
		if strings.HasSuffix(name, "_nopad_bin") || strings.HasSuffix(name, "_0900_bin") || name == "binary" {
			return "", nil
		}
		if strings.HasSuffix(name, "_bin") {
			return "has collation " + *collation + ", which ignores trailing spaces", nil
		}
		return "has collation " + *collation + ", which ignores case or accents", nil
	case "postgres":
		var typ string // the column's type, or a domain's base type
		var deterministic *bool
		err := db.Raw(`SELECT b.typname, c.collisdeterministic
			FROM pg_attribute a JOIN pg_class t ON a.attrelid = t.oid JOIN pg_type ty ON a.atttypid = ty.oid
			JOIN pg_type b ON b.oid = CASE WHEN ty.typtype = 'd' THEN ty.typbasetype ELSE ty.oid END
			LEFT JOIN pg_collation c ON a.attcollation = c.oid
			WHERE t.relname = ? AND a.attname = ? AND pg_table_is_visible(t.oid)`, table, column).Row().Scan(&typ, &deterministic)
		switch {
		case err != nil:
			return "", err
		case typ == "citext":
			return "is citext, which ignores case", nil
		case typ == "bpchar":
			return "is char(n), which ignores trailing spaces", nil
		case deterministic != nil && !*deterministic:
			return "has a nondeterministic collation", nil
		}
		return "", nil
	case "sqlite":
		var ddl string
		if err := db.Raw("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", table).Row().Scan(&ddl); err != nil {
			return "", err
		}
		if c := shardrouter.SQLiteCollation(ddl, column); !strings.EqualFold(c, "binary") {
			return "has collation " + c, nil
		}
	}
	return "", nil
}
