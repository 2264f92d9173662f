// Package dsn hides the passwords of data source names in what the plugin
// and its command print.
package dsn

import (
	"net/url"
	"regexp"
	"strings"
)

// Hidden stands for a password in a DSN that is printed.
const Hidden = "xxxxx"

// keyValuePassword is the password of a key=value PostgreSQL DSN.
var keyValuePassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// Redact returns dsn with its password, if it has one, hidden: a URL's user
// info or password parameter, a key=value password, or the user:password@
// of a MySQL DSN or one of another kind, well formed or not.
func Redact(dsn string) string {
	switch {
	case strings.HasPrefix(dsn, "file:"): // SQLite: no password, and a path may hold an @
		return dsn
	case strings.Contains(dsn, "://"):
		u, err := url.Parse(dsn)
		if err != nil {
			return "(a URL that does not parse)"
		}
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Hidden)
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", Hidden)
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	dsn = keyValuePassword.ReplaceAllString(dsn, "${1}"+Hidden)
	// MySQL's user:password@: the password runs from the first colon to the
	// last @ before the last slash (the database's), and may hold either.
	credentialsEnd := len(dsn)
	if slash := strings.LastIndex(dsn, "/"); slash >= 0 && strings.Contains(dsn[:slash], "@") {
		credentialsEnd = slash
	}
	at := strings.LastIndex(dsn[:credentialsEnd], "@")
	if at < 0 {
		return dsn
	}
	colon := strings.Index(dsn[:at], ":")
	if colon < 0 || strings.ContainsAny(dsn[:colon], "/(") {
		return dsn
	}
	return dsn[:colon+1] + Hidden + dsn[at:]
}
