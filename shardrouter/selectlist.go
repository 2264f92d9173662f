package shardrouter

import (
	"fmt"
	"regexp"
	"strings"

	"gorm.io/gorm/clause"
)

// A select list, a GROUP BY, a HAVING and an ORDER BY as text items: what
// the planner of merged groups reads of them.

// aggregates are the functions whose values merge exactly.
var aggregates = map[string]bool{"count": true, "sum": true, "min": true, "max": true, "avg": true}

// ident is a name as SQL text writes it: bare (letters beyond ASCII too), or
// quoted as GORM quotes it, holding any character, its quote doubled. Every
// reading of a name in the merge's text goes through it and unquote.
const ident = "(?:`(?:[^`]|``)+`|\"(?:[^\"]|\"\")+\"|[\\pL\\pN_$]+)"

// selectItemForm is one item of a select list: a column or an aggregate of
// one, with an optional alias.
var selectItemForm = regexp.MustCompile("(?is)^\\s*(?:(\\w+)\\s*\\(\\s*(distinct\\s*\\(?\\s*)?(\\*|(?:" + tableName + "\\s*\\.\\s*)?" + ident + ")\\s*\\)?\\s*\\)|((?:" + tableName + "\\s*\\.\\s*)?" + ident + "))(?:\\s+(?:as\\s+)?(" + ident + "))?\\s*$")

// tableName is a table as SQL text qualifies a column by it: its name,
// maybe after its schema's (app.users.id, a table of GORM's TablePrefix
// "app."); namesTable compares it with the model's.
const tableName = ident + "(?:\\s*\\.\\s*" + ident + ")?"

// namesTable reports whether written, a tableName, is table, a model's
// table (maybe with its schema): the same name, or written without a
// schema and table's name without its own, as PostgreSQL exposes
// app.users as users.
func namesTable(written, table string) bool {
	w := unquoteQualified(written)
	return strings.EqualFold(w, table) || !strings.Contains(w, ".") && strings.EqualFold(w, bareName(table))
}

// unquoteQualified is a tableName as the database reads it, its parts
// unquoted and joined by dots: "app"."users" is app.users.
func unquoteQualified(s string) string {
	var parts []string
	for rest := strings.TrimSpace(s); rest != ""; {
		loc := identAtStart.FindStringIndex(rest)
		if loc == nil {
			return s
		}
		parts = append(parts, unquote(rest[:loc[1]]))
		rest = strings.TrimSpace(rest[loc[1]:])
		if rest != "" {
			if rest[0] != '.' {
				return s
			}
			rest = strings.TrimSpace(rest[1:])
		}
	}
	return strings.Join(parts, ".")
}

// identAtStart is an ident at the start of a text.
var identAtStart = regexp.MustCompile("^" + ident)

// operand is an item as written in a select list, HAVING or ORDER BY.
type operand struct {
	fn, arg, alias string
	distinct       bool
	qualified      bool // the column was written with its table's name
}

// parseOperand reads an item; ok is false for anything but a column or an
// aggregate of one column (or *), in table of the model or none.
func parseOperand(text, table string) (operand, bool) {
	m := selectItemForm.FindStringSubmatch(text)
	if m == nil {
		return operand{}, false
	}
	o := operand{fn: strings.ToLower(m[1]), distinct: m[2] != "", alias: unquote(m[5])}
	column := m[3]
	if o.fn == "" {
		column = m[4]
	} else if !aggregates[o.fn] || o.distinct && (o.fn != "count" || column == "*") || strings.Count(m[0], "(") != strings.Count(m[0], ")") {
		return operand{}, false
	}
	if o.fn == "count" && !o.distinct && isIntegerLiteral(column) {
		column = "*" // count(1): every row, as count(*)
	}
	name, ok := itemColumn(column, table)
	if !ok {
		return operand{}, false
	}
	o.arg, o.qualified = name, isQualified(column)
	return o, true
}

// isQualified reports whether a column is written with its table's name.
func isQualified(column string) bool {
	m := columnForm.FindStringSubmatch(column)
	return m != nil && m[1] != ""
}

// quoteColumn quotes column of table as the query wrote it: with its
// table's name when qualified, which a join may need to tell it apart.
func quoteColumn(quote func(string) string, table, column string, qualified bool) string {
	if qualified {
		return quote(table + "." + column)
	}
	return quote(column)
}

// isIntegerLiteral reports whether text is an unsigned integer, which is
// never NULL.
func isIntegerLiteral(text string) bool {
	text = strings.TrimSpace(text)
	return text != "" && strings.Trim(text, "0123456789") == ""
}

// itemColumn reads `col`, `t.col`, `schema.t.col` or `*`, quoted or not, of table or none.
func itemColumn(text, table string) (string, bool) {
	m := columnForm.FindStringSubmatch(text)
	switch {
	case m == nil:
		return "", false
	case m[3] == "*":
		return "*", m[1] == ""
	case m[1] != "" && !namesTable(m[1], table):
		return "", false
	}
	return unquote(m[2]), true
}

// columnForm is `col`, `t.col`, `schema.t.col` or `*`, quoted or not.
var columnForm = regexp.MustCompile("^\\s*(?:(" + tableName + ")\\s*\\.\\s*)?(?:(" + ident + ")|(\\*))\\s*$")

// unquote is a name of ident as the database reads it.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '`' || s[0] == '"') && s[len(s)-1] == s[0] {
		q := s[:1]
		return strings.ReplaceAll(s[1:len(s)-1], q+q, q)
	}
	return s
}

// splitTopLevel splits a list at the commas outside parentheses and quotes.
func splitTopLevel(list string, sep byte) []string {
	var items []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(list); i++ {
		switch c := list[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == sep && depth == 0:
			items = append(items, list[start:i])
			start = i + 1
		}
	}
	return append(items, list[start:])
}

// selectItems is q's select list as GORM builds it (a select expression
// wins over Select's names) as text items, with the columns an expression
// names written in; distinct when the list is DISTINCT.
func selectItems(q Query) (items []string, distinct bool, why string) {
	switch sel := q.Clauses["SELECT"].Expression.(type) {
	case nil:
	case clause.Select:
		for _, c := range sel.Columns {
			var item []string
			if c.Raw {
				item = splitTopLevel(c.Name, ',')
			} else if c.Table != "" && c.Table != clause.CurrentTable {
				item = []string{c.Table + "." + c.Name} // another table's column, not the model's of its name
			} else {
				item = []string{quotedColumn(q, c.Name)} // as GORM writes a column: quoted
			}
			if c.Alias != "" { // GORM writes it after the column, the last item of a raw list
				item[len(item)-1] += " AS " + quotedColumn(q, c.Alias)
			}
			items = append(items, item...)
		}
		return items, sel.Distinct, ""
	case clause.Expr:
		text := sel.SQL
		for _, v := range sel.Vars {
			column, ok := v.(clause.Column)
			if !ok || !strings.Contains(text, "?") {
				return nil, false, fmt.Sprintf("the select expression %q with a value", sel.SQL)
			}
			text = strings.Replace(text, "?", q.Quote(column.Name), 1)
		}
		if rest, found := cutPrefixFold(strings.TrimSpace(text), "DISTINCT "); found {
			text, distinct = rest, true
		}
		return splitTopLevel(text, ','), distinct, ""
	default:
		return nil, false, "a select expression"
	}
	for _, s := range q.Selects {
		if f := q.Schema.LookUpField(s); f != nil && f.DBName != "" {
			items = append(items, quotedColumn(q, f.DBName)) // GORM writes a field's name as its quoted column
		} else {
			items = append(items, splitTopLevel(s, ',')...) // and anything else as written, which names its result
		}
	}
	return items, false, ""
}

func quotedColumn(q Query, column string) string {
	if q.Quote == nil {
		return column
	}
	return q.Quote(column)
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// SplitList splits a comma-separated SQL list at its top-level commas.
func SplitList(list string) []string { return splitTopLevel(list, ',') }
