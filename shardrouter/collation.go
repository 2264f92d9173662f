package shardrouter

import (
	"regexp"
	"strings"
)

// sqliteCollate finds a COLLATE in a column's definition.
var sqliteCollate = regexp.MustCompile(`(?i)\bCOLLATE\s+["'\x60\[]?(\w+)`)

// SQLiteCollation is the collation of column in a CREATE TABLE statement:
// BINARY unless its definition names another; unknown, which the merge
// refuses to compare by, when the table has no such column. The definition is the whole
// of the column's, up to its top-level comma, whatever its type's
// parentheses, and only the column whose name is the definition's first word.
func SQLiteCollation(ddl, column string) string {
	open, end := strings.Index(ddl, "("), strings.LastIndex(ddl, ")")
	if open < 0 || end < open {
		return "BINARY"
	}
	for _, definition := range SplitList(ddl[open+1 : end]) {
		fields := strings.Fields(definition)
		if len(fields) == 0 || !strings.EqualFold(strings.Trim(fields[0], "`\"[]'"), column) {
			continue
		}
		if m := sqliteCollate.FindStringSubmatch(definition); m != nil {
			return m[1]
		}
		return "BINARY"
	}
	return "unknown (not a column of the table: of a joined table, or an expression)"
}
