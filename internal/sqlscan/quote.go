package sqlscan

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// Quote writes name as an identifier of dialect: in backquotes for "mysql",
// in double quotes for "postgres" and "sqlite", a quote inside it doubled,
// so that any name reads back as itself and never as SQL.
func Quote(dialect, name string) string {
	if dialect == "mysql" {
		return "`" + strings.ReplaceAll(name, "`", "``") + "`"
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteFolded quotes name, a plain table name the plugin once wrote
// unquoted, as the database read it so (Folded). A reserved word (a
// MapTable "order") then works, and a table made before keeps its name.
func QuoteFolded(dialect, name string) string { return Quote(dialect, Folded(dialect, name)) }

// Folded is a plain name as the database holds it written unquoted:
// PostgreSQL folds it to lower case.
func Folded(dialect, name string) string {
	if dialect == "postgres" {
		return strings.ToLower(name)
	}
	return name
}

// FitIdentifier is name if the dialect takes it whole (PostgreSQL 63 bytes,
// MySQL 64 characters), else its start and 8 hex digits of its hash within
// that, as GORM names a long index: two long names with one start differ.
func FitIdentifier(dialect, name string) string {
	if fits(dialect, name) {
		return name
	}
	sum := sha1.Sum([]byte(name))
	hash := hex.EncodeToString(sum[:4])
	return cutTo(name, func(s string) bool { return fits(dialect, s+hash) }) + hash
}

// CutIdentifier is name cut as PostgreSQL cuts a name too long for it.
func CutIdentifier(dialect, name string) string {
	return cutTo(name, func(s string) bool { return fits(dialect, s) })
}

// fits says the dialect takes name as an identifier whole.
func fits(dialect, name string) bool {
	switch dialect {
	case "postgres":
		return len(name) <= 63
	case "mysql":
		return utf8.RuneCountInString(name) <= 64
	}
	return true
}

// cutTo drops name's last runes until ok; a cut name stays valid UTF-8.
func cutTo(name string, ok func(string) bool) string {
	for name != "" && !ok(name) {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name
}
