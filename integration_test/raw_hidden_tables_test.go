package integration

import (
	"errors"
	"testing"

	"github.com/shardid/shardid"
)

// decoyAuthors makes a copy of the sharded table authors on the plugin's
// database holding one row named 'decoy', as a plain db.AutoMigrate leaves,
// and returns a function counting its untouched decoys.
func decoyAuthors(t *testing.T, r *routing) func() int {
	t.Helper()
	main, err := r.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = main.Exec("DROP TABLE IF EXISTS authors")
	if _, err := main.Exec("CREATE TABLE authors (id bigint PRIMARY KEY, name varchar(64))"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = main.Exec("DROP TABLE IF EXISTS authors") })
	if _, err := main.Exec("INSERT INTO authors (id, name) VALUES (1, 'decoy')"); err != nil {
		t.Fatal(err)
	}
	if err := r.db.Create(&setting{Value: "v"}).Error; err != nil { // an unsharded row to join with
		t.Fatal(err)
	}
	return func() int {
		var n int
		if err := main.QueryRow("SELECT count(*) FROM authors WHERE name = 'decoy'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// refusesExec runs each SQL with Exec on the plugin's database, which holds
// a stale copy of authors: each must be refused and leave the copy as it was.
func refusesExec(t *testing.T, b backend, sqls ...string) {
	for _, sql := range sqls {
		t.Run(sql, func(t *testing.T) {
			r := newRouting(t, b)
			decoys := decoyAuthors(t, r)
			err := r.db.Exec(sql).Error
			if !errors.Is(err, shardid.ErrNoShard) {
				t.Errorf("%q: got %v, want ErrNoShard", sql, err)
			}
			if n := decoys(); n != 1 {
				t.Errorf("%q wrote the plugin's stale copy of authors: %d decoy rows left", sql, n)
			}
		})
	}
}

// refusesRaw reads each SQL with Raw on the plugin's database: each must be
// refused, not answered from its stale copy of authors.
func refusesRaw(t *testing.T, b backend, sqls ...string) {
	for _, sql := range sqls {
		t.Run(sql, func(t *testing.T) {
			r := newRouting(t, b)
			decoyAuthors(t, r)
			var rows []map[string]any
			err := r.db.Raw(sql).Scan(&rows).Error
			if !errors.Is(err, shardid.ErrNoShard) {
				t.Errorf("%q: got %v, want ErrNoShard; read %v from the plugin's stale copy", sql, err, rows)
			}
		})
	}
}

// MariaDB reads "..." as a string (without ANSI_QUOTES), and EXECUTE
// IMMEDIATE runs it: a word of it that is a sharded table refuses it, as a
// word of a '...' string does.
func TestRawSQLWithADoubleQuotedStringNamingAShardedTableIsRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("MySQL's double-quoted strings")
		}
		refusesExec(t, b, `EXECUTE IMMEDIATE "DELETE FROM authors"`)
	})
}

// MySQL's \n, \t, \r, \b, \0 and \Z in a string are characters that separate
// words: 'FROM\nauthors' names authors.
func TestRawSQLWordsSplitAtMySQLBackslashEscapes(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "mariadb" {
			t.Skip("MySQL's backslash escapes")
		}
		refusesExec(t, b,
			`EXECUTE IMMEDIATE 'DELETE FROM\nauthors'`,
			`EXECUTE IMMEDIATE 'DELETE FROM\tauthors'`,
			`EXECUTE IMMEDIATE 'DELETE FROM\tauthors' /*!50000 */`, // not tokenized: words of the raw text
		)
	})
}

// Servers read keywords in ASCII: "aſ" (with U+017F, which Go's EqualFold
// takes for s) is an alias, not AS, and the FROM or JOIN after it reads a
// table.
func TestAnAliasSpelledLikeASWithANonASCIILetterIsNoKeyword(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		refusesRaw(t, b, "SELECT name aſ FROM authors", "SELECT authors.name FROM settings aſ JOIN authors ON true")
		if b.name == "mariadb" {
			refusesExec(t, b, "UPDATE settings aſ JOIN authors ON true SET authors.name = 'x'")
		}
	})
}

// PostgreSQL's table_to_xml, query_to_xml and ts_stat read the table, or
// run the query, that a string names.
func TestPostgresFunctionsReadingATableOrQueryGivenAsAStringAreRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, b backend) {
		if b.name != "postgres" {
			t.Skip("PostgreSQL's functions")
		}
		refusesRaw(t, b,
			"SELECT table_to_xml('authors', true, false, '')::text AS x",
			"SELECT query_to_xml('SELECT * FROM authors', true, false, '')::text AS x",
			"SELECT * FROM ts_stat('SELECT to_tsvector(name) FROM authors')",
		)
	})
}

// SQLite's fts5 with content='authors' reads that table whenever it is
// queried, as a view reads its query's: making it names the table.
func TestASQLiteVirtualTableOverAShardedTableIsRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if b.name != "sqlite" {
			t.Skip("SQLite's virtual tables")
		}
		refusesExec(t, b, "CREATE VIRTUAL TABLE authors_fts USING fts5(name, content='authors', content_rowid='id')")
	})
}
