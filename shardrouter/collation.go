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
		if name, ok := leadingName(definition); !ok || !strings.EqualFold(name, column) {
			continue
		}
		hidden := hiddenAt(definition)
		for _, m := range sqliteCollate.FindAllStringSubmatchIndex(definition, -1) {
			if !hidden[m[0]] { // a default's text, a comment or an expression may say COLLATE too
				return definition[m[2]:m[3]]
			}
		}
		return "BINARY"
	}
	return NotAColumn
}

// NotAColumn is the collation of a name that is no column of the query's
// table (a joined table's column, an expression), which the merge refuses
// to compare by: it does not know how the database compares its text.
const NotAColumn = "unknown (not a column of the table: of a joined table, or an expression)"

// leadingName is the name a column's definition starts with, read as
// SQLite reads it: quoted in "", “ or [] (a name with spaces), a quote
// inside doubled, or a bare word.
func leadingName(definition string) (string, bool) {
	d := strings.TrimLeft(definition, " \t\r\n")
	if d == "" {
		return "", false
	}
	closing := map[byte]byte{'"': '"', '`': '`', '[': ']', '\'': '\''}[d[0]]
	if closing == 0 {
		end := strings.IndexAny(d, " \t\r\n")
		if end < 0 {
			end = len(d)
		}
		return d[:end], true
	}
	var name strings.Builder
	for i := 1; i < len(d); i++ {
		switch {
		case d[i] != closing:
			name.WriteByte(d[i])
		case closing != ']' && i+1 < len(d) && d[i+1] == closing: // doubled: the quote itself
			name.WriteByte(closing)
			i++
		default:
			return name.String(), true
		}
	}
	return "", false
}

// hiddenAt marks the bytes of a column's definition that are not its own
// words: quoted text, comments, and what parentheses hold (a type's size, a
// CHECK's or a generated column's expression).
func hiddenAt(definition string) []bool {
	hidden := make([]bool, len(definition))
	var quote byte
	depth := 0
	for i := 0; i < len(definition); i++ {
		c, rest := definition[i], definition[i:]
		switch {
		case quote != 0:
			hidden[i] = true
			if c == quote { // a doubled quote closes and opens again: hidden either way
				quote = 0
			}
			continue
		case strings.HasPrefix(rest, "--"):
			end := strings.IndexByte(rest, '\n')
			if end < 0 {
				end = len(rest)
			}
			for j := range end {
				hidden[i+j] = true
			}
			i += end - 1
			continue
		case strings.HasPrefix(rest, "/*"):
			end := len(rest) // unclosed: to the end
			if k := strings.Index(rest[2:], "*/"); k >= 0 {
				end = k + 4
			}
			for j := range end {
				hidden[i+j] = true
			}
			i += end - 1
			continue
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '[':
			quote = ']'
		case c == '(':
			depth++
		case c == ')':
			depth--
		}
		hidden[i] = quote != 0 || depth > 0
	}
	return hidden
}
