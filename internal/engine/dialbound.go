package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"reflect"
	"time"
	"unsafe"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid/internal/sqlerr"
)

// boundedDialector returns a copy of d whose connection pool makes every
// connection through a boundedConnector, so that a server that is down or
// silent fails each new connection within timeout with ErrShardUnavailable
// naming the database, at the first open and at any later one; pool is the
// copy's pool, nil when d is returned as it is: of another dialect, or with
// a pool of its own.
func boundedDialector(d gorm.Dialector, name string, timeout time.Duration) (_ gorm.Dialector, pool *sql.DB, _ error) {
	if fieldOf(d, "Conn") != nil {
		return d, nil, nil // the caller's pool, made by the caller's connector
	}
	var scratch *sql.DB
	var err error
	switch d.Name() {
	case "mysql": // its Initialize opens the DSN so, then asks the server its version: the pool must be bounded before
		driverName, _ := fieldOf(d, "DriverName").(string)
		if driverName == "" {
			driverName = "mysql"
		}
		scratch, err = sql.Open(driverName, dsnOf(d))
	case "postgres": // its Initialize builds the pool (DSN, options, time zone) without a word to the server
		var db *gorm.DB
		if db, err = gorm.Open(d, &gorm.Config{DisableAutomaticPing: true, Logger: logger.Discard}); err == nil {
			scratch, err = db.DB()
		}
	default:
		return d, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	inner, ok := connectorOf(scratch)
	if !ok {
		return d, nil, nil
	}
	if _, closes := inner.(io.Closer); !closes { // else closing scratch would close the connector the pool uses
		_ = scratch.Close()
	}
	pool = sql.OpenDB(boundedConnector{Connector: inner, name: name, timeout: timeout})
	bounded, ok := withConn(d, pool)
	if !ok {
		_ = pool.Close()
		return d, nil, nil
	}
	return bounded, pool, nil
}

// boundedConnector bounds each connection's dial and handshake (which ends
// with the server's first answer) by timeout, and names the database in the
// errors of one that cannot be reached, wherever the connection was asked
// for: a statement, a transaction's begin, a ping. Its connections are
// boundedConns, which begin again on another when the server has ended them.
type boundedConnector struct {
	driver.Connector
	name    string
	timeout time.Duration
}

func (c boundedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	bounded, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	conn, err := c.Connector.Connect(bounded)
	switch {
	case err == nil:
		return &boundedConn{Conn: conn, name: c.name}, nil
	case sqlerr.Ended(ctx) != nil:
		// The caller's deadline or cancel, not the database's fault: the
		// dialer's deadline, or bounded's timer, can fire before ctx's.
		return nil, sqlerr.OfEndedContext(ctx, err)
	case sqlerr.Ended(bounded) != nil: // our bound, not the caller's deadline
		return nil, &noAnswerError{name: c.name, timeout: c.timeout}
	case sqlerr.Unreachable(err):
		return nil, fmt.Errorf("%w: %s: %w", ErrShardUnavailable, c.name, err)
	}
	return nil, err
}

// Close closes the driver's connector if it has something to close.
func (c boundedConnector) Close() error {
	if closer, ok := c.Connector.(io.Closer); ok {
		return closer.Close()
	}
	return nil
}

// noAnswerError is a database that did not answer a new connection in time.
// It is a net.Error timing out, as sqlerr.Unreachable reads network errors,
// and deliberately not the context's error, which that takes as the caller's.
type noAnswerError struct {
	name    string
	timeout time.Duration
}

func (e *noAnswerError) Error() string {
	return fmt.Sprintf("%v: %s did not answer a new connection within %v (Config.ConnectTimeout)", ErrShardUnavailable, e.name, e.timeout)
}
func (e *noAnswerError) Is(target error) bool { return target == ErrShardUnavailable }
func (e *noAnswerError) Timeout() bool        { return true }
func (e *noAnswerError) Temporary() bool      { return true }

// connectorOf returns the connector db makes its connections with: the one
// the dialector built, with the options, hooks and time zone it was given,
// which database/sql keeps unexported.
func connectorOf(db *sql.DB) (driver.Connector, bool) {
	field := reflect.ValueOf(db).Elem().FieldByName("connector")
	if !field.IsValid() || field.Type() != reflect.TypeFor[driver.Connector]() {
		return nil, false // another database/sql: left unbounded rather than guessed
	}
	c, ok := reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().Interface().(driver.Connector)
	return c, ok && c != nil
}

// withConn returns a copy of the dialector d (of GORM's drivers: a struct, or
// a pointer to one, maybe with an embedded *Config) with its field Conn set
// to conn, so that it opens on conn; d and its config are left as they are.
func withConn(d gorm.Dialector, conn gorm.ConnPool) (gorm.Dialector, bool) {
	v := reflect.ValueOf(d)
	isPointer := v.Kind() == reflect.Pointer
	if isPointer {
		if v.IsNil() {
			return nil, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, false
	}
	field, ok := v.Type().FieldByName("Conn")
	if !ok || !reflect.TypeOf(conn).AssignableTo(field.Type) {
		return nil, false
	}
	copied := reflect.New(v.Type()).Elem()
	copied.Set(v)
	at := copied
	for _, i := range field.Index[:len(field.Index)-1] {
		at = at.Field(i)
		if at.Kind() == reflect.Pointer { // an embedded config: copied, not shared
			if at.IsNil() || !at.CanSet() {
				return nil, false
			}
			clone := reflect.New(at.Type().Elem())
			clone.Elem().Set(at.Elem())
			at.Set(clone)
			at = clone.Elem()
		}
	}
	target := at.Field(field.Index[len(field.Index)-1])
	if !target.CanSet() {
		return nil, false
	}
	target.Set(reflect.ValueOf(conn))
	if isPointer {
		copied = copied.Addr()
	}
	bounded, ok := copied.Interface().(gorm.Dialector)
	return bounded, ok
}
