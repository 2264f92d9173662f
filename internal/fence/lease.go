package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ErrLapsed is returned by Renew and Seal for a freeze whose lease ran out
// (or that was thawed): writes of the range may have gone through since, and
// are in the log.
var ErrLapsed = errors.New("fence: the freeze lapsed")

// nowMillis is the database's clock in milliseconds since 1970, read when
// the expression runs (not when its statement or transaction began).
func nowMillis(dialect string) string {
	switch dialect {
	case "mysql":
		return "CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000 AS SIGNED)"
	case "postgres":
		return "(extract(epoch from clock_timestamp()) * 1000)::bigint"
	}
	return "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
}

// deadlineSQL is the database's clock plus lease.
func deadlineSQL(dialect string, lease time.Duration) string {
	return "(" + nowMillis(dialect) + " + " + strconv.FormatInt(lease.Milliseconds(), 10) + ")"
}

// addDeadline adds the freeze's deadline to a fence table made before it had
// one; hasColumn counts the column.
func addDeadline(ctx context.Context, db *sql.DB, hasColumn string) error {
	var n int
	if err := db.QueryRowContext(ctx, hasColumn).Scan(&n); err != nil || n > 0 {
		return err
	}
	_, err := db.ExecContext(ctx, "ALTER TABLE "+fenceTable+" ADD COLUMN frozen_until BIGINT NULL")
	return err
}

// Renew moves the deadline of r's freeze to lease from now, if the freeze
// holds still; otherwise it returns ErrLapsed.
func (f Fence) Renew(ctx context.Context, db *sql.DB, r Range, lease time.Duration) error {
	return f.extend(ctx, db, r, deadlineSQL(f.Dialect, lease), "renew")
}

// Seal makes r's freeze last until Thaw or Close, if it holds still:
// the cutover decided, the source never takes writes of r again. Otherwise
// it returns ErrLapsed.
func (f Fence) Seal(ctx context.Context, db *sql.DB, r Range) error {
	return f.extend(ctx, db, r, "NULL", "seal")
}

// extend sets the deadline of a freeze that has not lapsed. The fence row is
// locked before the clock is read: writers that read the row before hold it
// until they end, and those that found the freeze lapsed wrote.
func (f Fence) extend(ctx context.Context, db *sql.DB, r Range, until, verb string) error {
	d, err := f.dialect()
	if err != nil {
		return err
	}
	if err := f.checkRange(r); err != nil {
		return err
	}
	err = d.locked(ctx, db, func(tx *sql.Tx) error {
		var frozen bool
		var deadline sql.NullInt64
		err := tx.QueryRowContext(ctx, "SELECT frozen, frozen_until FROM "+fenceTable+" WHERE range_from = "+d.placeholder(1)+
			" AND range_to = "+d.placeholder(2)+d.forUpdate(), r.From, r.To).Scan(&frozen, &deadline)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotOpen
		} else if err != nil {
			return err
		}
		var now int64
		if err := tx.QueryRowContext(ctx, "SELECT "+nowMillis(f.Dialect)).Scan(&now); err != nil {
			return err
		}
		if !frozen || deadline.Valid && now >= deadline.Int64 {
			return ErrLapsed
		}
		_, err = tx.ExecContext(ctx, "UPDATE "+fenceTable+" SET frozen_until = "+until+
			" WHERE range_from = "+d.placeholder(1)+" AND range_to = "+d.placeholder(2), r.From, r.To)
		return err
	})
	if err != nil {
		return fmt.Errorf("fence: %s the freeze of %d-%d: %w", verb, r.From, r.To, err)
	}
	return nil
}

// Querier is a pool, a connection or a transaction.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Sealed returns the ranges whose freeze is sealed on the database q reads:
// their cutover committed, another database serves them. The read locks the
// rows it reads (a transaction's snapshot could predate the seal), so a
// Freeze or Seal waits for a transaction that read them. A database never
// fenced has none.
func (f Fence) Sealed(ctx context.Context, q Querier) ([]Range, error) {
	d, err := f.dialect()
	if err != nil {
		return nil, err
	}
	if f.Dialect == "postgres" { // a missing table would abort the transaction around the read
		var exists bool
		rows, err := q.QueryContext(ctx, "SELECT to_regclass('"+fenceTable+"') IS NOT NULL")
		if err == nil {
			err = scanOne(rows, &exists)
		}
		if err != nil || !exists {
			return nil, err
		}
	}
	share := map[string]string{"mysql": " LOCK IN SHARE MODE", "postgres": " FOR SHARE"}[f.Dialect]
	rows, err := q.QueryContext(ctx, "SELECT range_from, range_to FROM "+fenceTable+" WHERE frozen = "+trueSQL(f.Dialect)+
		" AND frozen_until IS NULL"+share)
	if err != nil {
		if d.missingTable(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("fence: read the sealed ranges: %w", err)
	}
	defer rows.Close()
	var sealed []Range
	for rows.Next() {
		var r Range
		if err := rows.Scan(&r.From, &r.To); err != nil {
			return nil, err
		}
		sealed = append(sealed, r)
	}
	return sealed, rows.Err()
}

// IsOpen reports whether r has a fence row on db: Open recorded it and no
// Close removed it since. A database never fenced has none.
func (f Fence) IsOpen(ctx context.Context, db *sql.DB, r Range) (bool, error) {
	d, err := f.dialect()
	if err != nil {
		return false, err
	}
	var n int
	err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+fenceTable+" WHERE range_from = "+d.placeholder(1)+
		" AND range_to = "+d.placeholder(2), r.From, r.To).Scan(&n)
	if err != nil && d.missingTable(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("fence: read the fence of %d-%d: %w", r.From, r.To, err)
	}
	return n > 0, nil
}

func scanOne(rows *sql.Rows, dest any) error {
	defer rows.Close()
	if !rows.Next() {
		return errors.Join(rows.Err(), sql.ErrNoRows)
	}
	return rows.Scan(dest)
}
