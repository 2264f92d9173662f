package sqlerr

import (
	"errors"
	"fmt"
	"testing"
)

// stateError has the shape of pgx's *pgconn.PgError.
type stateError struct{ Code, Message string }

func (e *stateError) Error() string    { return "ERROR: " + e.Message + " (SQLSTATE " + e.Code + ")" }
func (e *stateError) SQLState() string { return e.Code }

// MySQLError has the name and fields of go-sql-driver/mysql's type, in another
// package: MySQL must not take it for the driver's.
type MySQLError struct {
	Number  uint16
	Message string
}

func (e *MySQLError) Error() string { return fmt.Sprintf("Error %d: %s", e.Number, e.Message) }

func TestPostgresFindsTheStateInTheTree(t *testing.T) {
	pg := &stateError{Code: "55P03", Message: "lock not available"}
	for _, err := range []error{pg, fmt.Errorf("install: %w", pg), errors.Join(errors.New("first"), fmt.Errorf("second: %w", pg))} {
		code, message, ok := Postgres(err)
		if !ok || code != "55P03" || message != "lock not available" {
			t.Errorf("Postgres(%v) = %q, %q, %v", err, code, message, ok)
		}
	}
}

func TestOtherErrorsAreNotServerErrors(t *testing.T) {
	for _, err := range []error{nil, errors.New("Error 1205: Lock wait timeout exceeded"),
		&MySQLError{Number: 1205, Message: "Lock wait timeout exceeded"}, (*stateError)(nil), fmt.Errorf("wrapped: %w", (*stateError)(nil))} {
		if n, m, ok := MySQL(err); ok {
			t.Errorf("MySQL(%v) = %d, %q", err, n, m)
		}
		if c, m, ok := Postgres(err); ok {
			t.Errorf("Postgres(%v) = %q, %q", err, c, m)
		}
	}
}
