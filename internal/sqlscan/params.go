package sqlscan

import (
	"strconv"
	"strings"
)

// NumberParameters turns the ? placeholders of query, which has no ? of its
// own in strings or identifiers, into PostgreSQL's $1, $2….
func NumberParameters(query string) string {
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
