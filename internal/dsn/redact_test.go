package dsn

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRedactHidesEveryKindOfPassword(t *testing.T) {
	for _, c := range []struct{ dsn, want string }{
		{"root:s3cret@tcp(127.0.0.1:3306)/app?parseTime=true", "root:xxxxx@tcp(127.0.0.1:3306)/app?parseTime=true"},
		{"root:s3c@r:et@tcp(127.0.0.1:3306)/app", "root:xxxxx@tcp(127.0.0.1:3306)/app"},
		{"root:s3cret@tcp(127.0.0.1:3306)", "root:xxxxx@tcp(127.0.0.1:3306)"}, // no database: the driver refuses it, and prints it
		{"root:s3cret@unix(/var/run/mysqld/mysqld.sock)/app", "root:xxxxx@unix(/var/run/mysqld/mysqld.sock)/app"},
		{"root:s3cret@tcp(127.0.0.1:3306)/app?timeout=abc", "root:xxxxx@tcp(127.0.0.1:3306)/app?timeout=abc"},
		{"root@tcp(127.0.0.1:3306)/app", "root@tcp(127.0.0.1:3306)/app"},
		{"postgres://app:s3cret@127.0.0.1:5432/app?sslmode=disable", "postgres://app:xxxxx@127.0.0.1:5432/app?sslmode=disable"},
		{"postgres://127.0.0.1/app?password=s3cret", "postgres://127.0.0.1/app?password=xxxxx"},
		{"host=127.0.0.1 user=app password=s3cret dbname=app", "host=127.0.0.1 user=app password=xxxxx dbname=app"},
		{"host=127.0.0.1 password='s3 cret' dbname=app", "host=127.0.0.1 password=xxxxx dbname=app"},
		{"file:/tmp/a@b/app.db?_pragma=busy_timeout(5000)", "file:/tmp/a@b/app.db?_pragma=busy_timeout(5000)"},
		{"/tmp/app.db", "/tmp/app.db"},
		{"root:p@ss@tcp(db:3306)/app", "root:xxxxx@tcp(db:3306)/app"},
		{"postgres://app@db/app", "postgres://app@db/app"},
		{"file:/srv/a:b@c/shard.db", "file:/srv/a:b@c/shard.db"},
		{"user:s3cret@nowhere", "user:xxxxx@nowhere"},
	} {
		if got := Redact(c.dsn); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.dsn, got, c.want)
		}
		if strings.Contains(c.dsn, "s3") && strings.Contains(Redact(c.dsn), "s3") {
			t.Errorf("Redact(%q) shows the password", c.dsn)
		}
	}
}

func TestRedactErrorHidesThePasswordADriverPrints(t *testing.T) {
	cause := errors.New("refused")
	for _, c := range []struct{ dsn, printed string }{
		{"postgres://app@db/app?password=s3cretpw&sslmode=bogus", "cannot parse `postgres://app@db/app?password=s3cretpw&sslmode=bogus`"},
		{"postgres://app:s3cretpw:s3cr%zzet@db/app", "cannot parse `postgres://app:s3cretpw:xxxxx@db/app`"},
		{"postgres://app:s3c%40ret@db/app", "password authentication failed for s3c@ret"},
		{"root:s3cretpw@tcp(db:3306)/app?timeout=abc", "invalid DSN root:s3cretpw@tcp(db:3306)/app?timeout=abc"},
		{"host=db password='s3cret pw' dbname=app", "cannot parse host=db password='s3cret pw'"},
		{"postgres://app@db/app?password=s3c&sslmode=bogus", "cannot parse `postgres://app@db/app?password=s3c&sslmode=bogus`"}, // too short to be told from other text, but in its DSN
	} {
		err := RedactError(fmt.Errorf("%s: %w", c.printed, cause), c.dsn)
		if strings.Contains(err.Error(), "s3c") || !errors.Is(err, cause) {
			t.Errorf("RedactError of %q for %s = %q (wrapping the cause: %v)", c.printed, c.dsn, err, errors.Is(err, cause))
		}
	}
	plain := errors.New("connection refused")
	if got := RedactError(plain, "postgres://app:s3cret@db/app"); got != plain {
		t.Errorf("an error without the password came back as %v", got)
	}
}
