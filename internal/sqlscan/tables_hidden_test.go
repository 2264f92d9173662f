package sqlscan

import "testing"

// MariaDB runs /*M! ... */; MySQL reads it as a comment, after which a quote
// read as code in it hides nothing: which server reads the text is unknown.
func TestAMariaDBExecutableCommentIsUnsure(t *testing.T) {
	readsTable(t, "mysql", "SELECT 1 /*M! ' */ FROM authors -- ' */", "authors")
	readsTable(t, "mysql", "SELECT * FROM settings /*M! , authors */", "authors")
}

// MySQL reads "..." as a string without ANSI_QUOTES, and EXECUTE IMMEDIATE
// runs it: its words count as a '...' string's do.
func TestWordsOfADoubleQuotedMySQLStringCount(t *testing.T) {
	readsTable(t, "mysql", `EXECUTE IMMEDIATE "DELETE FROM authors"`, "authors")
	readsTable(t, "mysql", `PREPARE s FROM "DELETE FROM authors"`, "authors")
}

// MySQL's \n, \t, \r, \b, \0 and \Z are characters that separate words; \e
// is e.
func TestMySQLBackslashEscapesSeparateWords(t *testing.T) {
	for _, sql := range []string{
		`EXECUTE IMMEDIATE 'DELETE FROM\nauthors'`,
		`EXECUTE IMMEDIATE 'DELETE FROM\tauthors'`,
		`EXECUTE IMMEDIATE "DELETE FROM\Zauthors"`,
		`EXECUTE IMMEDIATE 'DELETE FROM \authors'`,
		`EXECUTE IMMEDIATE 'DELETE FROM\0authors' /*!50000 */`, // not split into tokens: the raw text's words
	} {
		readsTable(t, "mysql", sql, "authors")
	}
}

// The servers read keywords in ASCII: "aſ" (U+017F, which Unicode folds to
// s) is an alias, not AS, and the FROM, JOIN or USING after it reads a table.
func TestAKeywordSpelledWithANonASCIILetterIsAName(t *testing.T) {
	for _, dialect := range []string{"mysql", "postgres", "sqlite"} {
		readsTable(t, dialect, "SELECT name aſ FROM authors", "authors")
		readsTable(t, dialect, "SELECT 1 FROM settings aſ JOIN authors ON true", "authors")
	}
	readsTable(t, "mysql", "UPDATE settings aſ JOIN authors ON true SET authors.name = 'x'", "authors")
	readsTable(t, "postgres", "DELETE FROM settings aſ USING authors WHERE true", "authors")
	readsTable(t, "postgres", "SELECT 1 FROM settings \u212Aey JOIN authors ON true", "authors")
}

// PostgreSQL's table_to_xml, query_to_xml (and their kin) and ts_stat read
// the table, or run the query, a string names.
func TestPostgresFunctionsReadingATableNamedInAStringAreUnsure(t *testing.T) {
	readsTable(t, "postgres", "SELECT table_to_xml('authors', true, false, '')", "authors")
	readsTable(t, "postgres", "SELECT pg_catalog.query_to_xml('SELECT * FROM authors', true, false, '')", "authors")
	readsTable(t, "postgres", "SELECT * FROM ts_stat('SELECT to_tsvector(name) FROM authors')", "authors")
	readsCertainly(t, "postgres", "SELECT xmlelement(name x, 'authors')")
}

// SQLite's virtual table modules may read a table their arguments name
// (fts5's content='t'), as a view reads its query's.
func TestASQLiteVirtualTableIsUnsure(t *testing.T) {
	readsTable(t, "sqlite", "CREATE VIRTUAL TABLE f USING fts5(name, content='authors', content_rowid='id')", "authors")
}
