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
