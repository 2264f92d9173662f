// Package sqlerr_test checks internal/sqlerr on the drivers' own error types,
// which the library does not import.
package sqlerr_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardid/shardid/internal/sqlerr"
)

func TestTheDriversErrorsAreRead(t *testing.T) {
	my := &mysql.MySQLError{Number: 1205, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "Lock wait timeout exceeded"}
	pg := &pgconn.PgError{Severity: "ERROR", Code: "55P03", Message: "canceling statement due to lock timeout"}
	for _, err := range []error{my, fmt.Errorf("install: %w", my), errors.Join(pg, fmt.Errorf("second: %w", my))} {
		number, message, ok := sqlerr.MySQL(err)
		if !ok || number != 1205 || message != my.Message {
			t.Errorf("MySQL(%v) = %d, %q, %v", err, number, message, ok)
		}
	}
	for _, err := range []error{pg, fmt.Errorf("install: %w", pg), errors.Join(my, fmt.Errorf("second: %w", pg))} {
		code, message, ok := sqlerr.Postgres(err)
		if !ok || code != "55P03" || message != pg.Message {
			t.Errorf("Postgres(%v) = %q, %q, %v", err, code, message, ok)
		}
	}
	if _, _, ok := sqlerr.MySQL(pg); ok {
		t.Error("a PostgreSQL error read as MySQL's")
	}
	if _, _, ok := sqlerr.Postgres(my); ok {
		t.Error("a MySQL error read as PostgreSQL's")
	}
	if _, _, ok := sqlerr.MySQL((*mysql.MySQLError)(nil)); ok {
		t.Error("a nil *MySQLError read as a server error")
	}
}
