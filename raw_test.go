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
