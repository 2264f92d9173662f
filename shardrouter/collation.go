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
		quoted := quotedAt(definition)
		for _, m := range sqliteCollate.FindAllStringSubmatchIndex(definition, -1) {
			if !quoted[m[0]] { // a default's text or a quoted name may say COLLATE too
				return definition[m[2]:m[3]]
			}
		}
		return "BINARY"
	}
	return "unknown (not a column of the table: of a joined table, or an expression)"
}


// quotedAt marks the bytes of a definition inside quotes.
func quotedAt(definition string) []bool {
	inside := make([]bool, len(definition))
	var quote byte
	for i := range len(definition) {
		c := definition[i]
		switch {
		case quote == 0 && (c == '\'' || c == '"' || c == '`'):
			quote = c
		case quote != 0 && c == quote: // a doubled quote closes and opens again
			quote = 0
		case quote != 0:
			inside[i] = true
		}
	}
	return inside
}
