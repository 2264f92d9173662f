package engine

import (
	"database/sql"
	"errors"
	"reflect"

	"gorm.io/gorm"

	"github.com/shardid/shardid/internal/errs"
	"github.com/shardid/shardid/internal/sqlerr"
)

// keepingFirst runs fn, a callback that may add an error to a statement
// that has failed already (GORM's rollback of the transaction it began, the
// plugin's callbacks after the statement's own), and keeps the statement's
// first error findable. GORM's AddError joins a second error with
// fmt.Errorf("%v; %w"), which leaves only the second to errors.Is: a
// statement whose context ended would fail with "context deadline exceeded;
// sql: transaction has already been committed or rolled back", which is not
// context.DeadlineExceeded. What the callback adds after the statement's own
// error is dropped when it only says the transaction had ended (database/sql
// rolls a transaction back when its context ends, or its connection is
// lost) or when the statement's context has ended (a rollback on the
// connection the driver closed at its end); otherwise both stay findable.
// It costs a comparison on success, and allocates on failure only.
func (e *Engine) keepingFirst(fn func(*gorm.DB)) func(*gorm.DB) {
	return func(db *gorm.DB) {
		first := db.Error
		fn(db)
		if first != nil && db.Error != nil && !sameError(db.Error, first) && first != errRouted && first != errPartEnded && e.ownsStatement(db.Statement) { // not the marks of a statement run in parts
			keepFirst(db, first)
		}
	}
}

// ownsStatement reports whether stmt is one the plugin routes: a sharded
// model's, or one it keeps routing state of. Another statement's errors
// stay as GORM joins them, as they would without the plugin.
func (e *Engine) ownsStatement(stmt *gorm.Statement) bool {
	if routeStateOf(stmt) != nil {
		return true
	}
	if stmt.Schema == nil {
		return false
	}
	m, err := e.model(stmt.Schema)
	return err == nil && m != nil && m.sharded()
}

// sameError reports whether a and b are one error value, without the
// panic of == on two errors of one uncomparable type (a hook's error that is
// a slice, as validators return): such an error was not replaced by
// AddError, whose join is another type.
func sameError(a, b error) bool {
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && (!t.Comparable() || a == b)
}

// keepFirst makes db.Error, GORM's join of first and an error added after
// it, one where errors.Is finds both, or first alone (keepingFirst).
func keepFirst(db *gorm.DB, first error) {
	joined := db.Error
	added := errors.Unwrap(joined)
	if added == nil || errs.Text(joined) != errs.Text(first)+"; "+errs.Text(added) {
		return // not AddError's join of first: a callback replaced or wrapped it
	}
	if errors.Is(added, sql.ErrTxDone) || sqlerr.Ended(db.Statement.Context) != nil {
		db.Error = first
	} else {
		db.Error = &addedError{first: first, added: added}
	}
	if db.Statement.Result != nil {
		db.Statement.Result.Error = db.Error
	}
}

// addedError is an error added to a statement after its first, as GORM's
// AddError words it, where errors.Is and errors.As find both.
type addedError struct{ first, added error }

func (e *addedError) Error() string   { return errs.Text(e.first) + "; " + errs.Text(e.added) }
func (e *addedError) Unwrap() []error { return []error{e.first, e.added} }
