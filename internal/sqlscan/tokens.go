package sqlscan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the kind of a token.
type Kind uint8

const (
	Word        Kind = iota // an unquoted identifier or keyword
	Quoted                  // a quoted identifier: "x", `x`, [x]
	MaybeQuoted             // MySQL "x": a string, or an identifier under ANSI_QUOTES
	String                  // a string literal, dollar-quoted ones included
	Number
	Param // $1 (PostgreSQL)
	Punct // any other character
)

// Token is one token of SQL text. Text is an identifier's name without its
// quotes (doubled quotes made single), a string's content, or the token as
// written.
type Token struct {
	Kind Kind
	Text string
}

// ErrSyntax is wrapped by the errors of text that cannot be split into
// tokens: an unterminated string, quoted identifier or comment.
var ErrSyntax = errors.New("sqlscan: unterminated string, identifier or comment")

// dialect is what the tokenizer and the reader need to know of a database.
type dialect struct {
	hashComments    bool // MySQL: # starts a comment
	dashNeedsSpace  bool // MySQL: "--" starts a comment only before whitespace
	nestedComments  bool // PostgreSQL: /* /* */ */
	execComments    bool // MySQL: /*! ... */ is run (and MariaDB's /*M! ... */, which MySQL skips)
	dollarQuotes    bool // PostgreSQL: $$...$$, $tag$...$tag$
	escapeStrings   bool // PostgreSQL: E'...' with backslash escapes
	brackets        bool // SQLite: [name]
	backticks       bool // MySQL, SQLite: `name`
	digitIdents     bool // MySQL: 1abc is an identifier
	foldLower       bool // PostgreSQL folds unquoted names to lower case
	caseInsensitive bool // SQLite compares names without case
	inTable         bool // SQLite: x IN t reads table t
	tclVariables    bool // SQLite: $name(...), @name, :name, #name are parameters
}

var dialects = map[string]*dialect{
	"mysql":    {hashComments: true, dashNeedsSpace: true, execComments: true, backticks: true, digitIdents: true},
	"postgres": {nestedComments: true, dollarQuotes: true, escapeStrings: true, foldLower: true},
	"sqlite":   {brackets: true, backticks: true, caseInsensitive: true, inTable: true, tclVariables: true},
}

// reading is one way the server may read backslashes in quoted text: MySQL
// under NO_BACKSLASH_ESCAPES or ANSI_QUOTES, PostgreSQL with
// standard_conforming_strings off, read them otherwise than by default.
type reading struct {
	backslashInSingle bool // '\'' is one quote
	backslashInDouble bool // MySQL: "\"" is one quote
}

// readings returns the ways d's server may read backslashes, the default first.
func (d *dialect) readings() []reading {
	switch {
	case d.execComments: // MySQL: default, NO_BACKSLASH_ESCAPES, ANSI_QUOTES
		return []reading{{true, true}, {false, false}, {true, false}}
	case d.escapeStrings: // PostgreSQL: standard_conforming_strings on, then off
		return []reading{{false, false}, {true, false}}
	}
	return []reading{{}}
}

type tokenizer struct {
	d         *dialect
	r         reading
	sql       string
	tokens    []Token
	inExec    bool // inside a MySQL /*! ... */
	backslash bool // a backslash stood in text whose reading depends on the server's settings
	lastEnd   int  // the byte just past the last token
}

// tokenize splits sql into tokens, dropping comments. It also reports
// whether another reading of backslashes could split it otherwise.
func tokenize(d *dialect, r reading, sql string) ([]Token, bool, error) {
	t := &tokenizer{d: d, r: r, sql: sql, tokens: make([]Token, 0, len(sql)/4+1)}
	err := t.run()
	return t.tokens, t.backslash, err
}

func (t *tokenizer) run() error {
	s := t.sql
	for i := 0; i < len(s); {
		c := s[i]
		var next byte
		if i+1 < len(s) {
			next = s[i+1]
		}
		var err error
		count := len(t.tokens)
		switch {
		case isSpace(c):
			i++
		case c == '-' && next == '-' && (!t.d.dashNeedsSpace || i+2 >= len(s) || isSpace(s[i+2]) || s[i+2] < ' ' || s[i+2] == 0x7f):
			i = t.lineEnd(i)
		case c == '#' && t.d.hashComments:
			i = t.lineEnd(i)
		case c == '/' && next == '*':
			i, err = t.comment(i)
		case c == '*' && next == '/' && t.inExec:
			i, t.inExec = i+2, false
		case c == '\'':
			start := i
			i, err = t.quoted(i, String, t.r.backslashInSingle, t.d.execComments || t.d.escapeStrings)
			if err == nil && t.d.escapeStrings && t.r.backslashInSingle { // standard_conforming_strings off: '\x62' spells b
				t.tokens[len(t.tokens)-1].Text = escapeString(s[start+1 : i-1])
			}
		case t.d.tclVariables && (c == '$' || c == '@' || c == ':' || c == '#'):
			i, err = t.variable(i)
		case c == '"' && t.d.execComments:
			i, err = t.quoted(i, MaybeQuoted, t.r.backslashInDouble, true)
		case c == '"':
			i, err = t.quoted(i, Quoted, false, false)
		case c == '`' && t.d.backticks:
			i, err = t.quoted(i, Quoted, false, false)
		case c == '[' && t.d.brackets:
			end := strings.IndexByte(s[i+1:], ']')
			if end < 0 {
				return t.unterminated(i)
			}
			t.add(Quoted, s[i+1:i+1+end])
			i += end + 2
		case c == '$' && t.d.dollarQuotes:
			i, err = t.dollar(i)
		case isDigit(c) || c == '.' && isDigit(next) && !t.qualifierDot(i):
			i = t.number(i)
		case isIdentStart(c) || c == '$' && t.d.digitIdents:
			i, err = t.word(i)
		default:
			t.add(Punct, s[i:i+1])
			i++
		}
		if err != nil {
			return err
		}
		if len(t.tokens) > count {
			t.lastEnd = i
		}
	}
	if t.inExec {
		return fmt.Errorf("%w: /*! comment never closed", ErrSyntax)
	}
	return nil
}

func (t *tokenizer) add(k Kind, text string) { t.tokens = append(t.tokens, Token{k, text}) }

func (t *tokenizer) unterminated(i int) error {
	return fmt.Errorf("%w: %.20q at byte %d never closed", ErrSyntax, t.sql[i:], i)
}

// qualifierDot reports whether the "." at i, before a digit, is a
// qualifier's (MySQL's db.5t) rather than a number's start (.5). MySQL's
// lexer takes it for a qualifier's only straight after an unquoted word,
// keywords included (SELECT.1 is a name); after a space, a comment or a
// quoted name (`db`.5t, SELECT .1FROM t) it reads a number. PostgreSQL and
// SQLite always read a number.
func (t *tokenizer) qualifierDot(i int) bool {
	if !t.d.digitIdents || len(t.tokens) == 0 || t.lastEnd != i {
		return false
	}
	return t.tokens[len(t.tokens)-1].Kind == Word
}

// comment skips a /* */ comment at i, or enters a MySQL executable one,
// whose content is SQL.
func (t *tokenizer) comment(i int) (int, error) {
	s := t.sql
	if t.d.execComments && strings.HasPrefix(s[i:], "/*M!") {
		return 0, fmt.Errorf("%w: a MariaDB executable comment /*M! at byte %d, which MySQL reads as a comment", ErrUnsure, i)
	}
	if t.d.execComments && strings.HasPrefix(s[i:], "/*!") {
		if t.inExec {
			return 0, fmt.Errorf("%w: /*! comment inside another at byte %d", ErrUnsure, i)
		}
		i += strings.IndexByte(s[i:], '!') + 1
		if i < len(s) && isDigit(s[i]) {
			return 0, fmt.Errorf("%w: an executable comment for a server version at byte %d, which a server of another version reads as a comment", ErrUnsure, i)
		}
		t.inExec = true
		return i, nil
	}
	depth := 0
	for j := i; j+1 < len(s); j++ {
		switch {
		case s[j] == '/' && s[j+1] == '*' && (depth == 0 || t.d.nestedComments):
			depth++
			j++
		case s[j] == '*' && s[j+1] == '/':
			depth--
			j++
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, t.unterminated(i)
}

// quoted reads a string or quoted identifier at i, closed by the character
// it opens with, written twice inside it; with backslash, \ escapes the next
// character. ambiguous says another reading treats backslashes otherwise.
func (t *tokenizer) quoted(i int, k Kind, backslash, ambiguous bool) (int, error) {
	s, q := t.sql, t.sql[i]
	escaped := false
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && (backslash || ambiguous):
			t.backslash = t.backslash || ambiguous
			if backslash {
				escaped = true
				j++
			}
		case s[j] == q && j+1 < len(s) && s[j+1] == q:
			escaped = true
			j++
		case s[j] == q:
			text := s[i+1 : j]
			if escaped {
				text = unescape(text, q, backslash)
			}
			t.add(k, text)
			return j + 1, nil
		}
	}
	return 0, t.unterminated(i)
}

// unescape makes doubled quotes single, and with backslash reads MySQL's
// escapes: \n, \t, \r, \b, \0 and \Z are the characters they stand for
// (which separate words), \% and \_ keep their backslash, and \x is x.
func unescape(text string, q byte, backslash bool) string {
	var b strings.Builder
	for j := 0; j < len(text); j++ {
		switch {
		case backslash && text[j] == '\\' && j+1 < len(text):
			j++
			if i := strings.IndexByte("ntrb0Z", text[j]); i >= 0 {
				b.WriteByte("\n\t\r\b\x00\x1a"[i])
				continue
			}
			if text[j] == '%' || text[j] == '_' {
				b.WriteByte('\\')
			}
		case text[j] == q && j+1 < len(text) && text[j+1] == q:
			j++
		}
		b.WriteByte(text[j])
	}
	return b.String()
}

// dollar reads a PostgreSQL $1 parameter, a $tag$ string, or a lone $.
func (t *tokenizer) dollar(i int) (int, error) {
	s := t.sql
	j := i + 1
	if j < len(s) && isDigit(s[j]) {
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		t.add(Param, s[i:j])
		return j, nil
	}
	if j < len(s) && isIdentStart(s[j]) {
		for j < len(s) && isIdentChar(s[j]) && s[j] != '$' {
			j++
		}
	}
	if j >= len(s) || s[j] != '$' {
		t.add(Punct, "$")
		return i + 1, nil
	}
	tag := s[i : j+1]
	end := strings.Index(s[j+1:], tag)
	if end < 0 {
		return 0, t.unterminated(i)
	}
	t.add(String, s[j+1:j+1+end])
	return j + 1 + end + len(tag), nil
}

// number reads a numeric literal; in MySQL, digits followed by letters are
// an identifier.
func (t *tokenizer) number(i int) int {
	s := t.sql
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if t.d.digitIdents && j > i && j < len(s) && isIdentChar(s[j]) && !isExponent(s, j) {
		for j < len(s) && isIdentChar(s[j]) {
			j++
		}
		t.add(Word, s[i:j])
		return j
	}
	if j < len(s) && s[j] == '.' {
		for j++; j < len(s) && isDigit(s[j]); j++ {
		}
	}
	if isExponent(s, j) {
		for j += 2; j < len(s) && isDigit(s[j]); j++ {
		}
	}
	t.add(Number, s[i:j])
	return j
}

// word reads an unquoted identifier or keyword at i, or a PostgreSQL E'...'
// string, whose backslashes escape.
func (t *tokenizer) word(i int) (int, error) {
	s := t.sql
	j := i + 1
	for j < len(s) && isIdentChar(s[j]) {
		j++
	}
	if t.d.escapeStrings && j == i+1 && (s[i] == 'E' || s[i] == 'e') && j < len(s) && s[j] == '\'' {
		end, err := t.quoted(j, String, true, false)
		if err == nil { // its words as the server spells them: \ooo, \xhh, \uXXXX
			t.tokens[len(t.tokens)-1].Text = escapeString(s[j+1 : end-1])
		}
		return end, err
	}
	if t.d.escapeStrings && j == i+1 && (s[i] == 'U' || s[i] == 'u') && (strings.HasPrefix(s[j:], "&'") || strings.HasPrefix(s[j:], "&\"")) {
		kind := Quoted // U&"name" or U&'text': its escapes spell letters
		if s[j+1] == '\'' {
			kind = String
		}
		end, err := t.quoted(j+1, kind, false, false)
		if err != nil {
			return 0, err
		}
		escape, next, ok := t.uescape(end)
		last := &t.tokens[len(t.tokens)-1]
		text, spelled := unicodeEscapes(last.Text, escape)
		if !ok || !spelled {
			return 0, fmt.Errorf("%w: a U&%c...%c with escapes at byte %d", ErrUnsure, s[j+1], s[j+1], i)
		}
		last.Text = text
		return next, nil
	}
	t.add(Word, s[i:j])
	return j, nil
}

// variable reads a SQLite parameter at i as SQLite's tokenizer does: $, @,
// : or # and a name, with Tcl's ::name parts and a (...) suffix that runs
// to the first ) or blank, whatever it holds (quotes, comment starts).
func (t *tokenizer) variable(i int) (int, error) {
	s := t.sql
	n, j := 0, i+1
	for j < len(s) {
		switch c := s[j]; {
		case isIdentChar(c):
			n++
			j++
			continue
		case c == '(' && n > 0:
			for j++; j < len(s) && !isSpace(s[j]) && s[j] != ')'; j++ {
			}
			if j >= len(s) || s[j] != ')' {
				return 0, fmt.Errorf("%w: a parameter %.20q not closed by )", ErrUnsure, s[i:])
			}
			j++
		case c == ':' && j+1 < len(s) && s[j+1] == ':':
			j += 2
			continue
		}
		break
	}
	if n == 0 {
		t.add(Punct, s[i:i+1])
		return i + 1, nil
	}
	t.add(Param, s[i:j])
	return j, nil
}

// uescape reads the UESCAPE 'c' clause that may follow a U&"..."
// identifier ending at end (after blanks and comments): the escape character
// its escapes use, backslash without one, and where the identifier ends.
func (t *tokenizer) uescape(end int) (escape byte, next int, ok bool) {
	s := t.sql
	j := t.blank(end)
	if len(s)-j < 7 || !strings.EqualFold(s[j:j+7], "UESCAPE") || j+7 < len(s) && isIdentChar(s[j+7]) {
		return '\\', end, true
	}
	j = t.blank(j + 7)
	if j+2 >= len(s) || s[j] != '\'' || s[j+2] != '\'' {
		return 0, 0, false
	}
	c := s[j+1]
	if isSpace(c) || c == '+' || c == '\'' || c == '"' || strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 {
		return 0, 0, false // PostgreSQL refuses these
	}
	return c, j + 3, true
}

// blank returns the index of the first byte at or after i that is neither
// whitespace nor in a comment (or i within an unterminated comment).
func (t *tokenizer) blank(i int) int {
	s := t.sql
	for i < len(s) {
		switch {
		case isSpace(s[i]):
			i++
		case strings.HasPrefix(s[i:], "--"):
			i = t.lineEnd(i)
		case strings.HasPrefix(s[i:], "/*"):
			end, err := t.comment(i)
			if err != nil {
				return i
			}
			i = end
		default:
			return i
		}
	}
	return i
}

// unicodeEscapes spells the escapes of a PostgreSQL U&"..." identifier
// with the escape character escape: \XXXX and \+XXXXXX code points, \\ the
// escape character itself (as written with backslash).
func unicodeEscapes(text string, escape byte) (string, bool) {
	var b strings.Builder
	for j := 0; j < len(text); j++ {
		if text[j] != escape {
			b.WriteByte(text[j])
			continue
		}
		digits := 4
		switch {
		case j+1 < len(text) && text[j+1] == escape:
			b.WriteByte(escape)
			j++
			continue
		case j+1 < len(text) && text[j+1] == '+':
			digits = 6
			j++
		}
		if j+1+digits > len(text) {
			return "", false
		}
		code, err := strconv.ParseUint(text[j+1:j+1+digits], 16, 32)
		if err != nil || !utf8.ValidRune(rune(code)) {
			return "", false
		}
		b.WriteRune(rune(code))
		j += digits
	}
	return b.String(), true
}

var digitsOf = map[int]string{8: "01234567", 16: "0123456789abcdefABCDEF"}

// escapeString spells a PostgreSQL E'...' string's content: ” and the
// backslash escapes (\ooo octal, \xhh, \uXXXX, \UXXXXXXXX, \b\f\n\r\t, \c).
func escapeString(text string) string {
	var b strings.Builder
	for j := 0; j < len(text); j++ {
		c := text[j]
		if c == '\'' && j+1 < len(text) && text[j+1] == '\'' {
			b.WriteByte(c)
			j++
			continue
		}
		if c != '\\' || j+1 >= len(text) {
			b.WriteByte(c)
			continue
		}
		j++
		digits, base := 0, 16
		switch e := text[j]; {
		case e >= '0' && e <= '7':
			digits, base = 3, 8
			j--
		case e == 'x':
			digits = 2
		case e == 'u':
			digits = 4
		case e == 'U':
			digits = 8
		default:
			if i := strings.IndexByte("bfnrt", e); i >= 0 {
				e = "\b\f\n\r\t"[i]
			}
			b.WriteByte(e)
			continue
		}
		k := j + 1
		for k < len(text) && k < j+1+digits && strings.IndexByte(digitsOf[base], text[k]) >= 0 {
			k++
		}
		code, err := strconv.ParseUint(text[j+1:k], base, 32)
		if err != nil || !utf8.ValidRune(rune(code)) {
			b.WriteString(text[j:k])
		} else {
			b.WriteRune(rune(code))
		}
		j = k - 1
	}
	return b.String()
}

func isExponent(s string, j int) bool {
	if j+1 >= len(s) || s[j] != 'e' && s[j] != 'E' {
		return false
	}
	if s[j+1] == '+' || s[j+1] == '-' {
		return j+2 < len(s) && isDigit(s[j+2])
	}
	return isDigit(s[j+1])
}

// lineEnd is where a line comment at i ends: at a newline, which is \n
// alone to MySQL and SQLite, \n or \r to PostgreSQL.
func (t *tokenizer) lineEnd(i int) int {
	ends := "\n"
	if t.d.escapeStrings {
		ends = "\n\r"
	}
	if end := strings.IndexAny(t.sql[i:], ends); end >= 0 {
		return i + end + 1
	}
	return len(t.sql)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isIdentStart: letters, _ and any byte of a multi-byte UTF-8 character.
func isIdentStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c >= 0x80
}
func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '$' }

// FirstWord returns the first token of text as dialect reads it, past
// blanks and comments, in upper case when it is a word, and "" when it is
// none or text cannot be split into tokens.
func FirstWord(dialectName, text string) string {
	d, ok := dialects[dialectName]
	if !ok {
		return ""
	}
	tokens, _, err := tokenize(d, d.readings()[0], text)
	if err != nil || len(tokens) == 0 || tokens[0].Kind != Word {
		return ""
	}
	return asciiUpper(tokens[0].Text)
}
