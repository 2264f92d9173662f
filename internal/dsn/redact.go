// Package dsn hides the passwords of data source names in what the plugin
// and its command print.
package dsn

import (
	"net/url"
	"regexp"
	"slices"
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
	if start, end, ok := userPassword(dsn); ok {
		return dsn[:start] + Hidden + dsn[end:]
	}
	return dsn
}

// userPassword finds MySQL's user:password@: the password runs from the
// first colon to the last @ before the last slash (the database's), and may
// hold either.
func userPassword(dsn string) (start, end int, ok bool) {
	credentialsEnd := len(dsn)
	if slash := strings.LastIndex(dsn, "/"); slash >= 0 && strings.Contains(dsn[:slash], "@") {
		credentialsEnd = slash
	}
	at := strings.LastIndex(dsn[:credentialsEnd], "@")
	if at < 0 {
		return 0, 0, false
	}
	colon := strings.Index(dsn[:at], ":")
	if colon < 0 || strings.ContainsAny(dsn[:colon], "/(") {
		return 0, 0, false
	}
	return colon + 1, at, true
}

// RedactError returns err with the passwords of the given DSNs hidden from
// its message, as a driver that refuses a DSN prints it whole; errors.Is and
// errors.As still see err.
func RedactError(err error, dsns ...string) error {
	if err == nil {
		return nil
	}
	message := err.Error()
	hidden := message
	for _, d := range dsns {
		if d != "" {
			hidden = strings.ReplaceAll(hidden, d, Redact(d)) // the DSN printed whole: its password hidden however short
		}
		for _, secret := range passwords(d) {
			hidden = strings.ReplaceAll(hidden, secret, Hidden)
		}
	}
	if hidden == message {
		return err
	}
	return redactedError{err: err, message: hidden}
}

type redactedError struct {
	err     error
	message string
}

func (r redactedError) Error() string { return r.message }
func (r redactedError) Unwrap() error { return r.err }

// urlUserInfo is the user:password@ of a URL, found without parsing it, as
// a URL a driver refuses may not parse.
var (
	urlUserInfo      = regexp.MustCompile(`://[^/?#]*?:([^/?#]*)@`)
	urlPasswordParam = regexp.MustCompile(`(?i)[?&]password=([^&#]*)`)
)

// passwords returns the password of dsn as it is written and as a driver
// may print it: unescaped, and cut where a driver cuts it (at a colon or an
// @); pieces too short to be told from other text are left out.
func passwords(d string) []string {
	var written []string
	switch {
	case strings.HasPrefix(d, "file:"):
		return nil
	case strings.Contains(d, "://"):
		for _, re := range []*regexp.Regexp{urlUserInfo, urlPasswordParam} {
			if m := re.FindStringSubmatch(d); m != nil {
				written = append(written, m[1])
			}
		}
	default:
		if m := keyValuePassword.FindStringSubmatch(d); m != nil {
			written = append(written, strings.Trim(m[2], "'"))
		}
		if start, end, ok := userPassword(d); ok {
			written = append(written, d[start:end])
		}
	}
	var secrets []string
	for _, w := range written {
		forms := []string{w}
		if unescaped, err := url.PathUnescape(w); err == nil {
			forms = append(forms, unescaped)
		}
		for _, form := range forms {
			secrets = append(secrets, form)
			secrets = append(secrets, strings.FieldsFunc(form, func(r rune) bool { return r == ':' || r == '@' })...)
		}
	}
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) }) // the whole before its pieces
	return slices.DeleteFunc(secrets, func(s string) bool { return len(s) < 4 })
}
