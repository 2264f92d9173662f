package shardid

import (
	"context"
	"regexp"
	"strconv"
	"sync"
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
// once, explained only if the statement's line is printed.
type fanLog struct {
	mu      sync.Mutex
	queries []loggedQuery
}

type loggedQuery struct {
	name, sql string
	vars      []any
}

func (l *fanLog) addQuery(name, sql string, vars []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queries = append(l.queries, loggedQuery{name, sql, vars})
}

// numbered is a PostgreSQL placeholder, renumbered when parts are joined.
var numbered = regexp.MustCompile(`\$(\d+)`)

// write puts the parts' lines in stmt as its SQL and values: their
// placeholders stay, numbered on where the dialect numbers them.
func (l *fanLog) write(stmt *gorm.Statement) {
	l.mu.Lock()
	defer l.mu.Unlock()
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
		stmt.SQL.WriteString("[")
		stmt.SQL.WriteString(q.name)
		stmt.SQL.WriteString("] ")
		stmt.SQL.WriteString(sql)
		stmt.Vars = append(stmt.Vars, q.vars...)
	}
}

// fanLogOf returns the log of the statement's parts, made on first use.
func fanLogOf(stmt *gorm.Statement) *fanLog {
	v, _ := stmt.Settings.LoadOrStore(fanLogKey{stmt}, &fanLog{})
	return v.(*fanLog)
}

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

func (l partLogger) Trace(context.Context, time.Time, func() (string, int64), error) {}

// ParamsFilter keeps the application logger's filter of the values it logs.
func (l partLogger) ParamsFilter(ctx context.Context, sql string, params ...any) (string, []any) {
	if f, ok := l.Interface.(gorm.ParamsFilter); ok {
		return f.ParamsFilter(ctx, sql, params...)
	}
	return sql, params
}

// mainDatabase names the plugin's own database in a fan-out's line.
const mainDatabase = "main database"

// logPartTo makes part, a statement of its own run for the statement parent
// on one of its databases, log into parent's line.
func (p *Plugin) logPartTo(parent *gorm.Statement, part *gorm.DB) {
	inner := part.Config.Logger
	if pl, ok := inner.(partLogger); ok {
		inner = pl.Interface
	}
	part.Config.Logger = partLogger{Interface: inner, log: fanLogOf(parent)}
}

// logLine makes the statement's SQL what GORM logs for it, after it ran: its
// parts' lines for a statement over several databases, or, with
// Config.LogPhysical, the SQL after the name of the database it ran on.
func (p *Plugin) logLine(db *gorm.DB, physical int) {
	stmt := db.Statement
	if db.DryRun {
		return
	}
	if v, ok := stmt.Settings.LoadAndDelete(fanLogKey{stmt}); ok {
		v.(*fanLog).write(stmt)
		return
	}
	if pl, part := db.Logger.(partLogger); part {
		name := mainDatabase // a hook's statement on an unsharded model
		if physical >= 0 {
			name = p.physical[physical].name
		}
		if stmt.SQL.Len() > 0 {
			pl.log.addQuery(name, stmt.SQL.String(), stmt.Vars)
		}
		return
	}
	if p.config.LogPhysical && physical >= 0 && stmt.SQL.Len() > 0 {
		sql, name := stmt.SQL.String(), p.physical[physical].name
		stmt.SQL.Reset()
		stmt.SQL.Grow(len(sql) + len(name) + 3)
		stmt.SQL.WriteString("[")
		stmt.SQL.WriteString(name)
		stmt.SQL.WriteString("] ")
		stmt.SQL.WriteString(sql)
	}
}
