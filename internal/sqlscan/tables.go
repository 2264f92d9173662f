package sqlscan

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// ErrUnsure is wrapped by the errors of SQL whose tables cannot be told for
// certain: a statement kind or a construct the reader does not know, text
// that cannot be split into tokens ([ErrSyntax]), or an unknown dialect.
var ErrUnsure = errors.New("sqlscan: cannot tell which tables the SQL names")

// Table is a table (or view) a statement names.
type Table struct {
	Qualifier string // the schema or database, "" when none is written
	Name      string // as the dialect resolves it: PostgreSQL folds an unquoted name to lower case
	Quoted    bool   // written in quotes, so PostgreSQL compares it exactly
}

// Scan is what Read found in SQL text.
type Scan struct {
	// Tables the statements name, each once, in order. Complete only when
	// Read returned no error.
	Tables []Table
	// Times is how many times each table is named, by its name in lower
	// case, however quoted or qualified; of SQL not read for certain, how
	// many times each word is written other than as a column's qualifier
	// (users.id), for a caller that must not take a table named again for
	// one named once.
	Times map[string]int
	// Kinds is each statement's first keyword, upper case ("SELECT",
	// "SAVEPOINT"), or "(" for a statement in parentheses.
	Kinds []string
	// Words, when Read returns an error, is every identifier of the text
	// and every word inside its strings (or, for text that cannot be split,
	// every word of it), for a caller that must refuse SQL it cannot read
	// when a name it knows appears.
	Words []string
}

// Read returns the tables that sql names, read as dialect ("mysql",
// "postgres", "sqlite") reads it. Its error wraps [ErrUnsure] when it cannot
// tell, and then Tables may be incomplete but Words is filled. Where the
// server's settings change how backslashes read (MySQL's
// NO_BACKSLASH_ESCAPES and ANSI_QUOTES, PostgreSQL's
// standard_conforming_strings), every reading of the text counts.
func Read(dialectName, sql string) (Scan, error) {
	d, ok := dialects[dialectName]
	if !ok {
		return unsureScan(&dialect{}, sql), fmt.Errorf("%w: unknown dialect %q", ErrUnsure, dialectName)
	}
	var scan Scan
	var firstErr error
	read := 0
	for i, r := range d.readings() {
		tokens, ambiguous, err := tokenize(d, r, sql)
		if err == nil {
			read++
			one, err := readTokens(d, tokens)
			scan.merge(one)
			if firstErr == nil {
				firstErr = err
			}
		} else if i == 0 && !ambiguous || errors.Is(err, ErrUnsure) {
			return unsureScan(d, sql), fmt.Errorf("%w: %w", ErrUnsure, err)
		}
		if i == 0 && !ambiguous {
			break // no backslash whose reading depends on settings
		}
	}
	if read == 0 {
		return unsureScan(d, sql), fmt.Errorf("%w: %w: it cannot be read with any setting of backslash escapes", ErrUnsure, ErrSyntax)
	}
	if firstErr != nil { // the walk stopped part way: its count is of the tables read before
		scan.Times = wordTimes(d, sql)
	}
	return scan, firstErr
}

// unsureScan is what Read gives of SQL it cannot split into tokens.
func unsureScan(d *dialect, sql string) Scan {
	return Scan{Words: rawWords(sql), Times: wordTimes(d, sql)}
}

// wordTimes counts, in lower case, the runs of identifier characters of
// text, wherever they stand, but those before a dot (a column's qualifier,
// quoted or not: users.id, "users"."id"), which name no table read; as the
// dialect keeps a name (PostgreSQL's first 63 bytes).
func wordTimes(d *dialect, text string) map[string]int {
	times := map[string]int{}
	for i := 0; i < len(text); {
		if !isIdentChar(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isIdentChar(text[j]) {
			j++
		}
		k := j
		for k < len(text) && strings.IndexByte("\"`]", text[k]) >= 0 {
			k++
		}
		if k >= len(text) || text[k] != '.' {
			times[strings.ToLower(d.truncated(text[i:j]))]++
		}
		i = j
	}
	return times
}

func (s *Scan) merge(o Scan) {
	for _, t := range o.Tables {
		if !slices.Contains(s.Tables, t) {
			s.Tables = append(s.Tables, t)
		}
	}
	for name, n := range o.Times { // each reading names a table as often as it reads it
		if s.Times == nil {
			s.Times = map[string]int{}
		}
		s.Times[name] = max(s.Times[name], n)
	}
	if s.Kinds == nil {
		s.Kinds = o.Kinds
	}
	s.Words = append(s.Words, o.Words...)
}

// rawWords returns every run of identifier characters in text, wherever it
// stands; where text holds backslashes, also those of text read with
// MySQL's backslash escapes ('FROM\nt' names t, 'us\ers' is users).
func rawWords(text string) []string {
	words := wordsOf(text)
	if strings.IndexByte(text, '\\') >= 0 {
		words = append(words, wordsOf(unescape(text, 0, true))...)
	}
	return words
}

// wordsOf returns the runs of identifier characters of text, but a reserved
// keyword (neverBareTable) right after no opening quote, nor after a dot.
func wordsOf(text string) []string {
	var words []string
	for i := 0; i < len(text); {
		if text[i] < 0x80 && !isIdentChar(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && (text[j] >= 0x80 || isIdentChar(text[j])) {
			j++
		}
		dot := strings.HasSuffix(strings.TrimRight(text[:i], " \t\r\n"), ".")
		quoted := i > 0 && strings.IndexByte("\"`[", text[i-1]) >= 0
		if dot || quoted || !neverBareTable[asciiUpper(text[i:j])] {
			words = append(words, text[i:j])
		}
		i = j
	}
	return words
}

// readTokens finds the tables of the statements in tokens.
func readTokens(d *dialect, tokens []Token) (Scan, error) {
	r := &reader{d: d, tokens: tokens}
	r.script()
	if r.err == nil {
		return r.scan, nil
	}
	r.scan.Words = tokenWords(d, tokens, r.scan.Words, 0)
	return r.scan, r.err
}

// tokenWords appends the words of tokens: identifiers as the server spells
// them (PostgreSQL's truncated too), and those of strings, read as SQL as
// well, for a string may be a function's body (DO $$ ... $$).
func tokenWords(d *dialect, tokens []Token, words []string, depth int) []string {
	for i, t := range tokens {
		switch t.Kind {
		case Word, Quoted:
			if t.Kind == Word && neverBareTable[asciiUpper(t.Text)] && (i == 0 || tokens[i-1] != Token{Punct, "."}) {
				continue // the keyword: a table of that name is written quoted, or after its schema's dot
			}
			words = append(words, t.Text)
			if short := d.truncated(t.Text); short != t.Text {
				words = append(words, short)
			}
		case MaybeQuoted: // MySQL "...": a name under ANSI_QUOTES, a string else (EXECUTE IMMEDIATE "DELETE FROM t")
			words = append(words, t.Text)
			fallthrough
		case String:
			words = append(words, rawWords(t.Text)...)
			if depth < 2 {
				if inner, _, err := tokenize(d, reading{}, t.Text); err == nil {
					words = tokenWords(d, inner, words, depth+1)
				}
			}
		}
	}
	return words
}

// neverBareTable are keywords each dialect reserves, so that a table of
// their name (a MapTable "order") is always written quoted: unquoted, they
// are the keyword (ORDER BY), not that table.
var neverBareTable = wordSet("SELECT FROM WHERE GROUP ORDER HAVING UNION AND OR NOT NULL IN IS AS ON INTO CASE WHEN THEN ELSE DISTINCT ALL LIMIT")

// reader walks the tokens of one reading. The walk is not a parser: it knows
// where each statement form puts its tables and skips what names none.
type reader struct {
	d      *dialect
	tokens []Token
	pos    int
	limit  int   // the end of the statement or parenthesized group being read
	match  []int // for each "(", the index of its ")"
	ctes   []Table
	// written: the table reference being read is what a statement writes,
	// always a table, even when a CTE has its name.
	written bool
	depth   int // of statements and groups being read, against hostile nesting
	scan    Scan
	err     error
}

// maxDepth bounds the nesting of statements and parentheses read.
const maxDepth = 200

// fail notes the first reason the tables cannot be told.
func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrUnsure, fmt.Sprintf(format, args...))
	}
}

func (r *reader) script() {
	r.match = make([]int, len(r.tokens))
	var open []int
	var ends []int // the top-level ";"
	for i, t := range r.tokens {
		switch {
		case t.is("("):
			open = append(open, i)
		case t.is(")"):
			if len(open) == 0 {
				r.fail("unbalanced parentheses")
				return
			}
			r.match[open[len(open)-1]] = i
			open = open[:len(open)-1]
		case t.is(";") && len(open) == 0:
			ends = append(ends, i)
		}
	}
	if len(open) > 0 {
		r.fail("unbalanced parentheses")
		return
	}
	ends = append(ends, len(r.tokens))
	if r.d.dollarQuotes {
		for i, t := range r.tokens[:max(len(r.tokens)-1, 0)] {
			if (t.Kind == Word || t.Kind == Quoted) && stringReaders[asciiLower(t.Text)] && r.tokens[i+1].is("(") {
				r.fail("%s reads the table, or runs the query, a string names", t.Text) // its Words hold the string's
			}
		}
	}
	for _, end := range ends {
		r.limit = end
		if r.pos < end {
			first := r.tokens[r.pos]
			r.scan.Kinds = append(r.scan.Kinds, asciiUpper(first.Text))
			r.statement()
			if r.pos != end {
				r.fail("%s statement not read to its end", asciiUpper(first.Text))
			}
		}
		r.pos = end + 1
	}
}

func (t Token) is(punct string) bool { return t.Kind == Punct && t.Text == punct }

// keyword reports whether t is the unquoted word w (upper case).
// Servers read keywords in ASCII: "aſ" (U+017F, which Unicode folds to s)
// is a name, not AS.
func (t Token) keyword(w string) bool { return t.Kind == Word && asciiUpper(t.Text) == asciiUpper(w) }

func (r *reader) done() bool { return r.pos >= r.limit }

// peek returns the token n after the current one, or a zero Token past the
// statement's end.
func (r *reader) peek(n int) Token {
	if r.pos+n >= r.limit {
		return Token{Kind: Punct}
	}
	return r.tokens[r.pos+n]
}

// accept moves past the keywords ws if they come next, in order.
func (r *reader) accept(ws ...string) bool {
	for i, w := range ws {
		if !r.peek(i).keyword(w) {
			return false
		}
	}
	r.pos += len(ws)
	return true
}

func (r *reader) acceptPunct(p string) bool {
	if r.peek(0).is(p) {
		r.pos++
		return true
	}
	return false
}

// group reads the parenthesized group at the current "(" with read, and
// moves past its ")".
func (r *reader) group(read func()) {
	end, limit := r.match[r.pos], r.limit
	r.pos++
	r.limit = end
	if r.depth++; r.depth > maxDepth {
		r.fail("nested deeper than %d", maxDepth)
		r.pos = end
	} else {
		read()
	}
	r.depth--
	if r.pos != end {
		r.fail("a parenthesized group not read to its end")
	}
	r.pos, r.limit = end+1, limit
}

// startsStatement reports whether the group at the current "(" holds a
// statement (a subquery, maybe in more parentheses) rather than an
// expression or a list.
func (r *reader) startsStatement() bool {
	i := r.pos + 1
	for i < r.limit && r.tokens[i].is("(") {
		i++
	}
	if i >= r.limit {
		return false
	}
	for _, w := range [...]string{"SELECT", "WITH", "VALUES", "TABLE", "INSERT", "UPDATE", "DELETE", "REPLACE"} {
		if r.tokens[i].keyword(w) {
			function := i+1 < r.limit && r.tokens[i+1].is("(") && w != "VALUES" && w != "SELECT" && w != "WITH" // REPLACE(s, a, b), INSERT(s, ...)
			return !function
		}
	}
	return false
}

// statement reads one statement up to r.limit.
func (r *reader) statement() {
	scope := len(r.ctes) // CTEs are visible to their own statement only
	r.depth++
	defer func() { r.ctes, r.depth = r.ctes[:scope], r.depth-1 }()
	if r.depth > maxDepth {
		r.fail("nested deeper than %d", maxDepth)
		r.pos = r.limit
		return
	}
	t := r.peek(0)
	if t.is("(") {
		r.group(r.statement)
		r.rest(restFlags{})
		return
	}
	if t.Kind != Word {
		r.fail("a statement starting with %q", t.Text)
		r.pos = r.limit
		return
	}
	kind := asciiUpper(t.Text)
	r.pos++
	switch kind {
	case "WITH":
		r.with()
		r.statement()
	case "SELECT", "VALUES":
		r.rest(restFlags{})
	case "TABLE": // TABLE t, short for SELECT * FROM t
		r.tableRef(bareName)
		r.rest(restFlags{})
	case "INSERT", "REPLACE":
		r.modifiers()
		r.accept("INTO") // optional in MySQL
		r.writtenRef(target)
		r.rest(restFlags{})
	case "UPDATE":
		r.modifiers()
		r.writtenRef(fromItem)
		r.rest(restFlags{fromList: true})
	case "DELETE":
		r.delete()
	case "TRUNCATE":
		r.accept("TABLE")
		r.tableRef(bareName)
		r.rest(restFlags{fromList: true, listKind: bareName})
	case "CREATE":
		r.create()
	case "ALTER":
		r.alter()
	case "DROP":
		r.drop()
	case "COPY":
		if r.peek(0).is("(") {
			r.group(r.statement)
		} else {
			r.tableRef(bareName)
		}
		r.pos = r.limit // columns, FROM/TO a file or STDIN, options: no table
	case "LOCK":
		_ = r.accept("TABLES") || r.accept("TABLE")
		for {
			r.tableRef(target)
			for !r.done() && !r.peek(0).is(",") {
				r.pos++ // READ, WRITE, IN ... MODE, NOWAIT
			}
			if !r.acceptPunct(",") {
				break
			}
		}
	case "SAVEPOINT", "RELEASE", "ROLLBACK", "BEGIN", "START", "COMMIT", "END", "UNLOCK":
		if kind == "BEGIN" && r.peek(0).keyword("NOT") { // MariaDB's compound statement: BEGIN NOT ATOMIC ... END
			r.fail("a compound statement (BEGIN NOT ATOMIC) is not read")
			r.pos = r.limit
			return
		}
		for ; !r.done(); r.pos++ { // transaction control names no table
			if k := r.peek(0).Kind; k != Word && k != Quoted {
				r.fail("%s followed by %q", kind, r.peek(0).Text)
			}
		}
	default:
		r.fail("%s statements are not read", kind)
		r.pos = r.limit
	}
}

// modifiers skips INSERT, UPDATE and DELETE modifiers: MySQL's
// LOW_PRIORITY, DELAYED, HIGH_PRIORITY, QUICK, IGNORE; SQLite's OR REPLACE.
func (r *reader) modifiers() {
	for {
		switch {
		case r.d.execComments && r.nameFollows(1) && (r.accept("LOW_PRIORITY") || r.accept("DELAYED") || r.accept("HIGH_PRIORITY") || r.accept("QUICK") || r.accept("IGNORE")):
		case r.d.inTable && r.peek(0).keyword("OR") && r.nameFollows(2):
			r.pos += 2
		default:
			return // a table so named: UPDATE quick SET ...
		}
	}
}

// nameFollows reports whether the token n after the current one may be a
// name, so that the current word is a modifier of it rather than a table
// named like one (FROM only JOIN t, UPDATE quick SET ...).
func (r *reader) nameFollows(n int) bool {
	switch t := r.peek(n); t.Kind {
	case Quoted, MaybeQuoted:
		return true
	case Word:
		return !notAlias[asciiUpper(t.Text)] || t.keyword("INTO") || t.keyword("FROM") || t.keyword("LOW_PRIORITY") || t.keyword("IGNORE") || t.keyword("QUICK")
	case Punct:
		return t.is("(")
	}
	return false
}

// delete reads DELETE FROM t [USING ...] and MySQL's DELETE t1, t2 FROM ...
func (r *reader) delete() {
	r.modifiers()
	if r.accept("FROM") {
		r.writtenRef(fromItem)
		r.rest(restFlags{fromList: true, usingTables: true})
		return
	}
	for {
		r.writtenRef(target)
		if !r.acceptPunct(",") {
			break
		}
	}
	if !r.peek(0).keyword("FROM") {
		r.fail("DELETE without FROM")
	}
	r.rest(restFlags{}) // DELETE t FROM ...: a USING there is a join's
}

// with reads the CTEs of WITH [RECURSIVE] name AS (...), ... : their names
// are not tables in the statement that follows, but their bodies' tables are.
func (r *reader) with() {
	recursive := r.accept("RECURSIVE")
	for {
		name, ok := r.name()
		if !ok {
			r.fail("a CTE without a name")
			return
		}
		if r.peek(0).is("(") {
			r.group(func() { r.pos = r.limit }) // column names
		}
		if !r.accept("AS") {
			r.fail("CTE %s without AS", name.Name)
			return
		}
		r.accept("NOT")
		r.accept("MATERIALIZED")
		if !r.peek(0).is("(") {
			r.fail("CTE %s without a body", name.Name)
			return
		}
		if recursive { // the body may read the CTE itself
			r.ctes = append(r.ctes, name)
		}
		r.group(r.statement)
		if !recursive {
			r.ctes = append(r.ctes, name)
		}
		if r.peek(0).keyword("SEARCH") || r.peek(0).keyword("CYCLE") {
			r.fail("CTE %s with %s", name.Name, r.peek(0).Text)
			return
		}
		if !r.acceptPunct(",") {
			return
		}
	}
}

// startsWith reports whether a WITH at the current token begins CTEs (and
// not WITH ORDINALITY, WITH (options), WITH TIME ZONE, ...).
func (r *reader) startsWith() bool {
	i := 1
	if r.peek(i).keyword("RECURSIVE") {
		return true
	}
	if k := r.peek(i).Kind; k != Word && k != Quoted {
		return false
	}
	i++
	if r.peek(i).is("(") {
		i = r.match[r.pos+i] - r.pos + 1
	}
	if !r.peek(i).keyword("AS") {
		return false
	}
	next := r.peek(i + 1)
	return next.is("(") || next.keyword("NOT") || next.keyword("MATERIALIZED")
}

func (r *reader) create() {
	r.accept("OR", "REPLACE")
	for r.accept("UNIQUE") || r.accept("FULLTEXT") || r.accept("SPATIAL") || r.accept("TEMP") || r.accept("TEMPORARY") ||
		r.accept("UNLOGGED") || r.accept("GLOBAL") || r.accept("LOCAL") || r.accept("MATERIALIZED") {
	}
	if r.peek(0).keyword("VIRTUAL") { // SQLite: its module may read a table its arguments name, fts5(content='t')
		r.fail("CREATE VIRTUAL TABLE is not read")
		r.pos = r.limit
		return
	}
	switch {
	case r.accept("INDEX"):
		r.accept("CONCURRENTLY")
		r.accept("IF", "NOT", "EXISTS")
		if !r.peek(0).keyword("ON") {
			r.name() // the index's own name
		}
		if r.accept("USING") { // MySQL: USING BTREE before ON
			r.pos++
		}
		if !r.accept("ON") {
			r.fail("CREATE INDEX without ON")
			return
		}
		r.tableRef(bareName)
		r.rest(restFlags{})
	case r.accept("TABLE"):
		r.accept("IF", "NOT", "EXISTS")
		r.tableRef(bareName)
		switch {
		case r.accept("LIKE"): // MySQL: CREATE TABLE x LIKE t
			r.tableRef(bareName)
		case r.peek(0).is("(") && r.peek(1).keyword("LIKE"): // PostgreSQL: (LIKE t ...)
			r.group(func() { r.pos++; r.tableRef(bareName); r.rest(restFlags{}) })
		case r.accept("PARTITION", "OF"):
			r.tableRef(bareName)
		}
		r.rest(restFlags{})
	case r.accept("VIEW"):
		r.accept("IF", "NOT", "EXISTS")
		r.tableRef(bareName)
		r.rest(restFlags{})
	case r.accept("SEQUENCE"):
		r.rest(restFlags{ownedBy: true})
	default:
		r.fail("CREATE %s is not read", r.peek(0).Text)
		r.pos = r.limit
	}
}

func (r *reader) alter() {
	r.accept("ONLINE")
	r.accept("IGNORE")
	switch {
	case r.accept("TABLE"):
		r.accept("IF", "EXISTS")
		r.accept("ONLY")
		r.tableRef(bareName)
		r.rest(restFlags{alterTable: true})
	case r.accept("VIEW"):
		r.tableRef(bareName)
		r.rest(restFlags{})
	case r.accept("INDEX"): // ALTER INDEX i RENAME TO j: index names only
		r.rest(restFlags{})
	case r.accept("SEQUENCE"):
		r.rest(restFlags{ownedBy: true})
	default:
		r.fail("ALTER %s is not read", r.peek(0).Text)
		r.pos = r.limit
	}
}

func (r *reader) drop() {
	r.accept("TEMPORARY")
	r.accept("MATERIALIZED")
	switch {
	case r.accept("TABLE"), r.accept("VIEW"):
		r.accept("IF", "EXISTS")
		for {
			r.tableRef(bareName)
			if !r.acceptPunct(",") {
				break
			}
		}
		r.rest(restFlags{})
	case r.accept("INDEX"):
		r.accept("CONCURRENTLY")
		r.accept("IF", "EXISTS")
		for { // index names, then MySQL's ON t
			r.name()
			if !r.acceptPunct(",") {
				break
			}
		}
		if r.accept("ON") {
			r.tableRef(bareName)
		}
		r.rest(restFlags{})
	case r.accept("SEQUENCE"):
		r.rest(restFlags{})
	default:
		r.fail("DROP %s is not read", r.peek(0).Text)
		r.pos = r.limit
	}
}

// restFlags says what the clauses after a statement's head may hold.
type restFlags struct {
	fromList    bool    // a comma starts another table (FROM a, b; UPDATE a, b)
	listKind    refKind // what those tables are
	usingTables bool    // DELETE FROM t USING u: the first USING is a table list
	alterTable  bool    // ALTER TABLE ... RENAME TO t, WITH TABLE t, ATTACH PARTITION t
	ownedBy     bool    // ALTER SEQUENCE ... OWNED BY t.c
}

// stringReaders are PostgreSQL's functions that read a table, or run a
// query, named by a string argument.
var stringReaders = map[string]bool{
	"table_to_xml": true, "table_to_xmlschema": true, "table_to_xml_and_xmlschema": true,
	"query_to_xml": true, "query_to_xmlschema": true, "query_to_xml_and_xmlschema": true,
	"ts_stat": true, "ts_rewrite": true,
}

// clauseWords end a list of tables.
var clauseWords = wordSet("WHERE GROUP HAVING ORDER LIMIT OFFSET FETCH WINDOW UNION INTERSECT EXCEPT SET SELECT RETURNING INTO LOCK PROCEDURE") // VALUES never follows a table of a list

// rest reads clauses to the end of the statement or group, where FROM,
// JOIN, INTO and REFERENCES lead to tables and parentheses to subqueries.
func (r *reader) rest(f restFlags) {
	scope := len(r.ctes)
	for !r.done() {
		t := r.peek(0)
		prev := Token{}
		if r.pos > 0 {
			prev = r.tokens[r.pos-1]
		}
		if t.Kind == Word && (prev.is(".") || prev.keyword("AS") && r.outputName()) { // t.from, AS join: a name
			r.pos++
			continue
		}
		switch {
		case t.keyword("FOR") && r.peek(1).keyword("SYSTEM_TIME"): // MariaDB: FROM t FOR SYSTEM_TIME ALL, u
			r.pos += 2
			continue
		case t.is("("):
			if r.startsStatement() {
				r.group(r.statement)
			} else {
				r.group(r.inner)
			}
			continue
		case t.is(",") && f.fromList:
			r.pos++
			r.tableRef(f.listKind)
			continue
		case t.keyword("FROM") && !(prev.keyword("DISTINCT") && r.pos > 1 && (r.tokens[r.pos-2].keyword("IS") || r.tokens[r.pos-2].keyword("NOT"))):
			r.pos++
			f.fromList, f.listKind = true, fromItem
			r.tableRef(fromItem)
			continue
		case (t.keyword("JOIN") || t.keyword("STRAIGHT_JOIN")) && !r.indexHintFor(): // not MySQL's USE INDEX FOR JOIN
			r.pos++
			f.fromList, f.listKind = true, fromItem
			r.tableRef(fromItem)
			continue
		case t.keyword("USING") && f.usingTables: // DELETE FROM t USING ..., before any join's USING (columns)
			r.pos++
			f.fromList, f.listKind, f.usingTables = true, fromItem, false
			r.tableRef(fromItem)
			continue
		case t.keyword("INTO"): // SELECT ... INTO t (PostgreSQL makes a table), INTO @v, INTO OUTFILE
			r.pos++
			f.fromList = false
			if r.peek(0).is("@") || r.peek(0).keyword("OUTFILE") || r.peek(0).keyword("DUMPFILE") {
				continue
			}
			for r.accept("TEMP") || r.accept("TEMPORARY") || r.accept("UNLOGGED") || r.accept("TABLE") {
			}
			r.tableRef(target)
			continue
		case t.keyword("REFERENCES"):
			r.pos++
			r.tableRef(bareName)
			continue
		case r.inTable():
			continue
		case t.keyword("WITH") && r.startsWith():
			r.pos++
			r.with()
			continue
		case t.keyword("INHERITS") && r.peek(1).is("("):
			r.pos++
			r.group(func() { r.tableRef(bareName); r.rest(restFlags{fromList: true, listKind: bareName}) })
			continue
		case t.keyword("TABLE"), // INSERT INTO t TABLE u, UNION TABLE u, EXCHANGE PARTITION p WITH TABLE u
			f.alterTable && (t.keyword("RENAME") && (r.peek(1).keyword("TO") || r.peek(1).keyword("AS")) ||
				t.keyword("PARTITION") && (prev.keyword("ATTACH") || prev.keyword("DETACH"))):
			r.pos++
			r.accept("TO")
			r.accept("AS")
			r.tableRef(bareName)
			continue
		case f.ownedBy && t.keyword("OWNED") && r.peek(1).keyword("BY"):
			r.pos += 2
			if column, ok := r.qualifiedName(); ok && column.Qualifier != "" { // t.c, s.t.c
				r.addTable(splitColumn(column))
			}
			continue
		case r.upsertClause(), t.keyword("RETURNING") && r.startsClause():
			f.fromList = false
			r.ctes = r.ctes[:scope] // a WITH of the INSERT's query is not seen past it
		case t.keyword("FOR") && !prev.keyword("INDEX") && !prev.keyword("KEY") && (r.peek(1).keyword("UPDATE") || r.peek(1).keyword("SHARE") || r.peek(1).keyword("NO") || r.peek(1).keyword("KEY")), // FOR UPDATE, not an alias "for"
			t.Kind == Word && clauseWords[asciiUpper(t.Text)] && r.startsClause() && !(prev.keyword("FOR") && (t.keyword("ORDER") || t.keyword("GROUP"))): // not USE INDEX FOR ORDER BY
			f.fromList = false
		}
		r.pos++
	}
}

// outputName reports whether the word after an AS is a name (SELECT 1 AS
// from), not a keyword that may follow AS (CREATE TABLE x AS TABLE t).
func (r *reader) outputName() bool {
	switch t := r.peek(0); {
	case t.keyword("FROM"), t.keyword("JOIN"), t.keyword("STRAIGHT_JOIN"), t.keyword("INTO"), t.keyword("REFERENCES"):
		return true
	case t.keyword("TABLE"):
		next := r.peek(1)
		return next.Kind == Punct || next.keyword("FROM")
	}
	return false
}

// startsClause reports whether the clause word at the current token starts
// its clause, as what follows it shows; otherwise it is a name (a column
// b.offset = 1, offset IS NULL, an alias JOIN b lock ON ...), which the
// databases that do not reserve it take it for.
func (r *reader) startsClause() bool {
	next := r.peek(1)
	if next.Kind == Punct && next.Text != "" && strings.Contains("=<>!,).", next.Text) {
		return false
	}
	switch t := r.peek(0); {
	case t.keyword("GROUP"), t.keyword("ORDER"):
		return next.keyword("BY")
	case t.keyword("LIMIT"), t.keyword("OFFSET"):
		return next.Kind == Number || next.Kind == Param || next.keyword("ALL") || next.Kind == Punct && next.Text != "" && strings.Contains("?(:$@", next.Text)
	case t.keyword("FETCH"):
		return next.keyword("FIRST") || next.keyword("NEXT")
	case t.keyword("WINDOW"):
		return (next.Kind == Word || next.Kind == Quoted) && r.peek(2).keyword("AS")
	case t.keyword("LOCK"):
		return r.d.execComments && next.keyword("IN") // MySQL: LOCK IN SHARE MODE
	case t.keyword("PROCEDURE"):
		return next.keyword("ANALYSE")
	case t.keyword("SET"):
		if next.is("(") { // SET (a, b) = ...
			end := r.match[r.pos+1]
			return end+1 < r.limit && r.tokens[end+1].is("=")
		}
		after := r.peek(2)
		return (next.Kind == Word || next.Kind == Quoted || next.Kind == MaybeQuoted) && (after.is("=") || after.is(".") || after.is("[") || after.is(":"))
	}
	return true
}

// upsertClause reports whether the current ON starts ON CONFLICT (target)
// DO or ON DUPLICATE KEY UPDATE, not a join condition on a column so named.
func (r *reader) upsertClause() bool {
	if !r.peek(0).keyword("ON") {
		return false
	}
	switch next := r.peek(2); {
	case r.peek(1).keyword("CONFLICT"):
		return next.is("(") || next.keyword("DO") || next.keyword("ON") && r.peek(3).keyword("CONSTRAINT")
	case r.peek(1).keyword("DUPLICATE"):
		return next.keyword("KEY")
	}
	return false
}

// indexHintFor reports whether the word before the current one is the FOR
// of MySQL's USE/FORCE/IGNORE INDEX FOR JOIN, not an alias spelled "for".
func (r *reader) indexHintFor() bool {
	return r.d.execComments && r.pos > 1 && r.tokens[r.pos-1].keyword("FOR") && (r.tokens[r.pos-2].keyword("INDEX") || r.tokens[r.pos-2].keyword("KEY"))
}

// inner reads a parenthesized group that is no statement: an expression, a
// list, a function's arguments, column definitions.
func (r *reader) inner() {
	for !r.done() {
		switch t := r.peek(0); {
		case t.is("("):
			if r.startsStatement() {
				r.group(r.statement)
			} else {
				r.group(r.inner)
			}
		case t.keyword("REFERENCES"):
			r.pos++
			r.tableRef(bareName)
		case r.inTable():
		default:
			r.pos++
		}
	}
}

// inTable reads SQLite's x [NOT] IN t, whose right side is a table (or a
// table function) when it is a name, and reports whether it was one.
func (r *reader) inTable() bool {
	next := r.peek(1).Kind
	if !r.d.inTable || !r.peek(0).keyword("IN") || next != Word && next != Quoted && next != MaybeQuoted && next != String {
		return false
	}
	r.pos++
	if next == String { // x IN 'name': SQLite takes a string there for the table of that name
		r.pos++
		if name := (Table{Name: r.peek(-1).Text, Quoted: true}); !r.isCTE(name) {
			r.addTable(name)
		}
		return true
	}
	name, ok := r.qualifiedName()
	switch {
	case !ok:
		r.fail("no table name after IN, at %q", r.peek(0).Text)
		r.pos = r.limit
	case r.peek(0).is("("): // a table function: x IN json_each(?)
		r.group(r.inner)
	case !r.isCTE(name):
		r.addTable(name)
	}
	return true
}

// refKind is the place a table reference stands in.
type refKind uint8

const (
	fromItem refKind = iota // FROM, JOIN, UPDATE: may be a subquery, a join in parentheses, a function, aliased
	target                  // INSERT INTO, DELETE, LOCK: a name, maybe aliased
	bareName                // DDL, TRUNCATE, REFERENCES: a name
)

// notAlias are the words that may follow a table and are no alias of it.
var notAlias = wordSet(`ON USING WHERE GROUP HAVING ORDER LIMIT OFFSET FETCH WINDOW QUALIFY UNION INTERSECT EXCEPT MINUS
	JOIN INNER LEFT RIGHT FULL OUTER CROSS NATURAL STRAIGHT_JOIN LATERAL SET VALUES SELECT RETURNING FOR INTO USE FORCE
	IGNORE PARTITION INDEXED NOT TABLESAMPLE WITH LOCK READ WRITE LOW_PRIORITY LOCAL IN NOWAIT CASCADE RESTRICT RESTART
	CONTINUE DEFAULT LIKE FROM TO DO ADD DROP ALTER RENAME MODIFY CHANGE ENGINE AND OR OVERRIDING REFERENCES CHECK
	CONSTRAINT PRIMARY FOREIGN UNIQUE KEY INDEX COLLATE WHEN THEN ELSE END AS PROCEDURE OWNER ATTACH DETACH INHERITS
	EXCHANGE COMMENT CHARACTER CHARSET AUTO_INCREMENT ROW_FORMAT TABLE VALUE`)

// writtenRef reads the table reference a statement writes: a table, never
// the CTE of its name (SQLite and PostgreSQL write the table; MySQL refuses).
func (r *reader) writtenRef(kind refKind) {
	r.written = true
	r.tableRef(kind)
	r.written = false
}

// tableRef reads one table reference and notes its table.
func (r *reader) tableRef(kind refKind) {
	written := r.written
	r.written = false // not the tables of a subquery in it
	if r.nameFollows(1) {
		r.accept("ONLY")
	}
	if kind == fromItem {
		if r.nameFollows(1) {
			r.accept("LATERAL")
		}
		if r.peek(0).is("(") {
			if r.startsStatement() && !r.peek(1).is("(") {
				r.group(r.statement)
			} else { // a join in parentheses: (a JOIN b ON ...), MySQL's (a, b), ((SELECT ...) s, b)
				r.group(func() { r.tableRef(fromItem); r.rest(restFlags{fromList: true}) })
			}
			r.alias()
			return
		}
	}
	name, ok := r.qualifiedName()
	if !ok {
		r.fail("no table name where one stands, at %q", r.peek(0).Text)
		r.pos = r.limit
		return
	}
	if kind == fromItem && r.peek(0).is("(") { // a table function: unnest(x), json_each(x)
		r.group(r.inner)
		r.alias()
		return
	}
	if written || !r.isCTE(name) {
		r.addTable(name)
	}
	r.acceptPunct("*") // PostgreSQL: t * includes descendant tables
	if kind != bareName {
		r.alias()
	}
}

// alias skips [AS] alias [(column aliases)].
func (r *reader) alias() {
	t := r.peek(0)
	switch {
	case r.accept("AS"):
		r.pos++
	case t.Kind == Quoted || t.Kind == Word && (!notAlias[asciiUpper(t.Text)] || r.peek(1).is(",")): // a keyword before a comma is an alias: FROM t qualify, u
		r.pos++
	default:
		return
	}
	if r.peek(0).is("(") {
		r.group(func() { r.pos = r.limit })
	}
}

// name reads one identifier.
func (r *reader) name() (Table, bool) {
	t := r.peek(0)
	switch {
	case t.Kind == Quoted || t.Kind == MaybeQuoted:
		r.pos++
		return Table{Name: r.d.truncated(t.Text), Quoted: true}, true
	case t.Kind == Word:
		r.pos++
		if r.d.foldLower {
			return Table{Name: r.d.truncated(asciiLower(t.Text))}, true
		}
		return Table{Name: t.Text}, true
	}
	return Table{}, false
}

// qualifiedName reads name[.name[.name]]; MySQL's db.t.* counts as db.t.
func (r *reader) qualifiedName() (Table, bool) {
	name, ok := r.name()
	if !ok {
		return Table{}, false
	}
	for r.peek(0).is(".") {
		if r.peek(1).is("*") {
			r.pos += 2
			break
		}
		r.pos++
		next, ok := r.name()
		if !ok {
			return Table{}, false
		}
		if name.Qualifier != "" {
			name.Qualifier += "."
		}
		name.Qualifier += name.Name
		name.Name, name.Quoted = next.Name, next.Quoted
	}
	return name, true
}

// splitColumn turns the column t.c (or s.t.c) into its table.
func splitColumn(column Table) Table {
	qualifier, name := "", column.Qualifier
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		qualifier, name = name[:i], name[i+1:]
	}
	return Table{Qualifier: qualifier, Name: name}
}

func (r *reader) isCTE(t Table) bool {
	if t.Qualifier != "" {
		return false
	}
	for _, cte := range r.ctes {
		if cte.Name == t.Name || r.d.caseInsensitive && asciiLower(cte.Name) == asciiLower(t.Name) {
			return true
		}
	}
	return false
}

func (r *reader) addTable(t Table) {
	if !slices.Contains(r.scan.Tables, t) {
		r.scan.Tables = append(r.scan.Tables, t)
	}
	if r.scan.Times == nil {
		r.scan.Times = map[string]int{}
	}
	r.scan.Times[strings.ToLower(t.Name)]++ // however quoted or qualified: fail closed where case or a default schema would tell two apart
}

// truncated is name as the dialect keeps it.
func (d *dialect) truncated(name string) string {
	if !d.foldLower {
		return name
	}
	return PostgresName(name)
}

// PostgresName is name as PostgreSQL keeps it: its first 63 bytes, whole
// characters (NAMEDATALEN - 1).
func PostgresName(name string) string {
	const most = 63
	if len(name) <= most {
		return name
	}
	end := most
	for end > 0 && !utf8.RuneStart(name[end]) {
		end--
	}
	return name[:end]
}

// asciiLower folds A-Z only, as PostgreSQL folds unquoted names (in UTF-8)
// and SQLite compares them: other letters keep their case.
func asciiLower(name string) string {
	return strings.Map(func(c rune) rune {
		if 'A' <= c && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}, name)
}

// asciiUpper folds a-z only, as the servers read keywords: a word with
// another letter is a name, whatever Unicode folds it to.
func asciiUpper(word string) string {
	return strings.Map(func(c rune) rune {
		if 'a' <= c && c <= 'z' {
			return c + 'A' - 'a'
		}
		return c
	}, word)
}

func wordSet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}
