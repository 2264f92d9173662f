package sqlscan

import "strings"

// Quote writes name as an identifier of dialect: in backquotes for "mysql",
// in double quotes for "postgres" and "sqlite", a quote inside it doubled,
// so that any name reads back as itself and never as SQL.
func Quote(dialect, name string) string {
	if dialect == "mysql" {
		return "`" + strings.ReplaceAll(name, "`", "``") + "`"
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteFolded quotes name, a plain table name the plugin once wrote
// unquoted, as the database read it so (Folded). A reserved word (a
// MapTable "order") then works, and a table made before keeps its name.
func QuoteFolded(dialect, name string) string { return Quote(dialect, Folded(dialect, name)) }

// Folded is a plain name as the database holds it written unquoted:
// PostgreSQL folds it to lower case.
func Folded(dialect, name string) string {
	if dialect == "postgres" {
		return strings.ToLower(name)
	}
	return name
}
