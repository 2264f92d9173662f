package shardid

import (
	"slices"
	"testing"
)

func TestSQLTables(t *testing.T) {
	cases := map[string][]string{
		"SELECT * FROM authors":                                   {"authors"},
		"select a.id from `authors` a join books b on a.id = b.x": {"authors", "books"},
		"SELECT * FROM public.authors, books AS b WHERE 1 = 1":    {"authors", "books"},
		"UPDATE authors SET name = 'books'":                       {"authors"},
		"INSERT INTO authors (id, name) VALUES (1, 'x')":          {"authors"},
		"DELETE FROM authors WHERE id IN (SELECT id FROM books)":  {"authors", "books"},
		"SELECT value AS books FROM settings":                     {"settings"},
		"UPDATE settings SET value = 'authors'":                   {"settings"},
		"SELECT 'FROM authors' AS text":                           nil,
		"DROP TABLE IF EXISTS authors":                            {"authors"},
	}
	for sql, want := range cases {
		if got := sqlTables(sql); !slices.Equal(got, want) {
			t.Errorf("sqlTables(%q) = %q, want %q", sql, got, want)
		}
	}
}

// FuzzSQLTables: any text is read without a panic, and every table found is
// a word of the text.
func FuzzSQLTables(f *testing.F) {
	for _, seed := range []string{"SELECT * FROM a, b", "UPDATE t SET x = 'FROM u'", "INSERT INTO", "FROM (", "from . , ) table if"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		words := sqlToken.FindAllString(sql, -1)
		for _, table := range sqlTables(sql) {
			if !slices.Contains(words, table) {
				t.Fatalf("%q: %q is not a word of the text", sql, table)
			}
		}
	})
}
