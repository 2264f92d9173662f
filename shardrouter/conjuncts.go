package shardrouter

import "strings"

// keyConjuncts returns, for a condition written as SQL text with nvars
// placeholders, the index among its Vars of the placeholder of each part
// AND-ed at its top level that is a condition on one column isColumn
// accepts (`col = ?`, `col IN ?`): `id IN ? AND qty > ?` names its rows by
// its first value. It returns nil for text it does not read whole: OR, XOR,
// || or && outside brackets (looser than AND in some dialect), BETWEEN and
// CASE outside brackets (whose AND is not a conjunction), a named
// parameter, a comment, an array,
// a string with a backslash, unbalanced quotes or brackets, or a count of
// placeholders other than nvars.
func keyConjuncts(sql string, nvars int, isColumn func(table, name string) bool) []int {
	var found []int
	start, first, vars, depth := 0, 0, 0, 0
	part := func(end int) {
		if vars-first == 1 && isSimpleCondition(sql[start:end], isColumn) {
			found = append(found, first)
		}
	}
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '\'' || c == '"' || c == '`':
			end := closingQuote(sql, i)
			if end < 0 {
				return nil
			}
			i = end
		case c == '(':
			depth++
		case c == ')':
			if depth--; depth < 0 {
				return nil
			}
		case c == '?':
			vars++
		case strings.IndexByte("@$#[]{}", c) >= 0 || strings.HasPrefix(sql[i:], "--") || strings.HasPrefix(sql[i:], "/*"):
			return nil // named parameters, comments, arrays
		case depth == 0 && (c == '|' || c == '&'):
			return nil // MySQL's || and && (OR and AND), and bit operators
		case depth == 0 && (wordAt(sql, i, "or") || wordAt(sql, i, "xor") || wordAt(sql, i, "between") || wordAt(sql, i, "case")):
			return nil // looser than AND, or an AND that is not a conjunction; inside brackets each is one operand
		case depth == 0 && wordAt(sql, i, "and"):
			part(i)
			start, first = i+len("and"), vars
			i += len("and") - 1
		}
	}
	if depth != 0 || vars != nvars {
		return nil
	}
	part(len(sql))
	return found
}

// mayConjoin is the cheap test before keyConjuncts: most condition texts
// are one comparison, without an AND (one spelled aNd is not read).
func mayConjoin(sql string) bool {
	return strings.Contains(sql, "AND") || strings.Contains(sql, "and") || strings.Contains(sql, "And")
}

// closingQuote returns the index of the quote that closes the one at open
// (a doubled quote is one inside), or -1: also for a backslash inside, which
// MySQL reads as an escape and PostgreSQL does not.
func closingQuote(sql string, open int) int {
	q := sql[open]
	for j := open + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			return -1
		case q:
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j
		}
	}
	return -1
}

// wordAt reports whether the keyword word (in any case) stands at i as a
// word of its own.
func wordAt(sql string, i int, word string) bool {
	end := i + len(word)
	return end <= len(sql) && strings.EqualFold(sql[i:end], word) &&
		(i == 0 || !isWordByte(sql[i-1])) && (end == len(sql) || !isWordByte(sql[end]))
}
