package mover

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"math/big"
	"slices"
	"strings"

	"github.com/shardid/shardid/internal/sqlscan"
)

// rowQuerier is a transaction or one connection of a pool.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// inUTC runs fn where times are written in UTC, so that the text a checksum
// hashes does not depend on a database's or session's time zone: in a
// transaction of its own on PostgreSQL (SET LOCAL), on a connection that is
// then discarded on MySQL.
func inUTC(ctx context.Context, db *sql.DB, dialect string, fn func(rowQuerier) error) (err error) {
	if dialect == "postgres" {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, tx.Rollback()) }()
		if _, err := tx.ExecContext(ctx, postgresCanonical); err != nil {
			return err
		}
		return fn(tx)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if discard := conn.Raw(func(any) error { return driver.ErrBadConn }); !errors.Is(discard, driver.ErrBadConn) {
			err = errors.Join(err, discard, conn.Close())
		}
	}()
	if _, err := conn.ExecContext(ctx, "SET time_zone = '+00:00'"); err != nil {
		return err
	}
	return fn(conn)
}

// summary is a table's rows of a range: how many, and a checksum that does
// not depend on their order.
type summary struct {
	Rows int64
	Sum  string
}

// summarize counts and checksums the rows of the range on db: in SQL on
// MySQL and PostgreSQL, in Go on SQLite, which has no hash function.
func (t *movedTable) summarize(ctx context.Context, db *sql.DB, r Range) (summary, error) {
	var s summary
	switch t.dialect {
	case "mysql":
		floats, err := readRows(ctx, db, 1, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND DATA_TYPE = 'float'", t.name)
		if err != nil {
			return s, err
		}
		// Each value as N (NULL) or V, its length and its text: no value
		// reads as another's, a NULL as a NUL or a '|' as the boundary of
		// two columns; a FLOAT as the DOUBLE it is (its text has six digits).
		cols := make([]string, len(t.columns))
		for i, c := range t.columns {
			v := sqlscan.Quote(t.dialect, c)
			if slices.ContainsFunc(floats, func(f []any) bool { return strings.EqualFold(asText(f[0]), c) }) {
				v = "(" + v + " + 0e0)"
			}
			cols[i] = "IF(" + v + " IS NULL, 'N', CONCAT('V', LENGTH(" + v + "), ':', " + v + "))"
		}
		q := "SELECT COUNT(*), CAST(COALESCE(SUM(CRC32(CONCAT(" + strings.Join(cols, ", ") + "))), 0) AS CHAR) FROM " + sqlscan.Quote(t.dialect, t.name) + " WHERE " + t.inRange
		err = inUTC(ctx, db, t.dialect, func(q2 rowQuerier) error { return q2.QueryRowContext(ctx, q, r.From, r.To).Scan(&s.Rows, &s.Sum) })
		return s, err
	case "postgres":
		q := "SELECT count(*), COALESCE(sum(hashtextextended(ROW(" + t.quotedColumns() + ")::text, 0)), 0)::text FROM " + sqlscan.Quote(t.dialect, t.name) + " WHERE " + t.inRange
		err := inUTC(ctx, db, t.dialect, func(q2 rowQuerier) error { return q2.QueryRowContext(ctx, q, r.From, r.To).Scan(&s.Rows, &s.Sum) })
		return s, err
	}
	rows, err := db.QueryContext(ctx, "SELECT "+t.quotedColumns()+" FROM "+sqlscan.Quote(t.dialect, t.name)+" WHERE "+t.inRange, r.From, r.To)
	if err != nil {
		return s, err
	}
	defer rows.Close()
	total := new(big.Int)
	values := make([]any, len(t.columns))
	ptrs := make([]any, len(values))
	for i := range values {
		ptrs[i] = &values[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return s, err
		}
		h := fnv.New64a()
		for _, v := range values {
			fmt.Fprintf(h, "%v|", v)
		}
		total.Add(total, new(big.Int).SetUint64(h.Sum64()))
		s.Rows++
	}
	s.Sum = total.String()
	return s, rows.Err()
}

// postgresCanonical sets, for a transaction, the settings PostgreSQL's
// text of values depends on to ones that print every value alike and
// exactly, whatever a database's or a role's own: a timestamptz in UTC,
// dates in ISO (which any DateStyle reads back as such), a float8 with
// every digit (extra_float_digits 0 drops two), intervals in postgres's
// style. Values the drivers read as text (arrays, ranges, types pgx does
// not know) are carried as such text, and checksums hash it.
const postgresCanonical = "SELECT set_config('TimeZone', 'UTC', true), set_config('DateStyle', 'ISO, YMD', true), " +
	"set_config('extra_float_digits', '3', true), set_config('IntervalStyle', 'postgres', true)"

// dataConn is a pool, a connection or a transaction that a copy's values
// are read or written on.
type dataConn interface {
	execQuerier
	preparer
}

// valuesInUTC runs fn on db where MySQL's TIMESTAMP values are read and
// written in UTC: the session's time zone converts them from and to the
// instants stored, and the source's and the target's may differ (another
// server's default_time_zone, a DSN's time_zone), or be one whose hour
// repeats when the clocks go back, whose two instants read alike. On
// MySQL fn gets a connection set to UTC, which it hands back set as it
// was (closed if that fails); on PostgreSQL a transaction with its
// settings made canonical (postgresCanonical: the text of arrays, for
// one, follows DateStyle and extra_float_digits); on SQLite the pool.
func valuesInUTC(ctx context.Context, db *sql.DB, dialect string, fn func(dataConn) error) (err error) {
	if dialect == "postgres" {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, postgresCanonical); err != nil {
			return errors.Join(err, tx.Rollback())
		}
		if err := fn(tx); err != nil {
			return errors.Join(err, tx.Rollback())
		}
		return tx.Commit()
	}
	if dialect != "mysql" {
		return fn(db)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			if _, reset := conn.ExecContext(ctx, "SET time_zone = @shardid_time_zone"); reset == nil {
				err = conn.Close()
				return
			}
		}
		if discard := conn.Raw(func(any) error { return driver.ErrBadConn }); !errors.Is(discard, driver.ErrBadConn) {
			err = errors.Join(err, discard, conn.Close())
		}
	}()
	if _, err := conn.ExecContext(ctx, "SET @shardid_time_zone = @@session.time_zone, time_zone = '+00:00'"); err != nil {
		return err
	}
	return fn(conn)
}
