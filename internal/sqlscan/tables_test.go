package sqlscan

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// unsure is the expectation of SQL that Read must refuse to vouch for.
const unsure = "?"

// common cases read the same in every dialect: tables as qualifier.name,
// space-separated; "" for none; unsure for an ErrUnsure.
var common = map[string]string{
	"SELECT 1":              "",
	"SELECT * FROM authors": "authors",
	"select a.id from authors a join books b on a.id = b.x":                                     "authors books",
	"SELECT * FROM public.authors, books AS b WHERE 1 = 1":                                      "public.authors books",
	"SELECT * FROM a LEFT OUTER JOIN b USING (id) CROSS JOIN c, d NATURAL JOIN e":               "a b c d e",
	"SELECT * FROM a JOIN (b JOIN c ON b.x = c.x) ON a.x = b.x":                                 "a b c",
	"SELECT * FROM a WHERE id IN (SELECT id FROM b WHERE EXISTS (SELECT 1 FROM c))":             "a b c",
	"SELECT (SELECT max(x) FROM b) AS m FROM a":                                                 "b a",
	"SELECT * FROM (SELECT * FROM a) AS s JOIN b ON s.id = b.id":                                "a b",
	"SELECT x FROM a UNION SELECT x FROM b ORDER BY 1":                                          "a b",
	"(SELECT x FROM a) UNION ALL (SELECT x FROM b)":                                             "a b",
	"SELECT value AS books FROM settings":                                                       "settings",
	"SELECT count(*) FROM settings qualify, books":                                              "settings books", // a keyword before a comma is an alias
	"SELECT count(*) FROM (SELECT 1 AS one) qualify, books":                                     "books",
	"SELECT 'FROM authors' AS text":                                                             "",
	"SELECT * FROM settings /* FROM authors */ WHERE 1 = 1":                                     "settings",
	"SELECT * FROM settings -- FROM authors\nWHERE 1 = 1":                                       "settings",
	"SELECT * /* hidden */ FROM /* x */ authors":                                                "authors",
	"SELECT EXTRACT(YEAR FROM created) FROM authors":                                            "authors",
	"SELECT a IS DISTINCT FROM b FROM t":                                                        "t",
	"SELECT count(*) FROM a GROUP BY x, y HAVING count(*) > 1 ORDER BY x, y LIMIT 5":            "a",
	"WITH recent AS (SELECT * FROM authors) SELECT * FROM recent":                               "authors",
	"WITH r AS (SELECT 1), s AS (SELECT * FROM r JOIN books ON 1=1) SELECT * FROM s":            "books",
	"WITH authors AS (SELECT * FROM authors) SELECT * FROM authors":                             "authors",
	"WITH x AS (SELECT 1) SELECT * FROM (WITH y AS (SELECT 2) SELECT * FROM y) z, y":            "y",
	"WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM t WHERE n < 5) SELECT * FROM t": "",
	// What a statement writes is a table, even when a CTE has its name.
	"WITH users AS (SELECT 1) UPDATE users SET name = 'x'":                                     "users",
	"WITH users AS (SELECT 1) INSERT INTO users (id) VALUES (1)":                               "users",
	"WITH users AS (SELECT 1) REPLACE INTO users (id) VALUES (1)":                              "users",
	"WITH users AS (SELECT 1) DELETE FROM users":                                               "users",
	"WITH u AS (SELECT id FROM authors) UPDATE books SET n = 1 WHERE id IN (SELECT id FROM u)": "authors books",
	"INSERT INTO authors (id, name) VALUES (1, 'x')":                                           "authors",
	"INSERT INTO archive SELECT * FROM authors WHERE id = 1":                                   "archive authors",
	"INSERT INTO a (x) SELECT x FROM b UNION SELECT x FROM c":                                  "a b c",
	"UPDATE authors SET name = 'books'":                                                        "authors",
	"UPDATE settings SET value = (SELECT max(name) FROM authors)":                              "settings authors",
	"DELETE FROM authors WHERE id IN (SELECT id FROM books)":                                   "authors books",
	"DROP TABLE IF EXISTS authors":                                                             "authors",
	"DROP TABLE a, b":                                                                          "a b",
	"TRUNCATE authors":                                                                         "authors",
	"TRUNCATE TABLE authors":                                                                   "authors",
	"CREATE INDEX idx_name ON authors (name)":                                                  "authors",
	"CREATE UNIQUE INDEX IF NOT EXISTS idx ON authors (name) WHERE name IS NOT NULL":           "authors",
	"ALTER TABLE authors ADD COLUMN age int":                                                   "authors",
	"ALTER TABLE books ADD CONSTRAINT fk FOREIGN KEY (author_id) REFERENCES authors (id)":      "books authors",
	"ALTER TABLE a RENAME TO b":                                                                "a b",
	"ALTER TABLE a RENAME COLUMN x TO y":                                                       "a",
	"CREATE TABLE books (id int, author_id int REFERENCES authors(id))":                        "books authors",
	"CREATE TABLE copy AS SELECT * FROM authors":                                               "copy authors",
	"CREATE TABLE IF NOT EXISTS t (id bigint, CHECK (id > 0))":                                 "t",
	"CREATE VIEW v AS SELECT * FROM authors":                                                   "v authors",
	"DROP INDEX idx_name":                                                                      "",
	"SAVEPOINT sp1":                                                                            "",
	"ROLLBACK TO SAVEPOINT sp1":                                                                "",
	"RELEASE SAVEPOINT sp1":                                                                    "",
	"SELECT 1; SELECT * FROM authors;":                                                         "authors",
	"SELECT * FROM settings; DELETE FROM authors":                                              "settings authors",
	";;": "",
	"SELECT * FROM a WHERE x = ? AND y IN (?, ?)":                                              "a",
	"SELECT * FROM a FOR UPDATE":                                                               "a",
	"SELECT * FROM information_schema.tables WHERE table_schema = ?":                           "information_schema.tables",
	"SELECT count(*) FROM information_schema.columns WHERE table_name = ? AND column_name = ?": "information_schema.columns",
	"SHOW TABLES":                       unsure,
	"EXPLAIN SELECT * FROM authors":     unsure,
	"SELECT * FROM a WHERE (x":          unsure,
	"SELECT * FROM a WHERE x)":          unsure,
	"SELECT 'unterminated":              unsure,
	"SELECT /* unterminated":            unsure,
	"GRANT SELECT ON authors TO bob":    unsure,
	"SELECT * FROM ?":                   unsure,
	"MERGE INTO a USING b ON 1=1":       unsure,
	"DELETE a":                          unsure,
	"CREATE FUNCTION f() RETURNS int":   unsure,
	"SELECT * FROM a, ":                 unsure,
	"WITH x SELECT 1":                   unsure,
	"SELECT * FROM t WHERE a = 1 ) x (": unsure,
}

// byDialect cases read as only one dialect reads them.
var byDialect = map[string]map[string]string{
	"mysql": {
		"DELETE FROM t USING (t JOIN books ON t.id = books.id)":                         "t books",
		"DELETE t FROM t JOIN books USING (id)":                                         "t books",
		"SELECT count(*) FROM (SELECT 1 AS duplicate) c JOIN t s ON duplicate, books a": "t books",
		"SELECT * FROM settings # FROM authors\n":                                       "settings",
		"SELECT * FROM settings WHERE 1 = 1 --FROM authors":                             "settings authors", // no comment without a space
		"SELECT * FROM settings WHERE x = 1 -- FROM authors":                            "settings",
		"SELECT * FROM `app`.`authors`":                                                 "app.authors",
		"SELECT * FROM `we``ird`":                                                       "we`ird",
		"SELECT * FROM app.authors a":                                                   "app.authors",
		`SELECT * FROM "authors"`:                                                       "authors", // ANSI_QUOTES
		`SELECT * FROM settings WHERE v = 'it\'s FROM authors'`:                         "settings",
		`SELECT * FROM settings WHERE v = 'a\\' OR 1 = 1`:                               "settings",
		`SELECT '\' FROM authors WHERE '\'`:                                             "authors", // read as NO_BACKSLASH_ESCAPES
		`SELECT "\" FROM authors WHERE "\"`:                                             "authors", // read under ANSI_QUOTES
		"SELECT /*! * FROM authors */":                                                  "authors",
		"SELECT 1 /*! FROM authors */":                                                  "authors",
		"SELECT 1 /*!50001 FROM authors */":                                             unsure, // a server of another version reads a comment
		"SELECT 1 /*M!100100 FROM authors */":                                           unsure,
		"SELECT 1 /*+ BKA(authors) */ FROM settings":                                    "settings",
		"UPDATE a, b SET a.x = b.y WHERE a.id = b.id":                                   "a b",
		"UPDATE a JOIN b ON a.id = b.id SET a.x = 1, a.y = 2":                           "a b",
		"UPDATE LOW_PRIORITY IGNORE a SET x = 1":                                        "a",
		"DELETE t1 FROM t1 JOIN t2 ON t1.id = t2.id":                                    "t1 t2",
		"DELETE t1.*, t2 FROM t1, t2, t3 WHERE 1":                                       "t1 t2 t3",
		"DELETE FROM t1, t2 USING t1 JOIN t3 ON t1.id = t3.id":                          "t1 t2 t3",
		"INSERT INTO a (x) VALUES (1) ON DUPLICATE KEY UPDATE x = VALUES(x), y = 2":     "a",
		"INSERT a SET x = 1":                                                            "a",
		"REPLACE INTO authors VALUES (1)":                                               "authors",
		"CREATE TABLE x LIKE authors":                                                   "x authors",
		"CREATE TABLE x SELECT * FROM authors":                                          "x authors",
		"CREATE INDEX i USING BTREE ON authors (name)":                                  "authors",
		"DROP INDEX i ON authors":                                                       "authors",
		"LOCK TABLES authors READ, books AS b WRITE":                                    "authors books",
		"UNLOCK TABLES": "",
		"SELECT * FROM t1 USE INDEX (i1, i2), t2 FORCE INDEX FOR JOIN (i3), t3": "t1 t2 t3",
		"SELECT x INTO @v FROM authors":                                         "authors",
		"SELECT 1 FROM DUAL":                                                    "DUAL",
		"SET FOREIGN_KEY_CHECKS = 0;":                                           unsure,
		"SELECT * FROM authors /*! WHERE 1":                                     unsure,
		"SELECT * FROM 1a":                                                      "1a",
		"SELECT * FROM db.1a":                                                   "db.1a",
		"SELECT .1FROM authors":                                                 "authors", // .1 then FROM, as MySQL reads it
		"SELECT x .1FROM authors":                                               "authors",
		"SELECT `x`.1FROM authors":                                              "authors",
		"SELECT 1/**/.1FROM authors":                                            "authors",
		"ALTER TABLE a EXCHANGE PARTITION p WITH TABLE b":                       "a b",
		"SELECT 1 FROM settings WHERE a = 1--1":                                 "settings",
		"SELECT 'FROM authors' 'more' FROM settings":                            "settings",
	},
	"postgres": {
		`SELECT * FROM U&"auth\006frs"`:                              "authors",
		`SELECT * FROM U&"\+000061uthors"`:                           "authors",
		`SELECT * FROM U&"a!0075thors" UESCAPE '!'`:                  "authors",
		`SELECT * FROM U&"a!0075thors" /* c */ UESCAPE '!'`:          "authors",
		`SELECT * FROM U&"a!0075thors" UESCAPE 'a'`:                  unsure,   // PostgreSQL refuses a hex digit
		"WITH books\u212a AS (SELECT 1 AS id) SELECT id FROM booksk": "booksk", // the Kelvin sign is not folded
		"INSERT INTO t (id) WITH books AS (SELECT 1 AS id) SELECT id FROM books ON CONFLICT (id) DO UPDATE SET v = (SELECT max(v) FROM books)": "t books",
		"DELETE FROM t USING (books a JOIN t b ON a.id = b.id) WHERE t.id = a.id":                                                              "t books",
		"SELECT count(*) FROM (SELECT true AS conflict) c JOIN t s ON conflict, books a":                                                       "t books",
		`SELECT * FROM U&"auth\0G6frs"`:                                                              unsure,
		`SELECT * FROM "public"."authors"`:                                                           "public.authors",
		`SELECT * FROM "Authors"`:                                                                    "Authors",
		"SELECT * FROM Public.Authors":                                                               "public.authors",
		"SELECT * FROM db.public.authors":                                                            "db.public.authors",
		`SELECT * FROM "we""ird"`:                                                                    `we"ird`,
		"SELECT $$ FROM authors $$ FROM settings":                                                    "settings",
		"SELECT $tag$ it's $$ FROM authors $tag$ FROM settings":                                      "settings",
		"SELECT E'it\\'s FROM authors' FROM settings":                                                "settings",
		`SELECT 'a\' FROM authors WHERE '\'`:                                                         "authors", // standard_conforming_strings off
		"SELECT * FROM settings WHERE v = $1 AND w = $2":                                             "settings",
		"SELECT /* a /* nested */ FROM authors */ 1 FROM settings":                                   "settings",
		"SELECT /* a /* nested */ 1":                                                                 unsure,
		"SELECT * FROM ONLY authors":                                                                 "authors",
		"SELECT * FROM authors * WHERE 1 = 1":                                                        "authors",
		"SELECT * FROM generate_series(1, 10) AS g(n)":                                               "",
		"SELECT * FROM a, LATERAL (SELECT * FROM b WHERE b.x = a.x) s":                               "a b",
		"SELECT * FROM unnest(ARRAY[1,2]) WITH ORDINALITY AS u(x, n)":                                "",
		"UPDATE a SET x = b.x FROM b, c WHERE a.id = b.id":                                           "a b c",
		"DELETE FROM a USING b, c WHERE a.id = b.id":                                                 "a b c",
		"INSERT INTO a AS t (x) VALUES (1) ON CONFLICT (x) DO UPDATE SET x = EXCLUDED.x RETURNING *": "a",
		"WITH moved AS (DELETE FROM a RETURNING *) INSERT INTO b SELECT * FROM moved":                "a b",
		"TRUNCATE a, b RESTART IDENTITY CASCADE":                                                     "a b",
		"COPY authors FROM STDIN WITH (FORMAT csv)":                                                  "authors",
		"COPY authors (id, name) TO '/tmp/x'":                                                        "authors",
		"COPY (SELECT * FROM authors) TO STDOUT":                                                     "authors",
		"LOCK TABLE authors, books IN ACCESS EXCLUSIVE MODE NOWAIT":                                  "authors books",
		"LOCK authors": "authors",
		"CREATE INDEX CONCURRENTLY IF NOT EXISTS i ON ONLY authors USING btree (name)": "authors",
		"CREATE TABLE x (LIKE authors INCLUDING ALL)":                                  "x authors",
		"CREATE TABLE p1 PARTITION OF authors FOR VALUES IN (1)":                       "p1 authors",
		"CREATE TABLE c (x int) INHERITS (authors)":                                    "c authors",
		"SELECT * INTO TEMP newt FROM authors":                                         "newt authors",
		"ALTER SEQUENCE s OWNED BY authors.id":                                         "authors",
		"CREATE SEQUENCE IF NOT EXISTS s AS bigint":                                    "",
		"ALTER TABLE a ALTER COLUMN id SET DEFAULT nextval('s')":                       "a",
		"ALTER INDEX i RENAME TO j":                                                    "",
		"DROP INDEX s.i":                                                               "",
		"TABLE authors":                                                                "authors",
		"SELECT a::text FROM t":                                                        "t",
		"DO $$ BEGIN DELETE FROM authors; END $$":                                      unsure,
		"SELECT $x$ unterminated":                                                      unsure,
		"SELECT * FROM settings # comment is an operator":                              "settings",
	},
	"sqlite": {
		"SELECT count(*) FROM t offset, books":                        "t books",
		"SELECT count(*) FROM t AS for JOIN books ON 1=1":             "t books",
		"SELECT count(*) FROM t for JOIN books ON 1=1":                "t books",
		"WITH booksſ AS (SELECT 1 AS id) SELECT count(*) FROM bookss": "bookss", // SQLite folds A-Z only
		"INSERT INTO t (id) WITH books AS (SELECT 1 AS id) SELECT id FROM books WHERE true ON CONFLICT (id) DO UPDATE SET v = (SELECT max(v) FROM books)": "t books",
		"SELECT * FROM [authors]":                                          "authors",
		"SELECT * FROM `authors`":                                          "authors",
		`SELECT * FROM "main"."authors"`:                                   "main.authors",
		`SELECT * FROM settings WHERE v = 'it''s FROM authors'`:            "settings",
		`SELECT * FROM settings WHERE v = 'a\' OR 1 = 1`:                   "settings",
		"INSERT OR REPLACE INTO authors VALUES (1)":                        "authors",
		"UPDATE OR IGNORE authors SET x = 1":                               "authors",
		"SELECT * FROM pragma_index_list(?)":                               "",
		"SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?": "sqlite_master",
		"WITH Recent AS (SELECT 1) SELECT * FROM recent":                   "",
		"PRAGMA foreign_keys = OFF":                                        unsure,
		"SELECT * FROM [unterminated":                                      unsure,
		"SELECT * FROM photos WHERE (?, ?) NOT IN users AND id = ?":        "photos users",
		"SELECT * FROM photos WHERE user_id IN main.users":                 "photos main.users",
		"SELECT * FROM t WHERE (x IN [users])":                             "t users",
		"SELECT * FROM t WHERE x IN json_each(?)":                          "t",
		"SELECT * FROM t WHERE x IN (1, 2) OR y IN (SELECT id FROM users)": "t users",
		"WITH r AS (SELECT 1) SELECT * FROM t WHERE x IN r":                "t",
		"SELECT * FROM t WHERE x NOT IN 'users'":                           "t users",
	},
}

func format(tables []Table) string {
	var names []string
	for _, t := range tables {
		if t.Qualifier != "" {
			names = append(names, t.Qualifier+"."+t.Name)
		} else {
			names = append(names, t.Name)
		}
	}
	return strings.Join(names, " ")
}

func check(t *testing.T, dialect, sql, want string) {
	t.Helper()
	scan, err := Read(dialect, sql)
	switch {
	case want == unsure && !errors.Is(err, ErrUnsure):
		t.Errorf("%s: Read(%q) = %q, want ErrUnsure", dialect, sql, format(scan.Tables))
	case want != unsure && err != nil:
		t.Errorf("%s: Read(%q): %v, want %q", dialect, sql, err, want)
	case want != unsure && format(scan.Tables) != want:
		t.Errorf("%s: Read(%q) = %q, want %q", dialect, sql, format(scan.Tables), want)
	}
}

func TestRead(t *testing.T) {
	for _, dialect := range []string{"mysql", "postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			for sql, want := range common {
				check(t, dialect, sql, want)
			}
			for sql, want := range byDialect[dialect] {
				check(t, dialect, sql, want)
			}
		})
	}
}

func TestReadRefusesHostileNesting(t *testing.T) {
	for _, sql := range []string{
		strings.Repeat("(", 100000) + "SELECT 1" + strings.Repeat(")", 100000),
		strings.Repeat("WITH a AS (SELECT 1) ", 100000) + "SELECT 1",
		"SELECT " + strings.Repeat("(SELECT ", 10000) + "1" + strings.Repeat(")", 10000),
		"SELECT " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000),
	} {
		if _, err := Read("postgres", sql); !errors.Is(err, ErrUnsure) {
			t.Errorf("%.30q...: %v, want ErrUnsure", sql, err)
		}
	}
}

func TestReadKindsAndWords(t *testing.T) {
	scan, err := Read("postgres", "SAVEPOINT sp1; SELECT 'x y' FROM t")
	if err != nil || !slices.Equal(scan.Kinds, []string{"SAVEPOINT", "SELECT"}) {
		t.Fatalf("Kinds = %q, %v", scan.Kinds, err)
	}
	// SQL it cannot read gives its identifiers and the words in its strings
	// (and in them read as SQL, for a function's body), but the reserved
	// keywords no table's name is unquoted.
	scan, err = Read("postgres", `SHOW "x" /* y */; SELECT 'a b' FROM t`)
	if !errors.Is(err, ErrUnsure) || !slices.Equal(scan.Words, []string{"SHOW", "x", "a", "b", "a", "b", "t"}) {
		t.Errorf("Words = %q, %v", scan.Words, err)
	}
	scan, err = Read("mysql", "SELECT /*!40001 SQL_NO_CACHE */ * FROM `order` WHERE id = 1 ORDER BY id")
	if !errors.Is(err, ErrUnsure) || !slices.Equal(scan.Words, []string{"40001", "SQL_NO_CACHE", "order", "id", "1", "BY", "id"}) {
		t.Errorf("a table named as a keyword: Words = %q, %v", scan.Words, err)
	}
	for dialect, sql := range map[string]string{ // after its schema's dot, a keyword is a name
		"mysql":    "SELECT /*!40001 SQL_NO_CACHE */ * FROM shop . order",
		"postgres": "SHOW x; SELECT * FROM shop.order ORDER BY 1",
	} {
		scan, err = Read(dialect, sql)
		if n := strings.Count(strings.ToLower(strings.Join(scan.Words, " ")), "order"); !errors.Is(err, ErrUnsure) || n != 1 {
			t.Errorf("%s: Words = %q (order %d times), %v; want the table's once", sql, scan.Words, n, err)
		}
	}
	// Text that cannot be split gives every word of it.
	scan, err = Read("mysql", "SELECT 'x FROM authors")
	if !errors.Is(err, ErrUnsure) || !errors.Is(err, ErrSyntax) || !slices.Contains(scan.Words, "authors") {
		t.Errorf("unterminated: %q, %v", scan.Words, err)
	}
	// An unknown dialect reads nothing for certain.
	if scan, err = Read("sqlserver", "SELECT * FROM [authors]"); !errors.Is(err, ErrUnsure) || !slices.Contains(scan.Words, "authors") {
		t.Errorf("unknown dialect: %q, %v", scan.Words, err)
	}
}

// hidden is a table name that the fuzz test hides in strings and comments.
const hidden = "zzhidden"

// FuzzTables: no text makes Read panic; every table it reports is an
// identifier token of the text, never a string or comment; and text in a
// string or comment appended to readable SQL adds no table.
func FuzzTables(f *testing.F) {
	for sql := range common {
		f.Add(sql)
	}
	for _, cases := range byDialect {
		for sql := range cases {
			f.Add(sql)
		}
	}
	hiders := map[string][]string{
		"mysql":    {"'FROM " + hidden + "'", "/* FROM " + hidden + " */", "-- FROM " + hidden + "\n", "# FROM " + hidden + "\n"},
		"postgres": {"'FROM " + hidden + "'", "/* /* */ FROM " + hidden + " */", "-- FROM " + hidden + "\n", "$q$ FROM " + hidden + " $q$", "E'\\' FROM " + hidden + "'"},
		"sqlite":   {"'FROM " + hidden + "'", "/* FROM " + hidden + " */", "-- FROM " + hidden + "\n"},
	}
	f.Fuzz(func(t *testing.T, sql string) {
		for dialect, d := range dialects {
			scan, err := Read(dialect, sql)
			names := map[string]bool{}
			for _, r := range d.readings() {
				tokens, _, _ := tokenize(d, r, sql)
				for _, tok := range tokens {
					if tok.Kind == Word || tok.Kind == Quoted || tok.Kind == MaybeQuoted || tok.Kind == String && d.inTable { // SQLite's x IN 'table'
						names[tok.Text] = true
						names[strings.ToLower(tok.Text)] = true
					}
				}
			}
			for _, table := range scan.Tables {
				if !names[table.Name] {
					t.Fatalf("%s: %q: table %q is no identifier of the text", dialect, sql, table.Name)
				}
			}
			if errors.Is(err, ErrSyntax) || strings.Contains(sql, `\`) || strings.Contains(strings.ToLower(sql), hidden) {
				continue // unreadable, or read several ways
			}
			for _, hider := range hiders[dialect] {
				scan, _ := Read(dialect, sql+"\n"+hider)
				if slices.ContainsFunc(scan.Tables, func(t Table) bool { return t.Name == hidden }) {
					t.Fatalf("%s: %q: reports %s from %q", dialect, sql, hidden, hider)
				}
			}
		}
	})
}

func BenchmarkRead(b *testing.B) {
	const sql = "SELECT a.id, a.name FROM `authors` a JOIN books b ON b.author_id = a.id WHERE a.id IN (?, ?, ?) AND b.title <> 'x' ORDER BY a.id LIMIT 10"
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := Read("mysql", sql); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestReadTablesNamedMoreThanOnce(t *testing.T) {
	for sql, want := range map[string][]string{
		"SELECT id, (SELECT count(*) FROM users) AS n FROM users WHERE id = 1": {"users"},
		"UPDATE users SET n = (SELECT count(*) FROM users AS u2) WHERE id = 1": {"users"},
		"SELECT * FROM users JOIN users AS m ON m.id = users.manager_id":       {"users"},
		`SELECT (SELECT count(*) FROM users) FROM "users"`:                     {"users"},
		"SELECT (SELECT count(*) FROM public.users) FROM users":                {"users"},
		"SELECT * FROM users JOIN other.users AS u ON u.id = users.id":         {"users"},
		"SELECT * FROM users WHERE users.id IN (SELECT user_id FROM photos)":   nil,
		"SELECT * FROM users WHERE id = 1":                                     nil,
	} {
		scan, err := Read("postgres", sql)
		if err != nil {
			t.Fatalf("%q: %v", sql, err)
		}
		var got []string
		for _, table := range scan.Tables {
			if scan.Times[strings.ToLower(table.Name)] > 1 && !slices.Contains(got, table.Name) {
				got = append(got, table.Name)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: named more than once %v, want %v", sql, got, want)
		}
	}
}

// A table named three times is not one named twice: a caller that approved
// two readings of it must see the third. Of SQL not read for certain, each
// word counts as often as it is written, but as a column's qualifier.
func TestReadCountsEachNamingOfATable(t *testing.T) {
	long := strings.Repeat("event_", 12) + "items" // 77 bytes, kept as its first 63 by PostgreSQL
	for _, c := range []struct {
		dialect, sql string
		want         map[string]int
	}{
		{"postgres", "SELECT id, (SELECT count(*) FROM users) FROM users WHERE id IN (SELECT id FROM public.users)", map[string]int{"users": 3}},
		{"postgres", `SELECT * FROM "Users" JOIN photos ON photos.user_id = "Users".id`, map[string]int{"users": 1, "photos": 1}},
		{"sqlite", `SELECT (SELECT count(*) FROM users) FROM "users" WHERE "users"."id" = 1 ORDER BY users.id /* never closed`, map[string]int{"users": 2}},
		{"mysql", "SELECT /*!50000 SQL_NO_CACHE */ * FROM `users` WHERE `users`.`id` = 1", map[string]int{"users": 1}},
		{"postgres", "SELECT query_to_xml('SELECT 1', true, false, ''), (SELECT count(*) FROM " + long + ") FROM " + long, map[string]int{PostgresName(long): 2}},
	} {
		scan, _ := Read(c.dialect, c.sql)
		for name, n := range c.want {
			if scan.Times[name] != n {
				t.Errorf("%s %q: %s named %d times, want %d", c.dialect, c.sql, name, scan.Times[name], n)
			}
		}
	}
}
