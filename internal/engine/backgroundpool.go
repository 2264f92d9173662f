package engine

import (
	"context"
	"database/sql"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// backgroundPool returns the connection pool the plugin's own work on its
// database runs on outside any statement (the shared map's refresh and
// heartbeat, a move's lock), and how to close it: a pool of its own, opened
// from the same Dialector, so that the plugin never holds a connection the
// application's statements would otherwise get, with the per-connection
// settings they rely on (SQLite's PRAGMAs, session variables). Where the
// Dialector cannot open another pool on the same database (it was given a
// connection, or SQLite keeps the database in memory), the application's.
func (e *Engine) backgroundPool(ctx context.Context, app *sql.DB) (*sql.DB, func() error) {
	keep := func() error { return nil }
	if dsnOf(e.db.Dialector) == "" || fieldOf(e.db.Dialector, "Conn") != nil {
		return app, keep // opening it again would reuse, and on failure close, the application's pool
	}
	opened, err := gorm.Open(e.db.Dialector, &gorm.Config{Logger: logger.Discard, DisableAutomaticPing: true, SkipDefaultTransaction: true})
	if err != nil {
		return app, keep
	}
	own, err := opened.DB()
	if err != nil || own == app {
		return app, keep
	}
	if e.db.Dialector.Name() == "sqlite" && !sqliteOnFile(ctx, own) {
		_ = own.Close()
		return app, keep
	}
	own.SetMaxIdleConns(1)
	return own, own.Close
}

// sqliteOnFile reports whether db's main database is a file, which another
// connection opens too, not one in memory.
func sqliteOnFile(ctx context.Context, db *sql.DB) bool {
	rows, err := db.QueryContext(ctx, "PRAGMA database_list")
	if err != nil {
		return false
	}
	defer rows.Close()
	for rows.Next() {
		var seq int
		var name, file string
		if rows.Scan(&seq, &name, &file) == nil && name == "main" {
			return file != ""
		}
	}
	return false
}
