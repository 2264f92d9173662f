package shardmigrator

import (
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/internal/errs"
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
	if f := stringHashField(model); f != nil && !model.LooseHash {
		return f
	}
	return nil
}

// looseHashField returns the string hash field tagged collation:loose, if
// any.
func looseHashField(model *Model) *schema.Field {
	if f := stringHashField(model); f != nil && model.LooseHash {
		return f
	}
	return nil
}

func stringHashField(model *Model) *schema.Field {
	if model == nil || !model.Sharded || model.Hash == nil || model.Hash.FieldType.Kind() != reflect.String {
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

// shapeHashColumns is exactHashColumns, with the schema GORM's migrator
// makes a table of under Migrator(db.Table(name)) shaped as the model's.
func (m Migrator) shapeHashColumns(db *gorm.DB, models []any) error {
	if err := m.exactHashColumns(db, models); err != nil {
		return err
	}
	namedLikeModel(db, models)
	return nil
}

// namedLikeModel gives the schema GORM's migrator makes a table of when
// Migrator(db.Table(name)) names another than the model's (a schema of its
// own, cached by the name) what the plugin made of the model's: a tagged
// primary key a plain BIGINT, not auto-increment; an exact hash column.
func namedLikeModel(db *gorm.DB, models []any) {
	table := db.Statement.Table
	if table == "" {
		return
	}
	for _, value := range models {
		own, named := &gorm.Statement{DB: db}, &gorm.Statement{DB: db}
		if own.Parse(value) != nil || named.ParseWithSpecialTableName(value, table) != nil || own.Schema == named.Schema {
			continue
		}
		for _, f := range own.Schema.Fields {
			if g := named.Schema.FieldsByBindName[f.BindName()]; g != nil {
				g.AutoIncrement, g.HasDefaultValue, g.DataType = f.AutoIncrement, f.HasDefaultValue, f.DataType
			}
		}
		withDefault := make([]*schema.Field, 0, len(own.Schema.FieldsWithDefaultDBValue))
		for _, f := range own.Schema.FieldsWithDefaultDBValue {
			if g := named.Schema.FieldsByBindName[f.BindName()]; g != nil {
				withDefault = append(withDefault, g)
			}
		}
		named.Schema.FieldsWithDefaultDBValue = withDefault
	}
}

// eachHashTextField calls do for the string hash field of each sharded model
// among models, parsed on db.
func (m Migrator) eachHashTextField(db *gorm.DB, models []any, do func(stmt *gorm.Statement, model *Model, f *schema.Field) error) error {
	return m.eachHashField(db, models, hashTextField, do)
}

// eachHashField calls do for the hash field pick returns of each sharded
// model among models, parsed on db.
func (m Migrator) eachHashField(db *gorm.DB, models []any, pick func(*Model) *schema.Field, do func(stmt *gorm.Statement, model *Model, f *schema.Field) error) error {
	for _, value := range models {
		stmt := &gorm.Statement{DB: db, Table: db.Statement.Table, TableExpr: db.Statement.TableExpr} // Migrator(db.Table(name)) migrates that table
		if stmt.Parse(value) != nil {
			continue
		}
		model, err := m.plugin.Model(stmt.Schema)
		if err != nil {
			return err
		}
		if f := pick(model); f != nil {
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
// A column that compares its values as its type, not as text (a number, a
// uuid, bytea, SQLite's numeric affinity), is refused for a collation:loose
// key too: LooseKey folds text, not the spellings a type reads alike.
func (m Migrator) checkHashColumns(db *gorm.DB, models []any, where string) error {
	err := m.eachHashField(db, models, looseHashField, func(stmt *gorm.Statement, model *Model, f *schema.Field) error {
		table := strings.Join(TableParts(stmt), ".")
		inexact, notText, err := inexactComparison(db, table, f.DBName)
		if err != nil {
			return errs.Wrap(err, "on %s: reading the collation of %s.%s", where, table, f.DBName)
		}
		if notText {
			return m.plugin.TagError(stmt.Schema.Name, model.Key, fmt.Sprintf(
				"collation:loose hashes %s as text, but on %s column %s.%s %s, so a lookup by another spelling of its value would go to another shard; give the key a text column",
				f.Name, where, table, f.DBName, inexact))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := m.checkLooseColumns(db, models, where); err != nil {
		return err
	}
	return m.eachHashTextField(db, models, func(stmt *gorm.Statement, model *Model, f *schema.Field) error {
		table := strings.Join(TableParts(stmt), ".")
		inexact, notText, err := inexactComparison(db, table, f.DBName)
		if err != nil {
			return errs.Wrap(err, "on %s: reading the collation of %s.%s", where, table, f.DBName)
		}
		if inexact == "" {
			return nil
		}
		remedy := "give the column an exact collation (MariaDB utf8mb4_nopad_bin, MySQL utf8mb4_0900_bin, PostgreSQL the default or C, SQLite BINARY), leave its type to the plugin, " +
			"or tag the key collation:loose to hash it as the column compares"
		if notText {
			remedy = "give the key a text column (leave its type to the plugin)"
		}
		return m.plugin.TagError(stmt.Schema.Name, model.Key, fmt.Sprintf(
			"hash:%s hashes the key byte for byte, but on %s column %s.%s %s, so a lookup by a key the database finds equal would go to another shard; %s",
			f.Name, where, table, f.DBName, inexact, remedy))
	})
}

// rootCollation is a MySQL/MariaDB collation whose equality LooseKey
// follows: the Unicode algorithm's root order, or MySQL's general one, not
// a language's (german2_ci finds ü equal to ue), of a Unicode character set
// (an 8-bit one's "general" collation has tables of its own: cp1250's finds
// S equal to §, macce's M equal to N).
var rootCollation = regexp.MustCompile(`^(utf8mb4|utf8mb3|utf8|ucs2|utf16|utf16le|utf32)_(general|unicode|unicode_520|uca1400|0900)(_nopad)?(_a[is])?_c[is]$`)

// checkLooseColumns refuses a collation:loose column whose collation finds
// equal keys LooseKey tells apart: on MySQL/MariaDB a language's or an 8-bit
// character set's, on PostgreSQL a nondeterministic ICU collation other
// than the root's (looseICULocale).
func (m Migrator) checkLooseColumns(db *gorm.DB, models []any, where string) error {
	var read func(table, column string) (string, error)
	switch db.Dialector.Name() {
	case "mysql":
		read = func(table, column string) (string, error) {
			var collation *string
			err := db.Raw("SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND COLUMN_NAME = ?", schemaOf(table), bareTable(table), column).Row().Scan(&collation)
			if err != nil || collation == nil || strings.HasSuffix(strings.ToLower(*collation), "_bin") || rootCollation.MatchString(strings.ToLower(*collation)) {
				return "", err // exact, or compared as LooseKey folds
			}
			return fmt.Sprintf("has collation %s, a language's or an 8-bit character set's", *collation), nil
		}
	case "postgres":
		read = func(table, column string) (string, error) {
			var name, locale string
			var deterministic bool
			// The ICU locale is colllocale from PostgreSQL 17, colliculocale in 15 and 16, collcollate before.
			err := db.Raw(`SELECT c.collname, c.collisdeterministic, COALESCE(to_jsonb(c)->>'colllocale', to_jsonb(c)->>'colliculocale', c.collcollate, '')
				FROM pg_attribute a JOIN pg_class t ON a.attrelid = t.oid JOIN pg_collation c ON c.oid = a.attcollation
				WHERE t.relname = ? AND a.attname = ? AND CASE WHEN ? = '' THEN pg_table_is_visible(t.oid) ELSE t.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = ?) END`, bareTable(table), column, schemaOf(table), schemaOf(table)).Row().Scan(&name, &deterministic, &locale)
			switch {
			case errors.Is(err, sql.ErrNoRows): // not collatable: compared as its type
				return "", nil
			case err != nil || deterministic || looseICULocale(locale):
				return "", err // exact, or compared as LooseKey folds
			}
			return fmt.Sprintf("has collation %s (ICU locale %s), which finds keys equal that the root's tells apart", name, locale), nil
		}
	default:
		return nil
	}
	return m.eachHashField(db, models, looseHashField, func(stmt *gorm.Statement, model *Model, f *schema.Field) error {
		table := strings.Join(TableParts(stmt), ".")
		unlike, err := read(table, f.DBName)
		if err != nil {
			return errs.Wrap(err, "on %s: reading the collation of %s.%s", where, table, f.DBName)
		}
		if unlike == "" {
			return nil
		}
		return m.plugin.TagError(stmt.Schema.Name, model.Key, fmt.Sprintf(
			"collation:loose hashes %s as the Unicode algorithm's root collation compares it, but on %s column %s.%s %s: give the column a root collation (MariaDB/MySQL utf8mb4_unicode_ci, utf8mb4_uca1400_ai_ci, utf8mb4_0900_ai_ci; PostgreSQL ICU und-u-ks-level2)",
			f.Name, where, table, f.DBName, unlike))
	})
}

// looseICULocale reports whether an ICU locale, as a language tag
// (und-u-ks-level2) or in ICU's own form (und@colStrength=secondary),
// compares as the root collation at some strength, which LooseKey follows:
// the root's language (und, root, or English, which CLDR does not tailor,
// with a script or region), and settings that only tell more apart or
// order (strength, case level and first, backwards, normalization,
// reordering, variable top), not alternate=shifted (which ignores
// punctuation and spaces), numeric ordering ("01" equal to "1"), or
// another collation type (co-phonebk finds ü equal to ue).
func looseICULocale(locale string) bool {
	locale = strings.ToLower(strings.ReplaceAll(locale, "_", "-"))
	tag, keywords, icuForm := strings.Cut(locale, "@")
	settings := map[string]string{}
	if icuForm {
		for _, kv := range strings.Split(keywords, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
			settings[icuKeywords[k]] = v // an unknown keyword is ""
		}
	}
	parts := strings.Split(tag, "-")
	switch parts[0] {
	case "", "und", "root", "en":
	default:
		return false
	}
	i := 1
	for ; i < len(parts) && parts[i] != "u"; i++ {
		if p := parts[i]; len(p) != 4 && len(p) != 2 && len(p) != 3 { // a script or region; not a variant (en-US-POSIX), nor another extension
			return false
		}
		if len(parts[i]) == 3 && strings.Trim(parts[i], "0123456789") != "" {
			return false // a three-letter part is a variant or an extended language, not a region number
		}
	}
	if i < len(parts) { // the -u- extension: key value pairs
		key := ""
		for _, p := range parts[i+1:] {
			if len(p) == 2 {
				key = p
				settings[key] = "true"
			} else if key == "" || len(p) == 1 {
				return false // an attribute, or another extension (-t-, -x-)
			} else {
				settings[key] = p
			}
		}
	}
	for k, v := range settings {
		switch k {
		case "ks", "kc", "kf", "kb", "kk", "kr", "kv":
		case "ka":
			if v != "noignore" && v != "non-ignorable" {
				return false
			}
		case "kn":
			if v != "false" && v != "no" && v != "off" {
				return false
			}
		case "co":
			if v != "standard" {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// icuKeywords are ICU's collation keywords, lower-cased, by their language
// tag keys.
var icuKeywords = map[string]string{
	"colstrength": "ks", "colcaselevel": "kc", "colcasefirst": "kf", "colbackwards": "kb",
	"colnormalization": "kk", "colreorder": "kr", "maxvariable": "kv", "colalternate": "ka",
	"colnumeric": "kn", "collation": "co",
}

// TableParts is the table stmt acts on (a migration of its model changes),
// each part of its name unquoted (its schema or database first, if named):
// the model's, or that of Table(name). GORM keeps a qualified name
// ("app.users" of a TableName or a TablePrefix) in TableExpr.
func TableParts(stmt *gorm.Statement) []string {
	table := stmt.Table
	if stmt.TableExpr != nil {
		if words := strings.Fields(stmt.TableExpr.SQL); len(words) > 0 {
			table = words[0]
		}
	}
	parts := strings.Split(table, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(p, "`\"")
	}
	return parts
}

// inexactComparison says how the column compares otherwise than byte for
// byte, or "" when it does not.
func inexactComparison(db *gorm.DB, table, column string) (how string, notText bool, err error) {
	switch db.Dialector.Name() {
	case "mysql":
		var collation *string
		var dataType string
		err := db.Raw("SELECT COLLATION_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND COLUMN_NAME = ?", schemaOf(table), bareTable(table), column).Row().Scan(&collation, &dataType)
		if err != nil {
			return "", false, err
		}
		if collation == nil { // not text
			switch strings.ToLower(dataType) {
			case "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
				return "", false, nil
			case "binary":
				return "is binary(n), which pads a shorter value with zero bytes", true, nil
			}
			return "is " + dataType + ", which compares its values as that type, not as their text", true, nil
		}
		if strings.EqualFold(dataType, "char") { // stored padded, read back stripped, whatever the collation
			return "is char(n), which drops trailing spaces", false, nil
		}
		name := strings.ToLower(*collation)
		if strings.HasSuffix(name, "_nopad_bin") || strings.HasSuffix(name, "_0900_bin") || name == "binary" {
			return "", false, nil
		}
		if strings.HasSuffix(name, "_bin") {
			return "has collation " + *collation + ", which ignores trailing spaces", false, nil
		}
		return "has collation " + *collation + ", which ignores case or accents", false, nil
	case "postgres":
		var typ, kind string // the type under the column's domains, however many, and its kind
		var deterministic *bool
		var collatable bool
		err := db.Raw(`SELECT b.typname, b.typtype, c.collisdeterministic, a.attcollation <> 0
			FROM pg_attribute a JOIN pg_class t ON a.attrelid = t.oid
			LEFT JOIN pg_collation c ON a.attcollation = c.oid,
			LATERAL (WITH RECURSIVE domains(oid) AS (SELECT a.atttypid UNION ALL SELECT ty.typbasetype FROM pg_type ty JOIN domains ON ty.oid = domains.oid WHERE ty.typtype = 'd')
				SELECT ty.typname, ty.typtype FROM domains JOIN pg_type ty ON ty.oid = domains.oid WHERE ty.typtype <> 'd') b
			WHERE t.relname = ? AND a.attname = ? AND CASE WHEN ? = '' THEN pg_table_is_visible(t.oid) ELSE t.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = ?) END`, bareTable(table), column, schemaOf(table), schemaOf(table)).Row().Scan(&typ, &kind, &deterministic, &collatable)
		switch {
		case err != nil:
			return "", false, err
		case typ == "citext":
			return "is citext, which ignores case", false, nil
		case typ == "bpchar":
			return "is char(n), which ignores trailing spaces", false, nil
		case typ == "bytea": // the key's own bytes are the field's when it is a []byte
			return `is bytea, which reads a string bound to it as bytea's input (\x6162 and \141b are the bytes ab), not as its own bytes: give the field the type []byte`, true, nil
		case !collatable && kind != "e": // an enum's labels compare exactly
			return "is " + typ + ", which compares its values as that type, not as their text", true, nil
		case deterministic != nil && !*deterministic:
			return "has a nondeterministic collation", false, nil
		}
		return "", false, nil
	case "sqlite":
		var ddl string
		master := "sqlite_master"
		if schema := schemaOf(table); schema != "" {
			master = `"` + strings.ReplaceAll(schema, `"`, `""`) + `".sqlite_master`
		}
		if err := db.Raw("SELECT sql FROM "+master+" WHERE type = 'table' AND name = ?", bareTable(table)).Row().Scan(&ddl); err != nil {
			return "", false, err
		}
		var declared string
		if err := db.Raw("SELECT type FROM pragma_table_info(?, COALESCE(NULLIF(?, ''), 'main')) WHERE name = ? COLLATE NOCASE", bareTable(table), schemaOf(table), column).Row().Scan(&declared); err != nil {
			return "", false, err
		}
		if affinity := sqliteAffinity(declared); affinity != "TEXT" && affinity != "BLOB" {
			return fmt.Sprintf("is %s, of %s affinity, which stores a key that reads as a number as that number ('007' as 7)", declared, affinity), true, nil
		}
		if c := shardrouter.SQLiteCollation(ddl, column); !strings.EqualFold(c, "binary") {
			return "has collation " + c, false, nil
		}
	}
	return "", false, nil
}

// sqliteAffinity is the affinity SQLite gives a column of the declared
// type, by its rules (datatype3.html, 3.1): only TEXT and BLOB keep a
// string as it was given.
func sqliteAffinity(declared string) string {
	t := strings.ToUpper(declared)
	switch {
	case strings.Contains(t, "INT"):
		return "INTEGER"
	case strings.Contains(t, "CHAR"), strings.Contains(t, "CLOB"), strings.Contains(t, "TEXT"):
		return "TEXT"
	case strings.Contains(t, "BLOB"), strings.TrimSpace(t) == "":
		return "BLOB"
	case strings.Contains(t, "REAL"), strings.Contains(t, "FLOA"), strings.Contains(t, "DOUB"):
		return "REAL"
	}
	return "NUMERIC"
}

// schemaOf and bareTable are the schema (or database) a model's table name
// gives, "" when none, and the table's own name: TableName() may say
// main.accounts, which the catalogs list as accounts in main.
func schemaOf(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return strings.Trim(name[:i], "`\"")
	}
	return ""
}

func bareTable(name string) string {
	return strings.Trim(name[strings.LastIndexByte(name, '.')+1:], "`\"")
}
