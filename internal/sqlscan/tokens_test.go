package sqlscan

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// describe writes tokens as kind:text, space-separated.
func describe(tokens []Token) string {
	names := map[Kind]string{Word: "w", Quoted: "q", MaybeQuoted: "m", String: "s", Number: "n", Param: "p", Punct: "."}
	var parts []string
	for _, t := range tokens {
		parts = append(parts, fmt.Sprintf("%s:%s", names[t.Kind], t.Text))
	}
	return strings.Join(parts, " ")
}

func TestTokenize(t *testing.T) {
	cases := []struct{ dialect, sql, want string }{
		{"mysql", "a -- c\nb --c # d\ne", "w:a w:b .:- .:- w:c w:e"},
		{"mysql", "`a``b`.\"c\\\"d\" 'e''f\\'g'", "q:a`b .:. m:c\"d s:e'f'g"},
		{"mysql", "/*! x */ /* y */ 1abc 1e5 0x1F $v", "w:x w:1abc n:1e5 w:0x1F w:$v"},
		{"postgres", `"A""b" E'x\'y' 'p\q' $1 $$ z $$ $t$ $$ $t$ a$b`, `q:A"b s:x'y s:p\q p:$1 s: z  s: $$  w:a$b`},
		{"postgres", "/* a /* b */ c */ d # e", "w:d .:# w:e"},
		{"sqlite", "[a b] `c` \"d\" 'e\\' -- f", `q:a b q:c q:d s:e\`},
		// MySQL reads ".5" as a qualifier's dot straight after an unquoted word only.
		{"mysql", "db.5t SELECT .1FROM t `q`.2x \"m\".3y a/**/.4 b .5", "w:db .:. w:5t w:SELECT n:.1 w:FROM w:t q:q n:.2 w:x m:m n:.3 w:y w:a n:.4 w:b n:.5"},
		{"postgres", "a.5 .1FROM", "w:a n:.5 n:.1 w:FROM"},
		{"sqlite", "a.5 .1FROM", "w:a n:.5 n:.1 w:FROM"},
	}
	for _, c := range cases {
		tokens, _, err := tokenize(dialects[c.dialect], dialects[c.dialect].readings()[0], c.sql)
		if got := describe(tokens); err != nil || got != c.want {
			t.Errorf("%s: tokenize(%q) = %q, %v; want %q", c.dialect, c.sql, got, err, c.want)
		}
	}
	for _, c := range []struct{ dialect, sql string }{
		{"mysql", "'a"}, {"mysql", "/* a"}, {"mysql", "/*! a"}, {"mysql", "`a"},
		{"postgres", `"a`}, {"postgres", "$x$ a"}, {"postgres", "/* /* */"}, {"sqlite", "[a"},
	} {
		if _, _, err := tokenize(dialects[c.dialect], dialects[c.dialect].readings()[0], c.sql); !errors.Is(err, ErrSyntax) {
			t.Errorf("%s: tokenize(%q): %v, want ErrSyntax", c.dialect, c.sql, err)
		}
	}
}

func TestFirstWordIsReadPastCommentsAndBlanks(t *testing.T) {
	for _, c := range []struct{ dialect, text, want string }{
		{"mysql", "/* c */ join t ON 1", "JOIN"},
		{"mysql", "# c\nLEFT\nJOIN t", "LEFT"},
		{"postgres", "/* a /* nested */ one */ FROM t", "FROM"},
		{"sqlite", "-- c\n\tINNER JOIN t", "INNER"},
		{"sqlite", "(SELECT 1)", ""},
		{"postgres", "'never closed", ""},
	} {
		if got := FirstWord(c.dialect, c.text); got != c.want {
			t.Errorf("%s %q: %q, want %q", c.dialect, c.text, got, c.want)
		}
	}
}
