// Package sqlerr reads the server errors of the MySQL and PostgreSQL drivers
// without importing them, so that a library user compiles only the driver of
// the database they use:
//
//	if number, _, ok := sqlerr.MySQL(err); ok && number == 1205 { // lock wait timeout
//	}
//	if code, _, ok := sqlerr.Postgres(err); ok && code == "55P03" { // lock not available
//	}
//
// [MySQL] recognises go-sql-driver/mysql's *MySQLError (the driver of GORM's
// MySQL dialector) by its type's name and reads its exported fields; the
// type has no method to ask through an interface. [Postgres] recognises any
// error with a SQLState method, as pgx's *pgconn.PgError and lib/pq's *Error
// have. Both search the error's whole tree, as errors.As does.
// [Unreachable] tells a database that could not be reached, or a connection
// lost, from a statement the server refused; [Unsent] an error the driver
// had before it sent anything (pgx's SafeToRetry).
package sqlerr
