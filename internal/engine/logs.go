package engine

import (
	"context"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// GORM's logger prints the file and line of the first caller outside GORM.
// A part of a statement over several databases runs from the plugin's code,
// so its own line would point there: the parts' lines are kept instead, each
// named by its database, and printed as the statement's one line, which GORM
// logs from where the application called it.

// fanLogKey is the Statement.Settings key of the parts' lines of a statement
// over several databases.
type fanLogKey struct{ stmt *gorm.Statement }

// fanLog is the SQL and values of a statement's parts, some written at
// once, explained only if the statement's line is printed. Once that line is
// made it is closed: a session a part's hook kept logs on its own.
type fanLog struct {
	mu      sync.Mutex
	queries []loggedQuery
	kept    int // statements kept whose GORM line is still to come, and dropped
	closed  bool
}

type loggedQuery struct {
	name, sql string // no name: a statement over several databases, which names its parts
	vars      []any
}

// addQuery keeps a part's statement; false once the log is closed.
func (l *fanLog) addQuery(name, sql string, vars []any) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.queries = append(l.queries, loggedQuery{name, sql, vars})
	return true
}

// keep keeps the statement a part ran, its GORM line to be dropped.
func (l *fanLog) keep(name, sql string, vars []any) {
	if l.addQuery(name, sql, vars) {
		l.mu.Lock()
		l.kept++
		l.mu.Unlock()
	}
}

// traced takes a GORM line of a part's statement: dropped if the statement
// was kept, kept if it was not (Scan logs a statement it ran with a logger
// of its own), and false once the log is closed.
func (l *fanLog) traced(fc func() (string, int64)) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return false
	case l.kept > 0:
		l.kept--
	default:
		sql, _ := fc()
		l.queries = append(l.queries, loggedQuery{sql: sql})
	}
	return true
}

// numbered is a PostgreSQL placeholder, renumbered when parts are joined.
var numbered = regexp.MustCompile(`\$(\d+)`)

// write puts the parts' lines in stmt as its SQL and values: their
// placeholders stay, numbered on where the dialect numbers them.
func (l *fanLog) write(stmt *gorm.Statement) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	stmt.SQL.Reset()
	stmt.Vars = nil
	numbers := stmt.Dialector.Name() == "postgres"
	for _, q := range l.queries {
		if stmt.SQL.Len() > 0 {
			stmt.SQL.WriteString("; ")
		}
		sql, offset := q.sql, len(stmt.Vars)
		if numbers && offset > 0 {
			sql = numbered.ReplaceAllStringFunc(sql, func(m string) string {
				n, _ := strconv.Atoi(m[1:])
				return "$" + strconv.Itoa(n+offset)
			})
		}
		if q.name != "" {
			stmt.SQL.WriteString("[")
			stmt.SQL.WriteString(q.name)
			stmt.SQL.WriteString("] ")
		}
		stmt.SQL.WriteString(sql)
		stmt.Vars = append(stmt.Vars, q.vars...)
	}
}

// showFirst puts the first part's SQL and values in stmt, for the plugins
// that read a statement's SQL before its line is written.
func (l *fanLog) showFirst(stmt *gorm.Statement) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queries) > 0 {
		stmt.SQL.WriteString(l.queries[0].sql)
		stmt.Vars = l.queries[0].vars
	}
}

// fanLogOf returns the log of the statement's parts, made on first use.
func fanLogOf(stmt *gorm.Statement) *fanLog {
	if v, ok := loadSetting(stmt, fanLogKey{stmt}); ok {
		return v.(*fanLog)
	}
	v, loaded := stmt.Settings.LoadOrStore(fanLogKey{stmt}, &fanLog{})
	if !loaded {
		fanLogsOpen.Add(1)
	}
	return v.(*fanLog)
}

// fanLogsOpen counts the fan logs made and not yet written, in every
// process's engine: while there are none, a statement's last callback has
// none to look for.
var fanLogsOpen atomic.Int64

// partLogger is the logger of a part: the plugin's last callback keeps the
// SQL of its statements for the line of the statement it is a part of, and
// GORM's line of each is dropped; the rest goes to the application's logger.
type partLogger struct {
	logger.Interface
	log *fanLog
}

func (l partLogger) LogMode(level logger.LogLevel) logger.Interface {
	l.Interface = l.Interface.LogMode(level)
	return l
}

func (l partLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	if !l.log.traced(fc) {
		l.Interface.Trace(ctx, begin, fc, err)
	}
}

// ParamsFilter keeps the application logger's filter of the values it logs.
func (l partLogger) ParamsFilter(ctx context.Context, sql string, params ...any) (string, []any) {
	if f, ok := l.Interface.(gorm.ParamsFilter); ok {
		return f.ParamsFilter(ctx, sql, params...)
	}
	return sql, params
}

// namedLogger begins each line of statements the plugin does not route,
// run on one physical database (a migration's), with the database's name,
// as Config.LogPhysical begins those it routes.
type namedLogger struct {
	logger.Interface
	name string
}

func (l namedLogger) LogMode(level logger.LogLevel) logger.Interface {
	l.Interface = l.Interface.LogMode(level)
	return l
}

func (l namedLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	l.Interface.Trace(ctx, begin, func() (string, int64) {
		sql, rows := fc()
		return "[" + l.name + "] " + sql, rows
	}, err)
}

// ParamsFilter keeps the application logger's filter of the values it logs.
func (l namedLogger) ParamsFilter(ctx context.Context, sql string, params ...any) (string, []any) {
	if f, ok := l.Interface.(gorm.ParamsFilter); ok {
		return f.ParamsFilter(ctx, sql, params...)
	}
	return sql, params
}

// mainDatabase names the plugin's own database in a fan-out's line.
const mainDatabase = "main database"

// logPartTo makes part, a statement of its own run for the statement parent
// on one of its databases, log into parent's line.
func (e *Engine) logPartTo(parent *gorm.Statement, part *gorm.DB) {
	inner := part.Config.Logger
	if pl, ok := inner.(partLogger); ok {
		inner = pl.Interface
	}
	part.Config.Logger = partLogger{Interface: inner, log: fanLogOf(parent)}
}

// logLine makes the statement's SQL what GORM logs for it, after it ran: its
// parts' lines for a statement over several databases, or, with
// Config.LogPhysical, the SQL after the name of the database it ran on.
func (e *Engine) logLine(db *gorm.DB, physical int) {
	stmt := db.Statement
	if db.DryRun {
		return
	}
	fannedOut := false
	if fanLogsOpen.Load() > 0 {
		var v any
		if v, fannedOut = stmt.Settings.LoadAndDelete(fanLogKey{stmt}); fannedOut {
			fanLogsOpen.Add(-1)
			v.(*fanLog).write(stmt)
		}
	}
	if pl, part := db.Logger.(partLogger); part {
		name := mainDatabase // a hook's statement on an unsharded model
		switch {
		case fannedOut:
			name = "" // its parts are named
		case physical >= 0:
			name = e.physical[physical].name
		}
		if stmt.SQL.Len() > 0 {
			pl.log.keep(name, stmt.SQL.String(), stmt.Vars)
		}
		return
	}
	if e.config.LogPhysical && physical >= 0 && stmt.SQL.Len() > 0 && !fannedOut {
		sql, name := stmt.SQL.String(), e.physical[physical].name
		stmt.SQL.Reset()
		stmt.SQL.Grow(len(sql) + len(name) + 3)
		stmt.SQL.WriteString("[")
		stmt.SQL.WriteString(name)
		stmt.SQL.WriteString("] ")
		stmt.SQL.WriteString(sql)
	}
}
