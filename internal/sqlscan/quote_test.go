package sqlscan

import "testing"

// TestQuote: a quoted name reads back, through the tokenizer, as one quoted
// identifier spelling the name, whatever quotes it holds.
func TestQuote(t *testing.T) {
	for _, c := range []struct{ dialect, name, want string }{
		{"mysql", "users", "`users`"},
		{"mysql", "a`b", "`a``b`"},
		{"postgres", "users", `"users"`},
		{"postgres", `a"b`, `"a""b"`},
		{"sqlite", `a"b`, `"a""b"`},
	} {
		got := Quote(c.dialect, c.name)
		if got != c.want {
			t.Errorf("Quote(%q, %q) = %s, want %s", c.dialect, c.name, got, c.want)
			continue
		}
		scan, err := Read(c.dialect, "SELECT * FROM "+got)
		if err != nil || len(scan.Tables) != 1 || scan.Tables[0].Name != c.name || !scan.Tables[0].Quoted {
			t.Errorf("SELECT * FROM %s reads as %+v, %v; want the table %q, quoted", got, scan.Tables, err, c.name)
		}
	}
}
