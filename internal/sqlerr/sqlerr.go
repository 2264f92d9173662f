package sqlerr

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/shardid/shardid/internal/errs"
)

// The package and type name of go-sql-driver/mysql's server error; both are
// part of the driver's v1 API.
const (
	mysqlPackage   = "github.com/go-sql-driver/mysql"
	mysqlErrorType = "MySQLError"
)

// MySQL returns the error number and message of the first MySQL or MariaDB
// server error in err's tree.
func MySQL(err error) (number int, message string, ok bool) {
	found := first(err, isMySQLError)
	if found == nil {
		return 0, "", false
	}
	fields := reflect.ValueOf(found).Elem()
	n, m := fields.FieldByName("Number"), fields.FieldByName("Message")
	if !n.IsValid() || !n.CanUint() || !m.IsValid() || m.Kind() != reflect.String {
		return 0, "", false // not the shape of the driver's v1 type
	}
	return int(n.Uint()), m.String(), true
}

// MissingTable reports whether err, of a database of dialect, says that a
// statement's table is not there.
func MissingTable(dialect string, err error) bool {
	if err == nil {
		return false
	}
	switch dialect {
	case "mysql":
		number, _, ok := MySQL(err)
		return ok && number == 1146
	case "postgres":
		code, _, ok := Postgres(err)
		return ok && code == "42P01"
	}
	return strings.Contains(err.Error(), "no such table")
}

// Postgres returns the SQLSTATE and message of the first PostgreSQL server
// error in err's tree; the message is the error's Message field, or its text
// for a type without one.
func Postgres(err error) (code, message string, ok bool) {
	var withState interface {
		error
		SQLState() string
	}
	if !errors.As(err, &withState) {
		return "", "", false
	}
	v := reflect.ValueOf(withState)
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return "", "", false // its methods could not run
	}
	message = errs.Text(withState)
	if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		if m := v.Elem().FieldByName("Message"); m.IsValid() && m.Kind() == reflect.String {
			message = m.String()
		}
	}
	return withState.SQLState(), message, true
}

func isMySQLError(err error) bool {
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	t := v.Type().Elem()
	return t.Kind() == reflect.Struct && t.PkgPath() == mysqlPackage && t.Name() == mysqlErrorType
}

// first returns the first error of err's tree that match accepts, in the
// order errors.As searches it.
func first(err error, match func(error) bool) error {
	if err == nil {
		return nil
	}
	if match(err) {
		return err
	}
	switch wrapper := err.(type) {
	case interface{ Unwrap() error }:
		return first(wrapper.Unwrap(), match)
	case interface{ Unwrap() []error }:
		for _, inner := range wrapper.Unwrap() {
			if found := first(inner, match); found != nil {
				return found
			}
		}
	}
	return nil
}

// OfEndedContext returns err as the error of ctx's end when ctx has ended
// and err is the network timeout a driver meets when it enforces the
// context by a deadline on its connection (pgx returns "write failed: i/o
// timeout" of a statement whose context ended while it was being sent, and
// its dialer "i/o timeout" of a connection the deadline cut short), or the
// bad connection go-sql-driver reports of the connection it closed at the
// context's end (driver.ErrBadConn, "invalid connection"), or the
// sql.ErrTxDone of a transaction database/sql rolled back at its end (a
// statement or commit after it), so that
// errors.Is finds context.Canceled or context.DeadlineExceeded and
// Unreachable does not read a lost connection. A deadline that has passed
// is an ended context even before ctx's own timer says so: the driver's
// deadline on its connection, or a context derived with the same
// deadline, can fire first. Other errors, a reset connection among them,
// are returned as they are.
func OfEndedContext(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	ended := Ended(ctx)
	if ended == nil || errors.Is(err, ended) {
		return err
	}
	var netErr net.Error
	timedOut := errors.As(err, &netErr) && netErr.Timeout()
	closedAtTheEnd := errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrTxDone) || first(err, func(e error) bool { return errs.Text(e) == "invalid connection" }) != nil
	if !timedOut && !closedAtTheEnd {
		return err
	}
	return fmt.Errorf("%w: %w", ended, err)
}

// Ended returns the error of ctx's end, or nil while it lives: a deadline
// that has passed is context.DeadlineExceeded even before ctx's own timer
// ends it.
func Ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Unreachable reports whether err says that the database could not be
// reached or that the connection to it was lost, rather than that it
// refused a statement: a network error (refused, reset, timed out), a
// connection the driver found broken (driver.ErrBadConn, go-sql-driver's
// "invalid connection"), PostgreSQL's connection exceptions (class 08) and
// shutdowns (57P01 to 57P03), MySQL's server shutting down (1053).
func Unreachable(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false // the caller's deadline, which context's error meets as a net.Error
	}
	var netErr net.Error
	switch {
	case errors.As(err, &netErr), errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	if code, _, ok := Postgres(err); ok {
		return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
	}
	if number, _, ok := MySQL(err); ok {
		return number == 1053
	}
	// go-sql-driver's ErrInvalidConn; pgx's error of a connection found
	// closed, or closed under the statement.
	return first(err, func(e error) bool { text := errs.Text(e); return text == "invalid connection" || text == "conn closed" }) != nil
}

// Unsent reports whether the driver says that err occurred before anything
// was sent to the server, so that the statement may be sent again on
// another connection: an error with a SafeToRetry method answering true, as
// pgx's are (among them its "conn closed", pgconn.ErrConnClosed, of a
// connection found closed when it was to be used).
func Unsent(err error) bool {
	var retry interface{ SafeToRetry() bool }
	return errors.As(err, &retry) && retry.SafeToRetry()
}

// Transient reports whether the server rolled a statement's transaction back
// for a conflict with another, which the same work run again may not meet:
// a deadlock (MySQL 1213, PostgreSQL 40P01), a lock wait that timed out
// (MySQL 1205) or a serialization failure (PostgreSQL 40001).
func Transient(err error) bool {
	if number, _, ok := MySQL(err); ok {
		return number == 1213 || number == 1205
	}
	code, _, ok := Postgres(err)
	return ok && (code == "40P01" || code == "40001")
}
