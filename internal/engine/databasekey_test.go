package engine

import "testing"

// TestDatabaseKeySpellings: spellings of one database share a key; other
// databases, servers or ports do not, nor do DSNs with settings the key does
// not model (they have none, and are compared as written).
func TestDatabaseKeySpellings(t *testing.T) {
	same := []struct{ dialect, a, b string }{
		{"mysql", "root@tcp(127.0.0.1:3306)/app", "root@tcp(127.0.0.1:3306)/app?parseTime=true"},
		{"mysql", "root@tcp(127.0.0.1:3306)/app", "other:pw@tcp(localhost:3306)/app"},
		{"mysql", "root@tcp(127.0.0.1)/app", "root@/app"},
		{"postgres", "postgres://postgres@127.0.0.1:5432/app?sslmode=disable", "host=localhost user=postgres dbname=app sslmode=disable"},
		{"postgres", "postgres://postgres@localhost/app", "postgresql://u@127.0.0.1:5432/app"},
		{"postgres", "host=127.0.0.1 user=app", "postgres://app@localhost:5432/app"},
		{"sqlite", "file:shard.db?_pragma=busy_timeout(5000)", "shard.db"},
	}
	for _, c := range same {
		a, b := databaseKeyOf(c.dialect, c.a), databaseKeyOf(c.dialect, c.b)
		if a == "" || a != b {
			t.Errorf("%s: %q is %q and %q is %q, want one key", c.dialect, c.a, a, c.b, b)
		}
	}
	different := []struct{ dialect, a, b string }{
		{"mysql", "root@tcp(127.0.0.1:3306)/app", "root@tcp(127.0.0.1:3306)/app_1"},
		{"mysql", "root@tcp(127.0.0.1:3306)/app", "root@tcp(127.0.0.1:3307)/app"},
		{"mysql", "root@tcp(10.0.0.1:3306)/app", "root@tcp(10.0.0.2:3306)/app"},
		{"postgres", "postgres://p@127.0.0.1:5432/app", "postgres://p@127.0.0.1:5433/app"},
		{"postgres", "host=127.0.0.1 dbname=a", "host=127.0.0.1 dbname=b"},
		{"mysql", "root@tcp(127.0.0.2:3306)/app", "root@tcp(127.0.0.3:3306)/app"},
		{"postgres", "postgres://u@127.0.0.2/app", "postgres://u@127.0.0.3/app"},
		{"postgres", "service=shard1", "service=shard2"},
		{"postgres", "host = 10.0.0.1 dbname = app", "host = 10.0.0.2 dbname = app"},
		{"postgres", "host=10.0.0.1 database=a", "host=10.0.0.1 database=b"},
		{"postgres", "postgres://u@10.0.0.1/app?port=5433", "postgres://u@10.0.0.1/app"},
		{"postgres", "postgres://10.0.0.1?user=alice", "postgres://10.0.0.1?user=bob"},
		{"postgres", "hostaddr=10.0.0.1 dbname=app", "hostaddr=10.0.0.2 dbname=app"},
		{"postgres", "host=10.0.0.1 dbname=app search_path=shard1", "host=10.0.0.1 dbname=app search_path=shard2"},
		{"sqlite", "a.db", "b.db"},
	}
	for _, c := range different {
		if a, b := databaseKeyOf(c.dialect, c.a), databaseKeyOf(c.dialect, c.b); a == b && a != "" { // no key: compared as written
			t.Errorf("%s: %q and %q share the key %q", c.dialect, c.a, c.b, a)
		}
	}
	if key := databaseKeyOf("sqlite", "file::memory:?cache=shared"); key != "" {
		t.Errorf("an in-memory SQLite database has the key %q; each connection's is its own", key)
	}
}
