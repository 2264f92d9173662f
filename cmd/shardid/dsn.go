package main

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// hiddenPassword stands for a password in a DSN the command prints.
const hiddenPassword = "xxxxx"

var (
	// keyValuePassword is the password of a key=value PostgreSQL DSN.
	keyValuePassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)
	// userPassword is a user:password@ of a DSN of no kind the command knows.
	userPassword = regexp.MustCompile(`^([^:@/]*):.*@`)
)

// redactDSN returns dsn with its password, if it has one, hidden: in a
// MySQL DSN's user:password@, a URL's user info or password parameter, a
// key=value password, or the user:password@ of a DSN of another kind.
func redactDSN(dsn string) string {
	switch {
	case strings.HasPrefix(dsn, "file:"): // SQLite: no password, and a path may hold an @
		return dsn
	case strings.Contains(dsn, "://"):
		u, err := url.Parse(dsn)
		if err != nil {
			return "(a URL that does not parse)"
		}
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), hiddenPassword)
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", hiddenPassword)
			u.RawQuery = q.Encode()
		}
		return u.String()
	case strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix("):
		if cfg, err := mysql.ParseDSN(dsn); err == nil && cfg.Passwd != "" {
			return strings.Replace(dsn, ":"+cfg.Passwd+"@", ":"+hiddenPassword+"@", 1)
		}
		return dsn
	}
	dsn = keyValuePassword.ReplaceAllString(dsn, "${1}"+hiddenPassword)
	return userPassword.ReplaceAllString(dsn, "${1}:"+hiddenPassword+"@")
}

// dsnError names the flag and the DSN, password hidden, that err came from.
func dsnError(flag, dsn string, err error) error {
	return fmt.Errorf("%s %s: %w", flag, redactDSN(dsn), err)
}
