package sqlscan

// Every SQL here runs on the real server of its dialect (MariaDB 10.11,
// PostgreSQL 15, SQLite) and reads the table the test names: Read reports
// it, or returns ErrUnsure with it among Words.

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func readsTable(t *testing.T, dialect, sql, table string) {
	t.Helper()
	scan, err := Read(dialect, sql)
	if errors.Is(err, ErrUnsure) {
		if !slices.ContainsFunc(scan.Words, func(w string) bool { return strings.EqualFold(w, table) }) {
			t.Errorf("%s: Read(%q): unsure but Words %q lack %q", dialect, sql, scan.Words, table)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: Read(%q): %v", dialect, sql, err)
		return
	}
	if !slices.ContainsFunc(scan.Tables, func(tb Table) bool { return strings.EqualFold(tb.Name, table) }) {
		t.Errorf("%s: Read(%q) = %q, misses %q", dialect, sql, format(scan.Tables), table)
	}
}

func readsCertainly(t *testing.T, dialect, sql string) {
	t.Helper()
	if scan, err := Read(dialect, sql); err != nil {
		t.Errorf("%s: Read(%q) = %q, %v; want it read (valid, common SQL)", dialect, sql, format(scan.Tables), err)
	}
}

// MySQL's # and -- comments and SQLite's -- comment run to \n only; a
// lone \r does not end them.
func TestALineCommentEndsWhereTheServerEndsIt(t *testing.T) {
	readsTable(t, "mysql", "SELECT * FROM settings # x\r' \n, books -- '", "books")
	readsTable(t, "mysql", "SELECT * FROM settings -- x\r' \n, books -- '", "books")
	readsTable(t, "sqlite", "SELECT * FROM settings -- x\r' \n, books -- '", "books")
}

// MariaDB takes "--" before any control character (DEL, 0x7f) as a comment.
func TestDashDashBeforeDELIsAMySQLComment(t *testing.T) {
	readsTable(t, "mysql", "SELECT * FROM settings --\x7f ' \n, books -- '", "books")
}

// an executable comment whose version the server lacks is a plain
// comment to it; read as code, a quote in it hides what follows.
func TestAVersionedExecutableCommentIsUnsure(t *testing.T) {
	readsTable(t, "mysql", "SELECT * FROM settings /*M!999999 ' */ , books -- ' */", "books")
	readsTable(t, "mysql", "SELECT * FROM settings /*!99999 ' */ , books -- ' */", "books")
}

// MariaDB runs a compound statement at top level.
func TestAMariaDBCompoundStatementIsUnsure(t *testing.T) {
	readsTable(t, "mysql", "BEGIN NOT ATOMIC SELECT id FROM books; END", "books")
	readsTable(t, "mysql", "BEGIN NOT ATOMIC DELETE FROM books; END", "books")
}

// a keyword-named column after a dot (MySQL, PostgreSQL) or a
// PostgreSQL output name after AS is taken for FROM/JOIN/INTO/TABLE.
func TestAKeywordNamedColumnIsNoClause(t *testing.T) {
	for _, d := range []string{"mysql", "postgres"} {
		readsTable(t, d, "SELECT t.from FROM trips t", "trips")
		readsTable(t, d, "SELECT t.id, t.join FROM trips AS t", "trips")
		readsTable(t, d, "SELECT t.into FROM trips t", "trips")
		readsTable(t, d, "SELECT t.to, t.from FROM trips t WHERE t.id = 1", "trips")
		readsTable(t, d, "SELECT t.table FROM trips t", "trips")
	}
	readsTable(t, "postgres", "SELECT 1 AS from FROM trips", "trips")
	readsTable(t, "postgres", "SELECT id AS join FROM trips", "trips")
	readsTable(t, "postgres", "SELECT id AS table FROM trips", "trips")
	readsTable(t, "postgres", "SELECT id AS references FROM trips", "trips")
	readsTable(t, "postgres", "SELECT id AS straight_join FROM trips", "trips")
}

// a clause word in a join condition (a column b.order, b.offset, b.limit;
// SQLite's bare offset) ends the FROM list, so a later ", table" is missed.
func TestAClauseWordInAJoinConditionEndsNoTableList(t *testing.T) {
	for _, d := range []string{"mysql", "postgres"} {
		readsTable(t, d, "SELECT * FROM t JOIN books b ON b.order = t.id, authors", "authors")
		readsTable(t, d, "SELECT * FROM t JOIN books b ON b.offset = t.id, authors", "authors")
		readsTable(t, d, "SELECT * FROM t JOIN books b ON t.id = b.limit, authors", "authors")
	}
	readsTable(t, "mysql", "UPDATE t JOIN books b ON b.order = t.id, authors SET t.v = t.v", "authors")
	readsTable(t, "sqlite", "SELECT * FROM t JOIN books b ON b.offset = t.id, authors", "authors")
	readsTable(t, "sqlite", "SELECT * FROM t JOIN books b ON b.id = t.id AND offset = 1, authors", "authors")
}

// MySQL's index hint FOR ORDER BY / FOR GROUP BY ends the FROM list.
func TestIndexHintsForOrderAndGroupEndNoTableList(t *testing.T) {
	readsTable(t, "mysql", "SELECT * FROM t1 USE INDEX FOR ORDER BY (ix), books", "books")
	readsTable(t, "mysql", "SELECT * FROM t1 IGNORE INDEX FOR GROUP BY (ix), books", "books")
}

// a parenthesized comma join whose first item is a derived table is
// read as a parenthesized statement, its comma list unread.
func TestAParenthesizedJoinStartingWithASubquery(t *testing.T) {
	for _, d := range []string{"mysql", "sqlite"} {
		readsTable(t, d, "SELECT * FROM ((SELECT 1 AS a) s, books)", "books")
		readsTable(t, d, "SELECT * FROM ((SELECT 1 AS a) AS s, books)", "books")
	}
	readsTable(t, "sqlite", "SELECT * FROM ((VALUES (1)) v, books)", "books")
}

// MySQL's INSERT ... VALUE (singular) is taken for an alias and its row
// for column aliases, subqueries included.
func TestInsertValueSingular(t *testing.T) {
	readsTable(t, "mysql", "INSERT INTO t VALUE ((SELECT max(id) FROM books), 1, 'x')", "books")
	readsTable(t, "mysql", "INSERT t VALUE ((SELECT max(id) FROM books), 2, 'y')", "books")
	readsTable(t, "mysql", "REPLACE INTO t VALUE ((SELECT max(id) FROM books), 2, 'y')", "books")
}

// MariaDB's FOR SYSTEM_TIME after a table ends the FROM list.
func TestForSystemTimeEndsNoTableList(t *testing.T) {
	readsTable(t, "mysql", "SELECT * FROM vt FOR SYSTEM_TIME ALL, books", "books")
}

// Words of E” and U&” strings keep escapes undecoded, so a DO body
// that spells a table with them names none.
func TestEscapesInStringsSpellTheirWords(t *testing.T) {
	readsTable(t, "postgres", `DO E'BEGIN PERFORM * FROM \142ooks; END'`, "books")
	readsTable(t, "postgres", `DO E'BEGIN PERFORM * FROM \x62ooks; END'`, "books")
	readsTable(t, "postgres", `DO U&'BEGIN PERFORM * FROM \0062ooks; END'`, "books")
}

// PostgreSQL truncates identifiers to 63 bytes (NAMEDATALEN-1).
func TestPostgreSQLTruncatesIdentifiers(t *testing.T) {
	name := strings.Repeat("b", 57) + "_books" // 63 bytes: the sharded table
	readsTable(t, "postgres", "SELECT * FROM "+name+"_extra", name)
	readsTable(t, "postgres", `SELECT * FROM "`+name+`zz"`, name)
}

// Over-refusals of valid, common SQL (less serious).
func TestAFunctionNamedLikeAStatementIsNoSubquery(t *testing.T) {
	for _, d := range []string{"mysql", "postgres", "sqlite"} {
		readsCertainly(t, d, "SELECT * FROM t WHERE (REPLACE(v, 'a', 'b') = 'x')")
	}
}

// A clause word (OFFSET, LOCK, DO, SET, VALUES, QUALIFY, MINUS, WINDOW...)
// that the dialect allows as a bare column in a join condition is a
// column, as what follows it shows: ", books" after it is read.
func TestAClauseWordAsABareColumnEndsNoTableList(t *testing.T) {
	readsTable(t, "sqlite", "SELECT * FROM t JOIN b ON b.id = t.id AND offset IS NULL, books", "books")
	readsTable(t, "sqlite", "SELECT * FROM t JOIN b ON b.id = t.id AND lock IS NULL, books", "books")
	readsTable(t, "sqlite", "SELECT * FROM t JOIN b ON lock + 0 = 0 OR 1, books", "books")
	readsTable(t, "sqlite", "SELECT * FROM t JOIN b ON b.id = t.id AND offset IN (1) OR 1, books", "books")
	readsTable(t, "mysql", "SELECT count(*) FROM t JOIN b ON b.id = t.id AND do IS NULL, books", "books")
	readsTable(t, "mysql", "SELECT count(*) FROM t JOIN b ON b.id = t.id AND window IS NULL, books", "books")
	readsTable(t, "mysql", "SELECT count(*) FROM t JOIN b ON b.id = t.id AND qualify IS NULL, books", "books")
	readsTable(t, "mysql", "UPDATE t JOIN b ON b.id = t.id AND do IS NULL, books SET books.v = books.v + 1", "books") // writes books
	readsTable(t, "postgres", "SELECT * FROM b JOIN t ON set IS NULL, books", "books")
	readsTable(t, "postgres", "SELECT * FROM t JOIN b ON b.id = t.id AND lock IS NULL, books", "books")
	readsTable(t, "postgres", "SELECT * FROM b JOIN t ON procedure IS NULL AND minus IS NULL AND qualify IS NULL, books", "books")
}

// The same word as a bare alias not followed by a comma (ON, USING, a
// column list) is an alias.
func TestAClauseWordAsAnAliasEndsNoTableList(t *testing.T) {
	for _, alias := range []string{"lock", "offset", "for", "window", "do"} {
		readsTable(t, "sqlite", "SELECT * FROM t JOIN b "+alias+" ON 1, books", "books")
	}
	readsTable(t, "sqlite", "SELECT * FROM t JOIN b qualify USING (id), books", "books")
	readsTable(t, "mysql", "SELECT count(*) FROM t JOIN b do ON 1, books", "books")
	readsTable(t, "postgres", "SELECT count(*) FROM t JOIN b lock ON true, books", "books")
	readsTable(t, "postgres", "SELECT count(*) FROM t JOIN b minus ON true, books", "books")
	readsTable(t, "postgres", "SELECT count(*) FROM (SELECT 1) lock(a), books", "books")
	readsTable(t, "postgres", "SELECT count(*) FROM (SELECT 1) set(a), books", "books")
}

// SQLite's Tcl-style variable $name(...) (also @ : #) runs to the first
// ")" or blank and swallows quotes, brackets and comment starts; the
// reader reads it as one token, as SQLite does.
// (Runs with sql.Named("a(')", 1) etc. bound.)
func TestSQLiteTclVariablesAreOneToken(t *testing.T) {
	for _, sql := range []string{
		"SELECT $a('), * FROM books WHERE 1 -- ')",
		"SELECT @a('), * FROM books WHERE 1 -- ')",
		"SELECT :a('), * FROM books WHERE 1 -- ')",
		"SELECT #a('), * FROM books WHERE 1 -- ')",
		"SELECT $a::b('), * FROM books WHERE 1 -- ')",
		`SELECT $a("), * FROM books WHERE 1 -- ")`,
		"SELECT $a([), * FROM books WHERE 1 -- ])",
		"SELECT $a(`), * FROM books WHERE 1 -- `)",
		"SELECT $x(/*), * FROM books -- */)",
	} {
		readsTable(t, "sqlite", sql, "books")
	}
}

// A table named key, aliased for, is no MySQL USE KEY FOR JOIN in SQLite.
func TestSQLiteHasNoIndexHintForJoin(t *testing.T) {
	readsTable(t, "sqlite", "SELECT * FROM key for JOIN books ON 1", "books")
}

// Words of SQL read unsure are spelled as PostgreSQL spells them: 63-byte
// truncation, U&"" escapes inside a DO body, backslash escapes in a plain
// string under standard_conforming_strings = off.
func TestPostgresWordsAreSpelledAsTheServerSpellsThem(t *testing.T) {
	name := strings.Repeat("b", 57) + "_books" // 63 bytes
	readsTable(t, "postgres", "EXPLAIN ANALYZE SELECT * FROM "+name+"_extra", name)
	readsTable(t, "postgres", "DO $$ BEGIN PERFORM * FROM "+name+"_extra; END $$", name)
	readsTable(t, "postgres", `DO $$ BEGIN RAISE NOTICE '%', (SELECT count(*) FROM U&"\0062ooks"); END $$`, "books")
	readsTable(t, "postgres", `DO 'BEGIN RAISE NOTICE ''%'', (SELECT count(*) FROM \x62ooks); END'`, "books") // standard_conforming_strings = off
}
